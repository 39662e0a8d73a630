package compare

import (
	"context"
	"math"
	"testing"

	"github.com/fabricsim/fabricsim/backend"
	"github.com/fabricsim/fabricsim/result"
	"github.com/fabricsim/fabricsim/units"
)

// TestScaledSendMatchesWhole runs a pipeline-parallel step whose 128 MiB sends between stages
// cross the core tier of a three-tier rail-optimized Clos (Llama-3-70B, TP 8 PP 8 DP 8 on 512
// GPUs, examples/compare-70b-16k.yaml's shape at 64 servers) on the flow backend with the sends
// scaled down and whole: the default (the 2 MiB probe, run again at 16 MiB where it engaged a
// control loop), and every send at a fixed floor of 16 MiB (the rule before the probe) and of
// 2 MiB (the probe's size for every class). Every variant's step time, and its collective
// completion percentiles, within the flow backend's 2 % and 10 % of the whole sends'
// (checkReducedMatchesWhole), and within the errors measured (docs/flow.md, "Scaled-down
// sends"): step -0.09 % (a DP class's, the same at every floor), collective p50 and p99 within
// 0.001 % once the path's latency is counted once (scaledSend.whole); 0.15 % and 0.05 % here.
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
	run := func(opt Options) *Result {
		opt.Backend = backend.Flow
		r, err := Run(context.Background(), s, opt)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	whole := run(Options{WholeCollectives: true})
	for _, c := range []struct {
		what string
		opt  Options
	}{
		{"probe", Options{}},
		{"16 MiB", Options{ScaledSendFloor: minScaledSend}},
		{"2 MiB", Options{ScaledSendFloor: probeScaledSend}},
	} {
		scaled := run(c.opt)
		checkReducedMatchesWhole(t, c.what, scaled, whole)
		for i, v := range whole.Variants {
			p := scaled.Variants[i]
			for _, d := range []struct {
				what      string
				got, want float64
				tol       float64
			}{
				{"step time", p.Steps[0].StepTime, v.Steps[0].StepTime, 0.0015},
				{"collective p50", p.CollP50, v.CollP50, 0.0005},
				{"collective p99", p.CollP99, v.CollP99, 0.0005},
			} {
				if math.Abs(d.got-d.want) > d.tol*d.want {
					t.Errorf("%s %s: %s %.6g, whole %.6g: more than %g %% apart", v.Variant.Name, d.what, c.what, d.got, d.want, 100*d.tol)
				}
			}
		}
	}
}

// TestScaledSendWhole checks the whole send's completion from a scaled run's: alone on an idle
// path a send of S bytes completes at L + S/R (L the path's latency, R its rate), so the run of
// S/f at L + S/(f R) gives L + f (t - L), where the plain f t counts L f times.
func TestScaledSendWhole(t *testing.T) {
	const f = scaledSend(8)
	L, R := 3*units.Microsecond, units.Rate(400e9)
	S := 128 * units.MiB
	t1 := L + R.TransmitTime(S/8)
	if got, want := f.whole(t1, L), L+R.TransmitTime(S); got-want > units.Nanosecond || want-got > units.Nanosecond {
		t.Errorf("whole(%v, %v) = %v, want %v", t1, L, got, want)
	}
	// The fixed latency of a message is its ideal FCT less its bytes at the payload rate.
	m := &result.Message{Bytes: int64(S / 8), IdealFCT: t1}
	if got := fixedLatency(m, R); got != L {
		t.Errorf("fixedLatency = %v, want %v", got, L)
	}
	if got := f.whole(t1, 0); got != 8*t1 {
		t.Errorf("whole without latency = %v, want %v", got, 8*t1)
	}
}

// TestSettledRun: a probe run stands for the whole send only where no control loop acted.
func TestSettledRun(t *testing.T) {
	for _, c := range []struct {
		r    *classRun
		want bool
	}{
		{&classRun{NoDraws: true, Counters: map[string]float64{"drops": 0}}, true},
		{&classRun{NoDraws: true, Counters: map[string]float64{"pfc_pause_frames_sent": 3}}, false},
		{&classRun{NoDraws: true, Counters: map[string]float64{"ecn_marks": 1}}, false},
		{&classRun{NoDraws: true, Counters: map[string]float64{"ib_credit_stall_ns": 120}}, false},
		{&classRun{NoDraws: false, Counters: map[string]float64{}}, false},
		{nil, false},
	} {
		if got := settledRun(c.r); got != c.want {
			t.Errorf("settledRun(%+v) = %v, want %v", c.r, got, c.want)
		}
	}
}
