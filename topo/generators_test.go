package topo

import (
	"fmt"
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/units"
)

var link400 = LinkSpec{Rate: 400 * units.Gbps, Latency: 500 * units.Nanosecond}

// checkGraph asserts the invariants every generated or imported graph must satisfy.
func checkGraph(t *testing.T, g *Graph, hosts, switches, links int) {
	t.Helper()
	if err := g.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if len(g.Hosts) != hosts || g.NumSwitches() != switches || len(g.Links) != links {
		t.Fatalf("got %d hosts, %d switches, %d links; want %d, %d, %d", len(g.Hosts), g.NumSwitches(), len(g.Links), hosts, switches, links)
	}
	names := make(map[string]bool, len(g.Nodes))
	for i, n := range g.Nodes {
		if n.ID != NodeID(i) {
			t.Fatalf("node %d has ID %d", i, n.ID)
		}
		if names[n.Name] {
			t.Fatalf("duplicate name %q", n.Name)
		}
		names[n.Name] = true
	}
	for h, id := range g.Hosts {
		if g.Nodes[id].Kind != Host || int(g.Nodes[id].Host) != h || len(g.Nodes[id].Ports) != 1 {
			t.Fatalf("host %d: node %d kind %v host %d ports %d", h, id, g.Nodes[id].Kind, g.Nodes[id].Host, len(g.Nodes[id].Ports))
		}
	}
	ports := 0
	for _, n := range g.Nodes {
		for pi, p := range n.Ports {
			l := g.Links[p.Link]
			if !(l.A == n.ID && l.APort == int32(pi) && l.B == p.Peer && l.BPort == p.PeerPort) &&
				!(l.B == n.ID && l.BPort == int32(pi) && l.A == p.Peer && l.APort == p.PeerPort) {
				t.Fatalf("%s port %d does not match link %d", n.Name, pi, p.Link)
			}
			ports++
		}
	}
	if ports != 2*links {
		t.Fatalf("%d ports, want 2*links = %d", ports, 2*links)
	}
}

func TestFatTreeSize(t *testing.T) {
	// Al-Fares et al. SIGCOMM'08 §3.2: k^3/4 hosts, 5k^2/4 switches; 3 tiers of k^3/4 links.
	for _, c := range []struct{ k, hosts, switches, links int }{
		{2, 2, 5, 6}, {4, 16, 20, 48}, {8, 128, 80, 384}, {16, 1024, 320, 3072}, {48, 27648, 2880, 82944},
	} {
		h, s, l := FatTreeSize(c.k)
		if h != c.hosts || s != c.switches || l != c.links {
			t.Errorf("FatTreeSize(%d) = %d, %d, %d; want %d, %d, %d", c.k, h, s, l, c.hosts, c.switches, c.links)
		}
	}
}

func TestFatTree(t *testing.T) {
	for _, k := range []int{2, 4, 8, 16} {
		g, err := FatTree(k, link400)
		if err != nil {
			t.Fatal(err)
		}
		hosts, switches, links := FatTreeSize(k)
		checkGraph(t, g, hosts, switches, links)
		h := k / 2
		for _, n := range g.Nodes {
			if n.Kind == Switch && len(n.Ports) != k {
				t.Fatalf("k=%d: %s has %d ports, want k", k, n.Name, len(n.Ports))
			}
			if n.Server != -1 || n.Rail != -1 {
				t.Fatalf("%s: Server/Rail = %d/%d, want -1/-1 in a non-GPU topology", n.Name, n.Server, n.Rail)
			}
		}
		byName := map[string]NodeID{}
		for _, n := range g.Nodes {
			byName[n.Name] = n.ID
		}
		// Host h = p*(k/2)^2 + j*(k/2) + x sits under edge j of pod p.
		for hh := 0; hh < hosts; hh++ {
			p, j := hh/(h*h), (hh/h)%h
			peer := g.Nodes[g.Hosts[hh]].Ports[0].Peer
			if g.Nodes[peer].Name != "edge"+itoa(p)+"_"+itoa(j) {
				t.Fatalf("k=%d host%d under %s, want edge%d_%d", k, hh, g.Nodes[peer].Name, p, j)
			}
		}
		// Agg i of pod p has cores i*h..i*h+h-1 on ports h..k-1; core c has pod p on port p.
		for p := 0; p < k; p++ {
			for i := 0; i < h; i++ {
				a := byName["agg"+itoa(p)+"_"+itoa(i)]
				for m := 0; m < h; m++ {
					if got, want := g.Nodes[g.Nodes[a].Ports[m].Peer].Name, "edge"+itoa(p)+"_"+itoa(m); got != want {
						t.Fatalf("agg%d_%d port %d -> %s, want %s", p, i, m, got, want)
					}
					port := g.Nodes[a].Ports[h+m]
					if got, want := g.Nodes[port.Peer].Name, "core"+itoa(i*h+m); got != want {
						t.Fatalf("agg%d_%d port %d -> %s, want %s", p, i, h+m, got, want)
					}
					if port.PeerPort != int32(p) {
						t.Fatalf("core%d sees pod %d on port %d, want %d", i*h+m, p, port.PeerPort, p)
					}
				}
			}
		}
		for _, n := range g.Nodes {
			want := map[byte]int{'h': 0, 'e': 1, 'a': 2, 'c': 3}[n.Name[0]]
			if n.Tier != want {
				t.Fatalf("%s tier %d, want %d", n.Name, n.Tier, want)
			}
		}
	}
}

