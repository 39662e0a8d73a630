package fabric

import (
	"testing"

	"github.com/fabricsim/fabricsim/result"
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
	cfg := DefaultRoCE()
	cfg.RoCE.ECN, cfg.RoCE.DCQCN = cc, cc
	var pauses, cnps float64
	benchFatTree(b, k, cfg, func(res *result.Run) {
		pauses += res.Counters["pfc_pause_frames_sent"]
		cnps += res.Counters["cnps_sent"]
	})
	b.ReportMetric(pauses/float64(b.N), "pauses/run")
	b.ReportMetric(cnps/float64(b.N), "cnps/run")
}
