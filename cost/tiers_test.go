package cost

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

const g800 = 800 * units.Gbps

// tierWant is one row of a closed-form bill: a tier's switches, its links by length class and
// medium, and its transceivers (twin-port modules among them).
type tierWant struct {
	plane, tier      int
	switches         int
	model            string
	nics             int
	cables           []CableCount
	transceivers     int
	twin             int
	dacs, aocs, fibr int
}

func checkTiers(t *testing.T, b *Bill, want []tierWant) {
	t.Helper()
	if len(b.Tiers) != len(want) {
		t.Fatalf("%d tier rows, want %d: %+v", len(b.Tiers), len(want), b.Tiers)
	}
	for i, w := range want {
		got := &b.Tiers[i]
		if got.Plane != w.plane || got.Tier != w.tier {
			t.Errorf("row %d is plane %d tier %d, want plane %d tier %d", i, got.Plane, got.Tier, w.plane, w.tier)
			continue
		}
		name := got.Name()
		if got.Switches != w.switches || (w.switches > 0 && got.SwitchModels[w.model] != w.switches) {
			t.Errorf("%s: switches %d %v, want %d x %s", name, got.Switches, got.SwitchModels, w.switches, w.model)
		}
		if got.NICs != w.nics {
			t.Errorf("%s: NICs %d, want %d", name, got.NICs, w.nics)
		}
		if len(got.Cables) != len(w.cables) {
			t.Errorf("%s: cables %+v, want %+v", name, got.Cables, w.cables)
		} else {
			links := 0
			for j := range w.cables {
				if got.Cables[j] != w.cables[j] {
					t.Errorf("%s: cables %+v, want %+v", name, got.Cables, w.cables)
				}
				links += w.cables[j].Links
			}
			if got.Links != links {
				t.Errorf("%s: %d links, want %d", name, got.Links, links)
			}
		}
		if got.Transceivers != w.transceivers || got.TwinTransceivers != w.twin {
			t.Errorf("%s: transceivers %d (twin-port %d), want %d (%d)", name, got.Transceivers, got.TwinTransceivers, w.transceivers, w.twin)
		}
		if got.DACs != w.dacs || got.AOCs != w.aocs || got.Fibres != w.fibr {
			t.Errorf("%s: DAC %d AOC %d fibre %d, want %d, %d, %d", name, got.DACs, got.AOCs, got.Fibres, w.dacs, w.aocs, w.fibr)
		}
	}
	// The tiers add up to the bill: every switch, NIC, transceiver, cable and dollar once.
	var sw, nics, links, xcv, fib int
	var usd float64
	for _, tb := range b.Tiers {
		sw += tb.Switches
		nics += tb.NICs
		links += tb.Links
		xcv += tb.Transceivers
		fib += tb.Fibres
		usd += tb.TotalUSD
	}
	c := b.Counts
	if sw != c.Switches || nics != c.NICs || links != c.Links || xcv != c.Transceivers || fib != c.Fibres {
		t.Errorf("tiers sum to %d switches, %d NICs, %d links, %d transceivers, %d fibres; the bill has %d, %d, %d, %d, %d",
			sw, nics, links, xcv, fib, c.Switches, c.NICs, c.Links, c.Transceivers, c.Fibres)
	}
	if math.Abs(usd-b.Totals.NetworkUSD) > 0.01*float64(len(b.Tiers)) {
		t.Errorf("tiers sum to %.2f USD, the bill to %.2f", usd, b.Totals.NetworkUSD)
	}
}

