package fabric

import (
	"testing"

	"github.com/fabricsim/fabricsim/result"
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
	cfg, err := DefaultInfiniBand("edr")
	if err != nil {
		b.Fatal(err)
	}
	cfg.IB.Adaptive = adaptive
	benchFatTree(b, k, cfg, func(res *result.Run) {
		if res.Drops != 0 {
			b.Fatalf("%d drops", res.Drops)
		}
	})
}
