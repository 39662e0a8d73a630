package compare

import (
	"context"
	"testing"

	"github.com/fabricsim/fabricsim/backend"
)

// TestScaledSendMatchesWhole runs a pipeline-parallel step whose 128 MiB sends between stages
// cross the core tier of a three-tier rail-optimized Clos (Llama-3-70B, TP 8 PP 8 DP 8 on 512
// GPUs, examples/compare-70b-16k.yaml's shape at 64 servers) on the flow backend with the sends
// scaled down (sendScale: 8x) and whole, and checks every variant's step time within 2 % and
// its collective completion percentiles within the flow backend's 10 % of the whole sends'
// (docs/flow.md, "Scaled-down sends", has the measured errors).
func TestScaledSendMatchesWhole(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	src := `name: scaled
seed: 1
steps: 1
tokens: 1T
fidelity: classes
cluster: {servers: 64, gpus_per_server: 8, link_rate: 400Gbps, radix: 64, tiers: 3, servers_per_su: 32}
workload: {kind: training, gpu: h100, zero: 1, seq_len: 8192, model: llama3-70b, tp: 8, pp: 8, dp: 8, micro_batch: 1, global_batch: 64}
variants: [ib-ndr, roce-default, roce-tuned, roce-pfc-only]
`
	s, err := Parse([]byte(src), "scaled.yaml", ".")
	if err != nil {
		t.Fatal(err)
	}
	run := func(whole bool) *Result {
		r, err := Run(context.Background(), s, Options{Backend: backend.Flow, WholeCollectives: whole})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	scaled, whole := run(false), run(true)
	checkReducedMatchesWhole(t, "scaled", scaled, whole)
}