func clos(t *testing.T, spec topo.ClosSpec) *topo.Graph {
	t.Helper()
	g, err := topo.Clos(spec)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestBOMThreeTierRail16384 prices the 16,384-GPU three-tier rail-optimized cluster of NVIDIA's
// DGX SuperPOD reference architecture: 2,048 servers x 8 GPUs, one 400G NIC per GPU, scalable
// units (SUs) of 32 servers, radix-64 switches, non-blocking.
//
// Closed form from the Clos parameters (R = 64 ports, 1:1):
//
//	SUs            = 2048 / 32                         = 64
//	leaf           : 32 NIC ports + 32 uplinks          (R/2 each)
//	leaves         = 8 rails x 64 SUs                   = 512
//	spines per SU  = 8 leaves x 32 uplinks / 32 down    = 8, so 512 spines (32 down, 32 up)
//	core groups    = 8 (group i joins spine i of every SU); cores per group = 64 SUs x 32 / 64
//	               = 32, so 256 cores (64 down)
//	links per tier = 16,384 (NIC-leaf, leaf-spine, spine-core)
//
// which is the component table of the DGX SuperPOD B200 reference architecture for 64 SUs:
// 512 leaf, 512 spine, 256 core switches; 16,384 node-leaf, leaf-spine and spine-core cables.
// Length classes (topo.Clos): NIC-leaf and leaf-spine in a row, spine-core across the hall.
func TestBOMThreeTierRail16384(t *testing.T) {
	g := clos(t, topo.ClosSpec{Servers: 2048, NICsPerServer: 8, RailOptimized: true, Tiers: 3, Radix: 64, ServersPerSU: 32,
		NIC: topo.LinkSpec{Rate: g400}})
	const (
		nics, leaves, spines, cores = 16384, 512, 512, 256
		perTier                     = 16384
	)
	cat := Default()
	price := func(key string) float64 { return cat.Items[key].PriceUSD }
	fibre := func(m float64) float64 { return price("fibre-mpo") + m*cat.Items["fibre-mpo"].PricePerMUSD }
	row := func(m string, n int) []CableCount { return []CableCount{{Reach: "row", Medium: m, Links: n}} }
	hall := []CableCount{{Reach: "hall", Medium: MediumOptical, Links: perTier}}

	t.Run("infiniband", func(t *testing.T) {
		// QM9700-class switches: a cage is two NDR ports, so every switch end of optics is a
		// twin-port module serving two links (ends / 2 per switch and tier); hosts take single
		// 400G modules. The catalogue has no NDR AOC, so rows are cabled with optics too.
		//   tier 1: 16,384 host modules + 512 leaves x 32 ends / 2     = 16,384 + 8,192 twin
		//   tier 2: 512 leaves x 32 / 2 + 512 spines x 32 / 2          = 16,384 twin
		//   tier 3: 512 spines x 32 / 2 + 256 cores x 64 / 2           = 16,384 twin
		//   fibres: one per link, 16,384 per tier (20 m, 30 m, 100 m by default)
		b, err := BOM(g, InfiniBand, cat, Options{GPUs: nics, RailOptimized: true})
		if err != nil {
			t.Fatal(err)
		}
		sw := "ib-ndr-switch-64x400g"
		checkTiers(t, b, []tierWant{
			{plane: -1, tier: 0, nics: nics},
			{plane: -1, tier: 1, switches: leaves, model: sw, cables: row(MediumOptical, perTier), transceivers: 16384 + 8192, twin: 8192, fibr: perTier},
			{plane: -1, tier: 2, switches: spines, model: sw, cables: row(MediumOptical, perTier), transceivers: 16384, twin: 16384, fibr: perTier},
			{plane: -1, tier: 3, switches: cores, model: sw, cables: hall, transceivers: 16384, twin: 16384, fibr: perTier},
		})
		if n := b.Counts; n.Switches != 1280 || n.SwitchesTier[1] != leaves || n.SwitchesTier[2] != spines || n.SwitchesTier[3] != cores ||
			n.LinksByReach["row"] != 2*perTier || n.LinksByReach["hall"] != perTier || n.Transceivers != 16384+8192+2*16384 {
			t.Errorf("counts %+v", n)
		}
		want := 1280*price(sw) + nics*price("connectx7-400g") + 16384*price("transceiver-400g") +
			(8192+2*16384)*price("transceiver-800g-twin-2x400g") + perTier*(fibre(20)+fibre(30)+fibre(100))
		if !near(b.Totals.NetworkUSD, want) || !near(b.Totals.PerGPUUSD, math.Round(want/nics*100)/100) {
			t.Errorf("network %.2f (%.2f per GPU), want %.2f (%.2f)", b.Totals.NetworkUSD, b.Totals.PerGPUUSD, want, want/nics)
		}
		if !strings.Contains(strings.Join(b.Assumptions, "; "), "row-reach links at 400Gbps: the catalogue has no infiniband AOC that reaches them, cabled with transceivers and fibre") {
			t.Errorf("assumptions do not say why rows take optics: %q", b.Assumptions)
		}
	})

	t.Run("ethernet", func(t *testing.T) {
		// 25.6T switches of 64 x 400G cages (one link per cage): single modules at both ends
		// of hall links, 2 x 16,384; rows (20 m and 30 m) within the 400G AOC's 30 m.
		b, err := BOM(g, Ethernet, cat, Options{GPUs: nics, RailOptimized: true})
		if err != nil {
			t.Fatal(err)
		}
		sw := "eth-switch-25.6t-64x400g"
		checkTiers(t, b, []tierWant{
			{plane: -1, tier: 0, nics: nics},
			{plane: -1, tier: 1, switches: leaves, model: sw, cables: row(MediumAOC, perTier), aocs: perTier},
			{plane: -1, tier: 2, switches: spines, model: sw, cables: row(MediumAOC, perTier), aocs: perTier},
			{plane: -1, tier: 3, switches: cores, model: sw, cables: hall, transceivers: 2 * perTier, fibr: perTier},
		})
		want := 1280*price(sw) + nics*price("connectx7-400g") + 2*perTier*price("aoc-400g") +
			2*perTier*price("transceiver-400g") + perTier*fibre(100)
		if !near(b.Totals.NetworkUSD, want) {
			t.Errorf("network %.2f, want %.2f", b.Totals.NetworkUSD, want)
		}
	})
}

// TestBOMTwoTierXDR prices a two-tier 800G cluster as in the DGX SuperPOD B300 (XDR) reference
// architecture: 18 SUs of 72 servers x 8 GPUs (10,368 GPUs), one 800G NIC per GPU, 144-port
// switches. Closed form (R = 144, 1:1): a leaf has 72 NIC ports and 72 uplinks; leaves = 8 rails
// x 18 SUs = 144; spines = 144 leaves x 72 uplinks / 144 ports = 72, each with one link to every
// leaf; 10,368 NIC-leaf and 10,368 leaf-spine links: the RA's table for 18 SUs (144 leaf, 72
// spine, 10,368 + 10,368 cables).
func TestBOMTwoTierXDR(t *testing.T) {
	g := clos(t, topo.ClosSpec{Servers: 1296, NICsPerServer: 8, RailOptimized: true, Radix: 144, ServersPerSU: 72,
		NIC: topo.LinkSpec{Rate: g800}})
	const nics, leaves, spines, perTier = 10368, 144, 72, 10368
	cat := Default()
	price := func(key string) float64 { return cat.Items[key].PriceUSD }
	b, err := BOM(g, InfiniBand, cat, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Quantum-X800 class: 72 cages of two 800G ports, so switch ends take 1.6T twin-port modules:
	//   tier 1: 10,368 host 800G modules + 144 leaves x 72 / 2 = 5,184 twin
	//   tier 2: 144 leaves x 72 / 2 + 72 spines x 144 / 2    = 10,368 twin
	sw, twin := "ib-xdr-switch-144x800g", "transceiver-1.6t-twin-2x800g"
	row := []CableCount{{Reach: "row", Medium: MediumOptical, Links: perTier}}
	checkTiers(t, b, []tierWant{
		{plane: -1, tier: 0, nics: nics},
		{plane: -1, tier: 1, switches: leaves, model: sw, cables: row, transceivers: 10368 + 5184, twin: 5184, fibr: perTier},
		{plane: -1, tier: 2, switches: spines, model: sw, cables: row, transceivers: 10368, twin: 10368, fibr: perTier},
	})
	fib := cat.Items["fibre-mpo"]
	want := (leaves+spines)*price(sw) + nics*price("connectx8-800g") + 10368*price("transceiver-800g") + (5184+10368)*price(twin) +
		perTier*(2*fib.PriceUSD+(20+30)*fib.PricePerMUSD)
	if !near(b.Totals.NetworkUSD, want) {
		t.Errorf("network %.2f, want %.2f", b.Totals.NetworkUSD, want)
	}
	if b.Totals.GPUs != nics {
		t.Errorf("%d GPUs, want one per NIC: %d", b.Totals.GPUs, nics)
	}
}

// TestBOMDualPlane prices a three-tier fabric of two planes: 512 servers x 8 NICs of two 400G
// ports, port p of every NIC on plane p (topo.ClosSpec.PortsPerNIC = 2), SUs of 32, radix 64.
// Per plane 4,096 NIC ports in 16 SUs, which two tiers do not hold (128 leaves x 32 uplinks need
// 64 spines, more than a leaf's 32 uplinks reach), so three: 128 leaves, 8 spines per SU = 128,
// 8 core groups of 16 x 32 / 64 = 8 = 64 cores (the DGX SuperPOD table for 16 SUs: 128, 128, 64),
// 4,096 links per tier; twice over. NICs: 4,096 of two ports (800G in all: ConnectX-8 class).
func TestBOMDualPlane(t *testing.T) {
	g := clos(t, topo.ClosSpec{Servers: 512, NICsPerServer: 8, PortsPerNIC: 2, RailOptimized: true, Tiers: 3, Radix: 64, ServersPerSU: 32,
		NIC: topo.LinkSpec{Rate: g400}})
	b, err := BOM(g, InfiniBand, Default(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	const perTier = 4096
	sw := "ib-ndr-switch-64x400g"
	row := []CableCount{{Reach: "row", Medium: MediumOptical, Links: perTier}}
	hall := []CableCount{{Reach: "hall", Medium: MediumOptical, Links: perTier}}
	want := []tierWant{{plane: -1, tier: 0, nics: 4096}}
	for p := range 2 {
		want = append(want,
			tierWant{plane: p, tier: 1, switches: 128, model: sw, cables: row, transceivers: 4096 + 128*16, twin: 128 * 16, fibr: perTier},
			tierWant{plane: p, tier: 2, switches: 128, model: sw, cables: row, transceivers: 128*16 + 128*16, twin: 4096, fibr: perTier},
			tierWant{plane: p, tier: 3, switches: 64, model: sw, cables: hall, transceivers: 128*16 + 64*32, twin: 4096, fibr: perTier})
	}
	checkTiers(t, b, want)
	if l := line(t, b, "connectx8-800g", 0); l.Qty != 4096 {
		t.Errorf("NIC line %+v, want 4096 dual-port NICs", l)
	}
	if b.Totals.GPUs != 4096 || b.Totals.Hosts != 8192 {
		t.Errorf("GPUs %d hosts %d; want one GPU per NIC by default (4,096) and a host per NIC port (8,192)", b.Totals.GPUs, b.Totals.Hosts)
	}
	// The text bill shows the planes apart.
	var out bytes.Buffer
	if err := b.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"plane 1 core", "64 x ib-ndr-switch-64x400g", "hall 4,096 optical"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("text bill lacks %q:\n%s", s, out.String())
		}
	}
}

// TestBOMFatTreeRack: the k = 8 fat tree (Al-Fares et al.: k^3/4 = 128 hosts, k^2/2 = 32 edge
// and 32 aggregation switches, (k/2)^2 = 16 cores) built by topo.Clos as top-of-rack: host links
// in the rack (DAC), edge-aggregation in a row (AOC on Ethernet), aggregation-core across the
// hall (optics); 128 links each.
func TestBOMFatTreeRack(t *testing.T) {
	g := clos(t, topo.ClosSpec{Servers: 128, Tiers: 3, Radix: 8, NIC: topo.LinkSpec{Rate: g400}})
	b, err := BOM(g, Ethernet, Default(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	sw := "eth-switch-25.6t-64x400g"
	checkTiers(t, b, []tierWant{
		{plane: -1, tier: 0, nics: 128},
		{plane: -1, tier: 1, switches: 32, model: sw, cables: []CableCount{{Reach: "rack", Medium: MediumDAC, Links: 128}}, dacs: 128},
		{plane: -1, tier: 2, switches: 32, model: sw, cables: []CableCount{{Reach: "row", Medium: MediumAOC, Links: 128}}, aocs: 128},
		{plane: -1, tier: 3, switches: 16, model: sw, cables: []CableCount{{Reach: "hall", Medium: MediumOptical, Links: 128}}, transceivers: 256, fibr: 128},
	})
}

// A catalogue that lacks a part the cluster needs: the message names the part, the link or
// switch that needs it, and what the catalogue has instead.
func TestBOMMissingParts(t *testing.T) {
	xdr := clos(t, topo.ClosSpec{Servers: 144, NICsPerServer: 8, RailOptimized: true, Radix: 144, ServersPerSU: 72,
		NIC: topo.LinkSpec{Rate: g800}})
	dual := clos(t, topo.ClosSpec{Servers: 64, NICsPerServer: 8, PortsPerNIC: 2, RailOptimized: true, Radix: 64, ServersPerSU: 32,
		NIC: topo.LinkSpec{Rate: g400}})
	disable := func(keys ...string) *Catalogue {
		c := Default()
		for _, k := range keys {
			c.Items[k].Disabled = true
		}
		return c
	}
	for _, c := range []struct {
		name   string
		g      *topo.Graph
		fabric string
		cat    *Catalogue
		want   []string
	}{
		{"no 144-port Ethernet switch", xdr, Ethernet, Default(), []string{
			"switch rail0_leaf0 (tier 1) needs 144 ports (144 at 800Gbps); the largest ethernet switch in the catalogue",
			"the catalogue's ethernet switches: eth-sn5600-64x800g (64 x 800Gbps or 128 x 400Gbps",
		}},
		{"no XDR switch", xdr, InfiniBand, disable("ib-xdr-switch-144x800g"), []string{
			"needs 144 ports (144 at 800Gbps)",
			"the catalogue's infiniband switches: ib-ndr-switch-64x400g (64 x 400Gbps or 128 x 200Gbps)",
		}},
		{"no 800G optics", xdr, InfiniBand, disable("transceiver-800g"), []string{
			"link 0 (host0-rail0_leaf0, host-rail, row reach, 800Gbps, 20 m): the catalogue has no infiniband transceiver for 800Gbps with reach >= 20 m",
			"the catalogue's infiniband transceivers: transceiver-1.6t-twin-2x800g (800Gbps, 2 links, 500 m), transceiver-400g (400Gbps, 1 link, 500 m)",
			"add one: kind: transceiver, rate: 800Gbps, links: 1, max_length_m: 20 or more",
		}},
		{"no dual-port NIC", dual, InfiniBand, disable("connectx8-800g"), []string{
			"NIC 0 of server 0 (host host0) has 2 ports, 800Gbps in all; the price catalogue has no infiniband NIC that fast",
			"the catalogue's infiniband NICs: connectx7-400g (400Gbps)",
		}},
		{"no NIC at 400G", dual, InfiniBand, disable("connectx8-800g", "connectx7-400g"), []string{
			"the catalogue has no enabled infiniband NICs at all",
		}},
		{"no fibre", xdr, InfiniBand, disable("fibre-mpo"), []string{
			"the catalogue has no infiniband fibre for 800Gbps (the catalogue has no enabled infiniband fibres at all); add one: kind: fibre",
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := BOM(c.g, c.fabric, c.cat, Options{})
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nlacks %q", err, w)
				}
			}
		})
	}
	// A row with no AOC is not an error: its links take optics, and the bill says so.
	b, err := BOM(dual, Ethernet, disable("aoc-400g"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if b.Counts.AOCLinks != 0 || b.Counts.OpticalLinks != b.Counts.Links ||
		!strings.Contains(strings.Join(b.Assumptions, "; "), "row-reach links at 400Gbps: the catalogue has no ethernet AOC that reaches them") {
		t.Errorf("row without AOC: %+v, assumptions %q", b.Counts, b.Assumptions)
	}
}

// The parts of three-tier and 800G fabrics are in the default catalogue with their ranges,
// the switches with their cages.
func TestCatalogueThreeTierParts(t *testing.T) {
	c := Default()
	for _, w := range []struct {
		key       string
		ports     int // switch ports at rate
		rate      units.Rate
		low, high float64
	}{
		{"ib-ndr-switch-64x400g", 64, g400, 25000, 35000},
		{"ib-xdr-switch-144x800g", 144, g800, 70000, 130000},
		{"eth-sn5600-64x800g", 128, g400, 60000, 100000},
		{"eth-switch-51.2t-64x800g", 64, g800, 40000, 100000},
		{"connectx8-800g", 0, 0, 2500, 4500},
		{"transceiver-1.6t-twin-2x800g", 0, 0, 1500, 3500},
		{"aoc-800g", 0, 0, 1000, 2000},
	} {
		it := c.Items[w.key]
		if it == nil {
			t.Fatalf("default catalogue lacks %s", w.key)
		}
		if it.LowUSD != w.low || it.HighUSD != w.high || it.PriceUSD != (w.low+w.high)/2 {
			t.Errorf("%s: price %g range [%g, %g]; want the mid-point of [%g, %g]", w.key, it.PriceUSD, it.LowUSD, it.HighUSD, w.low, w.high)
		}
		if w.ports > 0 && it.PortsAt(w.rate) != w.ports {
			t.Errorf("%s: %d ports at %s, want %d", w.key, it.PortsAt(w.rate), w.rate, w.ports)
		}
	}
	// A QM9700 cage carries two NDR ports and none at 800G; an XDR cage two 800G ports.
	if ndr := c.Items["ib-ndr-switch-64x400g"]; ndr.breakoutFor(g400) != 2 || ndr.PortsAt(g800) != 0 || ndr.Capacity() != 25600*units.Gbps {
		t.Errorf("NDR switch: %d links per cage at 400G, %d ports at 800G, capacity %s", ndr.breakoutFor(g400), ndr.PortsAt(g800), ndr.Capacity())
	}
	if xdr := c.Items["ib-xdr-switch-144x800g"]; xdr.breakoutFor(g800) != 2 || xdr.Capacity() != 115200*units.Gbps {
		t.Errorf("XDR switch: %d links per cage at 800G, capacity %s", xdr.breakoutFor(g800), xdr.Capacity())
	}
}

// BenchmarkBOMThreeTier prices three-tier rail-optimized clusters of 8,192 and 16,384 GPUs (SUs
// of 32 servers, radix 64) on InfiniBand: time and memory should double with the cluster.
func BenchmarkBOMThreeTier(b *testing.B) {
	for _, servers := range []int{1024, 2048} {
		g, err := topo.Clos(topo.ClosSpec{Servers: servers, NICsPerServer: 8, RailOptimized: true, Tiers: 3, Radix: 64, ServersPerSU: 32,
			NIC: topo.LinkSpec{Rate: g400}})
		if err != nil {
			b.Fatal(err)
		}
		cat := Default()
		b.Run(fmt.Sprintf("gpus=%d", servers*8), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := BOM(g, InfiniBand, cat, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
