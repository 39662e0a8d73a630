package compare

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/backend"
	"github.com/fabricsim/fabricsim/examples"
	"github.com/fabricsim/fabricsim/training"
	"github.com/fabricsim/fabricsim/units"
)

// normQuantile is the standard normal's p-quantile.
func normQuantile(p float64) float64 { return math.Sqrt2 * math.Erfinv(2*p-1) }

// The drawn factors have the distribution's closed-form moments: lognormal with mean 1 and
// coefficient of variation c has median exp(-s^2/2) and 99th percentile exp(-s^2/2 + 2.326 s),
// s^2 = ln(1 + c^2); the normal has mean 1 and standard deviation c; slow GPUs are Binomial(n,
// p). 200,000 GPUs in one step; each figure within 4 standard errors.
func TestNoiseMoments(t *testing.T) {
	const n = 200000
	plan := &training.Plan{GPUs: n}
	for _, c := range []struct {
		dist string
		cv   float64
	}{{"lognormal", 0.02}, {"lognormal", 0.3}, {"normal", 0.05}} {
		s := &Scenario{Seed: 7, Steps: 1, Noise: &Noise{Dist: c.dist, CV: c.cv, Slow: SlowGPUs{Slowdown: 1.5}}}
		fs := append([]float64(nil), s.drawNoise(plan, 0).factor...)
		m := float64(len(fs))
		var mean, sq float64
		for _, f := range fs {
			mean += f / m
		}
		for _, f := range fs {
			sq += (f - mean) * (f - mean) / (m - 1)
		}
		sd := math.Sqrt(sq)
		if se := c.cv / math.Sqrt(m); math.Abs(mean-1) > 4*se {
			t.Errorf("%s cv %g: mean %.5f, want 1 +- %.5f", c.dist, c.cv, mean, 4*se)
		}
		// Standard error of a sample standard deviation: sd sqrt((kurtosis - 1) / 4m); the
		// lognormal's kurtosis at cv 0.3 is about 4.5, so sqrt(4/4m) is a safe yardstick.
		if se := c.cv * math.Sqrt(1/m); math.Abs(sd-c.cv) > 4*se {
			t.Errorf("%s cv %g: sample cv %.5f, want %g +- %.5f", c.dist, c.cv, sd, c.cv, 4*se)
		}
		if c.dist == "lognormal" {
			fs := append([]float64(nil), fs...)
			sort.Float64s(fs)
			s2 := math.Log1p(c.cv * c.cv)
			for _, q := range []float64{0.5, 0.99} {
				want := math.Exp(-s2/2 + math.Sqrt(s2)*normQuantile(q))
				got := fs[int(q*m)]
				// Standard error of a sample quantile: sqrt(q(1-q)/m) / density at the quantile.
				z := normQuantile(q)
				dens := math.Exp(-z*z/2) / math.Sqrt(2*math.Pi) / (want * math.Sqrt(s2))
				se := math.Sqrt(q*(1-q)/m) / dens
				if math.Abs(got-want) > 4*se {
					t.Errorf("%s cv %g: p%g %.5f, want %.5f +- %.5f", c.dist, c.cv, 100*q, got, want, 4*se)
				}
			}
		}
		s.Noise.Slow.Prob = 0.01
		nz := s.drawNoise(plan, 0)
		for g, f := range nz.factor {
			if f != fs[g] && f != fs[g]*1.5 {
				t.Fatalf("GPU %d: factor %g with slow GPUs, %g without: the draws moved", g, f, fs[g])
			}
		}
		mu, sdev := n*0.01, math.Sqrt(n*0.01*0.99)
		if math.Abs(float64(nz.slow)-mu) > 4*sdev {
			t.Errorf("%s: %d slow GPUs of %d, want %.0f +- %.0f", c.dist, nz.slow, n, mu, 4*sdev)
		}
	}
}

// one is a single 8-GPU server, TP 8: the step's only synchronization is the NVLink all-reduce
// after each layer's compute, so the step's compute on the critical path is the slowest GPU's.
const one = `name: one
backend: analytic
steps: 1000
cluster: {servers: 1, gpus_per_server: 8}
workload: {kind: training, model: {base: llama3-8b, layers: 4}, gpu: h100, tp: 8, dp: 1, global_batch: 4, seq_len: 2048}
variants: [ib-ndr]
noise: {cv: 0.05%s}
`

