package cost

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

const g400 = 400 * units.Gbps

// railCluster builds, by hand, the two-tier rail-optimized 1,024-GPU cluster on 64-port switches:
// 128 servers x 8 NICs; NIC r of server s goes to leaf s/32 of rail r (4 leaves per rail, 32
// down each); every leaf sends 2 uplinks to each of 16 spines (32 up; 32 leaves x 2 = 64 ports
// per spine). railLeaves false leaves Node.Rail unset, as a top-of-rack layout would.
func railCluster(railLeaves bool) *topo.Graph {
	const servers, rails, leavesPerRail, down, spines = 128, 8, 4, 32, 16
	g := &topo.Graph{Name: "rail-1024"}
	leaves := make([][]topo.NodeID, rails)
	for r := range rails {
		for i := range leavesPerRail {
			id := g.AddNode(topo.Switch, fmt.Sprintf("rail%d_leaf%d", r, i), 1)
			if railLeaves {
				g.Nodes[id].Rail = int32(r)
			}
			leaves[r] = append(leaves[r], id)
		}
	}
	var sp []topo.NodeID
	for j := range spines {
		sp = append(sp, g.AddNode(topo.Switch, fmt.Sprintf("spine%d", j), 2))
	}
	for s := range servers {
		for r := range rails {
			h := g.AddNode(topo.Host, fmt.Sprintf("s%d_nic%d", s, r), 0)
			g.Nodes[h].Server, g.Nodes[h].Rail = int32(s), int32(r)
			g.Connect(h, leaves[r][s/down], g400, units.Microsecond/10)
		}
	}
	for r := range rails {
		for _, l := range leaves[r] {
			for _, s := range sp {
				g.Connect(l, s, g400, units.Microsecond/10)
				g.Connect(l, s, g400, units.Microsecond/10)
			}
		}
	}
	return g
}

func line(t *testing.T, b *Bill, item string, tier int) Line {
	t.Helper()
	for _, l := range b.Lines {
		if l.Item == item && l.Tier == tier {
			return l
		}
	}
	t.Fatalf("bill has no line %s (tier %d): %+v", item, tier, b.Lines)
	return Line{}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }

func TestBOMRail1024(t *testing.T) {
	// Closed form for 128 servers x 8 NICs on 64-port switches (two tiers, 1:1):
	//   NICs       = 128 x 8                          = 1024
	//   leaves     = 8 rails x ceil(128 / 32)          = 32  (32 down + 32 up)
	//   spines     = 32 leaves x 32 up / 64 ports      = 16
	//   host links = 1024, leaf-spine links = 32 x 32  = 1024
	//   every link leaves the rack (rail leaves; leaf-spine 30 m): 2048 optical links,
	//   2 transceivers each = 4096, one fibre each = 2048.
	const nics, leaves, spines, hostLinks, upLinks = 1024, 32, 16, 1024, 1024
	g := railCluster(true)
	cat := Default()
	mid := func(key string) float64 { return cat.Items[key].PriceUSD }

	for _, c := range []struct {
		fabric, sw string
	}{
		{InfiniBand, "ib-ndr-switch-64x400g"},
		{Ethernet, "eth-switch-25.6t-64x400g"}, // the smallest Ethernet switch with 64 x 400G
	} {
		t.Run(c.fabric, func(t *testing.T) {
			b, err := BOM(g, c.fabric, cat, Options{Server: "hgx-h100-server"})
			if err != nil {
				t.Fatal(err)
			}
			n := b.Counts
			if n.NICs != nics || n.Switches != leaves+spines || n.SwitchesTier[1] != leaves || n.SwitchesTier[2] != spines {
				t.Errorf("NICs %d switches %d (tiers %v); want %d, %d (%d + %d)", n.NICs, n.Switches, n.SwitchesTier, nics, leaves+spines, leaves, spines)
			}
			if n.Links != hostLinks+upLinks || n.LinksByClass["host-rail"] != hostLinks || n.LinksByClass["leaf-spine"] != upLinks {
				t.Errorf("links %d %v; want %d host-rail + %d leaf-spine", n.Links, n.LinksByClass, hostLinks, upLinks)
			}
			if n.OpticalLinks != 2048 || n.Transceivers != 2*2048 || n.Fibres != 2048 || n.CopperLinks != 0 {
				t.Errorf("optical %d transceivers %d fibres %d DAC %d; want 2048, 4096, 2048, 0", n.OpticalLinks, n.Transceivers, n.Fibres, n.CopperLinks)
			}
			if l := line(t, b, c.sw, 1); l.Qty != leaves || !strings.Contains(l.Note, "2048 of 2048 ports used at 400Gbps") {
				t.Errorf("leaf line %+v", l)
			}
			if l := line(t, b, c.sw, 2); l.Qty != spines || !strings.Contains(l.Note, "1024 of 1024 ports") {
				t.Errorf("spine line %+v", l)
			}
			// Totals from the catalogue's unit prices; fibre = 40 USD + 1 USD/m (20 m rail, 30 m spine).
			want := float64(leaves+spines)*mid(c.sw) + nics*mid("connectx7-400g") + 4096*mid("transceiver-400g") +
				hostLinks*(40+20) + upLinks*(40+30)
			if !near(b.Totals.NetworkUSD, want) {
				t.Errorf("network total %.2f, want %.2f", b.Totals.NetworkUSD, want)
			}
			if !near(b.Totals.PerGPUUSD, math.Round(want/1024*100)/100) || b.Totals.GPUs != 1024 {
				t.Errorf("per GPU %.2f over %d GPUs, want %.2f over 1024", b.Totals.PerGPUUSD, b.Totals.GPUs, want/1024)
			}
			servers := 128 * mid("hgx-h100-server")
			if b.Totals.Servers != 128 || !near(b.Totals.NetworkShare, want/(want+servers)) {
				t.Errorf("servers %d share %.4f, want 128, %.4f", b.Totals.Servers, b.Totals.NetworkShare, want/(want+servers))
			}
			var sum, low, high float64
			for _, l := range b.Lines {
				sum += l.SubtotalUSD
				low += l.LowUSD
				high += l.HighUSD
				if l.LowUSD > l.SubtotalUSD || l.SubtotalUSD > l.HighUSD {
					t.Errorf("line %s: subtotal %.0f outside its range [%.0f, %.0f]", l.Item, l.SubtotalUSD, l.LowUSD, l.HighUSD)
				}
			}
			if !near(sum, b.Totals.NetworkUSD) || !near(low, b.Totals.NetworkLowUSD) || !near(high, b.Totals.NetworkHighUSD) {
				t.Errorf("lines sum to %.2f [%.2f, %.2f], totals say %.2f [%.2f, %.2f]", sum, low, high,
					b.Totals.NetworkUSD, b.Totals.NetworkLowUSD, b.Totals.NetworkHighUSD)
			}
		})
	}
}

