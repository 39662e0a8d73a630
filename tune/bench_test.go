package tune

import (
	"context"
	"path/filepath"
	"testing"
)

// BenchmarkEvaluation1k is one evaluation of examples/compare-moe-1k-tune.yaml's tuned variant
// (roce-default, 1,024 GPUs, flow backend) as a tune's worker runs it: what a tune of that
// scenario costs per candidate (docs/tune.md, "At 1,024 GPUs on the flow backend").
//
//	go test ./tune -run '^$' -bench Evaluation1k -benchtime 1x
func BenchmarkEvaluation1k(b *testing.B) {
	path := filepath.Join("..", "examples", "compare-moe-1k-tune.yaml")
	p, err := Load(path, LoadOptions{})
	if err != nil {
		b.Fatal(err)
	}
	s := &searcher{p: p}
	d := s.doc(p.Variant, nil, p.Seed, false)
	doc, err := d.marshal()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		m, err := (Engine{}).Run(context.Background(), doc, "bench", p.Dir)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(m["step_s"]*1e3, "step_ms")
	}
}
