package topo

import (
	"testing"

	"github.com/fabricsim/fabricsim/units"
)

// SameRoutes asserts that two route forms of one graph give every node the same next-hop set
// and hop count toward every host (the forms must be interchangeable port for port).
func sameRoutes(t *testing.T, g *Graph, a, b *Routes) {
	t.Helper()
	for n := range g.Nodes {
		for d := range g.Hosts {
			x, y := a.NextHops(NodeID(n), d), b.NextHops(NodeID(n), d)
			if !equalPorts(x, y) {
				t.Fatalf("%s: %s -> host %d: %s next hops %v, %s %v", g.Name, g.Nodes[n].Name, d, a.Form(), x, b.Form(), y)
			}
			if h, k := a.Hops(NodeID(n), d), b.Hops(NodeID(n), d); h != k {
				t.Fatalf("%s: %s -> host %d: %s %d hops, %s %d", g.Name, g.Nodes[n].Name, d, a.Form(), h, b.Form(), k)
			}
		}
	}
}

// treeGraphs are layered trees of every generator and shape: the tree form must route them.
func treeGraphs(t *testing.T) []*Graph {
	var out []*Graph
	add := func(g *Graph, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, g)
	}
	for _, k := range []int{2, 4, 8} {
		add(FatTree(k, link400))
	}
	add(LeafSpine(LeafSpineSpec{Leaves: 4, Spines: 2, HostsPerLeaf: 6, Host: link400, LinksPerSpine: 3}))
	add(LeafSpine(LeafSpineSpec{Leaves: 1, HostsPerLeaf: 5, Host: link400}))
	add(RailOptimized(RailSpec{Servers: 12, NICsPerServer: 2, Radix: 8, Oversubscription: 3, NIC: link400}))
	add(RailOptimized(RailSpec{Servers: 24, NICsPerServer: 4, Radix: 16, NIC: link400}))
	add(RailOptimized(RailSpec{Servers: 6, NICsPerServer: 4, Radix: 8, Spines: NoSpines, NIC: link400}))
	add(Clos(ClosSpec{Servers: 30, NICsPerServer: 2, RailOptimized: true, Radix: 8, Tiers: 3, NIC: link400}))
	add(Clos(ClosSpec{Servers: 50, NICsPerServer: 4, RailOptimized: true, Radix: 16, ServersPerSU: 5, Tiers: 3, Oversubscription: []float64{1, 2}, NIC: link400}))
	add(Clos(ClosSpec{Servers: 128, Radix: 8, NIC: link400}))
	add(Clos(ClosSpec{Servers: 30, Radix: 8, Tiers: 3, Oversubscription: []float64{3}, NIC: link400}))
	add(Clos(ClosSpec{Servers: 24, NICsPerServer: 2, PortsPerNIC: 2, RailOptimized: true, Radix: 8, NIC: link400}))
	add(Clos(ClosSpec{Servers: 24, NICsPerServer: 4, RailPlanes: true, RailOptimized: true, Radix: 8, Tiers: 3, NIC: LinkSpec{Rate: 800 * units.Gbps}}))
	add(Clos(ClosSpec{Servers: 7, NICsPerServer: 2, Radix: 4, Tiers: 3, NIC: link400}))
	return out
}

func TestTreeRoutesMatchTable(t *testing.T) {
	for _, g := range treeGraphs(t) {
		tree, err := ComputeRoutes(g)
		if err != nil {
			t.Fatal(err)
		}
		if tree.Form() != "tree" {
			t.Fatalf("%s: routed as %s, want tree", g.Name, tree.Form())
		}
		tab, err := ComputeTableRoutes(g)
		if err != nil {
			t.Fatal(err)
		}
		sameRoutes(t, g, tree, tab)
	}
}

