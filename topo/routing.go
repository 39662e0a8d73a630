package topo

import "fmt"

// Routes gives, for every node and every destination host, the ports that lie on a shortest
// (minimum-hop) path toward that host: the candidate set an ECMP hash, a linear forwarding table
// or adaptive routing chooses from. As in HPCC's ns-3 routing (CalculateRoute in
// scratch/third.cc), paths never pass through a host: only switches forward.
//
// ComputeRoutes picks the form by the graph's shape; all give the same next-hop sets, in
// ascending port order:
//
//   - tree: layered trees (fat trees, leaf-spines, rail-optimized and multi-tier Clos fabrics,
//     multi-plane ones) are routed from their regularity (treeRoutes), in memory linear in the
//     network;
//   - cluster: GPU clusters, a network tree plus identical servers whose insides (NVLink,
//     PCIe, NICs, CPUs) are routed once per server type (clusterRoutes);
//   - table: any other graph gets a breadth-first table of switches x hosts entries
//     (tableRoutes), quadratic in size; fine for the small imported topologies that need it.
type Routes struct {
	g    *Graph
	tree *treeRoutes // tree form: hosts are its attachments
	tab  *tableRoutes
	clus *clusterRoutes
}

// Form names how a Routes computes next hops: "tree", "cluster" or "table".
func (rt *Routes) Form() string {
	switch {
	case rt.tree != nil:
		return "tree"
	case rt.clus != nil:
		return "cluster"
	}
	return "table"
}

// ComputeRoutes returns the routes of g in the most compact form its shape allows (see Routes).
// g must pass Validate (every host has exactly one port).
func ComputeRoutes(g *Graph) (*Routes, error) {
	if err := g.Validate(); err != nil {
		return nil, fmt.Errorf("routes: %w", err)
	}
	atts := hostAttachments(g)
	if t := buildTreeTiers(g, atts); t != nil {
		return &Routes{g: g, tree: t}, nil
	}
	if c := buildCluster(g); c != nil {
		return &Routes{g: g, clus: c}, nil
	}
	return ComputeTableRoutes(g)
}

// ComputeTableRoutes returns the breadth-first table form whatever the shape (for tests that
// compare the forms, and for graphs a caller wants routed the plain way).
func ComputeTableRoutes(g *Graph) (*Routes, error) {
	if err := g.Validate(); err != nil {
		return nil, fmt.Errorf("routes: %w", err)
	}
	t, err := computeTable(g)
	if err != nil {
		return nil, err
	}
	return &Routes{g: g, tab: t}, nil
}

// NextHops returns the ports of node n on shortest paths to host dstHost; empty when n is that
// host or cannot reach it. The slice is shared: do not modify it.
func (rt *Routes) NextHops(n NodeID, dstHost int) []int32 {
	if t := rt.tree; t != nil {
		if t.node[n].group >= 0 {
			return t.nextHops(n, dstHost)
		}
		if rt.Hops(n, dstHost) <= 0 {
			return nil
		}
		return hostPort
	}
	if c := rt.clus; c != nil {
		return c.nextHops(n, dstHost)
	}
	return rt.tab.nextHops(n, dstHost)
}

// Hops returns the number of links on a shortest path from node n to host dstHost: 0 at the host
// itself, -1 when unreachable.
func (rt *Routes) Hops(n NodeID, dstHost int) int {
	if t := rt.tree; t != nil {
		if t.node[n].group >= 0 {
			return t.hops(n, dstHost)
		}
		// A host: 0 at the destination, else one link to its leaf and on from there.
		if rt.g.Hosts[dstHost] == n {
			return 0
		}
		if h := t.hops(rt.g.Nodes[n].Ports[0].Peer, dstHost); h >= 0 {
			return h + 1
		}
		return -1
	}
	if c := rt.clus; c != nil {
		return c.hopsTo(n, dstHost)
	}
	return rt.tab.hopsTo(n, dstHost)
}

