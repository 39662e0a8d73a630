package topo

import (
	"encoding/binary"
	"sync"
)

// clusterRoutes routes a GPU cluster: identical servers (blocks of Tier-0 nodes with the same
// Node.Server: GPU, DMA and host-buffer endpoints, NVSwitch, PCIe switches, root ports, CPU
// sockets, NICs) on a network that is a layered tree (treeRoutes) between the servers' NIC
// ports. A breadth-first table would hold every server-internal node x every endpoint of the
// cluster: quadratic, and at 8,192 GPUs hundreds of gigabytes. Instead:
//
//   - distances inside a server are computed once, on the first server (the template), for every
//     pair of its nodes, over its own links only;
//   - distances across the network come from the tree, toward the "exits" (a NIC's network
//     port) of the destination's server;
//   - a shortest path is then the best combination: from a node n of server s to endpoint b of
//     server s', min over exits e of s and e' of s' of inside(n, exit e) + 1 + tree(leaf of e,
//     exit e') + inside(exit e', b), and inside(n, b) when s = s'. A network switch's distance
//     is min over e' of tree(n, exit e') + inside(exit e', b).
//
// Paths through a third server are never shorter: an exit node (a NIC) has a single link into its
// server, so crossing a server means a NIC-to-NIC path inside it that a path leaving by the
// right NIC in the first place beats (buildCluster checks that every exit node has one inside
// link, and spot-checks a few destinations against a breadth-first search).
//
// Next hops follow from the distances (a port is a next hop when its peer is one link closer)
// and are memoized per (node, destination) as they are asked for: memory grows with the pairs a
// run touches, not with the square of the cluster. Routes is safe for concurrent use.
type clusterRoutes struct {
	g    *Graph
	tree *treeRoutes
	// block[n] is node n's server block, -1 for network switches; local[n] its index in the block.
	block []int32
	local []int32
	// nodes[b] lists block b's nodes by local index (a block's nodes in ID order).
	nodes [][]NodeID
	L     int     // nodes per block
	exits []int32 // the template's exit nodes (local index), one per exit, in (node, port) order
	exitP []int32 // and their network port
	// din[a*L+b] is the template distance from local node a to local node b over the block's
	// own links (intermediate nodes are switches), unreachable = inf.
	din []int32

	shards [memoShards]memoShard
	setMu  sync.Mutex
	sets   map[string][]int32
}

const (
	inf        = int32(1 << 29)
	memoShards = 64
)

type memoShard struct {
	mu sync.RWMutex
	m  map[uint64]*clusterEntry
}

type clusterEntry struct {
	ports []int32
	hops  int32
}

