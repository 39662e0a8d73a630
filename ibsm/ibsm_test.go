package ibsm

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

var link = topo.LinkSpec{Rate: 100 * units.Gbps, Latency: units.Microsecond}

func fatTree(t *testing.T, k int) *topo.Graph {
	t.Helper()
	g, err := topo.FatTree(k, link)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// ring joins n switches in a cycle with one host on each.
func ring(n int) *topo.Graph {
	g := &topo.Graph{Name: "ring"}
	sw := make([]topo.NodeID, n)
	for i := range sw {
		sw[i] = g.AddNode(topo.Switch, fmt.Sprintf("sw%d", i), 1)
	}
	for i := range sw {
		g.Connect(sw[i], sw[(i+1)%n], link.Rate, link.Latency)
	}
	for i := range sw {
		h := g.AddNode(topo.Host, fmt.Sprintf("host%d", i), 0)
		g.Connect(h, sw[i], link.Rate, link.Latency)
	}
	return g
}

// randomGraph is a connected random graph of n switches (a random spanning tree plus extra
// links, so it has cycles) with 1..2 hosts per switch.
func randomGraph(rng *rand.Rand, n, extra int) *topo.Graph {
	g := &topo.Graph{Name: "random"}
	sw := make([]topo.NodeID, n)
	for i := range sw {
		sw[i] = g.AddNode(topo.Switch, fmt.Sprintf("sw%d", i), 1)
		if i > 0 {
			g.Connect(sw[i], sw[rng.IntN(i)], link.Rate, link.Latency)
		}
	}
	for e := 0; e < extra; e++ {
		a, b := rng.IntN(n), rng.IntN(n)
		if a != b {
			g.Connect(sw[a], sw[b], link.Rate, link.Latency)
		}
	}
	for i := range sw {
		for h := 0; h < 1+rng.IntN(2); h++ {
			hn := g.AddNode(topo.Host, fmt.Sprintf("host%d_%d", i, h), 0)
			g.Connect(hn, sw[i], link.Rate, link.Latency)
		}
	}
	return g
}

// TestFatTreeEngines: on k=4 and k=8 fat trees every engine routes every pair over a
// minimum-hop path (2, 4 or 6 links, Al-Fares et al.) and is deadlock free, adaptive groups
// included.
func TestFatTreeEngines(t *testing.T) {
	for _, k := range []int{4, 8} {
		g := fatTree(t, k)
		r, err := topo.ComputeRoutes(g)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range Engines {
			tb, err := Compute(g, e)
			if err != nil {
				t.Fatal(err)
			}
			if err := tb.Verify(); err != nil {
				t.Fatalf("k=%d %s: %v", k, e, err)
			}
			for s := 0; s < len(g.Hosts); s += 3 {
				for d := 0; d < len(g.Hosts); d += 5 {
					if s == d {
						continue
					}
					p, _ := tb.Path(s, d)
					if len(p)-1 != r.ShortestPathHops(s, d) {
						t.Fatalf("k=%d %s: host %d -> %d takes %d links, shortest is %d", k, e, s, d, len(p)-1, r.ShortestPathHops(s, d))
					}
				}
			}
			for _, ar := range []bool{false, true} {
				if c := tb.DependencyCycle(ar); c != nil {
					t.Errorf("k=%d %s adaptive=%v: channel dependency cycle %v", k, e, ar, c)
				}
			}
			// Adaptive groups of an edge switch toward another pod hold all k/2 uplinks.
			edge := topo.NodeID(len(g.Hosts))
			if got := len(tb.Group(edge, len(g.Hosts)-1)); got != k/2 {
				t.Errorf("k=%d %s: edge group toward a remote pod has %d ports, want %d", k, e, got, k/2)
			}
		}
	}
}

// linkLoads counts the flows of a permutation on every directed link under LFT routing.
func linkLoads(t *testing.T, tb *Tables, g *topo.Graph, dst func(int) int) map[[2]topo.NodeID]int {
	load := map[[2]topo.NodeID]int{}
	for s := range g.Hosts {
		p, err := tb.Path(s, dst(s))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+1 < len(p); i++ {
			load[[2]topo.NodeID{p[i], p[i+1]}]++
		}
	}
	return load
}

// TestDModKShiftIsContentionFree: Zahavi et al. (2010) show D-mod-K routes every shift
// permutation on a full fat tree with at most one flow per link; on the k=8 tree (128 hosts)
// that holds for every shift 1..127. Min-hop balancing without the modulo does not: some shift
// puts two flows on one link.
func TestDModKShiftIsContentionFree(t *testing.T) {
	g := fatTree(t, 8)
	H := len(g.Hosts)
	dmodk, _ := Compute(g, "dmodk")
	minhop, _ := Compute(g, "minhop")
	worstMinhop := 0
	for shift := 1; shift < H; shift++ {
		f := func(s int) int { return (s + shift) % H }
		for l, c := range linkLoads(t, dmodk, g, f) {
			if c > 1 {
				t.Fatalf("shift %d: link %s->%s carries %d flows under D-mod-K", shift, g.Nodes[l[0]].Name, g.Nodes[l[1]].Name, c)
			}
		}
		for _, c := range linkLoads(t, minhop, g, f) {
			worstMinhop = max(worstMinhop, c)
		}
	}
	if worstMinhop < 2 {
		t.Errorf("min-hop balancing routed every shift contention-free too (worst load %d): the comparison shows nothing", worstMinhop)
	}
	t.Logf("worst link load over all shifts: dmodk 1, minhop %d", worstMinhop)
}

// TestRingMinHopDeadlocks: on a ring of 5 switches min-hop routes go two hops clockwise and two
// hops counter-clockwise, closing a cycle of channel dependencies (the textbook deadlock of
// credit-based networks); up*/down* breaks it.
func TestRingMinHopDeadlocks(t *testing.T) {
	g := ring(5)
	mh, err := Compute(g, "minhop")
	if err != nil {
		t.Fatal(err)
	}
	if c := mh.DependencyCycle(false); len(c) != 5 {
		t.Errorf("minhop on a 5-ring: dependency cycle %v, want one of the ring's 5 channels", c)
	}
	ud, err := Compute(g, "updown")
	if err != nil {
		t.Fatal(err)
	}
	if err := ud.Verify(); err != nil {
		t.Fatal(err)
	}
	if c := ud.DependencyCycle(true); c != nil {
		t.Errorf("updown on a 5-ring: dependency cycle %v", c)
	}
	// The ring's centre is sw0 (all eccentricities are 2): the link sw2-sw3 is never climbed
	// from both ends, so host2 -> host3 is direct but the up*/down* rule may lengthen others.
	if ud.Rank[0] != 0 || ud.Rank[2] != 2 || ud.Rank[3] != 2 {
		t.Errorf("ranks %v, want sw0 root, sw2/sw3 at rank 2", ud.Rank[:5])
	}
}

// TestUpDownRandomGraphs: up*/down* on random irregular graphs always yields complete,
// loop-free routes with an acyclic channel dependency graph, adaptive groups included.
func TestUpDownRandomGraphs(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 0))
	cyclicMinhop := 0
	for i := 0; i < 40; i++ {
		g := randomGraph(rng, 3+rng.IntN(10), rng.IntN(8))
		ud, err := Compute(g, "updown")
		if err != nil {
			t.Fatal(err)
		}
		if err := ud.Verify(); err != nil {
			t.Fatalf("graph %d: %v", i, err)
		}
		if c := ud.DependencyCycle(true); c != nil {
			t.Fatalf("graph %d: up*/down* dependency cycle %v", i, c)
		}
		mh, _ := Compute(g, "minhop")
		if err := mh.Verify(); err != nil {
			t.Fatalf("graph %d: minhop: %v", i, err)
		}
		if mh.DependencyCycle(false) != nil {
			cyclicMinhop++
		}
	}
	if cyclicMinhop == 0 {
		t.Errorf("no random graph gave min-hop a dependency cycle: the test graphs are too tame")
	}
	t.Logf("min-hop had a dependency cycle on %d of 40 random graphs; up*/down* on none", cyclicMinhop)
}

func TestUnknownEngine(t *testing.T) {
	_, err := Compute(ring(3), "ftree")
	if err == nil || !strings.Contains(err.Error(), "minhop, dmodk, updown") {
		t.Errorf("error %v, want the valid engines listed", err)
	}
}

// TestMinHopBalances: on a k=4 fat tree OpenSM-style min-hop balancing spreads the 14
// destinations an edge switch sends up over its 2 uplinks, 7 and 7; its 2 hosts get one each.
func TestMinHopBalances(t *testing.T) {
	g := fatTree(t, 4)
	tb, _ := Compute(g, "minhop")
	edge := topo.NodeID(len(g.Hosts))
	count := map[int32]int{}
	for d := range g.Hosts {
		count[tb.Port(edge, d)]++
	}
	if count[2] != 7 || count[3] != 7 || count[0] != 1 || count[1] != 1 {
		t.Errorf("edge0_0 port loads %v, want hosts 1+1 and uplinks 7+7", count)
	}
}