// TestStragglerMax: with a factor per GPU and step the step's compute is the planned compute
// times the largest of the 8 GPUs' factors, step by step exactly (to a picosecond per op); over
// 1,000 steps the median of that maximum matches the closed form of the largest of 8
// lognormals, exp(mu + s q), q the normal's 0.5^(1/8)-quantile (1.19 s above the mean factor's
// median: the straggler tax), within 4 standard errors; slow GPUs (p = 1 % each) slow
// 1 - 0.99^8 = 7.7 % of steps.
func TestStragglerMax(t *testing.T) {
	for _, slow := range []string{"", ", slow: {prob: 0.01}"} {
		s, err := Parse([]byte(fmt.Sprintf(one, slow)), "one.yaml", "")
		if err != nil {
			t.Fatal(err)
		}
		r, err := Run(context.Background(), s, Options{})
		if err != nil {
			t.Fatal(err)
		}
		checkIdentity(t, r)
		plan, err := s.Plan()
		if err != nil {
			t.Fatal(err)
		}
		v := r.Variants[0]
		var maxes []float64
		slowSteps := 0
		for k, st := range v.Steps {
			nz := s.drawNoise(plan, k)
			g := 0
			for i, f := range nz.factor {
				if f > nz.factor[g] {
					g = i
				}
			}
			if nz.slow > 0 {
				slowSteps++
			}
			var want float64
			ops := 0
			for i := range plan.Ops {
				if o := &plan.Ops[i]; o.Kind == training.Compute && o.Ranks[0] == g {
					want += nz.duration(i, o).Seconds()
					ops++
				}
			}
			if math.Abs(st.Compute-want) > float64(ops)*1e-12 {
				t.Fatalf("step %d: compute %.9g s, the slowest GPU's (%d, x%.4f) %.9g s", k, st.Compute, g, nz.factor[g], want)
			}
			maxes = append(maxes, nz.factor[g])
		}
		if slow != "" {
			p := 1 - math.Pow(0.99, 8)
			mu, sd := 1000*p, math.Sqrt(1000*p*(1-p))
			if math.Abs(float64(slowSteps)-mu) > 4*sd || v.SlowGPUSteps != slowSteps {
				t.Errorf("%d steps with a slow GPU (reported %d), want %.0f +- %.0f", slowSteps, v.SlowGPUSteps, mu, 4*sd)
			}
			continue
		}
		sort.Float64s(maxes)
		s2 := math.Log1p(0.05 * 0.05)
		sg := math.Sqrt(s2)
		z := normQuantile(math.Pow(0.5, 1.0/8))
		want := math.Exp(-s2/2 + sg*z)
		// Density of the maximum at its median: 8 F^7 f, F = 0.5^(1/8).
		dens := 8 * math.Pow(0.5, 7.0/8) * math.Exp(-z*z/2) / math.Sqrt(2*math.Pi) / (want * sg)
		se := math.Sqrt(0.25/1000) / dens
		got := maxes[500]
		t.Logf("median of the largest of 8 factors: %.5f, closed form %.5f +- %.5f; step p50 %.4g s, p99 %.4g s, jitter %.2f %%",
			got, want, se, v.StepP50, v.StepP99, 100*v.StepJitter)
		if math.Abs(got-want) > 4*se {
			t.Errorf("median of the largest of 8 factors %.5f, closed form %.5f +- %.5f", got, want, 4*se)
		}
		if v.StepP50 <= 0 || v.StepP99 < v.StepP50 || math.Abs(v.StepJitter-(v.StepP99-v.StepP50)/v.StepP50) > 1e-12 {
			t.Errorf("p50 %g, p99 %g, jitter %g", v.StepP50, v.StepP99, v.StepJitter)
		}
	}
}

