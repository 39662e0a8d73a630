package ibsm

import (
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

// trees are the shapes on-demand tables must get right: fat trees, a leaf-spine with parallel
// links, two- and three-tier rail-optimized Clos fabrics, a partly filled top-of-rack one.
func trees(t *testing.T) []*topo.Graph {
	t.Helper()
	var out []*topo.Graph
	add := func(g *topo.Graph, err error) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, g)
	}
	add(topo.FatTree(4, link))
	add(topo.FatTree(8, link))
	add(topo.LeafSpine(topo.LeafSpineSpec{Leaves: 4, Spines: 2, HostsPerLeaf: 6, Host: link, LinksPerSpine: 3}))
	add(topo.RailOptimized(topo.RailSpec{Servers: 12, NICsPerServer: 2, Radix: 8, Oversubscription: 3, NIC: link}))
	add(topo.Clos(topo.ClosSpec{Servers: 30, NICsPerServer: 2, RailOptimized: true, Radix: 8, Tiers: 3, NIC: link}))
	add(topo.Clos(topo.ClosSpec{Servers: 7, NICsPerServer: 2, Radix: 4, Tiers: 3, NIC: link}))
	add(topo.Clos(topo.ClosSpec{Servers: 128, Radix: 8, Tiers: 3, NIC: link}))
	// Two planes, each its own subnet: switches route only their plane's hosts.
	add(topo.Clos(topo.ClosSpec{Servers: 12, NICsPerServer: 2, PortsPerNIC: 2, RailOptimized: true, Radix: 8, NIC: link}))
	return out
}

// TestOnDemandMatchesStored: for every engine and tree, the tables computed on demand give every
// switch the stored tables' LFT port and adaptive-routing group toward every host.
func TestOnDemandMatchesStored(t *testing.T) {
	for _, g := range trees(t) {
		for _, engine := range Engines {
			stored, err := computeStored(g, engine)
			if err != nil {
				t.Fatalf("%s %s: %v", g.Name, engine, err)
			}
			od, err := computeOnDemand(g, engine)
			if err != nil || od == nil {
				t.Fatalf("%s %s: on demand %v %v", g.Name, engine, od, err)
			}
			for i := range g.Nodes {
				sw := topo.NodeID(i)
				if g.Nodes[i].Kind != topo.Switch {
					continue
				}
				for d := range g.Hosts {
					if a, b := od.Port(sw, d), stored.Port(sw, d); a != b {
						t.Fatalf("%s %s: %s -> host %d: port %d on demand, %d stored", g.Name, engine, g.Nodes[i].Name, d, a, b)
					}
					a, b := od.Group(sw, d), stored.Group(sw, d)
					if len(a) != len(b) {
						t.Fatalf("%s %s: %s -> host %d: group %v on demand, %v stored", g.Name, engine, g.Nodes[i].Name, d, a, b)
					}
					for k := range a {
						if a[k] != b[k] {
							t.Fatalf("%s %s: %s -> host %d: group %v on demand, %v stored", g.Name, engine, g.Nodes[i].Name, d, a, b)
						}
					}
				}
			}
			if engine == "updown" {
				for i, r := range stored.Rank {
					if od.Rank[i] != r {
						t.Fatalf("%s: rank of %s %d on demand, %d stored", g.Name, g.Nodes[i].Name, od.Rank[i], r)
					}
				}
			}
		}
	}
}

// TestThreeTierRouting: on a three-tier rail-optimized Clos every engine's tables reach every
// host without loops, and the routes (static and adaptive) have no channel-dependency cycle, so
// credits cannot deadlock; D-mod-K routes every shift of a full three-tier fat tree with at most
// one flow per link (Zahavi et al. 2010), as on the k-ary tree.
func TestThreeTierRouting(t *testing.T) {
	g, err := topo.Clos(topo.ClosSpec{Servers: 32, NICsPerServer: 2, RailOptimized: true, Radix: 8, Tiers: 3, NIC: link})
	if err != nil {
		t.Fatal(err)
	}
	for _, engine := range Engines {
		tb, err := Compute(g, engine)
		if err != nil {
			t.Fatal(err)
		}
		if err := tb.Verify(); err != nil {
			t.Fatalf("%s: %v", engine, err)
		}
		for _, adaptive := range []bool{false, true} {
			if c := tb.DependencyCycle(adaptive); c != nil {
				t.Fatalf("%s (adaptive %v): dependency cycle %v", engine, adaptive, c)
			}
		}
	}
	ft, err := topo.Clos(topo.ClosSpec{Servers: 128, Radix: 8, Tiers: 3, NIC: link})
	if err != nil {
		t.Fatal(err)
	}
	dmodk, _ := Compute(ft, "dmodk")
	H := len(ft.Hosts)
	for shift := 1; shift < H; shift++ {
		f := func(s int) int { return (s + shift) % H }
		for l, c := range linkLoads(t, dmodk, ft, f) {
			if c > 1 {
				t.Fatalf("shift %d: link %s->%s carries %d flows", shift, ft.Nodes[l[0]].Name, ft.Nodes[l[1]].Name, c)
			}
		}
	}
}

