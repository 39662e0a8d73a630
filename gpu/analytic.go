package gpu

import (
	"github.com/fabricsim/fabricsim/analytic"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

// Analytic adapts a cluster to the analytic backend (analytic.Network and analytic.Ports), so
// that the same message graphs run there. Each endpoint pair gets the path the packet backend's
// routes take first (topo.Routes.FirstPath):
//
//   - Bandwidth is the payload rate of the path's slowest link (link rate x MTU / wire bytes of
//     a full packet), which for the server's links is the effective rate of Server.
//   - Latency is what the packet backend adds to a lone message beyond bytes/bandwidth: every
//     link's propagation delay, every node's forwarding latency, and one full packet's
//     serialization on each link but the slowest (the store-and-forward pipeline fill).
//   - The transmit port is the slowest link of the path's first half, the receive port the
//     slowest of its second half (the last one on a tie): the NIC's network port for a message
//     between servers, the NVLink port for one inside a server. Messages that share such a
//     link share its capacity max-min fairly.
//
// Contention on other links (a PCIe uplink carrying both a copy and a NIC's traffic, a spine)
// is the packet backend's business; the backends agree where the network is uncongested.
type Analytic struct {
	c             *Cluster
	routes        *topo.Routes
	switchLatency units.Time
	cache         map[[2]int32]pathInfo
}

type pathInfo struct {
	lat    units.Time
	bw     units.Rate
	tx, rx analytic.Port
}

// NewAnalytic returns the analytic view of c with routes r; switchLatency is the fabric's latency
// of a network switch (nodes without their own topo.Node.Latency).
func NewAnalytic(c *Cluster, r *topo.Routes, switchLatency units.Time) *Analytic {
	return &Analytic{c: c, routes: r, switchLatency: switchLatency, cache: map[[2]int32]pathInfo{}}
}

func (a *Analytic) path(src, dst int32) pathInfo {
	k := [2]int32{src, dst}
	if p, ok := a.cache[k]; ok {
		return p
	}
	g := a.c.Graph
	fr := a.c.Framing
	nodes := a.routes.FirstPath(int(src), int(dst))
	var p pathInfo
	if len(nodes) < 2 {
		p = pathInfo{bw: 1, tx: analytic.Port{ID: -1, Rate: 1}, rx: analytic.Port{ID: -2, Rate: 1}}
		a.cache[k] = p
		return p
	}
	wire := int64(fr.MTU) + int64(fr.Header) + int64(fr.L1)
	type hop struct {
		rate units.Rate
		id   int64
	}
	hops := make([]hop, 0, len(nodes)-1)
	for i := 0; i+1 < len(nodes); i++ {
		from, to := nodes[i], nodes[i+1]
		var l *topo.Link
		for _, pt := range g.Nodes[from].Ports {
			if pt.Peer == to {
				l = &g.Links[pt.Link]
				break
			}
		}
		dir := int64(0)
		if l.A != from {
			dir = 1
		}
		hops = append(hops, hop{l.Rate, int64(l.ID)*2 + dir})
		p.lat += l.Latency
		if n := &g.Nodes[to]; n.Kind == topo.Switch {
			switch {
			case n.Latency > 0:
				p.lat += n.Latency
			case n.Latency == 0:
				p.lat += a.switchLatency
			}
		}
	}
	slow := 0
	for i, h := range hops {
		if h.rate < hops[slow].rate {
			slow = i
		}
	}
	for i, h := range hops {
		if i != slow {
			p.lat += h.rate.TransmitTime(units.Size(wire))
		}
	}
	payload := func(r units.Rate) units.Rate { return units.Rate(int64(r) * int64(fr.MTU) / wire) }
	p.bw = payload(hops[slow].rate)
	half := (len(hops) - 1) / 2
	tx, rx := 0, half+1
	for i := 0; i <= half; i++ {
		if hops[i].rate < hops[tx].rate {
			tx = i
		}
	}
	for i := half + 1; i < len(hops); i++ {
		if hops[i].rate <= hops[rx].rate {
			rx = i
		}
	}
	if len(hops) == 1 {
		rx = 0
	}
	p.tx = analytic.Port{ID: hops[tx].id, Rate: payload(hops[tx].rate)}
	p.rx = analytic.Port{ID: hops[rx].id, Rate: payload(hops[rx].rate)}
	a.cache[k] = p
	return p
}

// Latency implements analytic.Network.
func (a *Analytic) Latency(src, dst int32) units.Time { return a.path(src, dst).lat }

// Bandwidth implements analytic.Network.
func (a *Analytic) Bandwidth(src, dst int32) units.Rate { return a.path(src, dst).bw }

// TxPort implements analytic.Ports.
func (a *Analytic) TxPort(src, dst int32) analytic.Port { return a.path(src, dst).tx }

// RxPort implements analytic.Ports.
func (a *Analytic) RxPort(src, dst int32) analytic.Port { return a.path(src, dst).rx }