func TestFatTreeErrors(t *testing.T) {
	for _, c := range []struct {
		k    int
		link LinkSpec
		want string
	}{
		{0, link400, "even number >= 2"},
		{3, link400, "even number >= 2"},
		{-4, link400, "even number >= 2"},
		{2048, link400, "at most 1024"},
		{4, LinkSpec{}, "host-edge link rate 0 bit/s: must be positive"},
		{4, LinkSpec{Rate: units.Gbps, Latency: -1}, "must not be negative"},
	} {
		_, err := FatTree(c.k, c.link)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("FatTree(%d, %+v) error %v; want it to contain %q", c.k, c.link, err, c.want)
		}
	}
}

func TestFatTreeTiered(t *testing.T) {
	hostL := LinkSpec{Rate: 100 * units.Gbps, Latency: units.Microsecond}
	upL := LinkSpec{Rate: 400 * units.Gbps, Latency: 2 * units.Microsecond}
	g, err := FatTreeTiered(4, FatTreeLinks{HostEdge: hostL, EdgeAgg: upL, AggCore: upL})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range g.Links {
		want := upL
		if g.Nodes[l.A].Kind == Host || g.Nodes[l.B].Kind == Host {
			want = hostL
		}
		if l.Rate != want.Rate || l.Latency != want.Latency {
			t.Fatalf("link %s-%s: %s %s, want %s %s", g.Nodes[l.A].Name, g.Nodes[l.B].Name, l.Rate, l.Latency, want.Rate, want.Latency)
		}
	}
}

