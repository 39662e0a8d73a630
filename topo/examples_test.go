package topo_test

import (
	"testing"

	"github.com/fabricsim/fabricsim/examples"
	"github.com/fabricsim/fabricsim/scenario"
	"github.com/fabricsim/fabricsim/topo"
)

// TestExampleRoutesMatchTable routes every example scenario's topology both ways (the form
// ComputeRoutes picks, and the breadth-first table) and compares every next-hop set and hop
// count.
func TestExampleRoutesMatchTable(t *testing.T) {
	forms := map[string]int{}
	for _, name := range examples.Names() {
		data, err := examples.Read(name)
		if err != nil {
			t.Fatal(err)
		}
		s, err := scenario.Parse(data, name, "../examples")
		if err != nil {
			continue // not a run scenario (compare, sweep)
		}
		g, err := s.BuildTopology()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		rt, err := topo.ComputeRoutes(g)
		if err != nil {
			t.Fatal(err)
		}
		forms[rt.Form()]++
		if rt.Form() == "table" {
			continue
		}
		tab, err := topo.ComputeTableRoutes(g)
		if err != nil {
			t.Fatal(err)
		}
		for n := range g.Nodes {
			for d := range g.Hosts {
				x, y := rt.NextHops(topo.NodeID(n), d), tab.NextHops(topo.NodeID(n), d)
				if len(x) != len(y) {
					t.Fatalf("%s: %s -> host %d: %v vs table %v", name, g.Nodes[n].Name, d, x, y)
				}
				for i := range x {
					if x[i] != y[i] {
						t.Fatalf("%s: %s -> host %d: %v vs table %v", name, g.Nodes[n].Name, d, x, y)
					}
				}
				if rt.Hops(topo.NodeID(n), d) != tab.Hops(topo.NodeID(n), d) {
					t.Fatalf("%s: %s -> host %d: hops differ", name, g.Nodes[n].Name, d)
				}
			}
		}
	}
	if forms["tree"] == 0 {
		t.Fatalf("no example was routed as a tree: %v", forms)
	}
	t.Logf("forms: %v", forms)
}
