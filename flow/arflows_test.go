package flow_test

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/flow"
	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/scenario"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

// Per-flow adaptive routing (the default where the spread rule asks for it; flow.Options.PooledAR, flow/arflows.go; docs/flow.md, "Adaptive
// routing on a permutation (row 16)").

// TestPerFlowARMatchesPooled: where every downlink carries many flows (validation row 9, an
// all-to-all over two spines: 216 flows per spine -> leaf link on the packet backend), the
// switches' per-packet choices average out and per-flow adaptive routing gives the pooled
// bundles' figures (measured: +0.8 / +0.8 / +0.8 %), both within row 9's targets of the packet
// backend's 199.2 / 193.4 / 198.8 us.
func TestPerFlowARMatchesPooled(t *testing.T) {
	g, cfg, mg := allToAll3to1(true)(t)
	pooled, err := flow.Run(g, nil, cfg, mg, flow.Options{Check: true, PooledAR: true})
	if err != nil {
		t.Fatal(err)
	}
	per, err := flow.Run(g, nil, cfg, mg, flow.Options{Check: true, PerFlowAREverywhere: true})
	if err != nil {
		t.Fatal(err)
	}
	pf, ff := figures(pooled, 0), figures(per, 0)
	packet := [3]float64{199.2, 193.4, 198.8}
	for k, what := range []string{"completion time", "FCT p50", "FCT p99"} {
		if e := relErr(ff[k], pf[k]); math.Abs(e) > 0.02 {
			t.Errorf("%s: per-flow %.1f us, pooled %.1f us: %+.1f %%, beyond 2 %%", what, ff[k], pf[k], 100*e)
		}
		tol := [3]float64{tolTime, tolFCT, tolFCT}[k]
		if e := relErr(ff[k], packet[k]); math.Abs(e) > tol {
			t.Errorf("%s: per-flow %.1f us, packet backend %.1f us: %+.1f %%, beyond %.0f %%", what, ff[k], packet[k], 100*e, 100*tol)
		}
	}
}

