package flow_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/analytic"
	"github.com/fabricsim/fabricsim/collective"
	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/flow"
	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/result"
	"github.com/fabricsim/fabricsim/scenario"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

// A validation case: a topology, a fabric and a workload, run on the flow backend and compared
// with the packet backend's figures (docs/flow.md's table). The packet figures are recorded
// here (FLOW_VALIDATE=1 go test ./flow -run Validation -v recomputes them and prints the table);
// the test runs the flow backend on the cases marked small and fails when a figure leaves its
// tolerance of the packet figure or moves from the recorded flow figure.
type valCase struct {
	name  string
	small bool
	build func(t testing.TB) (*topo.Graph, fabric.Config, *msggraph.Graph)
	// seeds > 1 averages the figures over seeds 1..seeds on both backends (DCQCN marks at
	// random, and which packets a tail-dropping queue loses decides go-back-N's recovery: a
	// single run differs between seeds by more than the tolerance).
	seeds int
	// victim: the fourth figure, the FCT of message victimMsg (the innocent flow), is checked too.
	victim    bool
	victimMsg int
	// limit: a known limitation (docs/flow.md): reported, checked for drift, not for tolerance;
	// known the same for single figures (time, p50, p99, victim).
	limit bool
	known [4]bool
	// Recorded figures, microseconds: completion time of the whole workload, FCT p50 and p99,
	// message 0's FCT, on the packet and flow backends.
	packet, flow [4]float64
}

// Tolerances (the targets): completion time within 10 %, FCT percentiles within 15 %.
const (
	tolTime = 0.10
	tolFCT  = 0.15
	// tolDrift bounds how far a flow figure may move from its recorded value before the test
	// asks for the table to be refreshed.
	tolDrift = 0.02
)

