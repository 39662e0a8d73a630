package compare

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/result"
	"github.com/fabricsim/fabricsim/units"
)

// TestScaledSendMatchesWhole runs a pipeline-parallel step whose 128 MiB sends between stages
// cross the core tier of a three-tier rail-optimized Clos (Llama-3-70B, TP 8 PP 8 DP 8 on 512
// GPUs, examples/compare-70b-16k.yaml's shape at 64 servers) on the flow backend with the sends
// scaled down and whole: the default (the 2 MiB probe, and where it engaged a control loop the
// class at 8 and 16 MiB, extrapolated from the two: twoSizeRun), the one-size rule (the class
// again at 16 MiB alone, Options.OneSizeScaledSends), the pair 16 and 32 MiB, and every send at a
// fixed floor of 16 MiB (the rule before the probe) and of 2 MiB (the probe's size for every
// class). Every variant's step time, and its collective completion percentiles, within the flow
// backend's 2 % and 10 % of the whole sends' (checkReducedMatchesWhole), and within the errors
// measured (docs/flow.md, "Scaled-down sends"): step -0.07 to -0.09 % (a DP class's, the same at
// every floor), collective p50 and p99 within 0.001 % once the path's latency is counted once
// (scaledSend.whole), but the default's p99 +0.016 % on roce-default and roce-tuned (the two sizes'
// extrapolation, the pair doubled to 32 and 64 MiB where the pauses began late: pausesSpread; it
// was +0.057 % and step -0.067 % with 8 and 16 MiB, now step +0.011 %); 0.15 %, 0.05 % and 0.1 %
// here. roce-pfc-only's probe holds 2.1 MB in the switches, so it no longer stands for the whole
// send (settledRun) and the class runs at two sizes too. Over three seeds:
// TestScaledSendMatchesWhole3Seeds.
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
	run := flowRunner(t, s)
	whole := run(Options{WholeCollectives: true})
	for _, c := range []struct {
		what  string
		opt   Options
		p99Of float64 // the collective p99's tolerance
	}{
		{"default", Options{}, 0.001},
		{"one size", Options{OneSizeScaledSends: true}, 0.0005},
		{"16, 32 MiB", Options{ScaledSendPair: [2]units.Size{16 * units.MiB, 32 * units.MiB}}, 0.0005},
		{"16 MiB", Options{ScaledSendFloor: minScaledSend}, 0.0005},
		{"2 MiB", Options{ScaledSendFloor: probeScaledSend}, 0.0005},
	} {
		scaled := run(c.opt)
		checkReducedMatchesWhole(t, c.what, scaled, whole)
		checkNearWhole(t, c.what, scaled, whole, [3]float64{0.0015, 0.0005, c.p99Of})
	}
}

