package flow

import (
	"fmt"
	"slices"
	"sync"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/ibsm"
	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/sim"
	"github.com/fabricsim/fabricsim/topo"
)

// NextHopper gives, for a node and a destination host, the ports on minimum-hop paths toward it:
// the candidate set the fabric's ECMP hash, packet spraying or QP-aware hashing picks from.
// *topo.Routes implements it; so does the memory-lean LeafRoutes, and any routing that keeps
// the same order of candidates (ascending port index) can be slotted in.
type NextHopper interface {
	NextHops(n topo.NodeID, dstHost int) []int32
}

// routing modes: how a switch picks among a destination's candidate ports.
type routeMode uint8

const (
	routeECMP    routeMode = iota // per-flow hash of the QP's entropy (fabric.Network.route)
	routeQPAware                  // (hash(connection) + QP) mod candidates (RoCE qp_aware_hash)
	routeSpray                    // per packet, at random: the flow is spread over every candidate
	routeLFT                      // InfiniBand linear forwarding tables (ibsm)
	routeAR                       // InfiniBand adaptive routing over the tables' AR groups
)

// router builds each flow's path through the network's resources exactly as the packet backend
// forwards its packets: the same candidate sets, hash and salts for ECMP; the subnet manager's
// tables for InfiniBand. Load-dependent choices (packet spraying, adaptive routing) become a
// bundle: the stage's candidate links pooled into one resource of their summed capacity, which is
// what a per-packet choice of the least loaded (or a random) port converges to in the fluid limit.
type router struct {
	g    *topo.Graph
	nh   NextHopper
	ib   *ibsm.Tables
	mode routeMode
	seed uint64
	net  *network
	// frontier and cand are scratch for bundle stages.
	frontier, next []topo.NodeID
	cand           []int32
}

// salt is a switch's hash salt, as fabric.New derives it, so that flows hash onto the same
// next hops as the packet backend's packets.
func (r *router) salt(n topo.NodeID) uint64 {
	return sim.Mix64(r.seed ^ uint64(n)*0x9e3779b97f4a7c15)
}

// qpHash is the ECMP entropy of QP q of message i, as the packet backend derives it (the
// connection's hash plus the QP, standing in for the 5-tuple with the QP's UDP source port).
func qpHash(seed uint64, i int32, m *msggraph.Message, q int32) uint32 {
	conn := uint64(i) + 1
	if m.Conn != 0 {
		conn = uint64(m.Conn)<<1 | 1<<62
	}
	return uint32(sim.Mix64(seed^conn*0x9e3779b97f4a7c15^uint64(m.Src)<<40^uint64(m.Dst)<<20)) + uint32(q)
}

// candidates returns the ports switch n may forward to host dst on (shared; do not modify).
func (r *router) candidates(n topo.NodeID, dst int32) []int32 {
	switch r.mode {
	case routeLFT:
		p := r.ib.Port(n, int(dst))
		if p < 0 {
			return nil
		}
		r.cand = append(r.cand[:0], p)
		return r.cand
	case routeAR:
		return r.ib.Group(n, int(dst))
	}
	return r.nh.NextHops(n, int(dst))
}

// pick chooses one of hops for a flow with entropy hash on QP qp at switch n.
func (r *router) pick(n topo.NodeID, hops []int32, hash uint32, qp int32) int32 {
	if len(hops) == 1 {
		return hops[0]
	}
	switch r.mode {
	case routeQPAware:
		conn := hash - uint32(qp)
		return hops[int((sim.Mix64(uint64(conn)^r.salt(n))+uint64(qp))%uint64(len(hops)))]
	case routeLFT:
		return hops[0]
	}
	return hops[int(sim.Mix64(uint64(hash)^r.salt(n))%uint64(len(hops)))]
}

