package topo

import (
	"testing"
)

func TestRoutesFatTree8(t *testing.T) {
	const k, h = 8, 4
	g, err := FatTree(k, link400)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := ComputeRoutes(g)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]NodeID{}
	for _, n := range g.Nodes {
		byName[n.Name] = n.ID
	}
	hostInPod := func(p, j, x int) int { return p*h*h + j*h + x }

	// Edge switch: toward a host in another pod, all k/2 uplinks (ports k/2..k-1); toward its
	// own host x, exactly port x.
	e := byName["edge0_1"]
	if got := rt.NextHops(e, hostInPod(3, 2, 1)); !equalPorts(got, []int32{4, 5, 6, 7}) {
		t.Errorf("edge0_1 -> remote pod: ports %v, want [4 5 6 7]", got)
	}
	if got := rt.NextHops(e, hostInPod(0, 1, 2)); !equalPorts(got, []int32{2}) {
		t.Errorf("edge0_1 -> its host x=2: ports %v, want [2]", got)
	}
	// Same pod, other edge: up through any of the k/2 aggregation switches.
	if got := rt.NextHops(e, hostInPod(0, 3, 0)); len(got) != h {
		t.Errorf("edge0_1 -> same pod other edge: %d next hops, want %d", len(got), h)
	}
	// Aggregation switch: k/2 core uplinks toward a remote pod; 1 port down toward its pod.
	a := byName["agg0_2"]
	if got := rt.NextHops(a, hostInPod(5, 0, 0)); !equalPorts(got, []int32{4, 5, 6, 7}) {
		t.Errorf("agg0_2 -> remote pod: ports %v, want [4 5 6 7]", got)
	}
	if got := rt.NextHops(a, hostInPod(0, 3, 1)); !equalPorts(got, []int32{3}) {
		t.Errorf("agg0_2 -> edge0_3's host: ports %v, want [3]", got)
	}
	// Core: exactly one port (the destination's pod) toward every host.
	for c := 0; c < h*h; c++ {
		core := byName["core"+itoa(c)]
		for dst := 0; dst < len(g.Hosts); dst++ {
			got := rt.NextHops(core, dst)
			if want := int32(dst / (h * h)); len(got) != 1 || got[0] != want {
				t.Fatalf("core%d -> host%d: ports %v, want [%d]", c, dst, got, want)
			}
			if hops := rt.Hops(core, dst); hops != 3 {
				t.Fatalf("core%d -> host%d: %d hops, want 3", c, dst, hops)
			}
		}
	}
	// Host to host: 2 links under one edge, 4 within a pod, 6 across pods.
	for src := 0; src < len(g.Hosts); src++ {
		for dst := 0; dst < len(g.Hosts); dst++ {
			want := 6
			switch {
			case src == dst:
				want = 0
			case src/h == dst/h:
				want = 2
			case src/(h*h) == dst/(h*h):
				want = 4
			}
			if got := rt.ShortestPathHops(src, dst); got != want {
				t.Fatalf("hops host%d->host%d = %d, want %d", src, dst, got, want)
			}
			if src != dst {
				if got := rt.NextHops(g.Hosts[src], dst); !equalPorts(got, []int32{0}) {
					t.Fatalf("host%d -> host%d: next hops %v, want [0]", src, dst, got)
				}
				if p := rt.FirstPath(src, dst); len(p) != want+1 || p[0] != g.Hosts[src] || p[want] != g.Hosts[dst] {
					t.Fatalf("FirstPath(%d,%d) = %v", src, dst, p)
				}
			}
		}
	}
	if got := rt.NextHops(g.Hosts[9], 9); len(got) != 0 {
		t.Errorf("next hops at the destination: %v, want none", got)
	}
	// Distinct sets in a k=8 fat tree: empty, each single port 0..7 (edge/agg down, core), the
	// edge and agg uplink sets {4..7}: 1 + 8 + 1 = 10.
	if n := rt.DistinctPortSets(); n != 10 {
		t.Errorf("distinct port sets = %d, want 10", n)
	}
}

func TestRoutesParallelLinks(t *testing.T) {
	// Two switches joined by 2 parallel links and a host on each: ECMP spans both links.
	g := &Graph{Name: "pair"}
	s0 := g.AddNode(Switch, "s0", 1)
	s1 := g.AddNode(Switch, "s1", 1)
	h0 := g.AddNode(Host, "h0", 0)
	h1 := g.AddNode(Host, "h1", 0)
	g.Connect(h0, s0, 1e9, 0)
	g.Connect(h1, s1, 1e9, 0)
	g.Connect(s0, s1, 1e9, 0)
	g.Connect(s0, s1, 1e9, 0)
	rt, err := ComputeRoutes(g)
	if err != nil {
		t.Fatal(err)
	}
	if got := rt.NextHops(s0, 1); !equalPorts(got, []int32{1, 2}) {
		t.Errorf("s0 -> h1 over parallel links: %v, want [1 2]", got)
	}
	if got := rt.ShortestPathHops(0, 1); got != 3 {
		t.Errorf("h0 -> h1: %d hops, want 3", got)
	}
}

func TestRoutesRejectInvalidGraph(t *testing.T) {
	g := &Graph{Name: "bad"}
	s := g.AddNode(Switch, "s", 1)
	h := g.AddNode(Host, "h", 0)
	g.Connect(h, s, 1e9, 0)
	g.Connect(h, s, 1e9, 0)
	if _, err := ComputeRoutes(g); err == nil {
		t.Fatal("ComputeRoutes accepted a host with two ports")
	}
}

func equalPorts(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// BenchmarkComputeRoutesFatTree16 targets well under a second and a few MB for the k=16 fat tree
// (1,024 hosts, 320 switches).
func BenchmarkComputeRoutesFatTree16(b *testing.B) {
	g, err := FatTree(16, link400)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var rt *Routes
	for b.Loop() {
		rt, err = ComputeRoutes(g)
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(rt.Bytes()), "table-bytes")
	b.ReportMetric(float64(rt.DistinctPortSets()), "port-sets")
}

func BenchmarkNextHops(b *testing.B) {
	g, _ := FatTree(16, link400)
	rt, _ := ComputeRoutes(g)
	n := NodeID(len(g.Hosts)) // first edge switch
	var sink int
	i := 0
	for b.Loop() {
		sink += len(rt.NextHops(n, i&1023))
		i++
	}
	_ = sink
}
