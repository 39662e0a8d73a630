package compare

import (
	"bytes"
	"testing"
)

// acrossLeaves is a data-parallel step on 16 servers x 2 GPUs under 4 leaves of radix 8 (two
// tiers, four spines): the DP rings cross leaves, so that ECMP's choice of spine depends on the
// network seed, and four steps run with four seeds.
const acrossLeaves = `name: across-leaves
steps: 8
fidelity: classes
cluster: {servers: 8, gpus_per_server: 2, link_rate: 400Gbps, radix: 8}
workload:
  kind: training
  model: {base: llama3-8b, layers: 2, hidden: 1024, ffn: 4096, heads: 8, kv_heads: 8, vocab: 16000}
  gpu: h100
  tp: 2
  dp: 8
  zero: 1
  global_batch: 8
  seq_len: 2048
variants: [ib-ndr, roce-default, roce-pfc-only]
`

// TestSeedReuseMatchesEverySeed: a class run once per group of network seeds that route it
// alike, where the run drew no random number, gives the compare of running every seed
// (Options.RunEveryStep) byte for byte, and runs fewer simulations: every InfiniBand class once
// (its forwarding tables ignore the seed), RoCE classes once per routing pattern.
func TestSeedReuseMatchesEverySeed(t *testing.T) {
	_, out, sims := reuseVsEvery(t, acrossLeaves, "")
	if !bytes.Equal(out[0], out[1]) {
		t.Errorf("runs reused across seeds differ from running every seed")
	}
	// Every seed: 3 variants x 8 seeds x the classes; reused: InfiniBand's classes once.
	const variants, seeds = 3, 8
	classes := sims[1] / (variants * seeds)
	if sims[1] != variants*seeds*classes {
		t.Fatalf("%d simulations running every seed, want a multiple of %d", sims[1], variants*seeds)
	}
	// InfiniBand's classes run once; some RoCE seeds route the rings' flows over other spines
	// in the same pattern (here seeds 4 and 8 as 1 and 5), and the rings hold no bytes in a
	// switch: those runs are reused too.
	if most := sims[1] - (seeds-1)*classes - 1; sims[0] > most {
		t.Errorf("%d simulations with reuse, want at most %d (every seed: %d; InfiniBand's %d classes once, some RoCE seeds reused)", sims[0], most, sims[1], classes)
	}
	t.Logf("%d simulations with reuse, %d running every seed", sims[0], sims[1])
}