func TestLeafSpine(t *testing.T) {
	host := LinkSpec{Rate: 100 * units.Gbps, Latency: units.Microsecond}
	for _, c := range []struct {
		name                string
		spec                LeafSpineSpec
		hosts, switches, ln int
		uplink              units.Rate
	}{
		// 8 leaves x 32 hosts at 100G, 4 spines, 2:1 -> uplink = 32*100G/(4*2) = 400G.
		{"derived", LeafSpineSpec{Leaves: 8, Spines: 4, HostsPerLeaf: 32, Host: host, Oversubscription: 2}, 256, 12, 256 + 32, 400 * units.Gbps},
		// Both given and consistent: 32*100G/(4*800G) = 1.
		{"both", LeafSpineSpec{Leaves: 8, Spines: 4, HostsPerLeaf: 32, Host: host, Uplink: LinkSpec{Rate: 800 * units.Gbps}, Oversubscription: 1}, 256, 12, 256 + 32, 800 * units.Gbps},
		// Neither: uplinks at the host rate.
		{"default", LeafSpineSpec{Leaves: 4, Spines: 2, HostsPerLeaf: 4, Host: host}, 16, 6, 16 + 8, 100 * units.Gbps},
		// 2 parallel links per spine, 3:1: 48*100G/(4*2*3) = 200G.
		{"parallel", LeafSpineSpec{Leaves: 2, Spines: 4, HostsPerLeaf: 48, Host: host, Oversubscription: 3, LinksPerSpine: 2}, 96, 6, 96 + 16, 200 * units.Gbps},
		{"single switch", LeafSpineSpec{Leaves: 1, HostsPerLeaf: 8, Host: host}, 8, 1, 8, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			g, err := LeafSpine(c.spec)
			if err != nil {
				t.Fatal(err)
			}
			checkGraph(t, g, c.hosts, c.switches, c.ln)
			hpl := c.spec.HostsPerLeaf
			for h := 0; h < c.hosts; h++ {
				if got, want := g.Nodes[g.Nodes[g.Hosts[h]].Ports[0].Peer].Name, "leaf"+itoa(h/hpl); got != want {
					t.Fatalf("host%d on %s, want %s", h, got, want)
				}
			}
			lps := max(c.spec.LinksPerSpine, 1)
			for _, n := range g.Nodes {
				switch n.Tier {
				case 1:
					if len(n.Ports) != hpl+c.spec.Spines*lps {
						t.Fatalf("%s has %d ports, want %d", n.Name, len(n.Ports), hpl+c.spec.Spines*lps)
					}
					for _, p := range n.Ports[hpl:] {
						if r := g.Links[p.Link].Rate; r != c.uplink {
							t.Fatalf("%s uplink rate %s, want %s", n.Name, r, c.uplink)
						}
					}
				case 2:
					if len(n.Ports) != c.spec.Leaves*lps {
						t.Fatalf("%s has %d ports, want %d", n.Name, len(n.Ports), c.spec.Leaves*lps)
					}
				}
			}
		})
	}
}

func TestLeafSpineErrors(t *testing.T) {
	host := LinkSpec{Rate: 100 * units.Gbps}
	for _, c := range []struct {
		spec LeafSpineSpec
		want string
	}{
		// 32*100G/(8*3) = 133.33..G is not a whole number of bits per second.
		{LeafSpineSpec{Leaves: 2, Spines: 8, HostsPerLeaf: 32, Host: host, Oversubscription: 3}, "is not a whole number of bits per second"},
		// 32*100G/(4*400G) = 2, not 3: the message names both numbers.
		{LeafSpineSpec{Leaves: 2, Spines: 4, HostsPerLeaf: 32, Host: host, Uplink: LinkSpec{Rate: 400 * units.Gbps}, Oversubscription: 3}, "oversubscription 3 disagrees with the link rates, which give 32*100Gbps/(4*1*400Gbps) = 2"},
		{LeafSpineSpec{Leaves: 2, Spines: 0, HostsPerLeaf: 4, Host: host}, "need at least 1 spine"},
		{LeafSpineSpec{Leaves: 0, Spines: 1, HostsPerLeaf: 4, Host: host}, "must be at least 1"},
		{LeafSpineSpec{Leaves: 2, Spines: 1, HostsPerLeaf: 4}, "host link rate 0"},
		{LeafSpineSpec{Leaves: 2, Spines: 1, HostsPerLeaf: 4, Host: host, Oversubscription: -1}, "positive ratio"},
		{LeafSpineSpec{Leaves: 1, HostsPerLeaf: 4, Host: host, Oversubscription: 2}, "spines=0"},
	} {
		_, err := LeafSpine(c.spec)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("LeafSpine(%+v) error %v; want it to contain %q", c.spec, err, c.want)
		}
	}
}

