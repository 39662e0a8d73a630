package cluster

import (
	"testing"

	"github.com/fabricsim/fabricsim/gpu"
	"github.com/fabricsim/fabricsim/topo"
)

// TestClusterRoutesMatchTable checks the cluster form of the routes (servers routed once per
// type, the network as a tree) against the breadth-first table, next-hop set by next-hop set, on
// every server model and on rail-optimized networks of one, two and three tiers.
func TestClusterRoutesMatchTable(t *testing.T) {
	for _, c := range []struct {
		name    string
		servers int
		srv     string
		net     Network
		gpus    int // GPUs (and NICs) per server; 0 keeps the model's
	}{
		{"h100x1", 1, "h100", Network{}, 0},
		{"h100x4", 4, "h100", Network{}, 0},
		{"pcie-x6", 6, "pcie", Network{Radix: 8}, 0},
		{"a100x3-radix8", 3, "a100", Network{Radix: 8}, 0},
		{"h100x6-3tier", 6, "h100", Network{Kind: "clos", Clos: topo.ClosSpec{RailOptimized: true, Radix: 4, Tiers: 3}}, 2},
		{"h100x4-dualplane", 4, "h100", Network{Kind: "clos", Clos: topo.ClosSpec{RailOptimized: true, PortsPerNIC: 2, Radix: 8}}, 4},
		{"pcie-x4-railplanes", 4, "pcie", Network{Kind: "clos", Clos: topo.ClosSpec{RailOptimized: true, RailPlanes: true, Radix: 4, Tiers: 2}}, 0},
		{"h100x5-tor", 5, "h100", Network{Kind: "clos", Clos: topo.ClosSpec{Radix: 8, Tiers: 3}}, 2},
	} {
		srv, err := gpu.Preset(c.srv)
		if err != nil {
			t.Fatal(err)
		}
		if c.gpus > 0 {
			srv.GPUs, srv.NICs = c.gpus, c.gpus
		}
		cl, err := Build(Spec{Servers: c.servers, Server: srv, Net: c.net})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		rt, err := topo.ComputeRoutes(cl.Graph)
		if err != nil {
			t.Fatal(err)
		}
		if rt.Form() != "cluster" {
			t.Fatalf("%s: routed as %s, want cluster", c.name, rt.Form())
		}
		tab, err := topo.ComputeTableRoutes(cl.Graph)
		if err != nil {
			t.Fatal(err)
		}
		g := cl.Graph
		for n := range g.Nodes {
			for d := range g.Hosts {
				x, y := rt.NextHops(topo.NodeID(n), d), tab.NextHops(topo.NodeID(n), d)
				if !equal32(x, y) {
					t.Fatalf("%s: %s -> %s: cluster %v, table %v", c.name, g.Nodes[n].Name, g.Nodes[g.Hosts[d]].Name, x, y)
				}
				if h, k := rt.Hops(topo.NodeID(n), d), tab.Hops(topo.NodeID(n), d); h != k {
					t.Fatalf("%s: %s -> %s: cluster %d hops, table %d", c.name, g.Nodes[n].Name, g.Nodes[g.Hosts[d]].Name, h, k)
				}
			}
		}
	}
}

func equal32(a, b []int32) bool {
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

// TestClusterFirstPath: the cluster form's first path (computed without the memo) is the table's.
func TestClusterFirstPath(t *testing.T) {
	for _, net := range []Network{{}, {Kind: "clos", Clos: topo.ClosSpec{RailOptimized: true, PortsPerNIC: 2, Radix: 8}}} {
		srv, _ := gpu.Preset("h100")
		srv.GPUs, srv.NICs = 4, 4
		cl, err := Build(Spec{Servers: 6, Server: srv, Net: net})
		if err != nil {
			t.Fatal(err)
		}
		rt, _ := topo.ComputeRoutes(cl.Graph)
		tab, _ := topo.ComputeTableRoutes(cl.Graph)
		for s := range cl.Graph.Hosts {
			for d := range cl.Graph.Hosts {
				a, b := rt.FirstPath(s, d), tab.FirstPath(s, d)
				if len(a) != len(b) {
					t.Fatalf("%d -> %d: %v vs table %v", s, d, a, b)
				}
				for i := range a {
					if a[i] != b[i] {
						t.Fatalf("%d -> %d: %v vs table %v", s, d, a, b)
					}
				}
			}
		}
	}
}
