package ibsm_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/cluster"
	"github.com/fabricsim/fabricsim/gpu"
	"github.com/fabricsim/fabricsim/ibsm"
	"github.com/fabricsim/fabricsim/topo"
)

// TestServerFormMatchesStored: on GPU clusters of every server model and on rail-optimized
// networks of one, two and three tiers, planes included, the tables that keep no row for the
// servers' insides give every switch, internal or not, the LFT port and adaptive-routing group
// of the tables with a row for every switch, toward every endpoint, for every engine that routes
// the cluster (up*/down* refuses NVLink servers with a message); and they take less memory for
// the internal nodes than those rows (6 bytes an entry).
func TestServerFormMatchesStored(t *testing.T) {
	for _, c := range []struct {
		name    string
		servers int
		srv     string
		net     cluster.Network
		gpus    int // GPUs (and NICs) per server; 0 keeps the model's
	}{
		{"h100x16", 16, "h100", cluster.Network{}, 0},
		{"h100x12-radix16", 12, "h100", cluster.Network{Radix: 16}, 0},
		{"pcie-x6", 6, "pcie", cluster.Network{Radix: 8}, 0},
		{"a100x3-radix8", 3, "a100", cluster.Network{Radix: 8}, 0},
		{"h100x6-3tier", 6, "h100", cluster.Network{Kind: "clos", Clos: topo.ClosSpec{RailOptimized: true, Radix: 4, Tiers: 3}}, 2},
		{"h100x4-dualplane", 4, "h100", cluster.Network{Kind: "clos", Clos: topo.ClosSpec{RailOptimized: true, PortsPerNIC: 2, Radix: 8}}, 4},
		{"h100x5-tor", 5, "h100", cluster.Network{Kind: "clos", Clos: topo.ClosSpec{Radix: 8, Tiers: 3}}, 2},
	} {
		srv, err := gpu.Preset(c.srv)
		if err != nil {
			t.Fatal(err)
		}
		if c.gpus > 0 {
			srv.GPUs, srv.NICs = c.gpus, c.gpus
		}
		cl, err := cluster.Build(cluster.Spec{Servers: c.servers, Server: srv, Net: c.net})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		g := cl.Graph
		for _, engine := range ibsm.Engines {
			plain, err := ibsm.ComputeAllRows(g, engine)
			if engine == "updown" && cl.HasNVLink() {
				// up*/down* ranks switches by their switch-only distance from the core; an
				// NVSwitch hangs off GPUs only and has none.
				if err == nil || !strings.Contains(err.Error(), "use routing_engine minhop or dmodk for a GPU cluster") {
					t.Fatalf("%s: up*/down* on a GPU cluster with NVLink: %v", c.name, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s %s: %v", c.name, engine, err)
			}
			got, err := ibsm.Compute(g, engine)
			if err != nil {
				t.Fatalf("%s %s: %v", c.name, engine, err)
			}
			internal, ties := 0, 0
			for i := range g.Nodes {
				sw := topo.NodeID(i)
				if g.Nodes[i].Kind != topo.Switch {
					continue
				}
				if g.Nodes[i].Tier == 0 {
					internal++
				}
				for d := range g.Hosts {
					if a, b := got.Port(sw, d), plain.Port(sw, d); a != b {
						t.Fatalf("%s %s: %s -> %s: port %d, %d with every row", c.name, engine, g.Nodes[i].Name, g.Nodes[g.Hosts[d]].Name, a, b)
					}
					a, b := got.Group(sw, d), plain.Group(sw, d)
					if !slices.Equal(a, b) {
						t.Fatalf("%s %s: %s -> %s: group %v, %v with every row", c.name, engine, g.Nodes[i].Name, g.Nodes[g.Hosts[d]].Name, a, b)
					}
					if g.Nodes[i].Tier == 0 && len(b) > 1 {
						ties++
					}
				}
			}
			rowBytes := int64(internal) * int64(len(g.Hosts)) * 6
			if ib := got.InnerBytes(); ib >= rowBytes/4 {
				t.Errorf("%s %s: internal picks take %d bytes, rows would take %d", c.name, engine, ib, rowBytes)
			}
			if c.name == "h100x16" && engine == "minhop" {
				// The root ports tie their PCIe switch and their socket toward other rails' GPUs
				// of other servers on their socket: a choice the picks must keep.
				if ties == 0 {
					t.Fatalf("%s: no internal node has a choice", c.name)
				}
				t.Logf("%s: %d internal entries with a choice; picks %d bytes, rows %d bytes", c.name, ties, got.InnerBytes(), rowBytes)
			}
			if err := got.Verify(); err != nil {
				t.Fatalf("%s %s: %v", c.name, engine, err)
			}
		}
	}
}