// TestScaledSendMatchesWhole3Seeds is TestScaledSendMatchesWhole's shape over three steps (three
// network seeds), where the collective p99 falls among the sends that PFC's spreading pauses slow
// (docs/flow.md, "Pauses that spread"): seeds 2 and 3 route more pipeline sends through the
// congested core links, the sends sharing a NIC with one of them slow from about 1 ms in (the
// 16 MiB run's end), and the p99 over the three seeds is theirs. Measured against the whole
// sends (7.823 ms, roce-pfc-only 7.828): the pair at 8 and 16 MiB without the doubling
// (Options.NoPauseSpread) -28.0 to -28.3 %, which this test holds to beyond the validation
// target (10 %); the default, which doubles the pair to 32 and 64 MiB where the pauses began
// late, step +0.011 %, p50 0, p99 +5.05 to +5.28 %, ib-ndr (credits, no PFC) within 0.001 %.
// Held to the flow backend's validation targets (checkReducedMatchesWhole: step 2 %, collective
// percentiles 10 %) and to the step and p50 tolerances of TestScaledSendMatchesWhole (0.15 %,
// 0.05 %).
func TestScaledSendMatchesWhole3Seeds(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	src := `name: scaled3
seed: 1
steps: 3
tokens: 1T
fidelity: classes
cluster: {servers: 64, gpus_per_server: 8, link_rate: 400Gbps, radix: 64, tiers: 3, servers_per_su: 32}
workload: {kind: training, gpu: h100, zero: 1, seq_len: 8192, model: llama3-70b, tp: 8, pp: 8, dp: 8, micro_batch: 1, global_batch: 64}
variants: [ib-ndr, roce-default, roce-tuned, roce-pfc-only]
`
	s, err := Parse([]byte(src), "scaled3.yaml", ".")
	if err != nil {
		t.Fatal(err)
	}
	run := flowRunner(t, s)
	whole, scaled := run(Options{WholeCollectives: true}), run(Options{})
	checkReducedMatchesWhole(t, "default", scaled, whole)
	checkNearWhole(t, "default", scaled, whole, [3]float64{0.0015, 0.0005, 0.10})
	plain := run(Options{NoPauseSpread: true})
	for i, v := range plain.Variants {
		w := whole.Variants[i]
		if v.Variant.Fabric.Kind == fabric.KindInfiniBand {
			continue
		}
		if off := v.CollP99/w.CollP99 - 1; off > -0.10 {
			t.Errorf("%s: collective p99 without the doubling %+.2f %% off the whole sends'; the shape no longer shows the late pauses (measured -28 %%)", v.Variant.Name, 100*off)
		} else {
			t.Logf("%s: collective p99 without the doubling %+.2f %% off the whole sends'", v.Variant.Name, 100*off)
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

// TestSettledRun: a probe run stands for the whole send only where no control loop acted and no
// switch held a byte.
func TestSettledRun(t *testing.T) {
	for _, c := range []struct {
		r    *classRun
		want bool
	}{
		{&classRun{NoDraws: true, NoQueues: true, Counters: map[string]float64{"drops": 0}}, true},
		{&classRun{NoDraws: true, NoQueues: false, Counters: map[string]float64{"drops": 0}}, false}, // Ethernet: a queue filling
		{&classRun{NoDraws: true, NoQueues: true, Counters: map[string]float64{"pfc_pause_frames_sent": 3}}, false},
		{&classRun{NoDraws: true, NoQueues: true, Counters: map[string]float64{"ecn_marks": 1}}, false},
		{&classRun{NoDraws: true, NoQueues: true, Counters: map[string]float64{"ib_credit_stall_ns": 120}}, false},
		{&classRun{NoDraws: false, Counters: map[string]float64{}}, false},
		{nil, false},
	} {
		if got := settledRun(c.r, fabric.KindRoCE); got != c.want {
			t.Errorf("settledRun(%+v) = %v, want %v", c.r, got, c.want)
		}
	}
	// InfiniBand: a queue fills a VL's credits, and a full one is a stall.
	if !settledRun(&classRun{NoDraws: true, NoQueues: false, Counters: map[string]float64{}}, fabric.KindInfiniBand) {
		t.Error("an InfiniBand probe with bytes queued and no credit stall did not settle")
	}
}

// TestPausesSpread checks the doubling's test on the pair's PFC paused time: paused in proportion
// to the bytes past an onset s0, runs at s1 and k s1 pause (k s1 - s0) / (s1 - s0) as long, at
// most 2k - 1 when the pauses began in the smaller run's first half (s0 <= s1 / 2).
func TestPausesSpread(t *testing.T) {
	paused := func(s, s0 float64) *result.Run { // 1 us of pause per MiB past s0
		return &result.Run{Counters: map[string]float64{"pfc_paused_time_ns": 1e3 * max(0, s-s0)}}
	}
	const M = units.MiB
	for _, c := range []struct {
		s1, s2 units.Size
		s0     float64 // MiB
		want   bool
	}{
		{8 * M, 16 * M, 0, false},  // paused from the start: P2 / P1 = 2
		{8 * M, 16 * M, 4, false},  // from the smaller run's half: 3
		{8 * M, 16 * M, 5, true},   // later: 3.67
		{8 * M, 16 * M, 10, true},  // not in the smaller run at all
		{8 * M, 16 * M, 20, false}, // in neither: nothing to double for
		{16 * M, 64 * M, 8, false}, // k = 4: (64 - 8) / (16 - 8) = 7 = 2k - 1
		{16 * M, 64 * M, 9, true},
	} {
		lo, hi := paused(float64(c.s1/M), c.s0), paused(float64(c.s2/M), c.s0)
		if got := pausesSpread(lo, hi, [2]units.Size{c.s1, c.s2}); got != c.want {
			t.Errorf("pair %v, %v, onset %g MiB: pausesSpread %v, want %v", c.s1, c.s2, c.s0, got, c.want)
		}
	}
	if scaledAny([]groupExtrap{nil, scaledSend(1)}) || !scaledAny([]groupExtrap{nil, scaledSend(2)}) {
		t.Error("scaledAny: a group run at 1/2 of its bytes is a scaled send, one at 1/1 is not")
	}
}

// TestTwoSizeRun checks the two-size extrapolation on messages that follow its model: a send whose
// whole completion is X, its path's latency L, runs at S/f in t(f) with scaledSend.whole(t(f), L)
// = X + c f (c: 20 us the scaled run gains, whatever its size), so the one-size rule at f = 8 is
// short by 160 us and the two sizes (f = 16 and 8) give X. Three sends of one class, with the
// small run's completions in another order than the large run's (the scatter between sizes):
// paired by rank, each message gets the extrapolation of its rank in the large run. The bytes
// and the ideal FCT (affine in the size) extrapolate exactly, so do counters that follow the
// model; a group not scaled keeps the larger run's figures, and runs that do not pair up are
// refused.
func TestTwoSizeRun(t *testing.T) {
	const S = 128 * units.MiB
	L, R := 3*units.Microsecond, units.Rate(400e9)
	c := -20 * units.Microsecond
	X := []units.Time{9 * units.Millisecond, 7 * units.Millisecond, 8 * units.Millisecond}
	perm := map[int][]int{16: {1, 2, 0}, 8: {0, 1, 2}} // which X each message has in the run at S/f
	run := func(f int) *result.Run {
		s := S / units.Size(f)
		r := &result.Run{Counters: map[string]float64{"ecn_marks": (1e6 + 50*float64(f)) / float64(f)}, Drops: int64((1600 + 16*f) / f)}
		for i := range X {
			x := X[perm[f][i]] + units.Time(f)*c
			r.Messages = append(r.Messages, result.Message{Src: int32(i), Dst: int32(8 + i), Bytes: int64(s),
				Start: 5 * units.Microsecond, Finish: 5*units.Microsecond + L + (x-L)/units.Time(f), IdealFCT: L + R.TransmitTime(s)})
		}
		r.Messages = append(r.Messages, result.Message{Src: 3, Dst: 11, Bytes: int64(units.MiB), Finish: 40 * units.Microsecond, IdealFCT: 30 * units.Microsecond})
		return r
	}
	rng := [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 4}}
	ex := func(f int) []groupExtrap { return []groupExtrap{scaledSend(f), scaledSend(f), scaledSend(f), nil} }
	got, ok := twoSizeRun(run(16), run(8), rng, rng, ex(16), ex(8), R)
	if !ok {
		t.Fatal("runs did not pair up")
	}
	near := func(what string, got, want units.Time) {
		t.Helper()
		if d := got - want; d > units.Nanosecond || d < -units.Nanosecond {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	for i, x := range X {
		m := got.Messages[i]
		near("whole send's completion", m.FCT(), x)
		near("whole send's ideal FCT", m.IdealFCT, L+R.TransmitTime(S))
		if m.Bytes != int64(S) {
			t.Errorf("whole send's bytes %d, want %d", m.Bytes, int64(S))
		}
		one := run(8).Messages[i]
		near("one-size rule's error", scaledSend(8).whole(one.FCT(), L)-x, 8*c)
	}
	if got.Messages[3] != run(8).Messages[3] {
		t.Errorf("unscaled group's message %+v, want the larger run's", got.Messages[3])
	}
	if c, want := got.Counters["ecn_marks"], 1e6; math.Abs(c-want) > 1e-6*want {
		t.Errorf("ecn_marks %g, want %g", c, want)
	}
	if got.Drops != 1600 {
		t.Errorf("drops %d, want 1600", got.Drops)
	}
	if _, ok := twoSizeRun(run(8), run(8), rng, rng, ex(8), ex(8), R); ok {
		t.Error("two runs at one size paired up")
	}
	short := run(16)
	short.Messages = short.Messages[:3]
	if _, ok := twoSizeRun(short, run(8), rng[:3], rng, ex(16), ex(8), R); ok {
		t.Error("runs of other messages paired up")
	}
}

// TestTwoSizeSendsMatchWhole2048 runs the same shape at 2,048 GPUs (256 servers, DP 32, one
// step, roce-default), where every pipeline class engages DCQCN and PFC and no size below the
// whole settles (docs/flow.md, "Scaled-down sends"), with the sends whole, with the default (two
// sizes, 8 and 16 MiB, doubled where the pauses began late: pausesSpread) and with the one-size
// rule (16 MiB). Measured against the whole: the default step -0.30 %, collective p50 -7.14 %,
// p99 -3.14 % (-0.90, -8.31, -5.41 % with 8 and 16 MiB alone, Options.NoPauseSpread; -0.71, -8.8,
// -6.1 % at an earlier commit); one size +0.28, -12.5, +4.4 %. Held to
// the validation targets (step 2 %, collective percentiles 10 %; docs/flow.md, "Validation") and
// to the default's p50 closer to the whole than one size's.
func TestTwoSizeSendsMatchWhole2048(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	src := `name: scaled2048
seed: 1
steps: 1
tokens: 1T
fidelity: classes
cluster: {servers: 256, gpus_per_server: 8, link_rate: 400Gbps, radix: 64, tiers: 3, servers_per_su: 32}
workload: {kind: training, gpu: h100, zero: 1, seq_len: 8192, model: llama3-70b, tp: 8, pp: 8, dp: 32, micro_batch: 1, global_batch: 256}
variants: [roce-default]
`
	s, err := Parse([]byte(src), "scaled2048.yaml", ".")
	if err != nil {
		t.Fatal(err)
	}
	run := flowRunner(t, s)
	wholeRes, twoRes := run(Options{WholeCollectives: true}), run(Options{})
	checkReducedMatchesWhole(t, "two sizes", twoRes, wholeRes)
	whole, two, one := wholeRes.Variants[0], twoRes.Variants[0], run(Options{OneSizeScaledSends: true}).Variants[0]
	off := func(got, want float64) float64 { return math.Abs(got/want - 1) }
	if a, b := off(two.CollP50, whole.CollP50), off(one.CollP50, whole.CollP50); a >= b {
		t.Errorf("collective p50 %.2f %% off the whole with two sizes, %.2f %% with one", 100*a, 100*b)
	}
}

// TestProbeStopMatchesWholeProbe: a probe of scaled-down sends stops at a control loop's first
// act (flow.Options.StopOnControl), since its run is then discarded; the compare is the same
// bytes as with every probe run to its end (Options.WholeProbe). The 512-GPU shape of
// TestScaledSendMatchesWhole, where roce-default's and roce-tuned's probes engage DCQCN (they
// stop) and roce-pfc-only's engages no loop (it runs to the end; its pipeline class's, holding
// bytes in the switches, does not settle: settledRun); and
// with the pair 2 and 16 MiB, whose smaller run is the probe's and is never stopped.
func TestProbeStopMatchesWholeProbe(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	src := `name: probe
seed: 1
steps: 2
tokens: 1T
fidelity: classes
cluster: {servers: 64, gpus_per_server: 8, link_rate: 400Gbps, radix: 64, tiers: 3, servers_per_su: 32}
workload: {kind: training, gpu: h100, zero: 1, seq_len: 8192, model: llama3-70b, tp: 8, pp: 8, dp: 8, micro_batch: 1, global_batch: 64}
variants: [ib-ndr, roce-default, roce-pfc-only]
`
	s, err := Parse([]byte(src), "probe.yaml", ".")
	if err != nil {
		t.Fatal(err)
	}
	run := flowRunner(t, s)
	for _, pair := range [][2]units.Size{{}, {probeScaledSend, minScaledSend}} {
		var out [2][]byte
		var stopped [2]int64
		for i, whole := range []bool{false, true} {
			before := probesStopped.Load()
			r := run(Options{WholeProbe: whole, ScaledSendPair: pair})
			stopped[i] = probesStopped.Load() - before
			r.WallSeconds = 0
			for _, v := range r.Variants {
				v.SimWall = 0
			}
			out[i], _ = json.Marshal(r)
		}
		if !bytes.Equal(out[0], out[1]) {
			t.Errorf("pair %v: the compare with probes stopped differs from the one with whole probes", pair)
		}
		if want := pair[0] == 0; (stopped[0] > 0) != want || stopped[1] != 0 {
			t.Errorf("pair %v: %d probes stopped (with WholeProbe %d); want some: %v", pair, stopped[0], stopped[1], want)
		}
		t.Logf("pair %v: %d probes stopped", pair, stopped[0])
	}
}

// TestTwoSizeShifted checks a later seed's extrapolation from its larger run alone and the first
// seed's pair (Options.SeedCorrection) on sends that follow the model with the same transient in
// both seeds: X(s) = X + c/s, c the same, the seeds' whole completions X other (and in another
// order): each message gets its own seed's whole completion, bytes and ideal FCT; the counters
// their whole counts where the transient's count is the same.
func TestTwoSizeShifted(t *testing.T) {
	const S = 128 * units.MiB
	L, R := 3*units.Microsecond, units.Rate(400e9)
	c := -20 * units.Microsecond
	run := func(f int, X []units.Time, marks float64) *result.Run {
		s := S / units.Size(f)
		r := &result.Run{Counters: map[string]float64{"ecn_marks": (marks + 50*float64(f)) / float64(f)}}
		for i, x := range X {
			r.Messages = append(r.Messages, result.Message{Src: int32(i), Dst: int32(8 + i), Bytes: int64(s),
				Start: 5 * units.Microsecond, Finish: 5*units.Microsecond + L + (x+units.Time(f)*c-L)/units.Time(f), IdealFCT: L + R.TransmitTime(s)})
		}
		return r
	}
	X0 := []units.Time{9 * units.Millisecond, 7 * units.Millisecond, 8 * units.Millisecond}
	Xk := []units.Time{6 * units.Millisecond, 10 * units.Millisecond, 8500 * units.Microsecond}
	rng := [][2]int{{0, 1}, {1, 2}, {2, 3}}
	ex := func(f int) []groupExtrap { return []groupExtrap{scaledSend(f), scaledSend(f), scaledSend(f)} }
	lo0, hi0 := run(16, X0, 1e6), run(8, X0, 1e6)
	e0, ok := twoSizeRun(lo0, hi0, rng, rng, ex(16), ex(8), R)
	if !ok {
		t.Fatal("the first seed's runs did not pair up")
	}
	got, ok := twoSizeShifted(run(8, Xk, 2e6), lo0, hi0, e0, rng, rng, ex(16), ex(8), R)
	if !ok {
		t.Fatal("runs did not pair up")
	}
	for i, x := range Xk {
		m := got.Messages[i]
		if d := m.FCT() - x; d > units.Nanosecond || d < -units.Nanosecond {
			t.Errorf("message %d: completion %v, want %v", i, m.FCT(), x)
		}
		if m.Bytes != int64(S) || m.IdealFCT != L+R.TransmitTime(S) {
			t.Errorf("message %d: bytes %d, ideal FCT %v; want %d, %v", i, m.Bytes, m.IdealFCT, int64(S), L+R.TransmitTime(S))
		}
	}
	if c, want := got.Counters["ecn_marks"], 2e6; math.Abs(c-want) > 1e-6*want {
		t.Errorf("ecn_marks %g, want %g", c, want)
	}
}

// TestSeedCorrectionMatchesTwoSizes: with Options.SeedCorrection a congested class's later
// network seeds run its sends at 16 MiB alone and take the first seed's two-size correction
// (twoSizeShifted). On the 2,048-GPU shape of TestTwoSizeSendsMatchWhole2048 over three steps
// (three seeds), roce-default, every step's time within 0.5 % of the default's (two sizes on
// every seed) and the collective p50 and p99 within 2 % and 3 %. Measured against the whole
// sends (docs/flow.md, "Where the 16,384-GPU compare's CPU goes"): the default's steps -1.55,
// -1.36, -0.97 %, p50 -7.34 %, p99 -7.79 %; the correction's -1.55, -1.19, -1.06 %, -7.50 %,
// -6.37 % (so 0.17 points, 0.17 % and 1.5 % from the default), measured before the pair was
// doubled where the pauses begin late (pausesSpread). Both sides keep the pair at 8 and 16 MiB
// (Options.NoPauseSpread): a later seed under the correction runs its larger size alone and
// cannot tell that its own pauses began late, so the correction stands for the two sizes, not
// for the doubling; against the default with the doubling its steps 2 and 3 are +0.66 and
// +0.78 % off and its p99 +3.0 % (docs/flow.md, "Pauses that spread"). On the 512-GPU shape
// over three seeds the correction is 28 % short of the whole sends' collective p99 (5.617
// against 7.823 ms), the default +5.1 %.
func TestSeedCorrectionMatchesTwoSizes(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	src := `name: seedcorr2048
seed: 1
steps: 3
tokens: 1T
fidelity: classes
cluster: {servers: 256, gpus_per_server: 8, link_rate: 400Gbps, radix: 64, tiers: 3, servers_per_su: 32}
workload: {kind: training, gpu: h100, zero: 1, seq_len: 8192, model: llama3-70b, tp: 8, pp: 8, dp: 32, micro_batch: 1, global_batch: 256}
variants: [roce-default]
`
	s, err := Parse([]byte(src), "seedcorr2048.yaml", ".")
	if err != nil {
		t.Fatal(err)
	}
	run := flowRunner(t, s)
	two, corr := run(Options{NoPauseSpread: true}), run(Options{SeedCorrection: true, NoPauseSpread: true})
	checkNearWhole(t, "seed correction", corr, two, [3]float64{0.005, 0.02, 0.03})
	for i, v := range corr.Variants {
		for k, st := range v.Steps {
			d := two.Variants[i].Steps[k].StepTime
			if math.Abs(st.StepTime/d-1) > 0.005 {
				t.Errorf("%s step %d: %.6g s with the seed correction, %.6g with two sizes on every seed", v.Variant.Name, k+1, st.StepTime, d)
			}
			t.Logf("%s step %d: %+.3f %% from two sizes on every seed", v.Variant.Name, k+1, 100*(st.StepTime/d-1))
		}
	}
}