func TestTreeRoutesRejectNonTrees(t *testing.T) {
	// Shapes the tree form must leave to the table: switches on one tier joined to each other,
	// and spines whose leaf sets overlap (leaf 1 under both).
	pair := &Graph{Name: "pair"}
	s0, s1 := pair.AddNode(Switch, "s0", 1), pair.AddNode(Switch, "s1", 1)
	h0, h1 := pair.AddNode(Host, "h0", 0), pair.AddNode(Host, "h1", 0)
	pair.Connect(h0, s0, 1e9, 0)
	pair.Connect(h1, s1, 1e9, 0)
	pair.Connect(s0, s1, 1e9, 0)

	skip := &Graph{Name: "skip"}
	l0, l1 := skip.AddNode(Switch, "l0", 1), skip.AddNode(Switch, "l1", 1)
	c := skip.AddNode(Switch, "c", 3)
	a, b := skip.AddNode(Host, "a", 0), skip.AddNode(Host, "b", 0)
	skip.Connect(a, l0, 1e9, 0)
	skip.Connect(b, l1, 1e9, 0)
	skip.Connect(l0, c, 1e9, 0)
	skip.Connect(l1, c, 1e9, 0)

	overlap := &Graph{Name: "overlap"}
	var leaves [3]NodeID
	for i := range leaves {
		leaves[i] = overlap.AddNode(Switch, "leaf"+itoa(i), 1)
	}
	sp0, sp1 := overlap.AddNode(Switch, "spine0", 2), overlap.AddNode(Switch, "spine1", 2)
	for i := range leaves {
		overlap.Connect(overlap.AddNode(Host, "h"+itoa(i), 0), leaves[i], 1e9, 0)
	}
	overlap.Connect(leaves[0], sp0, 1e9, 0)
	overlap.Connect(leaves[1], sp0, 1e9, 0)
	overlap.Connect(leaves[1], sp1, 1e9, 0)
	overlap.Connect(leaves[2], sp1, 1e9, 0)

	// A link that skips a tier is a tree once the tiers are inferred from the hosts (as for
	// imported topologies, whose switches all have tier 1).
	rt, err := ComputeRoutes(skip)
	if err != nil {
		t.Fatal(err)
	}
	tab, _ := ComputeTableRoutes(skip)
	if rt.Form() != "tree" {
		t.Fatalf("skip: routed as %s, want a tree of inferred tiers", rt.Form())
	}
	sameRoutes(t, skip, rt, tab)

	for _, g := range []*Graph{pair, overlap} {
		rt, err := ComputeRoutes(g)
		if err != nil {
			t.Fatal(err)
		}
		if rt.Form() != "table" {
			t.Fatalf("%s: routed as %s, want the table", g.Name, rt.Form())
		}
		if tr := buildTreeTiers(g, hostAttachments(g)); tr != nil {
			t.Fatalf("%s: buildTree accepted it", g.Name)
		}
	}
}

func TestTreeRoutesMemoryLinear(t *testing.T) {
	// Doubling a three-tier fabric about doubles the routes' memory (the table would quadruple).
	size := func(servers int) int64 {
		g, err := Clos(ClosSpec{Servers: servers, RailOptimized: true, NIC: link400})
		if err != nil {
			t.Fatal(err)
		}
		rt, err := ComputeRoutes(g)
		if err != nil {
			t.Fatal(err)
		}
		return rt.Bytes()
	}
	a, b := size(512), size(1024)
	if r := float64(b) / float64(a); r > 2.2 {
		t.Fatalf("routes of 4,096 and 8,192 NIC ports: %d and %d bytes, ratio %.2f > 2.2", a, b, r)
	}
}

// TestPathBy: a path chosen port by port is a shortest path (its length is the hop count), and
// choosing the lowest port everywhere gives FirstPath.
func TestPathBy(t *testing.T) {
	g, err := Clos(ClosSpec{Servers: 30, NICsPerServer: 2, RailOptimized: true, Radix: 8, Tiers: 3, NIC: link400})
	if err != nil {
		t.Fatal(err)
	}
	rt, _ := ComputeRoutes(g)
	for s := 0; s < len(g.Hosts); s += 7 {
		for d := 0; d < len(g.Hosts); d += 5 {
			last := rt.PathBy(s, d, func(_ NodeID, hops []int32) int32 { return hops[len(hops)-1] })
			first := rt.PathBy(s, d, func(_ NodeID, hops []int32) int32 { return hops[0] })
			if len(last) != rt.ShortestPathHops(s, d)+1 || len(first) != len(last) {
				t.Fatalf("%d -> %d: paths of %d and %d nodes, %d hops", s, d, len(last), len(first), rt.ShortestPathHops(s, d))
			}
			fp := rt.FirstPath(s, d)
			for i := range fp {
				if fp[i] != first[i] {
					t.Fatalf("%d -> %d: %v vs FirstPath %v", s, d, first, fp)
				}
			}
		}
	}
}
