package topo

import (
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/units"
)

// sameStructure asserts that a and b have the same nodes (kind, tier, name unless ignored,
// server, rail) and the same links end to end, port for port.
func sameClosStructure(t *testing.T, a, b *Graph, meta bool) {
	t.Helper()
	if len(a.Nodes) != len(b.Nodes) || len(a.Links) != len(b.Links) || len(a.Hosts) != len(b.Hosts) {
		t.Fatalf("%s: %d nodes, %d links, %d hosts; %s: %d, %d, %d", a.Name, len(a.Nodes), len(a.Links), len(a.Hosts), b.Name, len(b.Nodes), len(b.Links), len(b.Hosts))
	}
	for i := range a.Nodes {
		x, y := &a.Nodes[i], &b.Nodes[i]
		if x.Kind != y.Kind || x.Tier != y.Tier || x.Host != y.Host || (meta && (x.Server != y.Server || x.Rail != y.Rail || x.Name != y.Name)) {
			t.Fatalf("node %d: %+v vs %+v", i, *x, *y)
		}
	}
	for i := range a.Links {
		x, y := a.Links[i], b.Links[i]
		if x.A != y.A || x.B != y.B || x.APort != y.APort || x.BPort != y.BPort || x.Rate != y.Rate || x.Latency != y.Latency {
			t.Fatalf("link %d: %+v vs %+v", i, x, y)
		}
	}
}

// maxPorts is the largest port count of any switch.
func maxPorts(g *Graph) int {
	m := 0
	for i := range g.Nodes {
		if g.Nodes[i].Kind == Switch {
			m = max(m, len(g.Nodes[i].Ports))
		}
	}
	return m
}

func TestClosTwoTierRailIsRailOptimized(t *testing.T) {
	// The two-tier rail-optimized Clos is exactly what RailOptimized builds, port for port.
	for _, rs := range []RailSpec{
		{Servers: 128, NIC: link400},
		{Servers: 8, NIC: link400},
		{Servers: 12, NICsPerServer: 2, Radix: 8, Oversubscription: 3, NIC: link400},
		{Servers: 40, NICsPerServer: 4, Radix: 16, NIC: link400, Spine: LinkSpec{Rate: 800 * units.Gbps, Latency: 300 * units.Nanosecond}},
		{Servers: 64, NICsPerServer: 8, Radix: 64, Spines: 32, NIC: link400},
	} {
		want, err := RailOptimized(rs)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Clos(ClosSpec{Servers: rs.Servers, NICsPerServer: rs.NICsPerServer, RailOptimized: true, Tiers: 2, Radix: rs.Radix,
			Oversubscription: []float64{rs.Oversubscription}, NIC: rs.NIC, LeafSpine: rs.Spine, Spines: rs.Spines})
		if err != nil {
			t.Fatal(err)
		}
		checkGraph(t, got, len(want.Hosts), want.NumSwitches(), len(want.Links))
		sameClosStructure(t, got, want, true)
	}
}

func TestClosTopOfRackIsFatTree(t *testing.T) {
	// Al-Fares et al.'s k-ary fat tree is the three-tier top-of-rack Clos of radix k: the same
	// links port for port (the generator numbers pods, edges, aggregations and cores alike).
	for _, k := range []int{4, 8, 16} {
		want, err := FatTree(k, link400)
		if err != nil {
			t.Fatal(err)
		}
		hosts, _, _ := FatTreeSize(k)
		got, err := Clos(ClosSpec{Servers: hosts, Tiers: 3, Radix: k, NIC: link400})
		if err != nil {
			t.Fatal(err)
		}
		sameClosStructure(t, got, want, false)
		p, _ := PlanClos(ClosSpec{Servers: hosts, Radix: k, NIC: link400})
		if p.Tiers != 3 || p.Pods != k || p.Cores != k*k/4 {
			t.Fatalf("k=%d: auto plan %+v, want 3 tiers, %d pods, %d cores", k, p, k, k*k/4)
		}
	}
}

