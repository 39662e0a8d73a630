package flow

import (
	"testing"

	"github.com/fabricsim/fabricsim/traffic"
	"github.com/fabricsim/fabricsim/units"
)

// BenchmarkPermutationDCQCN: a k=8 fat tree at 100 Gb/s, a random permutation of 16 MB flows on
// RoCE with DCQCN (the sweep-small example's run).
func BenchmarkPermutationDCQCN(b *testing.B) {
	g, r := fatTree(b, 8, 100*units.Gbps)
	cfg := roceDefault()
	cfg.RoCE.Kmin, cfg.RoCE.Kmax = 100*units.KB, 400*units.KB
	flows, err := traffic.PermutationFlows(len(g.Hosts), 16*units.MB, 0, traffic.NewRand(1))
	if err != nil {
		b.Fatal(err)
	}
	mg := traffic.ToGraph(flows, len(g.Hosts))
	b.ResetTimer()
	for range b.N {
		if _, err := Run(g, r, cfg, mg, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