func TestRailOptimized1024(t *testing.T) {
	// 1,024 GPUs = 128 servers x 8 NICs on 64-port switches at 1:1: 32 NIC ports per leaf,
	// ceil(128/32) = 4 leaves per rail, 32 leaves with 32 uplinks each, 1024/64 = 16 spines.
	spec := RailSpec{Servers: 128, NIC: link400, Radix: 64}
	p, err := PlanRail(spec)
	if err != nil {
		t.Fatal(err)
	}
	want := RailPlan{Rails: 8, DownPerLeaf: 32, UpPerLeaf: 32, LeavesPerRail: 4, Spines: 16, Hosts: 1024, Switches: 48, Links: 2048}
	if p != want {
		t.Fatalf("PlanRail = %+v, want %+v", p, want)
	}
	g, err := RailOptimized(spec)
	if err != nil {
		t.Fatal(err)
	}
	checkGraph(t, g, 1024, 48, 2048)
	hostLinks := 0
	for _, l := range g.Links {
		if g.Nodes[l.A].Kind == Host {
			hostLinks++
		}
	}
	if hostLinks != 1024 {
		t.Fatalf("%d host links, want 1024 (and 1024 leaf-spine)", hostLinks)
	}
	for _, n := range g.Nodes {
		switch n.Tier {
		case 0:
			s, r := int(n.Host)/8, int(n.Host)%8
			if int(n.Server) != s || int(n.Rail) != r {
				t.Fatalf("%s: server %d rail %d, want %d %d", n.Name, n.Server, n.Rail, s, r)
			}
			leaf := g.Nodes[n.Ports[0].Peer]
			if leaf.Rail != n.Rail || leaf.Name != "rail"+itoa(r)+"_leaf"+itoa(s/32) {
				t.Fatalf("%s (server %d, rail %d) on %s", n.Name, s, r, leaf.Name)
			}
		case 1:
			down, up := 0, map[NodeID]int{}
			for _, p := range n.Ports {
				if g.Nodes[p.Peer].Kind == Host {
					down++
				} else {
					up[p.Peer]++
				}
			}
			if down != 32 || len(up) != 16 {
				t.Fatalf("%s: %d NIC ports and %d spines, want 32 and 16", n.Name, down, len(up))
			}
			for sp, c := range up {
				if c != 2 {
					t.Fatalf("%s has %d links to %s, want 2", n.Name, c, g.Nodes[sp].Name)
				}
			}
		case 2:
			if len(n.Ports) != 64 || n.Rail != -1 || n.Server != -1 {
				t.Fatalf("%s: %d ports, rail %d; want 64, -1", n.Name, len(n.Ports), n.Rail)
			}
		}
	}
	rt, err := ComputeRoutes(g)
	if err != nil {
		t.Fatal(err)
	}
	// Same rail, same leaf: NIC-leaf-NIC = 2 links; same rail other leaf, or other rail
	// (without PXN): NIC-leaf-spine-leaf-NIC = 4 links, over all 16 spines x 2 parallel links.
	for _, c := range []struct{ src, dst, hops, ways int }{
		{0, 8, 2, 1}, {0, 32 * 8, 4, 32}, {0, 1, 4, 32}, {0, 1023, 4, 32},
	} {
		if got := rt.ShortestPathHops(c.src, c.dst); got != c.hops {
			t.Errorf("hops host%d->host%d = %d, want %d", c.src, c.dst, got, c.hops)
		}
		leaf := g.Nodes[g.Hosts[c.src]].Ports[0].Peer
		if got := len(rt.NextHops(leaf, c.dst)); got != c.ways {
			t.Errorf("%s toward host%d: %d next hops, want %d", g.Nodes[leaf].Name, c.dst, got, c.ways)
		}
	}
}