// TestPersistentSlow: with slow.persistent the slow GPUs are drawn once: the same set in every
// step, Binomial(n, p) in size, and turning persistence on moves no compute factor.
func TestPersistentSlow(t *testing.T) {
	const n = 100000
	plan := &training.Plan{GPUs: n}
	s := &Scenario{Seed: 3, Steps: 3, Noise: &Noise{Dist: "lognormal", CV: 0.02, Slow: SlowGPUs{Prob: 0.01, Slowdown: 2, Persistent: true}}}
	var first []int
	for k := 0; k < 3; k++ {
		nz := s.drawNoise(plan, k)
		s.Noise.Slow.Prob = 0
		plain := s.drawNoise(plan, k)
		s.Noise.Slow.Prob = 0.01
		var slow []int
		for g, f := range nz.factor {
			switch f {
			case plain.factor[g]:
			case 2 * plain.factor[g]:
				slow = append(slow, g)
			default:
				t.Fatalf("step %d GPU %d: factor %g, %g without slow GPUs", k, g, f, plain.factor[g])
			}
		}
		if k == 0 {
			first = slow
			mu, sd := n*0.01, math.Sqrt(n*0.01*0.99)
			if math.Abs(float64(len(slow))-mu) > 4*sd {
				t.Errorf("%d slow GPUs of %d, want %.0f +- %.0f", len(slow), n, mu, 4*sd)
			}
		} else if fmt.Sprint(slow) != fmt.Sprint(first) {
			t.Errorf("step %d: the slow GPUs changed (%d, step 0 had %d)", k, len(slow), len(first))
		}
	}
}