// The IB figure printed for the docs: 7,921,920 USD, 7,736.25 per GPU, 17.3 % of network + servers.
func TestBOMRail1024Figures(t *testing.T) {
	b, err := BOM(railCluster(true), InfiniBand, Default(), Options{Server: "hgx-h100-server"})
	if err != nil {
		t.Fatal(err)
	}
	// 48 x 30,000 + 1024 x 2,000 + 4096 x 1,050 + 1024 x 60 + 1024 x 70
	const want = 48*30000 + 1024*2000 + 4096*1050 + 1024*60 + 1024*70
	if b.Totals.NetworkUSD != want || b.Totals.PerGPUUSD != 7736.25 {
		t.Fatalf("network %.2f per GPU %.2f, want %d and 7736.25", b.Totals.NetworkUSD, b.Totals.PerGPUUSD, want)
	}
	var out bytes.Buffer
	if err := b.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"network total 7,921,920", "per GPU 7,736.25 (1024 GPUs)", "network share of network + servers 17.3 %",
		"ib-ndr-switch-64x400g", "docs/references.md [EST]"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("text bill lacks %q:\n%s", s, out.String())
		}
	}
	js, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	var back Bill
	if err := json.Unmarshal(js, &back); err != nil || back.Totals.NetworkUSD != want || len(back.Lines) != len(b.Lines) {
		t.Fatalf("JSON round trip: %v, %+v", err, back.Totals)
	}
}

