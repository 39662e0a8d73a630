package compare

import (
	"context"
	"math"
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
	for i, v := range whole.Variants {
		p := scaled.Variants[i]
		for _, c := range []struct {
			what      string
			got, want float64
			tol       float64
		}{
			{"step time", p.Steps[0].StepTime, v.Steps[0].StepTime, 0.02},
			{"collective p50", p.CollP50, v.CollP50, 0.10},
			{"collective p99", p.CollP99, v.CollP99, 0.10},
		} {
			if math.Abs(c.got-c.want) > c.tol*c.want {
				t.Errorf("%s %s: scaled %.6g, whole sends %.6g: more than %g %% apart", v.Variant.Name, c.what, c.got, c.want, 100*c.tol)
			} else {
				t.Logf("%s %s: scaled %.6g, whole sends %.6g (%+.3f %%)", v.Variant.Name, c.what, c.got, c.want, 100*(c.got/c.want-1))
			}
		}
	}
}