// buildCluster returns the cluster routes of g, or nil when g is not a cluster of identical
// servers on a tree network.
func buildCluster(g *Graph) *clusterRoutes {
	N := len(g.Nodes)
	c := &clusterRoutes{g: g, block: make([]int32, N), local: make([]int32, N), sets: map[string][]int32{}}
	index := map[int32]int32{}
	netSwitch := func(id NodeID) bool { n := &g.Nodes[id]; return n.Kind == Switch && n.Tier >= 1 }
	for i := range g.Nodes {
		n := &g.Nodes[i]
		if netSwitch(NodeID(i)) {
			c.block[i], c.local[i] = -1, -1
			continue
		}
		if n.Tier != 0 || n.Server < 0 {
			return nil
		}
		b, ok := index[n.Server]
		if !ok {
			b = int32(len(c.nodes))
			index[n.Server] = b
			c.nodes = append(c.nodes, nil)
		}
		c.block[i], c.local[i] = b, int32(len(c.nodes[b]))
		c.nodes[b] = append(c.nodes[b], NodeID(i))
	}
	if len(c.nodes) == 0 {
		return nil
	}
	c.L = len(c.nodes[0])
	tpl := c.nodes[0]
	// Every block must be the template's copy, port for port.
	for b, nodes := range c.nodes {
		if len(nodes) != c.L {
			return nil
		}
		for i, id := range nodes {
			n, t := &g.Nodes[id], &g.Nodes[tpl[i]]
			if n.Kind != t.Kind || len(n.Ports) != len(t.Ports) {
				return nil
			}
			for p, pt := range n.Ports {
				tp := t.Ports[p]
				switch {
				case netSwitch(pt.Peer) != netSwitch(tp.Peer):
					return nil
				case netSwitch(pt.Peer):
				case c.block[pt.Peer] != int32(b) || c.local[pt.Peer] != c.local[tp.Peer] || pt.PeerPort != tp.PeerPort:
					return nil
				}
			}
		}
	}
	// Exits of the template; each exit node must have exactly one link into its block.
	for i, id := range tpl {
		n := &g.Nodes[id]
		inside, out := 0, 0
		for p, pt := range n.Ports {
			if netSwitch(pt.Peer) {
				c.exits = append(c.exits, int32(i))
				c.exitP = append(c.exitP, int32(p))
				out++
			} else {
				inside++
			}
		}
		if out > 0 && (inside != 1 || n.Kind != Switch) {
			return nil
		}
	}
	E := len(c.exits)
	if E == 0 {
		return nil
	}
	atts := make([]treeAttachment, 0, len(c.nodes)*E)
	for _, nodes := range c.nodes {
		for e := range c.exits {
			pt := g.Nodes[nodes[c.exits[e]]].Ports[c.exitP[e]]
			atts = append(atts, treeAttachment{leaf: pt.Peer, port: pt.PeerPort})
		}
	}
	tree := buildTreeTiers(g, atts)
	if tree == nil {
		return nil
	}
	c.tree = tree
	// Template distances, one backward breadth-first search per target.
	L := c.L
	c.din = make([]int32, L*L)
	queue := make([]int32, 0, L)
	for tgt := 0; tgt < L; tgt++ {
		for a := 0; a < L; a++ {
			c.din[a*L+tgt] = inf
		}
		c.din[tgt*L+tgt] = 0
		queue = append(queue[:0], int32(tgt))
		for qi := 0; qi < len(queue); qi++ {
			u := queue[qi]
			// Only a switch passes traffic on; the target itself may be a host.
			if int(u) != tgt && g.Nodes[tpl[u]].Kind != Switch {
				continue
			}
			for _, pt := range g.Nodes[tpl[u]].Ports {
				if netSwitch(pt.Peer) {
					continue
				}
				v := c.local[pt.Peer]
				if c.din[int(v)*L+tgt] == inf {
					c.din[int(v)*L+tgt] = c.din[int(u)*L+tgt] + 1
					queue = append(queue, v)
				}
			}
		}
	}
	for i := range c.shards {
		c.shards[i].m = map[uint64]*clusterEntry{}
	}
	if !c.spotCheck() {
		return nil
	}
	return c
}

// spotCheck compares the hop counts toward a few destinations (the first and last endpoint, and
// one of the middle server) with a breadth-first search over the whole graph, at every network
// switch and at every node of a few servers (the first two, the middle and the last one, and the
// destination's): linear in the size of the cluster.
func (c *clusterRoutes) spotCheck() bool {
	g := c.g
	H := len(g.Hosts)
	B := len(c.nodes)
	dist := make([]int32, len(g.Nodes))
	var queue []NodeID
	for _, d := range []int{0, H / 2, H - 1} {
		dn := g.Hosts[d]
		queue = switchDistances(g, dn, dist, queue)
		check := func(n NodeID) bool {
			return g.Nodes[n].Kind != Switch || int32(c.hops(n, d)) == dist[n]
		}
		for i := range g.Nodes {
			if c.block[i] < 0 && !check(NodeID(i)) {
				return false
			}
		}
		for _, b := range []int{0, min(1, B-1), B / 2, B - 1, int(c.block[dn])} {
			for _, n := range c.nodes[b] {
				if !check(n) {
					return false
				}
			}
		}
	}
	return true
}

// dest splits endpoint d into its block and local index.
func (c *clusterRoutes) dest(d int) (int, int) {
	n := c.g.Hosts[d]
	return int(c.block[n]), int(c.local[n])
}