func TestBOMTopOfRackUsesDAC(t *testing.T) {
	// Without rail leaves, host links are in-rack (2 m <= 3 m DAC reach): 1024 DACs; only the
	// 1024 leaf-spine links need optics (2048 transceivers).
	b, err := BOM(railCluster(false), InfiniBand, Default(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	n := b.Counts
	if n.CopperLinks != 1024 || n.OpticalLinks != 1024 || n.Transceivers != 2048 || n.Fibres != 1024 {
		t.Fatalf("DAC %d optical %d transceivers %d fibres %d; want 1024, 1024, 2048, 1024", n.CopperLinks, n.OpticalLinks, n.Transceivers, n.Fibres)
	}
	// Option RailOptimized forces every host link out of the rack again.
	b, err = BOM(railCluster(false), InfiniBand, Default(), Options{RailOptimized: true})
	if err != nil || b.Counts.OpticalLinks != 2048 {
		t.Fatalf("RailOptimized: %v, %d optical links; want 2048", err, b.Counts.OpticalLinks)
	}
	// An explicit Link.LengthM wins over every default: a 2 m rail link is copper.
	g := railCluster(true)
	for i := range g.Links {
		g.Links[i].LengthM = 2
	}
	b, err = BOM(g, InfiniBand, Default(), Options{})
	if err != nil || b.Counts.CopperLinks != 2048 {
		t.Fatalf("all 2 m: %v, %d DAC; want 2048", err, b.Counts.CopperLinks)
	}
}

func TestBOMTwinPortAndAOC(t *testing.T) {
	// Twin-port: a leaf has 64 optical ends -> 32 modules, a spine 64 -> 32; hosts keep 1024
	// single modules: 32 x 32 + 16 x 32 + 1024 = 2560.
	b, err := BOM(railCluster(true), InfiniBand, Default(), Options{TwinPortOptics: true})
	if err != nil {
		t.Fatal(err)
	}
	if b.Counts.Transceivers != 2560 || line(t, b, "transceiver-800g-twin-2x400g", 0).Qty != 1536 || line(t, b, "transceiver-400g", 0).Qty != 1024 {
		t.Fatalf("twin-port: %d transceivers, lines %+v", b.Counts.Transceivers, b.Lines)
	}
	// AOC reaches 30 m: every link (20 m and 30 m) becomes one AOC. (The catalogue's AOCs are
	// Ethernet's: NVIDIA offers none for NDR twin-port cages.)
	b, err = BOM(railCluster(true), Ethernet, Default(), Options{PreferAOC: true})
	if err != nil {
		t.Fatal(err)
	}
	if b.Counts.AOCLinks != 2048 || b.Counts.Transceivers != 0 {
		t.Fatalf("AOC: %d AOC links, %d transceivers; want 2048, 0", b.Counts.AOCLinks, b.Counts.Transceivers)
	}
	// A 100 m leaf-spine run is beyond the AOC: optics again for those 1024.
	b, err = BOM(railCluster(true), Ethernet, Default(), Options{PreferAOC: true, LeafSpineM: 100})
	if err != nil || b.Counts.AOCLinks != 1024 || b.Counts.OpticalLinks != 1024 {
		t.Fatalf("AOC at 100 m: %v %+v", err, b.Counts)
	}
}

// star is one switch with ports at the given rates, each to a host.
func star(rates ...units.Rate) *topo.Graph {
	g := &topo.Graph{Name: "star"}
	sw := g.AddNode(topo.Switch, "leaf0", 1)
	for i, r := range rates {
		h := g.AddNode(topo.Host, fmt.Sprintf("h%d", i), 0)
		g.Connect(h, sw, r, 0)
	}
	return g
}

func repeat(r units.Rate, n int) []units.Rate {
	out := make([]units.Rate, n)
	for i := range out {
		out[i] = r
	}
	return out
}

func TestSwitchChoice(t *testing.T) {
	g800 := 800 * units.Gbps
	cat := Default()
	// The catalogue has no 800G NIC; add one so hosts at 800G can be priced.
	cat.Items["nic-800g"] = &Item{Key: "nic-800g", Kind: KindNIC, Rate: g800, PriceUSD: 3000, Source: "test"}
	cat.Items["dac-200g"] = &Item{Key: "dac-200g", Kind: KindDAC, Rate: 200 * units.Gbps, MaxLengthM: 3, PriceUSD: 100, Source: "test"}
	for _, c := range []struct {
		name   string
		rates  []units.Rate
		fabric string
		want   string // item, or error substring after "!"
	}{
		{"64x400 eth", repeat(g400, 64), Ethernet, "eth-switch-25.6t-64x400g"},
		{"65x400 eth: 51.2T split 2x400", repeat(g400, 65), Ethernet, "eth-switch-51.2t-64x800g"},
		{"128x400 eth", repeat(g400, 128), Ethernet, "eth-switch-51.2t-64x800g"},
		{"129x400 eth", repeat(g400, 129), Ethernet, "!needs 129 ports (129 at 400Gbps); the largest ethernet switch in the catalogue, eth-sn5600-64x800g"},
		{"64x800 eth", repeat(g800, 64), Ethernet, "eth-switch-51.2t-64x800g"},
		// 16 at 800G take 16 cages, 96 at 400G take 48: 64 cages exactly.
		{"mixed eth", append(repeat(g800, 16), repeat(g400, 96)...), Ethernet, "eth-switch-51.2t-64x800g"},
		{"mixed eth too many", append(repeat(g800, 17), repeat(g400, 96)...), Ethernet, "!needs 113 ports (17 at 800Gbps + 96 at 400Gbps)"},
		{"64x400 ib", repeat(g400, 64), InfiniBand, "ib-ndr-switch-64x400g"},
		{"128x200 ib (NDR200 split)", repeat(200*units.Gbps, 128), InfiniBand, "ib-ndr-switch-64x400g"},
		// Beyond 64 NDR ports the XDR switch's 800G ports serve 400G links.
		{"65x400 ib", repeat(g400, 65), InfiniBand, "ib-xdr-switch-144x800g"},
		{"800G ib", repeat(g800, 2), InfiniBand, "ib-xdr-switch-144x800g"},
		{"144x800 ib", repeat(g800, 144), InfiniBand, "ib-xdr-switch-144x800g"},
		{"145x800 ib", repeat(g800, 145), InfiniBand, "!needs 145 ports (145 at 800Gbps); the largest infiniband switch in the catalogue, ib-xdr-switch-144x800g (catalogue.yaml(default):"},
		{"1600G ib", repeat(2*g800, 1), InfiniBand, "!the catalogue's infiniband switches: ib-ndr-switch-64x400g (64 x 400Gbps or 128 x 200Gbps), ib-xdr-switch-144x800g (144 x 800Gbps)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := star(c.rates...)
			for i := range g.Links {
				g.Links[i].LengthM = 1 // DAC where one exists
			}
			b, err := BOM(g, c.fabric, cat, Options{})
			if strings.HasPrefix(c.want, "!") {
				if err == nil || !strings.Contains(err.Error(), c.want[1:]) {
					t.Fatalf("error %v, want it to contain %q", err, c.want[1:])
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b.Lines[0].Item != c.want {
				t.Fatalf("switch %s, want %s", b.Lines[0].Item, c.want)
			}
		})
	}
}

func TestBOMErrors(t *testing.T) {
	g := railCluster(true)
	cat := Default()
	for _, c := range []struct {
		name   string
		g      *topo.Graph
		fabric string
		opts   Options
		want   string
	}{
		{"fabric", g, "omnipath", Options{}, `unknown fabric "omnipath" (valid: infiniband, ethernet)`},
		{"server", g, InfiniBand, Options{Server: "dgx-b300"}, `server "dgx-b300" is not a server in the price catalogue (servers: hgx-h100-server)`},
		{"forced model", g, InfiniBand, Options{SwitchModel: map[int]string{2: "connectx7-400g"}}, `switch model "connectx7-400g" for tier 2 is not a switch`},
		{"forced wrong fabric", g, InfiniBand, Options{SwitchModel: map[int]string{1: "eth-switch-51.2t-64x800g"}}, "for tier 1 is not listed for fabric infiniband"},
		{"no optics at 200G", star(200 * units.Gbps), Ethernet, Options{HostLinkM: 10}, "no ethernet transceiver for 200Gbps with reach >= 10 m"},
		{"no NIC at 1.6T", star(1600 * units.Gbps), Ethernet, Options{}, "switch leaf0 (tier 1) needs 1 ports (1 at 1.6Tbps)"},
		{"gpus", g, InfiniBand, Options{GPUs: -8}, "gpus -8 must not be negative"},
		{"invalid graph", &topo.Graph{Name: "empty"}, InfiniBand, Options{}, `topology "empty" has no hosts`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := BOM(c.g, c.fabric, cat, c.opts)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want it to contain %q", err, c.want)
			}
		})
	}
	// A forced model that is too small for its tier.
	g2 := star(repeat(g400, 100)...)
	_, err := BOM(g2, Ethernet, cat, Options{SwitchModel: map[int]string{1: "eth-switch-25.6t-64x400g"}})
	if err == nil || !strings.Contains(err.Error(), "needs 100 ports (100 at 400Gbps); forced model eth-switch-25.6t-64x400g") {
		t.Fatalf("forced too small: %v", err)
	}
}

// The generator in topo must give the same bill as the hand-built graph.
func TestBOMMatchesRailGenerator(t *testing.T) {
	g, err := topo.RailOptimized(topo.RailSpec{Servers: 128, NIC: topo.LinkSpec{Rate: g400}, Radix: 64})
	if err != nil {
		t.Fatal(err)
	}
	got, err := BOM(g, InfiniBand, Default(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := BOM(railCluster(true), InfiniBand, Default(), Options{})
	if got.Totals.NetworkUSD != want.Totals.NetworkUSD || got.Counts.Transceivers != want.Counts.Transceivers || got.Counts.Switches != want.Counts.Switches {
		t.Fatalf("generator bill %+v %+v, hand-built %+v %+v", got.Counts, got.Totals, want.Counts, want.Totals)
	}
}