func TestRailOptimizedShapes(t *testing.T) {
	for _, c := range []struct {
		name string
		spec RailSpec
		want RailPlan
	}{
		// 3:1 on 64 ports: 48 down + 16 up; 96 servers -> 2 leaves per rail, 16 leaves x 16 up =
		// 256 uplinks -> 4 spines.
		{"3:1", RailSpec{Servers: 96, NIC: link400, Oversubscription: 3},
			RailPlan{Rails: 8, DownPerLeaf: 48, UpPerLeaf: 16, LeavesPerRail: 2, Spines: 4, Hosts: 768, Switches: 20, Links: 768 + 256}},
		// 4 servers: one leaf per rail, 4 uplinks each (uplinks follow the ports in use), 1 spine.
		{"small", RailSpec{Servers: 4, NIC: link400},
			RailPlan{Rails: 8, DownPerLeaf: 32, UpPerLeaf: 4, LeavesPerRail: 1, Spines: 1, Hosts: 32, Switches: 9, Links: 64}},
		// 800G uplinks under 400G NICs at 1:1: d + ceil(d/2) <= 64 -> d = 42, 21 uplinks.
		{"800G spine", RailSpec{Servers: 42, NICsPerServer: 4, NIC: link400, Spine: LinkSpec{Rate: 800 * units.Gbps}},
			RailPlan{Rails: 4, DownPerLeaf: 42, UpPerLeaf: 21, LeavesPerRail: 1, Spines: 2, Hosts: 168, Switches: 6, Links: 168 + 84}},
		{"no spines", RailSpec{Servers: 100, NIC: link400, Spines: NoSpines},
			RailPlan{Rails: 8, DownPerLeaf: 64, UpPerLeaf: 0, LeavesPerRail: 2, Spines: 0, Hosts: 800, Switches: 16, Links: 800}},
		{"explicit spines", RailSpec{Servers: 128, NIC: link400, Spines: 32},
			RailPlan{Rails: 8, DownPerLeaf: 32, UpPerLeaf: 32, LeavesPerRail: 4, Spines: 32, Hosts: 1024, Switches: 64, Links: 2048}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := PlanRail(c.spec)
			if err != nil {
				t.Fatal(err)
			}
			if p != c.want {
				t.Fatalf("PlanRail = %+v, want %+v", p, c.want)
			}
			g, err := RailOptimized(c.spec)
			if err != nil {
				t.Fatal(err)
			}
			checkGraph(t, g, p.Hosts, p.Switches, p.Links)
			radix := max(c.spec.Radix, 64)
			for _, n := range g.Nodes {
				if n.Kind == Switch && len(n.Ports) > radix {
					t.Fatalf("%s has %d ports, radix %d", n.Name, len(n.Ports), radix)
				}
			}
		})
	}
}

func TestRailNoSpinesIsolatesRails(t *testing.T) {
	g, err := RailOptimized(RailSpec{Servers: 4, NIC: link400, Spines: NoSpines})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := ComputeRoutes(g)
	if err != nil {
		t.Fatal(err)
	}
	if h := rt.ShortestPathHops(0, 8); h != 2 {
		t.Errorf("same rail: %d hops, want 2", h)
	}
	if h := rt.ShortestPathHops(0, 1); h != -1 {
		t.Errorf("across rails without spines: %d hops, want -1 (no route)", h)
	}
	if nh := rt.NextHops(g.Hosts[0], 1); len(nh) != 0 {
		t.Errorf("next hops across rails: %v, want none", nh)
	}
	if p := rt.FirstPath(0, 1); p != nil {
		t.Errorf("path across rails: %v, want nil", p)
	}
}

func TestRailErrors(t *testing.T) {
	for _, c := range []struct {
		spec RailSpec
		want string
	}{
		// 300 servers at 1:1 on radix 64: 10 leaves per rail, 80 leaves > 64: needs a third tier.
		{RailSpec{Servers: 300, NIC: link400}, "holds at most 64 leaves (2048 NICs here)"},
		{RailSpec{Servers: 128, NIC: link400, Spines: 8}, "8 spines cannot take 1024 leaf uplinks"},
		{RailSpec{Servers: 0, NIC: link400}, "servers=0"},
		{RailSpec{Servers: 4}, "NIC link rate 0"},
		{RailSpec{Servers: 4, NIC: link400, Radix: 1}, "radix=1"},
		{RailSpec{Servers: 4, NIC: link400, Oversubscription: -2}, "positive ratio"},
		{RailSpec{Servers: 4, NIC: link400, Spines: -5}, "spines=-5"},
	} {
		_, err := RailOptimized(c.spec)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("RailOptimized(%+v) error %v; want it to contain %q", c.spec, err, c.want)
		}
	}
}