// netDist is the distance from tree switch n to local node beta of block sd.
func (c *clusterRoutes) netDist(n NodeID, sd, beta int) int32 {
	best := inf
	E := len(c.exits)
	for e, x := range c.exits {
		in := c.din[int(x)*c.L+beta]
		if in >= best {
			continue
		}
		if h := c.tree.hops(n, sd*E+e); h >= 0 {
			best = min(best, int32(h)+in)
		}
	}
	return best
}

// exitCosts fills ec[e] with the distance from block s's exit e onward through the network:
// 1 (to its leaf) + netDist(leaf, ...).
func (c *clusterRoutes) exitCosts(ec []int32, s, sd, beta int) []int32 {
	E := len(c.exits)
	for e := range c.exits {
		ec[e] = 1 + c.netDist(c.tree.leaf[s*E+e], sd, beta)
	}
	return ec
}

// blockDist is the distance from local node a of block s to local node beta of block sd, given
// s's exit costs.
func (c *clusterRoutes) blockDist(a, s, sd, beta int, ec []int32) int32 {
	L := c.L
	best := inf
	if s == sd {
		best = c.din[a*L+beta]
	}
	for e, x := range c.exits {
		if v := c.din[a*L+int(x)] + ec[e]; v < best {
			best = v
		}
	}
	return best
}

func (c *clusterRoutes) memo(n NodeID, d int) (*memoShard, uint64) {
	k := uint64(n)<<32 | uint64(uint32(d))
	return &c.shards[(k*0x9e3779b97f4a7c15)>>58], k
}

func (c *clusterRoutes) lookup(n NodeID, d int) *clusterEntry {
	sh, k := c.memo(n, d)
	sh.mu.RLock()
	e := sh.m[k]
	sh.mu.RUnlock()
	if e != nil {
		return e
	}
	e = c.compute(n, d)
	sh.mu.Lock()
	sh.m[k] = e
	sh.mu.Unlock()
	return e
}

// intern returns the shared copy of a port set.
func (c *clusterRoutes) intern(ports []int32) []int32 {
	if len(ports) == 0 {
		return nil
	}
	var kb [64]byte
	key := kb[:0]
	for _, p := range ports {
		key = binary.LittleEndian.AppendUint32(key, uint32(p))
	}
	c.setMu.Lock()
	defer c.setMu.Unlock()
	if s, ok := c.sets[string(key)]; ok {
		return s
	}
	s := append([]int32(nil), ports...)
	c.sets[string(key)] = s
	return s
}

// compute finds node n's next hops and distance toward endpoint d.
func (c *clusterRoutes) compute(n NodeID, d int) *clusterEntry {
	g := c.g
	sd, beta := c.dest(d)
	var ports []int32
	if c.block[n] < 0 {
		// A network switch: the union of the tree's next hops toward every best exit.
		dist := c.netDist(n, sd, beta)
		if dist >= inf {
			return &clusterEntry{hops: -1}
		}
		E := len(c.exits)
		for e, x := range c.exits {
			a := sd*E + e
			h := c.tree.hops(n, a)
			if h < 0 || int32(h)+c.din[int(x)*c.L+beta] != dist {
				continue
			}
			ports = append(ports, c.tree.nextHops(n, a)...)
		}
		return &clusterEntry{ports: c.intern(sortedUnique(ports)), hops: dist}
	}
	s, a := int(c.block[n]), int(c.local[n])
	var ecb [16]int32
	ec := ecb[:0]
	if len(c.exits) <= len(ecb) {
		ec = ecb[:len(c.exits)]
	} else {
		ec = make([]int32, len(c.exits))
	}
	c.exitCosts(ec, s, sd, beta)
	dist := c.blockDist(a, s, sd, beta, ec)
	if dist >= inf {
		return &clusterEntry{hops: -1}
	}
	if dist == 0 {
		return &clusterEntry{hops: 0}
	}
	node := &g.Nodes[n]
	if node.Kind == Host {
		return &clusterEntry{ports: hostPort, hops: dist}
	}
	dn := g.Hosts[d]
	for p, pt := range node.Ports {
		m := pt.Peer
		switch {
		case c.block[m] < 0:
			// A NIC's network port: one link to the leaf, then the leaf's way.
			if 1+c.netDist(m, sd, beta) == dist {
				ports = append(ports, int32(p))
			}
		case m == dn:
			if dist == 1 {
				ports = append(ports, int32(p))
			}
		case g.Nodes[m].Kind == Switch:
			if c.blockDist(int(c.local[m]), s, sd, beta, ec) == dist-1 {
				ports = append(ports, int32(p))
			}
		}
	}
	return &clusterEntry{ports: c.intern(ports), hops: dist}
}

