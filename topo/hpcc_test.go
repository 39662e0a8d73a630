package topo

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fabricsim/fabricsim/units"
)

func importFile(t *testing.T, path string) *Graph {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	g, err := ImportHPCC(f, path)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// testdata/hpcc_fat_k4.txt is a k=4 fat tree written in the layout of HPCC's
// simulation/mix/fat.txt (hosts first, then ToR, aggregation and core switches; "1000ns" and
// "0.000000" columns) by a script independent of FatTree. Its wiring must equal FatTree(4)'s.
func TestImportHPCCFatTree(t *testing.T) {
	g := importFile(t, "testdata/hpcc_fat_k4.txt")
	checkGraph(t, g, 16, 20, 48)
	ft, err := FatTree(4, link400)
	if err != nil {
		t.Fatal(err)
	}
	pairs := func(g *Graph) map[[2]NodeID]int {
		m := map[[2]NodeID]int{}
		for _, l := range g.Links {
			a, b := l.A, l.B
			if a > b {
				a, b = b, a
			}
			m[[2]NodeID{a, b}]++
		}
		return m
	}
	want, got := pairs(ft), pairs(g)
	if len(got) != len(want) {
		t.Fatalf("%d distinct links, want %d", len(got), len(want))
	}
	for p, c := range want {
		if got[p] != c {
			t.Fatalf("link %v: %d in file, %d in FatTree(4)", p, got[p], c)
		}
	}
	for _, l := range g.Links {
		wantRate := 400 * units.Gbps
		if g.Nodes[l.A].Kind == Host {
			wantRate = 100 * units.Gbps
		}
		if l.Rate != wantRate || l.Latency != units.Microsecond || l.ErrorRate != 0 {
			t.Fatalf("link %d: %s %s %g", l.ID, l.Rate, l.Latency, l.ErrorRate)
		}
	}
	if g.Nodes[16].Name != "n16" || g.Nodes[16].Kind != Switch || g.Nodes[16].Tier != 1 || g.Nodes[3].Host != 3 {
		t.Fatalf("node naming/kinds: %+v %+v", g.Nodes[16], g.Nodes[3])
	}
	rt, err := ComputeRoutes(g)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ src, dst, hops int }{{0, 1, 2}, {0, 2, 4}, {0, 15, 6}} {
		if got := rt.ShortestPathHops(c.src, c.dst); got != c.hops {
			t.Errorf("hops %d->%d = %d, want %d", c.src, c.dst, got, c.hops)
		}
	}
}

// testdata/hpcc_star.txt has the shape of HPCC's mix/topology.txt: one switch (node 0), hosts
// with 100G and 25G links, "0.001ms" delays, and the format description after the last link,
// which ns-3 never reads.
func TestImportHPCCStarWithTrailingNotes(t *testing.T) {
	g := importFile(t, "testdata/hpcc_star.txt")
	checkGraph(t, g, 8, 1, 8)
	if g.Nodes[0].Kind != Switch || g.Hosts[0] != 1 || g.Nodes[8].Host != 7 {
		t.Fatalf("dense host numbering: hosts %v", g.Hosts)
	}
	if g.Links[0].Rate != 100*units.Gbps || g.Links[7].Rate != 25*units.Gbps || g.Links[0].Latency != units.Microsecond {
		t.Fatalf("rates/delays: %+v %+v", g.Links[0], g.Links[7])
	}
	if h, ok := g.HostOfNode(8); !ok || h != 7 {
		t.Fatalf("HostOfNode(8) = %d, %v", h, ok)
	}
	if _, ok := g.HostOfNode(0); ok {
		t.Fatal("HostOfNode(switch) ok")
	}
}

func TestImportHPCCErrors(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"empty", "", "topo.txt: empty file"},
		{"header fields", "3 1\n", "topo.txt:1: header has 2 fields, want 3"},
		{"simai header", "16 8 1 1 16 A100\n", "SimAI"},
		{"bad node count", "x 1 2\n", `topo.txt:1: node count: "x" is not a whole number`},
		{"huge node count", "99999999999 1 1\n", "node count: 99999999999 is outside 1..4194304"},
		{"all switches", "3 3 2\n", "topo.txt:1: switch count: 3 is outside 0..2"},
		{"negative links", "3 1 -1\n", "link count: -1 is outside"},
		{"no switch line", "3 1 2\n", "topo.txt:1: file ends after 0 of the 1 switch ids"},
		{"switch id range", "3 1 2\n7\n", "topo.txt:2: switch id 1: node id 7 is out of range 0..2"},
		{"duplicate switch", "4 2 2\n0 0\n", "topo.txt:2: switch id 0 is listed twice (first on line 2)"},
		{"extra switch id", "3 1 2\n0 1\n", `topo.txt:2: more switch ids than the 1 declared on line 1 (extra id "1")`},
		{"truncated", "3 1 2\n0\n0 1 100Gbps 1us 0\n", "topo.txt:3: file ends after 1 of the 2 links declared on line 1"},
		{"rate typo", "3 1 2\n0\n0 1 100Gbps 1us 0\n0 2 100Gbs 1us 0\n", `topo.txt:4: link 2: rate "100Gbs": unknown unit "Gbs"`},
		{"fields", "3 1 2\n0\n0 1 100Gbps 1us\n", "topo.txt:3: link 1: 4 fields, want 5: <a> <b> <rate> <delay> <error_rate>"},
		{"id range", "3 1 2\n0\n0 5 100Gbps 1us 0\n", "topo.txt:3: link 1: node b: node id 5 is out of range 0..2 (line 1 declares 3 nodes)"},
		{"id word", "3 1 2\n0\nzero 1 100Gbps 1us 0\n", `topo.txt:3: link 1: node a: "zero" is not a node id`},
		{"self loop", "3 1 2\n0\n0 0 100Gbps 1us 0\n", "topo.txt:3: link 1 joins node 0 to itself"},
		{"delay unit", "3 1 2\n0\n0 1 100Gbps 1000 0\n", `topo.txt:3: link 1: delay: duration "1000" has no unit`},
		{"error rate", "3 1 2\n0\n0 1 100Gbps 1us 2\n", `topo.txt:3: link 1: error rate "2": want a probability between 0 and 1`},
		{"host twice", "4 2 3\n0 1\n2 0 100Gbps 1us 0\n3 0 100Gbps 1us 0\n2 1 100Gbps 1us 0\n", "topo.txt:5: link 3: host node 2 already has a link (line 3)"},
		{"host without link", "4 1 2\n0\n1 0 100Gbps 1us 0\n2 0 100Gbps 1us 0\n", "topo.txt: host node 3 has no link"},
		{"no links", "4000000 0 0\n", "host node 0 has no link"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ImportHPCC(strings.NewReader(c.in), "topo.txt")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v; want it to contain %q", err, c.want)
			}
		})
	}
}