// TestPerFlowARPermutation: validation row 16 (ib-permutation-ar: one flow per destination
// downlink, the pooled bundles' worst case) with per-flow adaptive routing. The packet backend
// gives 62.8 / 54.5 / 62.5 us (completion, FCT p50, p99), the pooled bundles the ideal 44.4 us
// (-29 / -19 / -29 %); per-flow routing (first-choice families) gives 60.3 / 50.7 / 60.2 us
// (-3.9 / -7.0 / -3.7 %, docs/flow.md). The test holds them to the row's targets and to their recorded values within
// 2 %, and the run to the same output twice.
func TestPerFlowARPermutation(t *testing.T) {
	g, cfg, mg := loadExample(t, "ib-permutation-ar.yaml")
	r, err := flow.Run(g, nil, cfg, mg, flow.Options{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	got := figures(r, 0)
	packet := [3]float64{62.8, 54.5, 62.5}
	recorded := [3]float64{60.3, 50.7, 60.2}
	for k, what := range []string{"completion time", "FCT p50", "FCT p99"} {
		e := relErr(got[k], packet[k])
		t.Logf("%s: per-flow %.1f us, packet backend %.1f us: %+.1f %%", what, got[k], packet[k], 100*e)
		if tol := [3]float64{tolTime, tolFCT, tolFCT}[k]; math.Abs(e) > tol {
			t.Errorf("%s beyond %.0f %% of the packet backend's", what, 100*tol)
		}
		if math.Abs(relErr(got[k], recorded[k])) > tolDrift {
			t.Errorf("%s %.1f us, recorded %.1f us: per-flow adaptive routing changed; refresh the figures", what, got[k], recorded[k])
		}
	}
	// Same scenario, same output.
	again, err := flow.Run(g, nil, cfg, mg, flow.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range r.Messages {
		if r.Messages[i].Finish != again.Messages[i].Finish {
			t.Fatalf("message %d finished at %v, then at %v", i, r.Messages[i].Finish, again.Messages[i].Finish)
		}
	}
}

// TestPerFlowARSingleFlow: a flow alone on the fabric finds every port idle; whichever ports
// its packets take, the paths are alike, and its completion is the pooled model's (which is the
// packet backend's store-and-forward closed form within 2 ns, TestSingleFlowMatchesPacketBackend).
func TestPerFlowARSingleFlow(t *testing.T) {
	g, cfg, mg := loadExample(t, "ib-permutation-ar.yaml")
	for _, m := range mg.Msgs {
		if m.Src/16 == m.Dst/16 {
			continue // a host of another pod: every adaptive stage
		}
		one := &msggraph.Graph{Endpoints: mg.Endpoints, Msgs: []msggraph.Message{m}}
		pooled, err := flow.Run(g, nil, cfg, one, flow.Options{Check: true, PooledAR: true})
		if err != nil {
			t.Fatal(err)
		}
		per, err := flow.Run(g, nil, cfg, one, flow.Options{Check: true, PerFlowAREverywhere: true})
		if err != nil {
			t.Fatal(err)
		}
		if d := per.Messages[0].Finish - pooled.Messages[0].Finish; d < -2 || d > 2 {
			t.Errorf("host %d -> %d alone: per-flow finishes at %v, pooled at %v", m.Src, m.Dst, per.Messages[0].Finish, pooled.Messages[0].Finish)
		}
		break
	}
}

// BenchmarkPerFlowAR: validation row 16 (ib-permutation-ar) with the pooled bundles, with
// per-flow adaptive routing (every flow stepped; first-choice families, 4 flows per QP across
// pods) and with every adaptive stage per flow (Options.PerFlowARAllStages, 16 flows per QP).
func BenchmarkPerFlowAR(b *testing.B) {
	g, cfg, mg := loadExample(b, "ib-permutation-ar.yaml")
	for _, c := range []struct {
		name string
		opt  flow.Options
	}{
		{"pooled", flow.Options{PooledAR: true}},
		{"per-flow", flow.Options{}},
		{"all-stages", flow.Options{PerFlowARAllStages: true}},
	} {
		b.Run(c.name, func(b *testing.B) {
			var steps float64
			for b.Loop() {
				r, err := flow.Run(g, nil, cfg, mg, c.opt)
				if err != nil {
					b.Fatal(err)
				}
				steps = r.Counters["flow_steps"]
			}
			b.ReportMetric(steps, "steps")
		})
	}
}

// TestPerFlowARRing: validation row 12 (a ring all-reduce across two spines, 16 hosts) with
// per-flow adaptive routing: 2854.1 / 92.8 / 134.3 us against the packet backend's 2962.4 / 98.7
// / 136.6 (-3.7 / -6.0 / -1.7 %; the pooled bundles -5.7 / -6.6 / -5.6 %). Its completion time
// and median are a known limitation of both (docs/flow.md, row 12); the p99 is held to its 15 %
// target, and every figure to its recorded value within 2 %.
func TestPerFlowARRing(t *testing.T) {
	if testing.Short() {
		t.Skip("half a second of CPU")
	}
	g, cfg, mg := ringIB(true)(t)
	r, err := flow.Run(g, nil, cfg, mg, flow.Options{PerFlowAREverywhere: true})
	if err != nil {
		t.Fatal(err)
	}
	got := figures(r, 0)
	packet := [3]float64{2962.4, 98.7, 136.6}
	recorded := [3]float64{2854.1, 92.8, 134.3}
	for k, what := range []string{"completion time", "FCT p50", "FCT p99"} {
		t.Logf("%s: per-flow %.1f us, packet backend %.1f us: %+.1f %%", what, got[k], packet[k], 100*relErr(got[k], packet[k]))
		if math.Abs(relErr(got[k], recorded[k])) > tolDrift {
			t.Errorf("%s %.1f us, recorded %.1f us: per-flow adaptive routing changed; refresh the figures", what, got[k], recorded[k])
		}
	}
	if e := relErr(got[2], packet[2]); math.Abs(e) > tolFCT {
		t.Errorf("FCT p99 %.1f us, packet backend %.1f us: %+.1f %%, beyond %.0f %%", got[2], packet[2], 100*e, 100*tolFCT)
	}
}

// TestPerFlowARQuiet compares quiet families (Options.PerFlowARQuiet) with the plain per-flow
// path, every flow stepped. Row 16 (every family crosses a downlink that queues): no family goes
// quiet and every message finishes at the same time, to the picosecond's rounding (with arrival
// order within the step, 4 of the 128 messages 1 ps apart: an end computed from a different sum). Row 9 (an all-to-all over two spines):
// families go quiet between the bursts; a quiet family ends at its projected time, an event,
// where a stepped one ends at the step's resolution, and its members carry constant shares where
// stepped ones redraw their packets' phases every step, so the figures move by that much:
// measured -0.02 / -0.51 / -0.01 % (completion, FCT p50, p99), held within 1 %. Both runs keep
// the conservation checks.
func TestPerFlowARQuiet(t *testing.T) {
	for _, c := range []struct {
		name  string
		sc    func(testing.TB) (*topo.Graph, fabric.Config, *msggraph.Graph)
		exact bool
	}{{"row 16", ibPermutation(true), true}, {"row 9", allToAll3to1(true), false}} {
		g, cfg, mg := c.sc(t)
		quiet, err := flow.Run(g, nil, cfg, mg, flow.Options{Check: true, PerFlowAREverywhere: true, PerFlowARQuiet: true})
		if err != nil {
			t.Fatal(err)
		}
		plain, err := flow.Run(g, nil, cfg, mg, flow.Options{Check: true, PerFlowAREverywhere: true})
		if err != nil {
			t.Fatal(err)
		}
		qs, ps := quiet.Counters["flow_steps"], plain.Counters["flow_steps"]
		t.Logf("%s: %v steps quiet, %v stepped", c.name, qs, ps)
		if qs > ps {
			t.Errorf("%s: %v steps with quiet families, %v without", c.name, qs, ps)
		}
		if c.exact {
			for i := range quiet.Messages {
				if d := quiet.Messages[i].Finish - plain.Messages[i].Finish; d > units.Picosecond || d < -units.Picosecond {
					t.Fatalf("%s: message %d finishes at %v with quiet families, %v stepped", c.name, i, quiet.Messages[i].Finish, plain.Messages[i].Finish)
				}
			}
			continue
		}
		qf, pf := figures(quiet, 0), figures(plain, 0)
		for k, what := range []string{"completion time", "FCT p50", "FCT p99"} {
			if e := relErr(qf[k], pf[k]); math.Abs(e) > 0.01 {
				t.Errorf("%s %s: quiet families %.2f us, stepped %.2f us: %+.2f %%, beyond 1 %%", c.name, what, qf[k], pf[k], 100*e)
			}
		}
	}
}

// TestPerFlowARFirstChoice compares first-choice families (the default of per-flow adaptive routing: a
// member per port of the first adaptive switch's group, the later adaptive stages pooled) with
// every adaptive stage per flow (Options.PerFlowARAllStages, the plain version). On row 16's
// fat tree (three permutations, the scenario's seeds 1-3) both are held to the row's targets of
// the packet backend's figures (62.8 / 54.5 / 62.5, 58.9 / 55.1 / 58.8 and 62.7 / 54.8 / 62.1
// us; docs/flow.md, "Adaptive routing on a permutation (row 16)"). Measured: first-choice
// -3.9 / -7.0 / -3.7 %, +5.6 / -8.9 / +5.8 % and -2.3 / -3.8 / -1.5 %; every stage -5.0 / -4.2
// / -4.6 % on seed 1. On two tiers (rows 9 and 12) the leaf's is the only choice, the families
// are the same, and every message finishes at the same picosecond.
func TestPerFlowARFirstChoice(t *testing.T) {
	packet := map[uint64][3]float64{1: {62.8, 54.5, 62.5}, 2: {58.9, 55.1, 58.8}, 3: {62.7, 54.8, 62.1}}
	for seed := uint64(1); seed <= 3; seed++ {
		g, cfg, mg := permutationSeed(t, seed)
		for _, all := range []bool{false, true} {
			if all && seed > 1 {
				continue
			}
			r, err := flow.Run(g, nil, cfg, mg, flow.Options{Check: true, PerFlowARAllStages: all})
			if err != nil {
				t.Fatal(err)
			}
			got := figures(r, 0)
			for k, what := range []string{"completion time", "FCT p50", "FCT p99"} {
				e := relErr(got[k], packet[seed][k])
				t.Logf("seed %d, every stage %v: %s %.1f us, packet backend %.1f us: %+.1f %%", seed, all, what, got[k], packet[seed][k], 100*e)
				if tol := [3]float64{tolTime, tolFCT, tolFCT}[k]; math.Abs(e) > tol {
					t.Errorf("seed %d, every stage %v: %s beyond %.0f %% of the packet backend's", seed, all, what, 100*tol)
				}
			}
		}
	}
	for _, c := range []struct {
		name string
		sc   func(testing.TB) (*topo.Graph, fabric.Config, *msggraph.Graph)
	}{{"row 9", allToAll3to1(true)}, {"row 12", ringIB(true)}} {
		if c.name == "row 12" && testing.Short() {
			continue
		}
		g, cfg, mg := c.sc(t)
		first, err := flow.Run(g, nil, cfg, mg, flow.Options{PerFlowAREverywhere: true})
		if err != nil {
			t.Fatal(err)
		}
		all, err := flow.Run(g, nil, cfg, mg, flow.Options{PerFlowAREverywhere: true, PerFlowARAllStages: true})
		if err != nil {
			t.Fatal(err)
		}
		for i := range first.Messages {
			if first.Messages[i].Finish != all.Messages[i].Finish {
				t.Fatalf("%s: message %d finishes at %v with first-choice families, %v with every stage", c.name, i, first.Messages[i].Finish, all.Messages[i].Finish)
			}
		}
	}
}

// permutationSeed is ib-permutation-ar with the scenario's seed set to seed (each seed draws
// another permutation).
func permutationSeed(t testing.TB, seed uint64) (*topo.Graph, fabric.Config, *msggraph.Graph) {
	t.Helper()
	s, err := scenario.Load(filepath.Join("..", "examples", "ib-permutation-ar.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s.Seed = seed
	b, err := s.Build()
	if err != nil {
		t.Fatal(err)
	}
	b.Fabric.Seed = s.Seed
	return b.Graph, b.Fabric, b.Work
}

// TestPerFlowARParallelLinks: first-choice families make a member per next switch, parallel links
// to it one bundle (arflows.go, "First-choice families"); every stage per flow
// (Options.PerFlowARAllStages) keeps a member per link. On a leaf-spine of 4 leaves of 4 hosts
// with two parallel links from each leaf to each of 2 spines (NDR, adaptive routing, the
// reorder-tolerant receiver), a random permutation of 2 MB messages across leaves (three draws),
// both are held to each other within 2 % and to the packet backend's figures, run here, within
// validation's targets. Measured (completion / FCT p50 / p99 against the packet backend's):
// first-choice +0.4 / +0.7 / +0.4 %, -4.8 / -1.1 / -4.8 %, -7.7 / +0.0 / -7.7 %; every stage
// +0.2 / -0.9 / +0.2 %, -5.3 / -1.1 / -5.3 %, -6.8 / -0.6 / -6.8 % (the pooled bundles -6.8,
// -5.3, -12.9 % on completion).
func TestPerFlowARParallelLinks(t *testing.T) {
	g, err := topo.LeafSpine(topo.LeafSpineSpec{Leaves: 4, Spines: 2, HostsPerLeaf: 4, LinksPerSpine: 2,
		Host: topo.LinkSpec{Rate: 400 * units.Gbps, Latency: 500 * units.Nanosecond}, Uplink: topo.LinkSpec{Latency: 500 * units.Nanosecond}})
	if err != nil {
		t.Fatal(err)
	}
	for seed := uint64(1); seed <= 3; seed++ {
		cfg := ibNDR(t, true)
		cfg.Transport = fabric.TransportReorder
		cfg.Seed = seed
		mg := &msggraph.Graph{Endpoints: 16}
		for i, d := range rand.New(rand.NewPCG(seed, 7)).Perm(16) {
			if d/4 != i/4 {
				mg.Add(msggraph.Message{Src: int32(i), Dst: int32(d), Bytes: 2 * units.MB})
			}
		}
		packet := figures(packetRun(t, "parallel links", g, cfg, mg), 0)
		var got [2][4]float64
		for i, all := range []bool{false, true} {
			r, err := flow.Run(g, nil, cfg, mg, flow.Options{Check: true, PerFlowARAllStages: all})
			if err != nil {
				t.Fatal(err)
			}
			got[i] = figures(r, 0)
			for k, what := range []string{"completion time", "FCT p50", "FCT p99"} {
				e := relErr(got[i][k], packet[k])
				t.Logf("seed %d, every stage %v: %s %.1f us, packet backend %.1f us: %+.1f %%", seed, all, what, got[i][k], packet[k], 100*e)
				if tol := [3]float64{tolTime, tolFCT, tolFCT}[k]; math.Abs(e) > tol {
					t.Errorf("seed %d, every stage %v: %s beyond %.0f %% of the packet backend's", seed, all, what, 100*tol)
				}
			}
		}
		for k, what := range []string{"completion time", "FCT p50", "FCT p99"} {
			if e := relErr(got[0][k], got[1][k]); math.Abs(e) > 0.02 {
				t.Errorf("seed %d: %s %.1f us first-choice, %.1f us every stage: %+.1f %%, beyond 2 %%", seed, what, got[0][k], got[1][k], 100*e)
			}
		}
	}
}

// TestPerFlowARNoFamily: where no message has an adaptive choice to make per flow (here every
// message stays under its edge switch of a k=8 fat tree), per-flow adaptive routing leaves the
// run to the pooled model as it runs by default (anyFamily): every message finishes at the same
// time, quiet flows included.
func TestPerFlowARNoFamily(t *testing.T) {
	g, cfg, _ := loadExample(t, "ib-permutation-ar.yaml")
	mg := &msggraph.Graph{Endpoints: len(g.Hosts)}
	for h := int32(0); h+1 < int32(len(g.Hosts)); h += 2 {
		mg.Add(msggraph.Message{Src: h, Dst: h + 1, Bytes: 2 * units.MB})
		mg.Add(msggraph.Message{Src: h + 1, Dst: h, Bytes: units.MB, Start: units.Microsecond})
	}
	pooled, err := flow.Run(g, nil, cfg, mg, flow.Options{Check: true, PooledAR: true})
	if err != nil {
		t.Fatal(err)
	}
	per, err := flow.Run(g, nil, cfg, mg, flow.Options{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range pooled.Messages {
		if pooled.Messages[i].Finish != per.Messages[i].Finish {
			t.Fatalf("message %d: pooled %v, per-flow %v", i, pooled.Messages[i].Finish, per.Messages[i].Finish)
		}
	}
	if p, q := pooled.Counters["flow_steps"], per.Counters["flow_steps"]; p != q {
		t.Errorf("%v steps pooled, %v per-flow", p, q)
	}
}

// TestPerFlowARSpreadRule: the spread rule (arflows.go, arOverload) forms families on row 16
// (its estimate 1 + 1.5 * 4 * 0.093 / sqrt(4) = 1.279: each edge switch's four downlinks carry
// four flows from four edge switches, the destinations' links as fast as the downlinks): the
// run is PerFlowAREverywhere's, every message at the same picosecond. On row 9 (1.0155: 216 QPs
// per leaf and depth from three source leaves, rho 2.35 after the sources' NICs) and row 12
// (1: each source leaf's ring QPs of a depth go to one leaf, which its own balancing evens out)
// it keeps the pooled bundles: the run is the pooled model's, every message at the same
// picosecond with the same steps.
func TestPerFlowARSpreadRule(t *testing.T) {
	for _, c := range []struct {
		name     string
		build    func(testing.TB) (*topo.Graph, fabric.Config, *msggraph.Graph)
		families bool
	}{
		{"row 16", func(tb testing.TB) (*topo.Graph, fabric.Config, *msggraph.Graph) {
			return loadExample(tb, "ib-permutation-ar.yaml")
		}, true},
		{"row 9", allToAll3to1(true), false},
		{"row 12", ringIB(true), false},
	} {
		g, cfg, mg := c.build(t)
		rule, err := flow.Run(g, nil, cfg, mg, flow.Options{})
		if err != nil {
			t.Fatal(err)
		}
		ref := flow.Options{PooledAR: true}
		if c.families {
			ref = flow.Options{PerFlowAREverywhere: true}
		}
		want, err := flow.Run(g, nil, cfg, mg, ref)
		if err != nil {
			t.Fatal(err)
		}
		for i := range want.Messages {
			if want.Messages[i].Finish != rule.Messages[i].Finish {
				t.Fatalf("%s: message %d: %+v gives %v, the rule %v", c.name, i, ref, want.Messages[i].Finish, rule.Messages[i].Finish)
			}
		}
		if p, q := want.Counters["flow_steps"], rule.Counters["flow_steps"]; p != q {
			t.Errorf("%s: %v steps with %+v, %v by the rule", c.name, p, ref, q)
		}
	}
}