func TestClosSuperPODCounts(t *testing.T) {
	// NVIDIA DGX SuperPOD reference architecture (DGX B200, "Larger DGX SuperPOD component
	// counts"): SUs of 32 eight-GPU servers on 64-port switches; two tiers up to 8 SUs, a core
	// tier from 16 SUs. Cables node-leaf, leaf-spine and spine-core as in the table.
	for _, c := range []struct{ sus, leaves, spines, cores, nodeLeaf, leafSpine, spineCore int }{
		{2, 16, 8, 0, 512, 512, 0},
		{4, 32, 16, 0, 1024, 1024, 0},
		{8, 64, 32, 0, 2048, 2048, 0},
		{16, 128, 128, 64, 4096, 4096, 4096},
		{32, 256, 256, 128, 8192, 8192, 8192},
		{64, 512, 512, 256, 16384, 16384, 16384},
	} {
		spec := ClosSpec{Servers: 32 * c.sus, RailOptimized: true, NIC: link400}
		p, err := PlanClos(spec)
		if err != nil {
			t.Fatal(err)
		}
		if p.Leaves != c.leaves || p.Spines != c.spines || p.Cores != c.cores {
			t.Errorf("%d SUs: %d leaves, %d spines, %d cores; want %d, %d, %d", c.sus, p.Leaves, p.Spines, p.Cores, c.leaves, c.spines, c.cores)
		}
		g, err := Clos(spec)
		if err != nil {
			t.Fatal(err)
		}
		checkGraph(t, g, 256*c.sus, c.leaves+c.spines+c.cores, c.nodeLeaf+c.leafSpine+c.spineCore)
		var byTier [4]int
		for _, l := range g.Links {
			byTier[min(g.Nodes[l.A].Tier, g.Nodes[l.B].Tier)]++
		}
		if byTier[0] != c.nodeLeaf || byTier[1] != c.leafSpine || byTier[2] != c.spineCore {
			t.Errorf("%d SUs: cables %v, want %d %d %d", c.sus, byTier[:3], c.nodeLeaf, c.leafSpine, c.spineCore)
		}
		if m := maxPorts(g); m > 64 {
			t.Errorf("%d SUs: a switch has %d ports, radix is 64", c.sus, m)
		}
	}
}

// reachable returns, for a host, the set of hosts its component holds.
func reachable(g *Graph, from NodeID) map[NodeID]bool {
	seen := map[NodeID]bool{from: true}
	q := []NodeID{from}
	for len(q) > 0 {
		n := q[0]
		q = q[1:]
		for _, p := range g.Nodes[n].Ports {
			if !seen[p.Peer] {
				seen[p.Peer] = true
				if g.Nodes[p.Peer].Kind == Switch {
					q = append(q, p.Peer)
				}
			}
		}
	}
	return seen
}