func loadExample(t testing.TB, name string) (*topo.Graph, fabric.Config, *msggraph.Graph) {
	t.Helper()
	s, err := scenario.Load(filepath.Join("..", "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Build()
	if err != nil {
		t.Fatal(err)
	}
	b.Fabric.Seed = s.Seed
	return b.Graph, b.Fabric, b.Work
}

func example(name string) func(t testing.TB) (*topo.Graph, fabric.Config, *msggraph.Graph) {
	return func(t testing.TB) (*topo.Graph, fabric.Config, *msggraph.Graph) { return loadExample(t, name) }
}

func leafSpine(t testing.TB, leaves, spines, hosts int, oversub float64, rate units.Rate) *topo.Graph {
	t.Helper()
	g, err := topo.LeafSpine(topo.LeafSpineSpec{Leaves: leaves, Spines: spines, HostsPerLeaf: hosts,
		Host: topo.LinkSpec{Rate: rate, Latency: 500 * units.Nanosecond}, Uplink: topo.LinkSpec{Latency: 500 * units.Nanosecond},
		Oversubscription: oversub})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// roceDefault is compare's roce-default variant: ConnectX DCQCN and NVIDIA's switch ECN
// thresholds, PFC on priority 3.
func roceDefault() fabric.Config {
	c := fabric.DefaultRoCE()
	c.RoCE.Kmin, c.RoCE.Kmax = 150*units.KB, 1500*units.KB
	return c
}

func ibNDR(t testing.TB, adaptive bool) fabric.Config {
	c, err := fabric.DefaultInfiniBand("ndr")
	if err != nil {
		t.Fatal(err)
	}
	c.IB.Adaptive = adaptive
	return c
}

func compile(t testing.TB, hosts int, specs ...collective.Spec) *msggraph.Graph {
	t.Helper()
	g := &msggraph.Graph{Endpoints: hosts}
	var base int32
	for _, s := range specs {
		s.ConnBase = base
		if _, err := collective.Compile(g, s); err != nil {
			t.Fatal(err)
		}
		base += int32(s.Conns())
	}
	return g
}

// allToAll3to1: 24 hosts on 4 leaves of 6, two 400G uplinks per leaf (3:1), a 4 MiB all-to-all.
func allToAll3to1(ib bool) func(t testing.TB) (*topo.Graph, fabric.Config, *msggraph.Graph) {
	return func(t testing.TB) (*topo.Graph, fabric.Config, *msggraph.Graph) {
		g := leafSpine(t, 4, 2, 6, 3, 400*units.Gbps)
		ranks := make([]int32, 24)
		for i := range ranks {
			ranks[i] = int32(i)
		}
		mg := compile(t, 24, collective.Spec{Op: collective.AllToAll, Ranks: ranks, Bytes: 4 * units.MiB, Channels: 2})
		if ib {
			return g, ibNDR(t, true), mg
		}
		return g, roceDefault(), mg
	}
}

// ringAcrossSpines: 16 hosts on 4 leaves, a ring all-reduce of 64 MiB whose every hop crosses
// the spines (ranks alternate leaves), 2 channels of 512 KiB chunks.
func ringAcrossSpines(ib bool) func(t testing.TB) (*topo.Graph, fabric.Config, *msggraph.Graph) {
	return func(t testing.TB) (*topo.Graph, fabric.Config, *msggraph.Graph) {
		g := leafSpine(t, 4, 2, 4, 1, 400*units.Gbps)
		var ranks []int32
		for h := 0; h < 4; h++ {
			for l := 0; l < 4; l++ {
				ranks = append(ranks, int32(l*4+h))
			}
		}
		mg := compile(t, 16, collective.Spec{Op: collective.AllReduce, Ranks: ranks, Bytes: 64 * units.MiB, Channels: 2, ChunkBytes: 512 * units.KiB})
		if ib {
			return g, ibNDR(t, true), mg
		}
		c := roceDefault()
		c.Seed = 3
		return g, c, mg
	}
}

// victim is fabric's congestion-spreading setting (TestCongestionSpreading): hosts 1 and 2 send
// 20 MB each to host 3 (2:1 incast behind sw1); host 0 sends 10 MB to host 4 and shares only
// the sw0 -> sw1 link with them. PFC (or credits) pause that link: the innocent flow is slowed.
func victim(ib bool) func(t testing.TB) (*topo.Graph, fabric.Config, *msggraph.Graph) {
	return func(t testing.TB) (*topo.Graph, fabric.Config, *msggraph.Graph) {
		g := &topo.Graph{Name: "spread"}
		s0 := g.AddNode(topo.Switch, "sw0", 1)
		s1 := g.AddNode(topo.Switch, "sw1", 1)
		for i := 0; i < 5; i++ {
			h := g.AddNode(topo.Host, fmt.Sprintf("host%d", i), 0)
			sw := s0
			if i >= 3 {
				sw = s1
			}
			g.Connect(h, sw, 100*units.Gbps, units.Microsecond)
		}
		g.Connect(s0, s1, 400*units.Gbps, units.Microsecond)
		mg := &msggraph.Graph{Endpoints: 5}
		mg.Add(msggraph.Message{Src: 0, Dst: 4, Bytes: 10 * units.MB})
		mg.Add(msggraph.Message{Src: 1, Dst: 3, Bytes: 20 * units.MB})
		mg.Add(msggraph.Message{Src: 2, Dst: 3, Bytes: 20 * units.MB})
		if ib {
			c, err := fabric.DefaultInfiniBand("edr")
			if err != nil {
				t.Fatal(err)
			}
			return g, c, mg
		}
		c := fabric.DefaultRoCE()
		c.Buffer = 4 * units.MB
		c.RoCE.DCQCN, c.RoCE.ECN = false, false
		return g, c, mg
	}
}

// valCases are the scenarios of docs/flow.md's table.
var valCases = []valCase{
	{name: "permutation, k=8 fat tree, RoCE DCQCN (roce-dcqcn-permutation), 4 seeds", small: true, seeds: 4, build: example("roce-dcqcn-permutation.yaml"), packet: [4]float64{781.0, 643.0, 775.1, 625.5}, flow: [4]float64{773.4, 630.7, 771.0, 614.2}},
	{name: "permutation, k=8 fat tree, InfiniBand min-hop", small: true, build: ibPermutation(false), packet: [4]float64{287.7, 168.3, 287.6, 140.0}, flow: [4]float64{275.3, 165.3, 275.3, 128.6}},
	{name: "shift, k=8 fat tree, InfiniBand D-mod-K (ib-shift-dmodk)", small: true, build: example("ib-shift-dmodk.yaml"), packet: [4]float64{44.7, 44.7, 44.7, 44.7}, flow: [4]float64{44.4, 44.4, 44.4, 44.4}},
	{name: "permutation, leaf-spine 2:1, Ethernet (leaf-spine-2to1)", small: true, build: example("leaf-spine-2to1.yaml"), packet: [4]float64{614.2, 338.4, 581.7, 350.0}, flow: [4]float64{612.2, 332.6, 577.4, 344.2}},
	{name: "incast 32:1, k=8 fat tree, RoCE PFC (roce-incast-32)", build: example("roce-incast-32.yaml"), packet: [4]float64{5230.5, 4398.9, 5230.5, 1126.9}, flow: [4]float64{5237.9, 4417.1, 5237.9, 1145.2}},
	{name: "incast 32:1, k=8 fat tree, InfiniBand (ib-incast-32)", small: true, build: example("ib-incast-32.yaml"), packet: [4]float64{1291.2, 765.7, 1291.2, 160.3}, flow: [4]float64{1292.3, 777.7, 1292.3, 162.2}},
	{name: "incast 32:1, k=8 fat tree, Ethernet tail drop and go-back-N (incast-32), 24 seeds", seeds: 24, build: example("incast-32.yaml"), packet: [4]float64{8594.1, 6334.3, 8594.1, 1129.5}, flow: [4]float64{8266.1, 6464.9, 8266.1, 1145.3}},
	{name: "all-to-all 4 MiB, 24 hosts, 3:1 leaves, RoCE default (DCQCN), 4 seeds", seeds: 4, build: allToAll3to1(false), packet: [4]float64{233.3, 201.8, 233.0, 83.8}, flow: [4]float64{226.7, 195.7, 226.7, 76.7}},
	{name: "all-to-all 4 MiB, 24 hosts, 3:1 leaves, InfiniBand AR", small: true, build: allToAll3to1(true), packet: [4]float64{199.2, 193.4, 198.8, 189.2}, flow: [4]float64{192.3, 189.0, 192.2, 167.8}},
	{name: "ring all-reduce 64 MiB across spines, 16 hosts, RoCE default (DCQCN), 8 seeds", seeds: 8, build: ringAcrossSpines(false), packet: [4]float64{4753.3, 63.5, 885.8, 283.9}, flow: [4]float64{4591.7, 64.2, 844.6, 215.6}},
	{name: "ring all-reduce 64 MiB across spines, 16 hosts, InfiniBand min-hop", known: [4]bool{2: true}, build: ringIB(false), packet: [4]float64{2914.3, 95.7, 140.9, 96.0}, flow: [4]float64{2802.6, 92.9, 119.9, 92.7}},
	{name: "ring all-reduce 64 MiB across spines, 16 hosts, InfiniBand AR", build: ringIB(true), packet: [4]float64{2962.4, 98.7, 136.6, 99.2}, flow: [4]float64{2793.8, 92.2, 128.9, 92.6}},
	{name: "PFC victim: 2:1 incast + innocent flow, RoCE PFC", small: true, victim: true, build: victim(false), packet: [4]float64{3271.7, 3271.4, 3271.7, 1607.1}, flow: [4]float64{3271.6, 3271.6, 3271.6, 1605.2}},
	{name: "credit victim: 2:1 incast + innocent flow, InfiniBand EDR", small: true, victim: true, build: victim(true), packet: [4]float64{3228.7, 3228.4, 3228.7, 1609.8}, flow: [4]float64{3223.9, 3223.9, 3223.9, 1602.5}},
	{name: "IB CC victim: 3:1 incast + innocent flow, EDR, IB CC on (ib-cc-victim)", small: true, victim: true, victimMsg: 3, build: example("ib-cc-victim.yaml"), packet: [4]float64{2096.3, 2081.3, 2096.3, 563.4}, flow: [4]float64{2136.4, 2136.4, 2136.4, 497.8}},
	{name: "permutation, k=8 fat tree, InfiniBand AR (ib-permutation-ar)", build: example("ib-permutation-ar.yaml"), packet: [4]float64{62.8, 54.5, 62.5, 57.8}, flow: [4]float64{60.3, 50.7, 60.2, 50.3}},
	{name: "EP all-to-all 4 MiB, 8 groups of 16 on a 128-NIC rail plane, 3:1 leaves, InfiniBand AR", small: true, build: railPlane3to1(true), packet: [4]float64{207.0, 139.0, 203.4, 94.1}, flow: [4]float64{202.8, 141.0, 202.8, 103.8}},
	{name: "expert-DP reduce-scatter 6 MiB, 16 rings of 8 on a 128-NIC rail plane, 3:1 leaves, InfiniBand AR", small: true, known: [4]bool{2: true}, build: railPlane3to1(false), packet: [4]float64{484.8, 61.1, 164.6, 72.1}, flow: [4]float64{468.9, 63.5, 126.5, 69.7}},
	{name: "EP all-to-all 128 KiB, 32 groups of 16 on three tiers with uneven spine-core links (compare-shared-1024's aggressor), InfiniBand AR", build: sharedEP, packet: [4]float64{177.8, 155.0, 174.7, 151.8}, flow: [4]float64{176.4, 158.4, 175.5, 155.5}},
}

// railPlane3to1 is one rail plane of examples/compare-jitter-moe-1024.yaml (docs/jitter.md): 128
// NICs on 11 radix-16 leaves at 3:1 (12 NIC ports and 4 uplinks each), 3 spines, a leaf's four
// uplinks two to one spine (which one turns with the leaf: the parallel links differ from leaf to
// leaf); InfiniBand NDR with adaptive routing, the example's link latencies. ep: the example's EP
// all-to-all class on the plane (8 groups of 16 consecutive NICs, 4 MiB, 2 channels: each group
// spans two leaves); otherwise its expert-DP reduce-scatter class (16 rings of 8 NICs 16 apart,
// one per EP group, 6 MiB in 512 KiB chunks, 2 channels: every hop crosses the spines). Neither
// has the example's data-path latency or start offsets.
func railPlane3to1(ep bool) func(t testing.TB) (*topo.Graph, fabric.Config, *msggraph.Graph) {
	return func(t testing.TB) (*topo.Graph, fabric.Config, *msggraph.Graph) {
		const nics = 128
		g, err := topo.Clos(topo.ClosSpec{Servers: nics, NICsPerServer: 1, RailOptimized: true, Radix: 16, Oversubscription: []float64{3},
			NIC:       topo.LinkSpec{Rate: 400 * units.Gbps, Latency: 100 * units.Nanosecond},
			LeafSpine: topo.LinkSpec{Rate: 400 * units.Gbps, Latency: 150 * units.Nanosecond}})
		if err != nil {
			t.Fatal(err)
		}
		var specs []collective.Spec
		for j := 0; j < 16; j++ {
			var ranks []int32
			if ep {
				if j >= nics/16 {
					break
				}
				for i := 0; i < 16; i++ {
					ranks = append(ranks, int32(16*j+i))
				}
				specs = append(specs, collective.Spec{Op: collective.AllToAll, Ranks: ranks, Bytes: 4 * units.MiB, Channels: 2})
				continue
			}
			for x := j; x < nics; x += 16 {
				ranks = append(ranks, int32(x))
			}
			specs = append(specs, collective.Spec{Op: collective.ReduceScatter, Ranks: ranks, Bytes: 6 * units.MiB, Channels: 2, ChunkBytes: 512 * units.KiB})
		}
		return g, ibNDR(t, true), compile(t, nics, specs...)
	}
}

// ringIB is ringAcrossSpines on InfiniBand with or without adaptive routing.
func ringIB(ar bool) func(t testing.TB) (*topo.Graph, fabric.Config, *msggraph.Graph) {
	return func(t testing.TB) (*topo.Graph, fabric.Config, *msggraph.Graph) {
		g, cfg, mg := ringAcrossSpines(true)(t)
		cfg.IB.Adaptive = ar
		return g, cfg, mg
	}
}

// ibPermutation is ib-permutation-ar's traffic with or without adaptive routing.
func ibPermutation(ar bool) func(t testing.TB) (*topo.Graph, fabric.Config, *msggraph.Graph) {
	return func(t testing.TB) (*topo.Graph, fabric.Config, *msggraph.Graph) {
		g, cfg, mg := loadExample(t, "ib-permutation-ar.yaml")
		cfg.IB.Adaptive = ar
		if !ar {
			cfg.IB.Routing = "minhop"
			cfg.Transport = ""
		}
		return g, cfg, mg
	}
}

func figures(r *result.Run, victim int) [4]float64 {
	s := r.Summary()
	return [4]float64{r.SimTime.Microseconds(), s.FCTNs.P50 / 1e3, s.FCTNs.P99 / 1e3, r.Messages[victim].FCT().Microseconds()}
}

// analyticFigures runs the analytic backend with compare's stand-in network for the fabric.
func analyticFigures(t testing.TB, g *topo.Graph, cfg fabric.Config, mg *msggraph.Graph, victim int) [4]float64 {
	rate := g.PortLink(g.Hosts[0], 0).Rate
	var lat units.Time
	for _, l := range g.Links {
		lat = max(lat, l.Latency)
	}
	eff := float64(cfg.MTU) / float64(int(cfg.MTU)+cfg.HeaderBytes+cfg.L1Overhead)
	res, err := analytic.Run(mg, analytic.Uniform{Lat: 4*lat + 3*cfg.SwitchLatency, BW: units.Rate(float64(rate) * eff)})
	if err != nil {
		t.Fatal(err)
	}
	var fct []float64
	for i, m := range mg.Msgs {
		if m.Bytes > 0 {
			fct = append(fct, float64(res.Finish[i]-m.Start)/1e6)
		}
	}
	sort.Float64s(fct)
	return [4]float64{res.Makespan.Microseconds(), result.Percentile(fct, 50), result.Percentile(fct, 99), float64(res.Finish[victim]-mg.Msgs[victim].Start) / 1e6}
}

func relErr(got, want float64) float64 { return (got - want) / want }

// packetRun runs a scenario on the packet backend (the validation's reference), with the
// fabric's routes computed from the graph; name labels a failure.
func packetRun(t testing.TB, name string, g *topo.Graph, cfg fabric.Config, mg *msggraph.Graph) *result.Run {
	t.Helper()
	rt, err := topo.ComputeRoutes(g)
	if err != nil {
		t.Fatal(err)
	}
	net, err := fabric.New(g, rt, cfg)
	if err != nil {
		t.Fatal(err)
	}
	pr, err := net.Run(mg, units.MaxTime)
	if err != nil {
		t.Fatalf("%s: packet backend: %v", name, err)
	}
	return pr
}

// runBoth runs a case on the flow backend (and, live, the packet and analytic backends): mean
// figures over its seeds.
func runBoth(t *testing.T, c valCase, live bool) (fl, pkt, an [4]float64) {
	seeds := max(1, c.seeds)
	for seed := 1; seed <= seeds; seed++ {
		g, cfg, mg := c.build(t)
		if c.seeds > 1 {
			cfg.Seed = uint64(seed)
		}
		fr, err := flow.Run(g, nil, cfg, mg, flow.Options{Check: true})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for k, x := range figures(fr, c.victimMsg) {
			fl[k] += x / float64(seeds)
		}
		if !live {
			continue
		}
		pr := packetRun(t, c.name, g, cfg, mg)
		for k, x := range figures(pr, c.victimMsg) {
			pkt[k] += x / float64(seeds)
		}
		for k, x := range analyticFigures(t, g, cfg, mg, c.victimMsg) {
			an[k] += x / float64(seeds)
		}
	}
	return
}

// TestValidation: FLOW_VALIDATE=1 runs every row on both backends; FLOW_VALIDATE_MATCH=text
// only the rows whose name holds text (e.g. DCQCN: rows 1, 8 and 10).
func TestValidation(t *testing.T) {
	live := os.Getenv("FLOW_VALIDATE") != ""
	match := os.Getenv("FLOW_VALIDATE_MATCH")
	var table []string
	for _, c := range valCases {
		if !live && (!c.small || testing.Short()) || !strings.Contains(c.name, match) {
			continue
		}
		got, pkt, an := runBoth(t, c, live)
		if !live {
			pkt = c.packet
		} else {
			pct := func(x, y float64) string { return fmt.Sprintf("%+.1f", 100*relErr(x, y)) }
			row := fmt.Sprintf("| %s | %.1f / %.1f / %.1f | %.1f / %.1f / %.1f | %s / %s / %s %% | %s / %s / %s %% |", c.name,
				pkt[0], pkt[1], pkt[2], got[0], got[1], got[2], pct(got[0], pkt[0]), pct(got[1], pkt[1]), pct(got[2], pkt[2]),
				pct(an[0], pkt[0]), pct(an[1], pkt[1]), pct(an[2], pkt[2]))
			if c.victim {
				row += fmt.Sprintf(" innocent flow %.1f -> %.1f us (%s %%, analytic %s %%) |", pkt[3], got[3], pct(got[3], pkt[3]), pct(an[3], pkt[3]))
			} else {
				row += " |"
			}
			table = append(table, row)
			t.Logf("%s\n  packet {%.1f, %.1f, %.1f, %.1f}, flow {%.1f, %.1f, %.1f, %.1f}", c.name, pkt[0], pkt[1], pkt[2], pkt[3], got[0], got[1], got[2], got[3])
		}
		n := 3
		if c.victim {
			n = 4
		}
		for k := 0; k < n; k++ {
			tol := [4]float64{tolTime, tolFCT, tolFCT, tolFCT}[k]
			what := [4]string{"completion time", "FCT p50", "FCT p99", "innocent flow's FCT"}[k]
			if e := relErr(got[k], pkt[k]); math.Abs(e) > tol && !c.limit && !c.known[k] {
				t.Errorf("%s: %s %.1f us, packet backend %.1f us: %+.1f %%, beyond %.0f %%", c.name, what, got[k], pkt[k], 100*e, 100*tol)
			}
			if !live && math.Abs(relErr(got[k], c.flow[k])) > tolDrift {
				t.Errorf("%s: %s %.1f us, recorded %.1f us: the flow backend changed; refresh the table (FLOW_VALIDATE=1)", c.name, what, got[k], c.flow[k])
			}
		}
	}
	if live {
		t.Logf("\n| scenario | packet: time / FCT p50 / p99 (us) | flow | flow error | analytic error | |\n|---|---|---|---|---|---|\n%s", strings.Join(table, "\n"))
	}
}