// path appends to out the resources a flow from host src to host dst crosses, in order.
func (r *router) path(src, dst int32, hash uint32, qp int32, out []int32) ([]int32, error) {
	g := r.g
	dn := g.Hosts[dst]
	n := g.Hosts[src]
	out = append(out, r.net.channel(n, 0))
	n = g.Nodes[n].Ports[0].Peer
	bundled := r.mode == routeSpray || r.mode == routeAR
	for n != dn {
		if g.Nodes[n].Kind != topo.Switch {
			return nil, fmt.Errorf("no path from host %d to host %d (reached host %s)", src, dst, g.Nodes[n].Name)
		}
		if len(out) > 64 {
			return nil, fmt.Errorf("no path from host %d to host %d: a forwarding loop", src, dst)
		}
		hops := r.candidates(n, dst)
		if len(hops) == 0 {
			return nil, fmt.Errorf("no path from host %d to host %d (no route at %s)", src, dst, g.Nodes[n].Name)
		}
		if bundled && len(hops) > 1 {
			return r.bundlePath(n, dst, out)
		}
		p := r.pick(n, hops, hash, qp)
		out = append(out, r.net.channel(n, p))
		n = g.Nodes[n].Ports[p].Peer
	}
	return out, nil
}

// bundlePath continues a path from switch n stage by stage: the links every frontier switch may
// use toward dst form one resource (a single link when there is only one), and their far ends the
// next frontier. With adaptive routing, a pair constraint may sit between two stages.
func (r *router) bundlePath(n topo.NodeID, dst int32, out []int32) ([]int32, error) {
	g := r.g
	dn := g.Hosts[dst]
	r.frontier = append(r.frontier[:0], n)
	var chans, prevChans []int32
	prev := int32(-1)
	for {
		if len(r.frontier) == 1 && r.frontier[0] == dn {
			return out, nil
		}
		if len(out) > 64 {
			return nil, fmt.Errorf("no path to host %d: a forwarding loop", dst)
		}
		chans = chans[:0]
		r.next = r.next[:0]
		for _, u := range r.frontier {
			if u == dn || g.Nodes[u].Kind != topo.Switch {
				return nil, fmt.Errorf("no path to host %d: paths of unequal length at %s", dst, g.Nodes[u].Name)
			}
			hops := r.candidates(u, dst)
			if len(hops) == 0 {
				return nil, fmt.Errorf("no path to host %d (no route at %s)", dst, g.Nodes[u].Name)
			}
			for _, p := range hops {
				chans = append(chans, r.net.channel(u, p))
				r.next = append(r.next, g.Nodes[u].Ports[p].Peer)
			}
		}
		slices.Sort(chans)
		chans = slices.Compact(chans)
		slices.Sort(r.next)
		r.next = slices.Compact(r.next)
		r.frontier, r.next = r.next, r.frontier
		id := chans[0]
		if len(chans) > 1 {
			id = r.net.bundle(chans)
		}
		// Adaptive routing: where two bundles in a row carry less together than either alone
		// (an uneven core tier), a pair constraint between them (network.pairConstraint).
		if r.mode == routeAR && prev >= 0 && len(prevChans) > 1 && len(chans) > 1 {
			if pc := r.net.pairConstraint(prev, id, prevChans, chans); pc >= 0 {
				out = append(out, pc)
			}
		}
		out = append(out, id)
		prev = id
		prevChans, chans = chans, prevChans
	}
}

// newRouter picks the routing of cfg's fabric.
func newRouter(g *topo.Graph, nh NextHopper, cfg *fabric.Config, net *network) (*router, error) {
	r := &router{g: g, nh: nh, seed: cfg.Seed, net: net}
	switch {
	case cfg.Kind == fabric.KindInfiniBand:
		t, err := subnetTables(g, cfg.IB.Routing)
		if err != nil {
			return nil, err
		}
		r.ib = t
		r.mode = routeLFT
		if cfg.IB.Adaptive {
			r.mode = routeAR
		}
	case cfg.Routing == fabric.RoutingSpray:
		r.mode = routeSpray
	case cfg.Kind == fabric.KindRoCE && cfg.RoCE.QPAwareHash:
		r.mode = routeQPAware
	}
	if r.ib == nil && nh == nil {
		return nil, fmt.Errorf("flow: no next-hop tables for the %s fabric", cfg.Kind)
	}
	return r, nil
}

