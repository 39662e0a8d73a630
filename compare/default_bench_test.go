package compare

import (
	"context"
	"testing"

	"github.com/fabricsim/fabricsim/backend"
	"github.com/fabricsim/fabricsim/examples"
)

// BenchmarkCompareDefault is the paired measurement of the flow backend's speed-up on the
// default compare (examples/compare-default.yaml: Mixtral-8x7B on 1,024 H100, five variants):
// the same step of one variant on the flow and the packet backend, one sub-benchmark each, so
// that a pair runs back to back under the same load. Each iteration runs one step (the
// scenario's first seed) of one variant; cpu-s/op is the process's user + system CPU per
// iteration (getrusage), which a compare spends over its workers and which load on a shared
// machine disturbs less than wall time. The packet side takes minutes per variant:
//
//	go test ./compare -run '^$' -bench 'CompareDefault/(flow|packet)/roce-default$' -benchtime 1x
//
// gives one pair; -bench CompareDefault the ten. docs/flow.md ("Figures") quotes the ratio.
func BenchmarkCompareDefault(b *testing.B) {
	data, err := examples.Read("compare-default.yaml")
	if err != nil {
		b.Fatal(err)
	}
	s, err := Parse(data, "compare-default.yaml", "")
	if err != nil {
		b.Fatal(err)
	}
	s.Steps = 1
	for _, be := range []backend.Name{backend.Flow, backend.Packet} {
		for _, v := range s.Variants {
			b.Run(string(be)+"/"+v.Name, func(b *testing.B) {
				b.ReportAllocs()
				cpu0 := cpuSeconds()
				for b.Loop() {
					if _, err := Run(context.Background(), s, Options{Backend: be, Variants: []string{v.Name}}); err != nil {
						b.Fatal(err)
					}
				}
				if cpu := cpuSeconds() - cpu0; cpu > 0 {
					b.ReportMetric(cpu/float64(b.N), "cpu-s/op")
				}
			})
		}
	}
}