// Every generator's graph survives WriteHPCCTopology + ImportHPCC: same kinds, host order,
// links, rates, delays and error rates.
func TestHPCCRoundTrip(t *testing.T) {
	ft, _ := FatTreeTiered(4, FatTreeLinks{
		HostEdge: LinkSpec{Rate: 100 * units.Gbps, Latency: 1500 * units.Picosecond},
		EdgeAgg:  link400,
		AggCore:  LinkSpec{Rate: 25781250000, Latency: 3 * units.Microsecond},
	})
	ft.Links[5].ErrorRate = 1e-6
	ls, _ := LeafSpine(LeafSpineSpec{Leaves: 3, Spines: 2, HostsPerLeaf: 5, Host: link400, LinksPerSpine: 2})
	rail, _ := RailOptimized(RailSpec{Servers: 6, NICsPerServer: 4, NIC: link400})
	for _, g := range []*Graph{ft, ls, rail} {
		var buf bytes.Buffer
		if err := WriteHPCCTopology(&buf, g); err != nil {
			t.Fatal(err)
		}
		back, err := ImportHPCC(bytes.NewReader(buf.Bytes()), g.Name+".txt")
		if err != nil {
			t.Fatalf("%s: %v\n%s", g.Name, err, buf.String())
		}
		sameStructure(t, g, back)
	}
}

func sameStructure(t *testing.T, want, got *Graph) {
	t.Helper()
	if len(got.Nodes) != len(want.Nodes) || len(got.Links) != len(want.Links) || len(got.Hosts) != len(want.Hosts) {
		t.Fatalf("%s: %d nodes %d links %d hosts, want %d %d %d", want.Name, len(got.Nodes), len(got.Links), len(got.Hosts), len(want.Nodes), len(want.Links), len(want.Hosts))
	}
	for i := range want.Nodes {
		if got.Nodes[i].Kind != want.Nodes[i].Kind || got.Nodes[i].Host != want.Nodes[i].Host || len(got.Nodes[i].Ports) != len(want.Nodes[i].Ports) {
			t.Fatalf("%s: node %d differs: %+v vs %+v", want.Name, i, got.Nodes[i], want.Nodes[i])
		}
	}
	for i := range want.Links {
		a, b := want.Links[i], got.Links[i]
		if a.A != b.A || a.B != b.B || a.APort != b.APort || a.BPort != b.BPort || a.Rate != b.Rate || a.Latency != b.Latency || a.ErrorRate != b.ErrorRate {
			t.Fatalf("%s: link %d differs: %+v vs %+v", want.Name, i, b, a)
		}
	}
}

func FuzzImportHPCC(f *testing.F) {
	for _, p := range []string{"testdata/hpcc_fat_k4.txt", "testdata/hpcc_star.txt"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("3 1 2\n0\n1 0 100Gbps 1us 0\n2 0 100Gbps 1us 0\n"))
	f.Add([]byte("4 2 3\n0 1\n2 0 100Gbps 1us 0\n3 1 100Gbps 1us 0\n0 1 400G 0.5us 1e-6\n"))
	f.Add([]byte("2 0 1\n0 1 1Gb/s 0 0\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		st := time.Now()
		defer func() {
			if d := time.Since(st); d > time.Second {
				t.Fatalf("took %v on %q", d, data[:min(len(data), 300)])
			}
		}()
		g, err := ImportHPCC(bytes.NewReader(data), "fuzz.txt")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.txt") {
				t.Fatalf("error without the file name: %v", err)
			}
			return
		}
		if err := g.Validate(); err != nil {
			t.Fatalf("imported graph fails Validate: %v", err)
		}
		var buf bytes.Buffer
		if err := WriteHPCCTopology(&buf, g); err != nil {
			t.Fatal(err)
		}
		back, err := ImportHPCC(&buf, "fuzz.txt")
		if err != nil {
			t.Fatalf("re-import: %v", err)
		}
		sameStructure(t, g, back)
		if len(g.Nodes) <= 256 {
			if _, err := ComputeRoutes(g); err != nil {
				t.Fatalf("routes: %v", err)
			}
		}
	})
}
