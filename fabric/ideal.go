package fabric

import (
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

// idealCache computes a message's completion time alone on an idle network: the exact
// store-and-forward pipeline of its packets along its path (each packet starts on a link when it
// has fully arrived and the previous packet has left), which is what the simulator produces when
// nothing else competes. For equal link rates this reduces to the closed form
// total_wire/R + (hops-1) x max_packet_wire/R + hops x propagation + (hops-1) x switch latency.
type idealCache struct {
	n    *Network
	memo map[idealKey]units.Time
}

type idealKey struct {
	bytes int64
	path  string
}

func newIdealCache(n *Network) *idealCache {
	return &idealCache{n: n, memo: map[idealKey]units.Time{}}
}

type hop struct {
	rate  units.Rate
	delay units.Time
}

// path follows the first shortest-path next hop from src to dst, or the router's static tables.
func (c *idealCache) path(src, dst int32) []hop {
	n := c.n
	var hops []hop
	node := n.g.Hosts[src]
	port := int32(0)
	for {
		p := n.portOf(node, port)
		hops = append(hops, hop{p.Rate, p.delay})
		next := n.g.Nodes[node].Ports[port].Peer
		if n.g.Nodes[next].Kind == topo.Host {
			return hops
		}
		node = next
		if sr, ok := n.router.(staticRouter); ok { // forwarding tables (InfiniBand LFTs)
			if port = sr.staticPort(node, dst); port < 0 {
				return nil
			}
			continue
		}
		nh := n.routes.NextHops(node, int(dst))
		if len(nh) == 0 {
			return nil
		}
		port = nh[0]
	}
}

func (c *idealCache) fct(src, dst int32, bytes int64) units.Time {
	hops := c.path(src, dst)
	if hops == nil {
		return 0
	}
	key := idealKey{bytes: bytes}
	b := make([]byte, 0, len(hops)*16)
	for _, h := range hops {
		for s := 0; s < 64; s += 8 {
			b = append(b, byte(uint64(h.rate)>>s))
		}
		for s := 0; s < 64; s += 8 {
			b = append(b, byte(uint64(h.delay)>>s))
		}
	}
	key.path = string(b)
	if v, ok := c.memo[key]; ok {
		return v
	}
	cfg := &c.n.cfg
	free := make([]units.Time, len(hops)) // when each link finishes its previous packet
	var done units.Time
	for sent := int64(0); sent < bytes; {
		payload := bytes - sent
		if payload > int64(cfg.MTU) {
			payload = int64(cfg.MTU)
		}
		hdr := cfg.HeaderBytes
		if sent == 0 {
			hdr += cfg.FirstHeaderExtra
		}
		sent += payload
		_, wire := cfg.frame(int(payload), hdr)
		var ready units.Time // when the packet is ready at the current hop
		for j, h := range hops {
			start := ready
			if free[j] > start {
				start = free[j]
			}
			end := start + h.rate.TransmitTime(units.Size(wire))
			free[j] = end
			ready = end + h.delay
		}
		done = ready
	}
	c.memo[key] = done
	return done
}