func sortedUnique(p []int32) []int32 {
	for i := 1; i < len(p); i++ {
		for j := i; j > 0 && p[j] < p[j-1]; j-- {
			p[j], p[j-1] = p[j-1], p[j]
		}
	}
	out := p[:0]
	for i, x := range p {
		if i == 0 || x != p[i-1] {
			out = append(out, x)
		}
	}
	return out
}

func (c *clusterRoutes) nextHops(n NodeID, d int) []int32 { return c.lookup(n, d).ports }

func (c *clusterRoutes) hopsTo(n NodeID, d int) int { return int(c.lookup(n, d).hops) }

// hops is hopsTo without the memo (for the spot check).
func (c *clusterRoutes) hops(n NodeID, d int) int {
	e := c.compute(n, d)
	return int(e.hops)
}

func (c *clusterRoutes) distinctPortSets() int {
	c.setMu.Lock()
	defer c.setMu.Unlock()
	return len(c.sets) + 1
}

func (c *clusterRoutes) bytes() int64 {
	b := int64(len(c.block))*8 + int64(len(c.din))*4 + c.tree.bytes()
	for i := range c.shards {
		c.shards[i].mu.RLock()
		b += int64(len(c.shards[i].m)) * 48
		c.shards[i].mu.RUnlock()
	}
	return b
}

// firstPath is Routes.FirstPath without the memo: the exit costs of the source server and of
// the destination's are computed once for the whole path, and each node takes its lowest port
// one link closer. Linear in the path, and it stores nothing (a ring over 100,000 GPUs asks for
// a million paths once each).
func (c *clusterRoutes) firstPath(src, dst int) []NodeID {
	g := c.g
	sd, beta := c.dest(dst)
	E := len(c.exits)
	// A shortest path touches at most two servers (its ends): two slots of exit costs.
	var slot [2]struct {
		s  int
		ec []int32
	}
	slot[0].s, slot[1].s = -1, -1
	ecOf := func(s int) []int32 {
		for i := range slot {
			if slot[i].s == s {
				return slot[i].ec
			}
		}
		i := 0
		if slot[0].s >= 0 {
			i = 1
		}
		if slot[i].ec == nil {
			slot[i].ec = make([]int32, E)
		}
		slot[i].s = s
		return c.exitCosts(slot[i].ec, s, sd, beta)
	}
	dist := func(n NodeID) int32 {
		if c.block[n] < 0 {
			return c.netDist(n, sd, beta)
		}
		s := int(c.block[n])
		return c.blockDist(int(c.local[n]), s, sd, beta, ecOf(s))
	}
	n := g.Hosts[src]
	h := dist(n)
	if h >= inf {
		return nil
	}
	path := make([]NodeID, 0, h+1)
	path = append(path, n)
	dn := g.Hosts[dst]
	for n != dn {
		next := NodeID(-1)
		if g.Nodes[n].Kind == Host {
			next = g.Nodes[n].Ports[0].Peer
		} else {
			for _, pt := range g.Nodes[n].Ports {
				m := pt.Peer
				if m == dn || (g.Nodes[m].Kind == Switch && dist(m) == h-1) {
					next = m
					break
				}
			}
		}
		if next < 0 {
			return nil
		}
		n, h = next, h-1
		path = append(path, n)
	}
	return path
}