// ShortestPathHops returns the number of links on a shortest path between two hosts, or -1.
func (rt *Routes) ShortestPathHops(srcHost, dstHost int) int {
	return rt.Hops(rt.g.Hosts[srcHost], dstHost)
}

// FirstPath returns the nodes of one shortest path from srcHost to dstHost, always taking the
// lowest-numbered next-hop port (what a deterministic linear forwarding table without spreading
// would do); nil when unreachable. For tests and reports.
func (rt *Routes) FirstPath(srcHost, dstHost int) []NodeID {
	if c := rt.clus; c != nil {
		return c.firstPath(srcHost, dstHost)
	}
	n := rt.g.Hosts[srcHost]
	h := rt.Hops(n, dstHost)
	if h < 0 {
		return nil
	}
	path := make([]NodeID, 0, h+1)
	path = append(path, n)
	for n != rt.g.Hosts[dstHost] {
		nh := rt.NextHops(n, dstHost)
		n = rt.g.Nodes[n].Ports[nh[0]].Peer
		path = append(path, n)
	}
	return path
}

// PathBy returns the nodes of one shortest path from srcHost to dstHost on which choose picks
// the port wherever a node has several next hops (a flow's ECMP hash, say: the per-flow path a
// flow-level backend needs, with no table behind it); nil when unreachable. choose must return
// one of the ports it is given.
func (rt *Routes) PathBy(srcHost, dstHost int, choose func(n NodeID, hops []int32) int32) []NodeID {
	n := rt.g.Hosts[srcHost]
	h := rt.Hops(n, dstHost)
	if h < 0 {
		return nil
	}
	path := make([]NodeID, 0, h+1)
	path = append(path, n)
	for n != rt.g.Hosts[dstHost] {
		nh := rt.NextHops(n, dstHost)
		p := nh[0]
		if len(nh) > 1 {
			p = choose(n, nh)
		}
		n = rt.g.Nodes[n].Ports[p].Peer
		path = append(path, n)
	}
	return path
}

// DistinctPortSets is the number of distinct next-hop sets the routes hold (the empty set
// included).
func (rt *Routes) DistinctPortSets() int {
	switch {
	case rt.tree != nil:
		return len(rt.tree.sets)
	case rt.clus != nil:
		return rt.clus.distinctPortSets()
	}
	return rt.tab.distinctPortSets()
}

// Bytes is the memory held by the routes (excluding the graph).
func (rt *Routes) Bytes() int64 {
	switch {
	case rt.tree != nil:
		return rt.tree.bytes()
	case rt.clus != nil:
		return rt.clus.bytes()
	}
	return rt.tab.bytes()
}

// buildTreeTiers builds the tree form with the graph's own tiers or, failing that, with tiers
// inferred from the attachments (for imported topologies).
func buildTreeTiers(g *Graph, atts []treeAttachment) *treeRoutes {
	if t, _ := buildTree(g, atts, nodeTiers(g)); t != nil {
		return t
	}
	t, _ := buildTree(g, atts, inferTiers(g, atts))
	return t
}

// SameSetRank returns, for routes of the tree form, the number of destination hosts below
// dstHost that switch n forwards over the same next-hop set as dstHost, and true; false for the
// other forms and for hosts. A subnet manager that spreads destinations over equal ports in
// host order (OpenSM's min-hop balancing: each destination takes the least-loaded candidate,
// the lowest port on ties) gives dstHost the candidate at this rank modulo the set's size, since
// in a tree two sets at a switch are equal or share no port: package ibsm computes linear
// forwarding table entries from it on demand.
func (rt *Routes) SameSetRank(n NodeID, dstHost int) (int, bool) {
	if rt.tree == nil || rt.tree.node[n].group < 0 {
		return 0, false
	}
	return rt.tree.sameSetRank(n, dstHost), true
}

// Tree says whether the routes are of the tree form (computed from a layered tree's regularity).
func (rt *Routes) Tree() bool { return rt.tree != nil }
