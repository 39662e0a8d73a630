package ibsm

import "github.com/fabricsim/fabricsim/topo"

// GPU clusters (topo.Routes of the cluster form: identical servers on a tree network) routed by
// min-hop or D-mod-K keep stored rows only for the network's switches (up*/down*, whose
// candidate sets are its legal ports rather than the minimum-hop ones, keeps a row for every
// switch). A server-internal node (NVSwitch, PCIe switch,
// root port, CPU socket, NIC: Tier 0 with a Server) is no InfiniBand switch, but the engines
// route it like one so that a packet crossing a server follows a minimum-hop path: a row for
// each would be every internal node x every endpoint of the cluster (84 MB of a 1,024-GPU
// cluster's 147 MB). Its candidate set is the cluster routes' next-hop set (the same minimum-hop
// set the breadth-first search finds: TestServerFormMatchesStored), computed when asked; only
// where that set has several ports does the engine's pick need storing, and it is stored as its
// index in the set, in the fewest bits the node's port count needs (1 or 2 for a root port or a
// NIC), in a row only for nodes that have such an entry at all. A 1,024-GPU H100 cluster's
// internal nodes take 1.2 MB of picks instead of 64 MB of rows.
//
// The picks are not computed in closed form: min-hop balancing counts every destination a port
// took before, single-choice ones included, and inside a server the candidate sets overlap
// (a root port ties its PCIe switch and its CPU socket toward another rail's GPUs of another
// server, and takes its PCIe switch alone toward its own rail's), so the counts are the engine's
// own, run over every destination as for the stored rows. What this form leaves quadratic is
// those bits: 2 bits per (internal node with a tie, endpoint).
type innerPicks struct {
	rt    *topo.Routes
	row   []int32 // node -> pick row, -1 when none of its entries has a choice
	width []uint8 // bits per entry of each row (1, 2, 4, 8 or 16)
	words [][]uint64
}

// inner says whether node n is a server-internal node of a GPU cluster (no stored row).
func (t *Tables) inner(n topo.NodeID) bool {
	return t.in != nil && t.row[n] < 0 && t.g.Nodes[n].Kind == topo.Switch
}

// setPick records that internal node n picked cand[i] for destination dst.
func (p *innerPicks) setPick(g *topo.Graph, hosts int, n topo.NodeID, dst, i int) {
	r := p.row[n]
	if r < 0 {
		w := uint8(1)
		for w < 16 && 1<<w < len(g.Nodes[n].Ports) {
			w *= 2
		}
		r = int32(len(p.words))
		p.row[n] = r
		p.width = append(p.width, w)
		p.words = append(p.words, make([]uint64, (hosts*int(w)+63)/64))
	}
	w := uint(p.width[r])
	bit := uint(dst) * w
	word := &p.words[r][bit/64]
	mask := uint64(1)<<w - 1
	*word = *word&^(mask<<(bit%64)) | uint64(i)<<(bit%64)
}

// pick returns the index stored for node n and destination dst (0 where none is stored).
func (p *innerPicks) pick(n topo.NodeID, dst int) int {
	r := p.row[n]
	if r < 0 {
		return 0
	}
	w := uint(p.width[r])
	bit := uint(dst) * w
	return int(p.words[r][bit/64] >> (bit % 64) & (uint64(1)<<w - 1))
}

// innerPort is the LFT entry of internal node n for destination dst.
func (t *Tables) innerPort(n topo.NodeID, dst int) int32 {
	cand := t.in.rt.NextHops(n, dst)
	switch len(cand) {
	case 0:
		return -1
	case 1:
		return cand[0]
	}
	return cand[t.in.pick(n, dst)]
}

// bytes is the memory the picks take.
func (p *innerPicks) bytes() int64 {
	b := int64(len(p.row))*4 + int64(len(p.width))
	for _, w := range p.words {
		b += int64(len(w)) * 8
	}
	return b
}

// innerRoutes returns the cluster routes of g when g is a GPU cluster (a Tier-0 switch inside a
// server, and routes of the cluster form), else nil.
func innerRoutes(g *topo.Graph) (*topo.Routes, error) {
	found := false
	for i := range g.Nodes {
		if n := &g.Nodes[i]; n.Kind == topo.Switch && n.Tier == 0 && n.Server >= 0 {
			found = true
			break
		}
	}
	if !found {
		return nil, nil
	}
	rt, err := topo.ComputeRoutes(g)
	if err != nil {
		return nil, err
	}
	if rt.Form() != "cluster" {
		return nil, nil
	}
	return rt, nil
}
