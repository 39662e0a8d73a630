package fabric

import (
	"testing"

	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

// BenchmarkFatTreePermutationRoCE is the foundation's reference run (k=16 fat tree, 1,024 hosts,
// 100 Gb/s, 2 MB permutation) on the RoCE fabric with PFC, ECN and DCQCN on. Target: at most
// twice the time of BenchmarkFatTreePermutationRoCENoCC, the same run with PFC alone.
func BenchmarkFatTreePermutationRoCE(b *testing.B) { benchRoCE(b, 16, true) }

// BenchmarkFatTreePermutationRoCENoCC is the same run without congestion control (PFC only).
func BenchmarkFatTreePermutationRoCENoCC(b *testing.B) { benchRoCE(b, 16, false) }

// K8 variants for routine runs.
func BenchmarkFatTreePermutationRoCEK8(b *testing.B)     { benchRoCE(b, 8, true) }
func BenchmarkFatTreePermutationRoCENoCCK8(b *testing.B) { benchRoCE(b, 8, false) }

func benchRoCE(b *testing.B, k int, cc bool) {
	g, err := topo.FatTree(k, topo.LinkSpec{Rate: 100 * units.Gbps, Latency: units.Microsecond})
	if err != nil {
		b.Fatal(err)
	}
	r, err := topo.ComputeRoutes(g)
	if err != nil {
		b.Fatal(err)
	}
	mg := permutationGraph(len(g.Hosts), 2*units.MB, 1)
	cfg := DefaultRoCE()
	cfg.RoCE.ECN, cfg.RoCE.DCQCN = cc, cc
	b.ReportAllocs()
	var events, hops uint64
	var pauses, cnps float64
	for i := 0; i < b.N; i++ {
		n, err := New(g, r, cfg)
		if err != nil {
			b.Fatal(err)
		}
		res, err := n.Run(mg, units.MaxTime)
		if err != nil {
			b.Fatal(err)
		}
		events += res.Events
		hops += res.PacketHops
		pauses += res.Counters["pfc_pause_frames_sent"]
		cnps += res.Counters["cnps_sent"]
	}
	s := b.Elapsed().Seconds()
	b.ReportMetric(float64(events)/s, "events/s")
	b.ReportMetric(float64(hops)/s, "packet-hops/s")
	b.ReportMetric(float64(events)/float64(b.N), "events/run")
	b.ReportMetric(pauses/float64(b.N), "pauses/run")
	b.ReportMetric(cnps/float64(b.N), "cnps/run")
}