func TestEstimateMemory(t *testing.T) {
	h, s, l := FatTreeSize(16)
	est := EstimateMemory(h, s, l)
	// Dominant terms: 6144 ports * 2 KiB + 1024 hosts * 40 B of routes = 12.62 MB; the graph
	// adds under 1 MB.
	lo := int64(6144*2048 + 1024*40)
	if est < lo || est > lo+1<<20 {
		t.Fatalf("EstimateMemory(k=16) = %d, want within 1 MiB above %d", est, lo)
	}
	// Linear: k=64 has 64x the ports of k=16 (393,216) and fits in 16 GiB; k=256 (25.2 M ports,
	// 51.5 GB of port state) does not.
	h, s, l = FatTreeSize(64)
	if err := CheckMemory("fat tree k=64", h, s, l, 16<<30); err != nil {
		t.Fatal(err)
	}
	h, s, l = FatTreeSize(256)
	err := CheckMemory("fat tree k=256", h, s, l, 16<<30)
	if err == nil || !strings.Contains(err.Error(), "estimated memory 49.6 GiB") || !strings.Contains(err.Error(), "limit of 16.0 GiB") {
		t.Fatalf("CheckMemory(k=256, 16 GiB) = %v; want the 49.6 GiB estimate and the limit", err)
	}
	h, s, l = FatTreeSize(16)
	if err := CheckMemory("fat tree k=16", h, s, l, 1<<30); err != nil {
		t.Fatal(err)
	}
	if EstimateMemory(1<<40, 1<<40, 1<<40) <= 0 {
		t.Fatal("EstimateMemory must saturate, not overflow")
	}
}

// TestEstimateGraphMemory: a graph that is no layered tree (switches in a cycle, a host on
// each) is estimated with its breadth-first table, switches x hosts entries, which the table's
// own size check confirms; a fat tree keeps EstimateMemory's linear estimate; a cycle of 4,000
// switches (96 MB of table) is refused under a limit its linear terms fit, with a message that
// names the table.
func TestEstimateGraphMemory(t *testing.T) {
	cycle := func(n int) *Graph {
		g := &Graph{Name: "cycle"}
		sw := make([]NodeID, n)
		for i := range sw {
			sw[i] = g.AddNode(Switch, fmt.Sprintf("sw%d", i), 1)
		}
		for i := range sw {
			g.Connect(sw[i], sw[(i+1)%n], 100*units.Gbps, units.Microsecond)
		}
		for i := range sw {
			g.Connect(g.AddNode(Host, fmt.Sprintf("h%d", i), 0), sw[i], 100*units.Gbps, units.Microsecond)
		}
		return g
	}
	small := cycle(40)
	rt, err := ComputeRoutes(small)
	if err != nil || rt.Form() != "table" {
		t.Fatalf("a cycle routes as %v (%v), want table", rt.Form(), err)
	}
	linear := EstimateMemory(40, 40, 80)
	extra := EstimateGraphMemory(small) - linear
	// The table's entries (40 x 40 x 6 B) less the tree term the linear estimate holds.
	if want := int64(40*40*BytesPerTableEntry - 40*BytesPerHostRoute); extra != want {
		t.Fatalf("cycle of 40: %d B above the linear estimate, want %d", extra, want)
	}
	// 4 B per entry with fewer than 65,536 distinct port sets, 6 B otherwise.
	if b := rt.Bytes(); b < 40*40*4 || b > 40*40*BytesPerTableEntry+64<<10 {
		t.Fatalf("cycle of 40: the table takes %d B, estimated at most %d", b, 40*40*BytesPerTableEntry)
	}
	ft, err := FatTree(8, LinkSpec{Rate: 100 * units.Gbps})
	if err != nil {
		t.Fatal(err)
	}
	if h, s, l := FatTreeSize(8); EstimateGraphMemory(ft) != EstimateMemory(h, s, l) {
		t.Fatalf("fat tree k=8: %d, want the linear %d", EstimateGraphMemory(ft), EstimateMemory(h, s, l))
	}
	big := cycle(4000)
	limit := EstimateMemory(4000, 4000, 8000) + 1<<20
	err = CheckGraphMemory("cycle.txt", big, limit)
	if err == nil || !strings.Contains(err.Error(), "not a layered tree, so routed by a table of 4000 switches x 4000 hosts") {
		t.Fatalf("a cycle of 4,000 switches under %d B: %v", limit, err)
	}
	if err := CheckGraphMemory("cycle.txt", small, limit); err != nil {
		t.Fatal(err)
	}
}
