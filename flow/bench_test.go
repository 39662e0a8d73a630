package flow

import (
	"testing"

	"github.com/fabricsim/fabricsim/collective"
	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/traffic"
	"github.com/fabricsim/fabricsim/units"
)

// BenchmarkPermutationDCQCN: a k=8 fat tree at 100 Gb/s, a random permutation of 16 MB flows on
// RoCE with DCQCN (the sweep-small example's run).
func BenchmarkPermutationDCQCN(b *testing.B) {
	g, r := fatTree(b, 8, 100*units.Gbps)
	cfg := fabric.DefaultRoCE()
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

// BenchmarkRing1024: one class run of the 1,024-GPU compare's data-parallel ring (8 rails of 128
// ranks on a rail-optimized fabric of 64-port switches, a 25 MiB reduce-scatter in two channels
// of 512 KiB chunks), RoCE with PFC.
func BenchmarkRing1024(b *testing.B) {
	g, err := topo.RailOptimized(topo.RailSpec{Servers: 128, NICsPerServer: 8, NIC: topo.LinkSpec{Rate: 390 * units.Gbps, Latency: 100 * units.Nanosecond},
		Radix: 64, Oversubscription: 1, Spine: topo.LinkSpec{Rate: 400 * units.Gbps, Latency: 150 * units.Nanosecond}})
	if err != nil {
		b.Fatal(err)
	}
	mg := &msggraph.Graph{Endpoints: 1024}
	for rail := 0; rail < 8; rail++ {
		ranks := make([]int32, 128)
		for s := range ranks {
			ranks[s] = int32(s*8 + rail)
		}
		if _, err := collective.Compile(mg, collective.Spec{Op: collective.ReduceScatter, Ranks: ranks, Bytes: 25 * units.MiB, Channels: 2, ChunkBytes: 512 * units.KiB, ConnBase: int32(rail * 2)}); err != nil {
			b.Fatal(err)
		}
	}
	cfg := fabric.DefaultRoCE()
	cfg.RoCE.DCQCN, cfg.RoCE.ECN = false, false
	for _, plain := range []bool{false, true} {
		name := "reduced"
		if plain {
			name = "plain"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			var red *reduction
			for b.Loop() {
				var err error
				if _, red, err = run(g, nil, cfg, mg, Options{NoSymmetry: plain}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(mg.Msgs)), "messages")
			if red != nil && !red.broken {
				b.ReportMetric(float64(red.copies), "copies")
			}
		})
	}
}
