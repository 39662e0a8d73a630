package fabric

import (
	"testing"

	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

// BenchmarkFatTreePermutationIB is the foundation's reference run on InfiniBand: k=16 fat tree
// (1,024 hosts), 100 Gb/s, 1 us links, 4096 B MTU, random permutation of 2 MB flows, credit flow
// control with 4 VLs, min-hop LFTs. Same targets as the foundation: at most 3 s per run on one
// core and at most 100 MB resident.
func BenchmarkFatTreePermutationIB(b *testing.B) { benchIB(b, 16, false) }

// BenchmarkFatTreePermutationIBAdaptive is the same with adaptive routing.
func BenchmarkFatTreePermutationIBAdaptive(b *testing.B) { benchIB(b, 16, true) }

// BenchmarkFatTreePermutationIBK8 is the k=8 (128 hosts) run, quick enough for routine use.
func BenchmarkFatTreePermutationIBK8(b *testing.B) { benchIB(b, 8, false) }

// BenchmarkFatTreePermutationIBK8Adaptive is k=8 with adaptive routing.
func BenchmarkFatTreePermutationIBK8Adaptive(b *testing.B) { benchIB(b, 8, true) }

func benchIB(b *testing.B, k int, adaptive bool) {
	g, err := topo.FatTree(k, topo.LinkSpec{Rate: 100 * units.Gbps, Latency: units.Microsecond})
	if err != nil {
		b.Fatal(err)
	}
	r, err := topo.ComputeRoutes(g)
	if err != nil {
		b.Fatal(err)
	}
	mg := permutationGraph(len(g.Hosts), 2*units.MB, 1)
	cfg, err := DefaultInfiniBand("edr")
	if err != nil {
		b.Fatal(err)
	}
	cfg.IB.Adaptive = adaptive
	b.ReportAllocs()
	var events, hops uint64
	for i := 0; i < b.N; i++ {
		n, err := New(g, r, cfg)
		if err != nil {
			b.Fatal(err)
		}
		res, err := n.Run(mg, units.MaxTime)
		if err != nil {
			b.Fatal(err)
		}
		if res.Drops != 0 {
			b.Fatalf("%d drops", res.Drops)
		}
		events += res.Events
		hops += res.PacketHops
	}
	s := b.Elapsed().Seconds()
	b.ReportMetric(float64(events)/s, "events/s")
	b.ReportMetric(float64(hops)/s, "packet-hops/s")
	b.ReportMetric(float64(events)/float64(b.N), "events/run")
}
