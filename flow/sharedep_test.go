package flow_test

import (
	"path/filepath"
	"testing"

	"github.com/fabricsim/fabricsim/compare"
	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/flow"
	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/training"
)

// sharedEP is the aggressor's EP all-to-all class of examples/compare-shared-1024.yaml (docs/
// flow.md, "The spread rule at later stages"): one instance of each of its 32 EP groups (16 NICs
// of one rail on 16 scattered servers, 128 KiB, the scenario's channels), all at time 0, on the
// example's three-tier fabric (radix-16 switches at 3:1; a pod's spines have uneven links to the
// cores), InfiniBand NDR with adaptive routing. The class is compare's (the plan's first
// ep-a2a class, one op per group, compiled by compare.CompileStep without dependencies or
// repeats); the per-op done nodes it adds carry no bytes.
func sharedEP(t testing.TB) (*topo.Graph, fabric.Config, *msggraph.Graph) {
	t.Helper()
	s, err := compare.Load(filepath.Join("..", "examples", "compare-shared-1024.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Plan()
	if err != nil {
		t.Fatal(err)
	}
	g, err := s.Topology()
	if err != nil {
		t.Fatal(err)
	}
	var ops []training.Op
	seen := map[int]bool{} // by first rank: one op per group
	var key *training.Op
	for i := range p.Ops {
		o := p.Ops[i]
		if o.Kind != training.AllToAll || o.Dim != "ep" {
			continue
		}
		if key == nil {
			key = &p.Ops[i]
		}
		if o.Stage != key.Stage || o.Bytes != key.Bytes || seen[o.Ranks[0]] {
			continue
		}
		seen[o.Ranks[0]] = true
		o.ID, o.Deps, o.Repeat = len(ops), nil, 0
		ops = append(ops, o)
	}
	q := *p
	q.Ops = ops
	mg, _, err := s.CompileStep(&q)
	if err != nil {
		t.Fatal(err)
	}
	return g, ibNDR(t, true), mg
}

// BenchmarkSharedEP is the cost of validation row 19 (sharedEP) by model of adaptive routing:
// the pooled bundles, first-choice families, the spread rule's pick (every switch choosing per
// flow by next switch, where a later stage's links differ: arflows.go, "The spread rule at
// later stages") and every stage per link (Options.PerFlowARAllStages). Minutes a run under
// load; docs/flow.md gives the figures.
func BenchmarkSharedEP(b *testing.B) {
	g, cfg, mg := sharedEP(b)
	for _, m := range []struct {
		name string
		opt  flow.Options
	}{
		{"pooled", flow.Options{PooledAR: true}},
		{"first-choice", flow.Options{PerFlowAREverywhere: true}},
		{"rule", flow.Options{}},
		{"every-stage", flow.Options{PerFlowARAllStages: true, PerFlowAREverywhere: true}},
	} {
		b.Run(m.name, func(b *testing.B) {
			for b.Loop() {
				r, err := flow.Run(g, nil, cfg, mg, m.opt)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(r.Events), "steps/op")
			}
		})
	}
}