func TestClosPlanes(t *testing.T) {
	// Dual-plane (two ports per NIC, HPN-style) and rail planes: every plane is a fabric of its
	// own, with the shape of a single-plane fabric of the same servers.
	single, err := PlanClos(ClosSpec{Servers: 64, RailOptimized: true, NIC: link400})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		spec   ClosSpec
		planes int
	}{
		{ClosSpec{Servers: 64, RailOptimized: true, PortsPerNIC: 2, NIC: link400}, 2},
		{ClosSpec{Servers: 64, RailOptimized: true, RailPlanes: true, NIC: link400}, 8},
		{ClosSpec{Servers: 64, RailOptimized: true, RailPlanes: true, PortsPerNIC: 2, NIC: link400}, 16},
	} {
		p, err := PlanClos(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		if p.Planes != c.planes {
			t.Fatalf("%+v: %d planes, want %d", c.spec, p.Planes, c.planes)
		}
		g, err := Clos(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		checkGraph(t, g, 64*8*max(1, c.spec.PortsPerNIC), p.Switches, p.Links)
		if !c.spec.RailPlanes && (p.Leaves != single.Leaves || p.Spines != single.Spines) {
			t.Fatalf("a port plane has %d leaves and %d spines, the single-plane fabric %d and %d", p.Leaves, p.Spines, single.Leaves, single.Spines)
		}
		// A host reaches exactly the hosts of its own plane.
		for _, h := range []int{0, 5, len(g.Hosts) - 1} {
			hn := g.Hosts[h]
			plane := g.Nodes[hn].Plane
			seen := reachable(g, hn)
			for _, o := range g.Hosts {
				if seen[o] != (g.Nodes[o].Plane == plane) {
					t.Fatalf("host %d (plane %d) reaches %s (plane %d): %v", h, plane, g.Nodes[o].Name, g.Nodes[o].Plane, seen[o])
				}
			}
		}
		for i := range g.Nodes {
			if n := &g.Nodes[i]; n.Kind == Switch {
				for _, pt := range n.Ports {
					if g.Nodes[pt.Peer].Plane != n.Plane {
						t.Fatalf("%s (plane %d) links to %s (plane %d)", n.Name, n.Plane, g.Nodes[pt.Peer].Name, g.Nodes[pt.Peer].Plane)
					}
				}
			}
		}
	}
}

func TestClosShapes(t *testing.T) {
	// Closed forms per case: D1 = the largest d with d + ceil(d*n/(o*u)) <= R, and so on up.
	for _, c := range []struct {
		name  string
		spec  ClosSpec
		tiers int
		d1    int
		u1    int
		leafs int
		spine int
		cores int
	}{
		// 800G NICs and 800G links at 1:1 on 64 ports: 32 down, 32 up.
		{"xdr-2tier", ClosSpec{Servers: 64, RailOptimized: true, NIC: LinkSpec{Rate: 800 * units.Gbps}}, 2, 32, 32, 16, 8, 0},
		// 400G NICs under 800G uplinks: 42 down (42*400/800 = 21 up, 63 <= 64).
		{"400-under-800", ClosSpec{Servers: 84, NICsPerServer: 4, RailOptimized: true, NIC: link400, LeafSpine: LinkSpec{Rate: 800 * units.Gbps}}, 2, 42, 21, 8, 3, 0},
		// Leaves at 3:1: 48 down, 16 up.
		{"3to1", ClosSpec{Servers: 96, NICsPerServer: 1, Oversubscription: []float64{3}, NIC: link400}, 2, 48, 16, 2, 1, 0},
		// A plain three-tier fat tree of 2,048 hosts on radix 32 (16 down, 16 up; pods of 16
		// leaves; 8 pods; 16 groups of ceil(8*16/32) = 4 cores).
		{"fat-2048-r32", ClosSpec{Servers: 2048, Radix: 32, NIC: link400}, 3, 16, 16, 128, 128, 64},
		// Spines at 2:1 toward the cores: 32 leaf links and 16 uplinks per spine on 48 ports.
		{"spine-2to1", ClosSpec{Servers: 512, NICsPerServer: 8, RailOptimized: true, Radix: 48, Oversubscription: []float64{1, 2}, NIC: link400, Tiers: 3}, 3, 24, 24, 176, 132, 48},
		// One NIC per server, SUs of 16 servers: a plane of one rail groups its leaves into pods
		// as a fat tree does (4 leaves, 16 spines with a link to each, 16 groups of 1 core).
		{"su16", ClosSpec{Servers: 64, NICsPerServer: 1, RailOptimized: true, ServersPerSU: 16, Tiers: 3, NIC: link400}, 3, 16, 16, 4, 16, 16}, // one rail: pods as in a fat tree
	} {
		p, err := PlanClos(c.spec)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if p.Tiers != c.tiers || p.DownPerLeaf != c.d1 || p.UpPerLeaf != c.u1 || p.Leaves != c.leafs || p.Spines != c.spine || p.Cores != c.cores {
			t.Errorf("%s: plan %+v; want %d tiers, D1 %d, U1 %d, %d leaves, %d spines, %d cores", c.name, p, c.tiers, c.d1, c.u1, c.leafs, c.spine, c.cores)
			continue
		}
		g, err := Clos(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		checkGraph(t, g, p.Hosts, p.Switches, p.Links)
		r := c.spec.Radix
		if r == 0 {
			r = 64
		}
		if m := maxPorts(g); m > r {
			t.Errorf("%s: a switch has %d ports, radix %d", c.name, m, r)
		}
		// Every host reaches every other host (one plane).
		if seen := reachable(g, g.Hosts[0]); len(seen) < len(g.Hosts) {
			t.Errorf("%s: host 0 reaches only part of the fabric", c.name)
		}
	}
}

func TestClosReachAndTags(t *testing.T) {
	g, err := Clos(ClosSpec{Servers: 512, RailOptimized: true, NIC: link400})
	if err != nil {
		t.Fatal(err)
	}
	want := map[[2]int]Reach{{0, 1}: ReachRow, {1, 2}: ReachRow, {2, 3}: ReachHall}
	for _, l := range g.Links {
		k := [2]int{g.Nodes[l.A].Tier, g.Nodes[l.B].Tier}
		if l.Reach != want[k] {
			t.Fatalf("link %s-%s tiers %v: reach %v, want %v", g.Nodes[l.A].Name, g.Nodes[l.B].Name, k, l.Reach, want[k])
		}
	}
	for _, h := range g.Hosts {
		n := &g.Nodes[h]
		leaf := &g.Nodes[n.Ports[0].Peer]
		if leaf.Rail != n.Rail || int(n.Host) != int(n.Server)*8+int(n.Rail) || n.Plane != 0 {
			t.Fatalf("%s: server %d rail %d plane %d on leaf %s (rail %d)", n.Name, n.Server, n.Rail, n.Plane, leaf.Name, leaf.Rail)
		}
	}
	tor, err := Clos(ClosSpec{Servers: 64, NIC: link400})
	if err != nil {
		t.Fatal(err)
	}
	if r := tor.Links[0].Reach; r != ReachRack {
		t.Fatalf("top-of-rack NIC link reach %v, want rack", r)
	}
}

func TestClosErrors(t *testing.T) {
	for _, c := range []struct {
		spec ClosSpec
		want string
	}{
		{ClosSpec{Servers: 0, NIC: link400}, "servers=0"},
		{ClosSpec{Servers: 4, Radix: 1, NIC: link400}, "radix=1"},
		{ClosSpec{Servers: 4, Tiers: 4, NIC: link400}, "tiers=4"},
		{ClosSpec{Servers: 4, Oversubscription: []float64{-1}, NIC: link400}, "leaf oversubscription -1"},
		{ClosSpec{Servers: 4, Oversubscription: []float64{1, 2, 3}, NIC: link400}, "at most two tiers"},
		{ClosSpec{Servers: 4, PortsPerNIC: 9, NIC: link400}, "ports_per_nic=9"},
		{ClosSpec{Servers: 4, NIC: LinkSpec{}}, "rate 0"},
		{ClosSpec{Servers: 64, RailOptimized: true, ServersPerSU: 40, NIC: link400}, "servers_per_su=40"},
		{ClosSpec{Servers: 64, ServersPerSU: 16, NIC: link400}, "rail-optimized fabrics only"},
		// A 16,384-GPU rail fabric does not fit two tiers of radix 64.
		{ClosSpec{Servers: 2048, RailOptimized: true, Tiers: 2, NIC: link400}, "two tiers of radix-64 switches hold at most 64 leaves"},
		// 131,072 NIC ports on one plane do not fit three tiers of radix 64 (64 SUs at most).
		{ClosSpec{Servers: 16384, RailOptimized: true, NIC: link400}, "join at most 64 pods"},
		// Radix 4 at 4:1: a leaf needs 1 uplink per 4 ports; 3+1 fits, but radix 2 at 3:1 cannot.
		{ClosSpec{Servers: 4, Radix: 2, Oversubscription: []float64{0.5}, NIC: link400}, "cannot hold even one NIC port"},
		{ClosSpec{Servers: 64, Tiers: 3, Radix: 4, Oversubscription: []float64{1, 0.25}, NIC: link400}, "spine cannot hold even one leaf link"},
		{ClosSpec{Servers: 64, Tiers: 3, Spines: 4, NIC: link400}, "spines fixes the spine count of two tiers"},
		// One tier: 128 servers on radix-64 rail leaves would need two unconnected leaves per
		// rail; 65 NIC ports two unconnected switches.
		{ClosSpec{Servers: 128, NICsPerServer: 8, RailOptimized: true, Tiers: 1, NIC: link400}, "joins at most 64 servers, not 128"},
		{ClosSpec{Servers: 65, Tiers: 1, NIC: link400}, "joins at most 64 NIC ports per plane, not 65"},
		// A spine oversubscription where the spines are the top tier: nothing to oversubscribe.
		{ClosSpec{Servers: 64, Tiers: 2, Oversubscription: []float64{1, 2}, NIC: link400}, "spines of this 2-tier Clos are its top tier"},
		{ClosSpec{Servers: 16, Oversubscription: []float64{0, 3}, NIC: link400}, "spines of this 2-tier Clos are its top tier"},
	} {
		_, err := Clos(c.spec)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one containing %q", c.spec, err, c.want)
		}
	}
}

func TestClosRailPlanes131k(t *testing.T) {
	// 16,384 eight-GPU servers with every rail on a plane of its own: eight planes of 16,384 NIC
	// ports, each a three-tier fat tree of radix 64 (32 servers per leaf, pods of 32 leaves and
	// 32 spines, 16 pods, 32 groups of ceil(16*32/64) = 8 cores).
	p, err := PlanClos(ClosSpec{Servers: 16384, RailOptimized: true, RailPlanes: true, NIC: link400})
	if err != nil {
		t.Fatal(err)
	}
	if p.Planes != 8 || p.Tiers != 3 || p.Leaves != 512 || p.Pods != 16 || p.LeavesPerPod != 32 || p.Spines != 512 || p.Cores != 256 {
		t.Fatalf("plan %+v", p)
	}
	if p.Switches != 8*1280 || p.Links != 8*(16384+512*32+512*32) {
		t.Fatalf("%d switches, %d links", p.Switches, p.Links)
	}
}
