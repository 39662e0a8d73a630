package flow

import (
	"fmt"
	"testing"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/units"
)

// TestARFamilySize: on a k=8 fat tree a QP between pods has 4 x 4 minimal paths (an edge's four
// uplinks, then an aggregation switch's four): a family of 16 with every adaptive stage per flow,
// of 4 with first-choice families (the edge's four uplinks, each followed by bundles), the family
// per-flow adaptive routing plans memory for; without the option there is none, nor where no
// message has a choice to make (hosts 0 and 1 share an edge switch: anyFamily).
func TestARFamilySize(t *testing.T) {
	g, r := fatTree(t, 8, 100*units.Gbps)
	cfg := fabrics(t)["infiniband"]
	cfg.IB.Adaptive = true
	across := &msggraph.Graph{Endpoints: len(g.Hosts), Msgs: []msggraph.Message{{Src: 0, Dst: int32(len(g.Hosts) - 1), Bytes: units.MB}}}
	local := &msggraph.Graph{Endpoints: len(g.Hosts), Msgs: []msggraph.Message{{Src: 0, Dst: 1, Bytes: units.MB}}}
	for _, c := range []struct {
		mg   *msggraph.Graph
		opt  Options
		want int
	}{
		{across, Options{PooledAR: true}, 0}, {across, Options{PerFlowAREverywhere: true}, 4}, {across, Options{PerFlowARAllStages: true, PerFlowAREverywhere: true}, 16},
		{local, Options{PerFlowAREverywhere: true}, 0},
	} {
		mg := c.mg
		e, err := newEngine(g, r, cfg, mg, c.opt)
		if err != nil {
			t.Fatal(err)
		}
		if got := e.arFamilySize(); got != c.want {
			t.Errorf("%+v: family of %d flows, want %d", c.opt, got, c.want)
		}
	}
}

// TestARFamilyStartsLate: a family started before the engine's clock (a message whose start
// event falls within the step being computed) has no rate yet; heating it brings nothing up to
// date (it once divided by that zero rate: every member's bytes NaN, caught by no check).
func TestARFamilyStartsLate(t *testing.T) {
	g, r := fatTree(t, 8, 100*units.Gbps)
	cfg := fabrics(t)["infiniband"]
	cfg.IB.Adaptive = true
	mg := &msggraph.Graph{Endpoints: len(g.Hosts), Msgs: []msggraph.Message{{Src: 0, Dst: int32(len(g.Hosts) - 1), Bytes: units.MB}}}
	for _, quiet := range []bool{false, true} {
		e, err := newEngine(g, r, cfg, mg, Options{PerFlowARQuiet: quiet, PerFlowAREverywhere: true})
		if err != nil {
			t.Fatal(err)
		}
		e.initGraph()
		e.now = units.Microsecond
		if err := e.startFlow(0, &mg.Msgs[0], 0, int64(units.MB), 0, 0); err != nil {
			t.Fatal(err)
		}
		if err := e.checkFamilies(); err != nil {
			t.Errorf("quiet families %v: %v", quiet, err)
		}
	}
}

// BenchmarkPipelineClassIB is BenchmarkPipelineClass's class (the 70B three-tier compare's
// congested pipeline class, stage 3's sends to stages 2 and 4) on InfiniBand NDR with adaptive
// routing: the pooled bundles, per-flow adaptive routing (first-choice families: the leaf's
// choice per flow, 8 members per QP on this fabric; with every stage per flow a QP would have
// more paths than maxARPaths and keep the bundles; families in every run, PerFlowAREverywhere),
// per-flow with quiet families (also everywhere) and per-flow by the spread rule (arOverload:
// the sources' NICs, each sending to two stages, fill half the leaves' spine links, and the
// class keeps the pooled bundles), reporting
// CPU seconds, steps and the slowest message's FCT:
// go test ./flow -run '^$' -bench PipelineClassIB -benchtime 1x -count 3.
func BenchmarkPipelineClassIB(b *testing.B) {
	for _, servers := range []int{256, 2048} {
		for _, mode := range []string{"pooled", "per-flow", "per-flow-quiet", "per-flow-rule"} {
			b.Run(fmt.Sprintf("%dGPUs/%s", servers*8, mode), func(b *testing.B) {
				g, mg, _ := pipelineClass(b, servers, 3)
				cfg := adaptiveNDR(b)
				cfg.Seed = 1
				res := benchClass(b, g, mg, cfg, Options{PooledAR: mode == "pooled", PerFlowARQuiet: mode == "per-flow-quiet", PerFlowAREverywhere: mode != "per-flow-rule"})
				var slowest units.Time
				for _, m := range res.Messages {
					slowest = max(slowest, m.Finish-m.Start)
				}
				b.ReportMetric(slowest.Seconds()*1e6, "slowest-us")
			})
		}
	}
}

// TestPerFlowARRulePipeline: the spread rule (arOverload) keeps the pooled bundles on the 70B
// pipeline class at 2,048 GPUs: each source NIC sends to two stages, so the destinations' links
// can ask a leaf's spine links for rho = 0.49 of their rate, and even the most loaded of them
// (spread s = 9.4 %, 32 QPs into each leaf's 8 spine links per depth) stays below it; families
// there give the same slowest message (693.2 us, BenchmarkPipelineClassIB) with 3 steps. The run
// is the pooled model's: every message finishes at the same picosecond, with no step.
func TestPerFlowARRulePipeline(t *testing.T) {
	g, mg, _ := pipelineClass(t, 256, 3)
	cfg := adaptiveNDR(t)
	cfg.Seed = 1
	pooled, err := Run(g, nil, cfg, mg, Options{PooledAR: true})
	if err != nil {
		t.Fatal(err)
	}
	rule, err := Run(g, nil, cfg, mg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range pooled.Messages {
		if pooled.Messages[i].Finish != rule.Messages[i].Finish {
			t.Fatalf("message %d: pooled %v, by the rule %v", i, pooled.Messages[i].Finish, rule.Messages[i].Finish)
		}
	}
	if p, q := pooled.Counters["flow_steps"], rule.Counters["flow_steps"]; p != q {
		t.Errorf("%v steps pooled, %v by the rule", p, q)
	}
}

// adaptiveNDR is the InfiniBand NDR fabric with adaptive routing, the adaptive-routing tests' and
// benchmarks' fabric.
func adaptiveNDR(t testing.TB) fabric.Config {
	cfg, err := fabric.DefaultInfiniBand("ndr")
	if err != nil {
		t.Fatal(err)
	}
	cfg.IB.Adaptive = true
	return cfg
}