// firstPath is the path the packet backend's ideal FCT follows: the forwarding tables on
// InfiniBand, else the first minimum-hop next hop at every switch.
func (r *router) firstPath(src, dst int32, out []int32) ([]int32, error) {
	g := r.g
	dn := g.Hosts[dst]
	n := g.Hosts[src]
	out = append(out, r.net.channel(n, 0))
	n = g.Nodes[n].Ports[0].Peer
	for n != dn {
		if g.Nodes[n].Kind != topo.Switch || len(out) > 64 {
			return nil, fmt.Errorf("no path from host %d to host %d", src, dst)
		}
		var p int32 = -1
		if r.ib != nil {
			p = r.ib.Port(n, int(dst))
		} else if hops := r.nh.NextHops(n, int(dst)); len(hops) > 0 {
			p = hops[0]
		}
		if p < 0 {
			return nil, fmt.Errorf("no path from host %d to host %d", src, dst)
		}
		out = append(out, r.net.channel(n, p))
		n = g.Nodes[n].Ports[p].Peer
	}
	return out, nil
}

// ackPath appends the path of a flow's ACKs, from its destination back to its source: the same
// hash through the same routing, except that adaptive routing is for data packets only (the
// packet backend's ibRouter) and ACKs follow the forwarding tables.
func (r *router) ackPath(dst, src int32, hash uint32, qp int32, out []int32) ([]int32, error) {
	saved := r.mode
	if r.mode == routeAR {
		r.mode = routeLFT
	}
	out, err := r.path(dst, src, hash, qp, out)
	r.mode = saved
	return out, err
}

// The subnet manager's tables of the last few networks: a compare runs every class and step of an
// InfiniBand variant on one network, and the tables (read-only once computed) took half of a
// 1,024-GPU pipeline compare's time when computed per run. An entry is found by the graph and a
// fingerprint of its wiring, so a graph changed in place is computed anew.
var subnetCache struct {
	sync.Mutex
	entries []subnetEntry
}

type subnetEntry struct {
	g      *topo.Graph
	engine ibsm.Engine
	print  uint64
	t      *ibsm.Tables
}

const subnetCacheSize = 4

func subnetTables(g *topo.Graph, engine ibsm.Engine) (*ibsm.Tables, error) {
	fp := wiring(g)
	c := &subnetCache
	c.Lock()
	defer c.Unlock() // one computation at a time: a second run of the same network waits for it
	for i, en := range c.entries {
		if en.g == g && en.engine == engine && en.print == fp {
			copy(c.entries[1:i+1], c.entries[:i]) // most recent first
			c.entries[0] = en
			return en.t, nil
		}
	}
	t, err := ibsm.Compute(g, engine)
	if err != nil {
		return nil, err
	}
	if len(c.entries) < subnetCacheSize {
		c.entries = append(c.entries, subnetEntry{})
	}
	copy(c.entries[1:], c.entries[:len(c.entries)-1])
	c.entries[0] = subnetEntry{g: g, engine: engine, print: fp, t: t}
	return t, nil
}

// wiring fingerprints what routing reads of g: every node's kind, tier and ports' peers, the
// hosts, and the links' rates.
func wiring(g *topo.Graph) uint64 {
	h := uint64(len(g.Nodes))<<32 ^ uint64(len(g.Hosts))
	for i := range g.Nodes {
		n := &g.Nodes[i]
		h = sim.Mix64(h ^ uint64(n.Kind)<<40 ^ uint64(n.Tier)<<32 ^ uint64(uint32(n.Host)))
		for _, p := range n.Ports {
			h = (h ^ uint64(uint32(p.Peer))<<32 ^ uint64(uint32(p.PeerPort))) * 1099511628211
		}
	}
	for i := range g.Links {
		h = (h ^ uint64(g.Links[i].Rate)) * 1099511628211
	}
	return sim.Mix64(h)
}