// TestHostNoise: host detours add, per step, delay x (compute ops on the critical path that
// drew one); with dist none and one GPU per step's chain the mean added time is ops x prob x
// delay within 4 standard errors of a binomial.
func TestHostNoise(t *testing.T) {
	src := strings.Replace(fmt.Sprintf(one, ", dist: none, host: {prob: 0.02, delay: 100us}"), "cv: 0.05, ", "", 1)
	s, err := Parse([]byte(src), "one.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	base, err := Parse([]byte(strings.Replace(src, "noise:", "# noise:", 1)), "one.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	base.Steps = 1
	r0, err := Run(context.Background(), base, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(context.Background(), s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	plan, _ := s.Plan()
	ops := 0 // compute ops per GPU: the critical path runs through one of them per op slot
	for i := range plan.Ops {
		if plan.Ops[i].Kind == training.Compute && plan.Ops[i].Ranks[0] == 0 {
			ops++
		}
	}
	// Each op slot is delayed when any of the 8 GPUs drew a detour for it (they synchronize
	// after every op through the TP all-reduce): probability 1 - (1 - p)^8 per slot.
	q := 1 - math.Pow(1-0.02, 8)
	mean := float64(ops) * q * 100e-6
	sd := math.Sqrt(float64(ops)*q*(1-q)) * 100e-6 / math.Sqrt(1000)
	got := r.Variants[0].StepTime - r0.Variants[0].StepTime
	t.Logf("%d compute ops per GPU; added %.4g s per step, want %.4g", ops, got, mean)
	if math.Abs(got-mean) > 4*sd {
		t.Errorf("host noise adds %.4g s per step, want %.4g +- %.4g", got, mean, 4*sd)
	}
}

// TestNetworkSeedReuse: with network_seeds below steps each seed's network runs serve every
// step with that seed; the result equals simulating every step (Options.RunEveryStep) byte for
// byte, on class fidelity with noise and on whole steps without; with noise on whole steps every
// step is simulated (it must be: compute moves when collectives start).
func TestNetworkSeedReuse(t *testing.T) {
	base := fmt.Sprintf(dense, "400Gbps", "gpudirect", "ib-ndr, roce-default")
	for _, c := range []struct{ name, fidelity, noise string }{
		{"classes+noise", "classes", "noise: {cv: 0.05, network_seeds: 2}"},
		{"full", "full", "noise: {dist: none, network_seeds: 2}"},
		{"full+noise", "full", "noise: {cv: 0.05, network_seeds: 2}"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := strings.Replace(base, "steps: 1", "steps: 5\nfidelity: "+c.fidelity+"\n"+c.noise, 1)
			_, out, runs := reuseVsEvery(t, src, "")
			if !bytes.Equal(out[0], out[1]) {
				t.Errorf("reused network runs differ from running every step")
			}
			want := 2 * 2 // variants x network seeds (x classes on class fidelity)
			if c.name == "full+noise" {
				want = 2 * 5
			}
			if c.fidelity == "classes" {
				// One leaf: no hop has a choice, and no class draws a random number, so the two
				// seeds' runs are one (seedreuse_test.go): variants x classes.
				want = 2 * runs[1] / (2 * 5)
			}
			if runs[0] != want {
				t.Errorf("%d simulations, want %d (every step: %d)", runs[0], want, runs[1])
			}
		})
	}
}

// TestNoiseErrors: bad noise keys name the field and what is valid.
func TestNoiseErrors(t *testing.T) {
	base := fmt.Sprintf(dense, "400Gbps", "gpudirect", "ib-ndr")
	for _, c := range []struct{ noise, want string }{
		{"{dist: weibull}", `noise.dist: "weibull" unknown (valid: lognormal, normal, none)`},
		{"{cv: -0.1}", "noise.cv: -0.1: want a coefficient of variation in 0..1"},
		{"{dist: normal, cv: 0.5}", "negative too often"},
		{"{slow: {prob: 2}}", "noise.slow.prob: 2: want a probability"},
		{"{slow: {prob: 0.1, slowdown: 0.5}}", "noise.slow.slowdown: 0.5: want a factor of at least 1"},
		{"{host: {prob: 0.1}}", "noise.host: prob 0.1 with no delay"},
		{"{network_seeds: 3}", "noise.network_seeds: 3: want 1..steps (1)"},
		{"{cvv: 1}", "cvv"},
	} {
		src := base + "noise: " + c.noise + "\n"
		_, err := Parse([]byte(src), "test.yaml", "")
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "test.yaml:") {
			t.Errorf("noise %s: error %v, want %q at test.yaml:line", c.noise, err, c.want)
		}
	}
	if _, err := Parse([]byte(strings.Replace(base, "steps: 1", "steps: 1001", 1)), "test.yaml", ""); err == nil || !strings.Contains(err.Error(), "1..1000") {
		t.Errorf("steps 1001: %v", err)
	}
}

// BenchmarkJitter runs examples/compare-jitter-1024.yaml (200 steps, two variants, flow) with 1
// and 8 network seeds, and the same job on 512 GPUs (DP 64) for the growth with the cluster:
// go test ./compare -run '^$' -bench Jitter -benchtime 1x; docs/jitter.md quotes the figures.
func BenchmarkJitter(b *testing.B) {
	data, err := examples.Read("compare-jitter-1024.yaml")
	if err != nil {
		b.Fatal(err)
	}
	half := strings.NewReplacer("servers: 128", "servers: 64", "dp: 128", "dp: 64", "global_batch: 1024", "global_batch: 512").Replace(string(data))
	for _, c := range []struct {
		name  string
		src   string
		seeds int
	}{
		{"1024GPUs/seeds1", string(data), 1},
		{"1024GPUs/seeds8", string(data), 8},
		{"512GPUs/seeds1", half, 1},
	} {
		b.Run(c.name, func(b *testing.B) {
			s, err := Parse([]byte(c.src), "jitter.yaml", "../examples")
			if err != nil {
				b.Fatal(err)
			}
			s.Noise.NetworkSeeds = c.seeds
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Run(context.Background(), s, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestStepOffsets: two groups of one class, three instances each, after compute that differs
// per rank. Group 0 reaches its instances at 10, 115 and 120 ps, group 1 at 30, 85 and 90 (the
// longest path through the ops below, by hand); the offsets are the middle instances' (115 and
// 85) less the earlier, 30 and 0.
func TestStepOffsets(t *testing.T) {
	op := func(kind training.OpKind, rank int, deps ...int) training.Op {
		return training.Op{Kind: kind, Ranks: []int{rank}, Deps: deps}
	}
	c, a := training.Compute, training.AllToAll
	p := &training.Plan{Ops: []training.Op{
		op(c, 0), op(c, 1), // 0, 1
		op(a, 0, 0), op(a, 1, 1), // 2, 3: the first instances
		op(c, 0, 2), op(c, 1, 3), // 4, 5
		op(a, 0, 4), op(a, 1, 5), // 6, 7
		op(a, 0, 6), op(a, 1, 7), // 8, 9
	}}
	dur := []units.Time{10, 30, 5, 5, 100, 50, 5, 5, 5, 5}
	cls := []*class{{Groups: [][]int{{0}, {1}}}}
	opClass := []int{-1, -1, 0, 0, -1, -1, 0, 0, 0, 0}
	opGroup := []int{-1, -1, 0, 1, -1, -1, 0, 1, 0, 1}
	got := stepOffsets(p, cls, opClass, opGroup, dur)
	if len(got) != 1 || len(got[0]) != 2 || got[0][0] != 30 || got[0][1] != 0 {
		t.Errorf("offsets %v, want [[30 0]]", got)
	}
}

// TestPerStepReuse: with network_per_step, a step's class run whose inputs repeat an earlier
// run's (runMemo) is taken from it, and the result is the same bytes as simulating every step's
// runs (Options.RunEveryStep). On the congested 24-GPU MoE of examples/compare-moe-3to1.yaml,
// 4 steps, InfiniBand and vendor-default RoCEv2:
//   - without compute noise every step's groups start as planned: InfiniBand, which draws
//     nothing (drawFree), has the same inputs in every step, so its per-step runs are the
//     first pass's (no run of its own); RoCEv2 draws its ECN marks per step, so each of its
//     steps is simulated;
//   - with compute noise (cv 0.02) the offsets differ from step to step: nothing is reused
//     but the classes of one group (their offset is always 0), and the bytes still agree.
func TestPerStepReuse(t *testing.T) {
	data, err := examples.Read("compare-moe-3to1.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src := strings.NewReplacer("steps: 2", "steps: 4\nfidelity: classes",
		"variants: [ib-ndr, roce-default, roce-tuned, roce-pfc-only]", "variants: [ib-ndr, roce-default]").Replace(string(data))
	for _, c := range []struct{ name, noise string }{
		{"no compute noise", "noise: {dist: none, network_seeds: 1, network_per_step: true}"},
		{"compute noise", "noise: {cv: 0.02, network_seeds: 1, network_per_step: true}"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, out, sims := reuseVsEvery(t, src+c.noise+"\n", "../examples")
			if !bytes.Equal(out[0], out[1]) {
				t.Errorf("reused per-step runs differ from running every step")
				for vi := range res[0].Variants {
					for k := range res[0].Variants[vi].Steps {
						a, b := res[0].Variants[vi].Steps[k], res[1].Variants[vi].Steps[k]
						t.Logf("%s step %d: %v / %v s", res[0].Variants[vi].Variant.Name, k, a.StepTime, b.StepTime)
					}
				}
			}
			// Plain: per variant, the first pass's classes plus 4 steps of them.
			classes := sims[1] / (2 * 5)
			if sims[1] != 2*5*classes || classes == 0 {
				t.Fatalf("every step: %d simulations, not 2 variants x 5 x classes", sims[1])
			}
			if c.name == "compute noise" {
				// Only the u classes of one group repeat their inputs: on InfiniBand in all 4 steps,
				// on RoCEv2 in step 1 (its draw seed is the first pass's): 5 u runs fewer.
				if d := sims[1] - sims[0]; d%5 != 0 || d > 5*classes {
					t.Errorf("%d simulations with compute noise, want 5 u fewer than every step's %d", sims[0], sims[1])
				}
				t.Logf("compute noise: %d of %d simulations (%d classes)", sims[0], sims[1], classes)
				return
			}
			// Without compute noise a class's offsets are the same in every step. InfiniBand draws
			// nothing, so its 4 steps repeat one input per class: the first pass's where every group
			// starts at 0, else step 1's run; at most 2 classes simulations. RoCEv2 draws its marks
			// per step: steps 2-4 are simulated (step 1 shares the first pass's draw seed, and is
			// reused for a class whose groups all start at 0): 4..5 classes.
			count := func(variant string) int {
				s, err := Parse([]byte(src+c.noise+"\n"), "test.yaml", "../examples")
				if err != nil {
					t.Fatal(err)
				}
				var n int
				if _, err := Run(context.Background(), s, Options{Backend: backend.Flow, Variants: []string{variant},
					Progress: func(done, total int) { n = total }}); err != nil {
					t.Fatal(err)
				}
				return n
			}
			ib, roce := count("ib-ndr"), count("roce-default")
			if ib < classes || ib > 2*classes {
				t.Errorf("InfiniBand: %d simulations, want %d..%d (every step: %d)", ib, classes, 2*classes, 5*classes)
			}
			if roce < 4*classes || roce > 5*classes {
				t.Errorf("RoCEv2: %d simulations, want %d..%d (every step: %d)", roce, 4*classes, 5*classes, 5*classes)
			}
			if sims[0] != ib+roce {
				t.Errorf("%d simulations, want InfiniBand's %d + RoCEv2's %d", sims[0], ib, roce)
			}
			t.Logf("no compute noise: InfiniBand %d, RoCEv2 %d simulations; every step %d each", ib, roce, 5*classes)
		})
	}
}

// TestPerStepPacketDraws: the packet engine draws its ECN marks and losses from a draw seed of
// its own (fabric.Config.DrawSeed), which compare sets to the step's (Scenario.drawSeed) as it
// does the flow backend's, while the routing seed keeps the connections' ECMP paths
// (fabric's TestDrawSeedRoutingUnchanged). Checked on the congested 24-GPU MoE on RoCEv2
// (DCQCN, which draws), 3 steps without compute noise and one routing seed, so that only the
// draws can tell the steps apart:
//   - reusing runs gives the same bytes as running every step (runMemo keys on the draw seed);
//   - every step's classes are simulated: a per-step run repeats a first-pass run only where it
//     has that run's draw seed and offsets, which step 0's can and steps 1 and 2's cannot, so
//     the reuse simulates at least the first pass plus 2 steps of classes (before DrawSeed it
//     reused every step's runs: at most the first pass plus one step);
//   - the steps' exposed communication is not all one figure (before, all three steps were
//     step 0's to the picosecond).
func TestPerStepPacketDraws(t *testing.T) {
	data, err := examples.Read("compare-moe-3to1.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src := strings.NewReplacer("steps: 2", "steps: 3\nfidelity: classes",
		"variants: [ib-ndr, roce-default, roce-tuned, roce-pfc-only]", "variants: [roce-default]").Replace(string(data)) +
		"noise: {dist: none, network_seeds: 1, network_per_step: true}\n"
	res, out, sims := reuseVsEveryOn(t, src, "../examples", backend.Packet)
	if !bytes.Equal(out[0], out[1]) {
		t.Errorf("packet: reused per-step runs differ from running every step")
		for k := range res[0].Variants[0].Steps {
			t.Logf("step %d: %v / %v s", k, res[0].Variants[0].Steps[k].StepTime, res[1].Variants[0].Steps[k].StepTime)
		}
	}
	classes := sims[1] / 4 // every step: the first pass and 3 steps of the classes
	if sims[1] != 4*classes || classes == 0 {
		t.Fatalf("every step: %d simulations, not 4 x classes", sims[1])
	}
	if sims[0] < 3*classes {
		t.Errorf("packet, reused: %d simulations, want at least %d (first pass + steps 1 and 2 of %d classes; every step %d)", sims[0], 3*classes, classes, sims[1])
	}
	steps := res[0].Variants[0].Steps
	ex := make([]float64, len(steps))
	for k, st := range steps {
		ex[k] = st.ExposedComm
	}
	if slices.Min(ex) == slices.Max(ex) {
		t.Errorf("packet: exposed %v s in every step: the steps drew the same marks", ex)
	}
	t.Logf("packet: %d of %d simulations (%d classes); exposed %v s", sims[0], sims[1], classes, ex)
}

// reuseVsEvery runs the compare scenario src on the flow backend twice, with the reuse of runs
// (i = 0) and with Options.RunEveryStep (i = 1), and returns each result, its variants as JSON
// with the host times zeroed (the bytes the reuse tests compare) and its simulation count.
func reuseVsEvery(t *testing.T, src, dir string) (res [2]*Result, out [2][]byte, sims [2]int) {
	t.Helper()
	return reuseVsEveryOn(t, src, dir, backend.Flow)
}

// reuseVsEveryOn is reuseVsEvery on backend name.
func reuseVsEveryOn(t *testing.T, src, dir string, name backend.Name) (res [2]*Result, out [2][]byte, sims [2]int) {
	t.Helper()
	for i, every := range []bool{false, true} {
		s, err := Parse([]byte(src), "test.yaml", dir)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Run(context.Background(), s, Options{Backend: name, RunEveryStep: every,
			Progress: func(done, total int) { sims[i] = total }})
		if err != nil {
			t.Fatal(err)
		}
		checkIdentity(t, r)
		for _, v := range r.Variants {
			v.SimWall = 0
		}
		res[i] = r
		out[i], _ = json.Marshal(r.Variants)
	}
	return res, out, sims
}
