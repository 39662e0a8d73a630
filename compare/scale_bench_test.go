package compare

import (
	"context"
	"testing"
)

// BenchmarkCompare16k runs the two 16,384-GPU examples (a Llama-3-70B-class dense model and
// Mixtral 8x7B on a three-tier rail-optimized Clos of 2,048 H100 servers) with their default
// variants on the analytic backend, parse to result (the targets: 30 s and 2 GB each):
// go test ./compare -run '^$' -bench Compare16k -benchtime 1x; docs/architecture.md quotes
// the figures with peak memory.
func BenchmarkCompare16k(b *testing.B) {
	for _, c := range []struct{ name, file string }{
		{"70b", "../examples/compare-70b-16k.yaml"},
		{"moe", "../examples/compare-moe-16k.yaml"},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				s, err := Load(c.file)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := Run(context.Background(), s, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