// TestOnDemandAtScale: a fabric whose stored tables would exceed StoredEntries gets tables on
// demand, planes included (each plane routed as its own subnet).
func TestOnDemandAtScale(t *testing.T) {
	old := StoredEntries
	StoredEntries = 1000
	defer func() { StoredEntries = old }()
	g, err := topo.Clos(topo.ClosSpec{Servers: 16, NICsPerServer: 2, PortsPerNIC: 2, RailOptimized: true, Radix: 8, NIC: link})
	if err != nil {
		t.Fatal(err)
	}
	for _, engine := range Engines {
		tb, err := Compute(g, engine)
		if err != nil {
			t.Fatal(err)
		}
		if !tb.OnDemand() {
			t.Fatalf("%s: stored tables for %d switches x %d hosts", engine, g.NumSwitches(), len(g.Hosts))
		}
		if err := tb.Verify(); err != nil {
			t.Fatalf("%s: %v", engine, err)
		}
	}
}

// TestLIDLimit: one subnet holds 49,151 unicast LIDs. 8,192 servers of 8 NICs on a single
// plane (65,536 HCA ports and 2,560 switches of radix 128) do not fit; the same servers with a
// plane per rail (8,192 HCA ports
// and 1,280 switches per plane) do. A GPU cluster counts its NICs' network ports, not its GPU
// endpoints.
func TestLIDLimit(t *testing.T) {
	nic := topo.LinkSpec{Rate: 400 * units.Gbps}
	one, err := topo.Clos(topo.ClosSpec{Servers: 8192, RailOptimized: true, Radix: 128, NIC: nic})
	if err != nil {
		t.Fatal(err)
	}
	err = CheckLIDs(one)
	if err == nil || !strings.Contains(err.Error(), "needs 68096 LIDs (65536 HCA ports and 2560 switches)") || !strings.Contains(err.Error(), "49151 unicast LIDs") || !strings.Contains(err.Error(), "planes") {
		t.Fatalf("one plane of 65,536 ports: %v", err)
	}
	if _, err := Compute(one, "minhop"); err == nil {
		t.Fatal("Compute accepted a subnet of 65,536 HCA ports")
	}
	planes, err := topo.Clos(topo.ClosSpec{Servers: 8192, RailOptimized: true, RailPlanes: true, NIC: nic})
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckLIDs(planes); err != nil {
		t.Fatal(err)
	}
	// Exactly at the limit: a leaf-spine of 49,151 - switches hosts passes, one more host fails.
	small := func(hosts int) *topo.Graph {
		g, err := topo.LeafSpine(topo.LeafSpineSpec{Leaves: 1, HostsPerLeaf: hosts, Host: link})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	if err := CheckLIDs(small(MaxUnicastLIDs - 1)); err != nil {
		t.Fatal(err)
	}
	if err := CheckLIDs(small(MaxUnicastLIDs)); err == nil {
		t.Fatal("49,151 hosts and a switch fit one subnet")
	}
}

// TestPlanesAreSubnets: on a dual-plane fabric every engine's stored tables route each plane's
// hosts to one another (Verify skips pairs of different planes: no switch joins them) and leave
// the other plane's hosts without an entry.
func TestPlanesAreSubnets(t *testing.T) {
	g, err := topo.Clos(topo.ClosSpec{Servers: 12, NICsPerServer: 2, PortsPerNIC: 2, RailOptimized: true, Radix: 8, NIC: link})
	if err != nil {
		t.Fatal(err)
	}
	for _, engine := range Engines {
		tb, err := Compute(g, engine)
		if err != nil {
			t.Fatalf("%s: %v", engine, err)
		}
		if tb.OnDemand() {
			t.Fatalf("%s: a fabric this small should have stored tables", engine)
		}
		if err := tb.Verify(); err != nil {
			t.Fatalf("%s: %v", engine, err)
		}
		leaf0 := g.Nodes[g.Hosts[0]].Ports[0].Peer // plane 0; host 1 is port 1 of the same NIC
		if p := tb.Port(leaf0, 1); p != -1 {
			t.Fatalf("%s: plane 0's leaf routes plane 1's host to port %d", engine, p)
		}
	}
}

// TestRowMatchesPort: a stored table's row (Row, which the packet backend's route prediction
// indexes) gives every switch's LFT port toward every host, for every engine and tree; tables
// computed on demand have no rows, and Row is nil for hosts.
func TestRowMatchesPort(t *testing.T) {
	for _, g := range trees(t) {
		for _, engine := range Engines {
			stored, err := computeStored(g, engine)
			if err != nil {
				t.Fatalf("%s %s: %v", g.Name, engine, err)
			}
			od, err := computeOnDemand(g, engine)
			if err != nil {
				t.Fatalf("%s %s: on demand: %v", g.Name, engine, err)
			}
			for i := range g.Nodes {
				sw := topo.NodeID(i)
				if od.Row(sw) != nil {
					t.Fatalf("%s %s: %s has a row in tables on demand", g.Name, engine, g.Nodes[i].Name)
				}
				row := stored.Row(sw)
				if g.Nodes[i].Kind != topo.Switch {
					if row != nil {
						t.Fatalf("%s %s: host %s has a row", g.Name, engine, g.Nodes[i].Name)
					}
					continue
				}
				if len(row) != len(g.Hosts) {
					t.Fatalf("%s %s: %s: row of %d entries for %d hosts", g.Name, engine, g.Nodes[i].Name, len(row), len(g.Hosts))
				}
				for d := range g.Hosts {
					if a, b := int32(row[d]), stored.Port(sw, d); a != b {
						t.Fatalf("%s %s: %s -> host %d: row %d, Port %d", g.Name, engine, g.Nodes[i].Name, d, a, b)
					}
				}
			}
		}
	}
}
