package compare

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/analytic"
	"github.com/fabricsim/fabricsim/backend"
	"github.com/fabricsim/fabricsim/cost"
	"github.com/fabricsim/fabricsim/examples"
	"github.com/fabricsim/fabricsim/training"
)

// dense is a small dense model on 8 servers x 2 GPUs: TP 2 on NVLink, DP 8 on rail 0 and 1.
// Its step is dominated by the DP gradient reduce-scatter and parameter all-gather (ZeRO-1),
// so network knobs show clearly.
const dense = `name: dense
steps: 1
cluster: {servers: 8, gpus_per_server: 2, link_rate: %s, radix: 64, data_path: %s}
workload:
  kind: training
  model: {base: llama3-8b, layers: 2, hidden: 1024, ffn: 4096, heads: 8, kv_heads: 8, vocab: 16000}
  gpu: h100
  tp: 2
  dp: 8
  zero: 1
  global_batch: 8
  seq_len: 2048
variants: [%s]
`

// moe is a small mixture of experts on 12 servers x 2 GPUs with expert parallelism across all
// 12 servers: every MoE layer's all-to-all crosses leaf switches (radix 8: 4 servers per leaf
// at 1:1, 6 at 3:1), so oversubscription and congestion control matter.
const moe = `name: moe
steps: 1
cluster: {servers: 12, gpus_per_server: 2, link_rate: 400Gbps, radix: 8, oversubscription: %g}
workload:
  kind: training
  model: {base: mixtral-8x7b, layers: 2, hidden: 1024, ffn: 2048, heads: 8, kv_heads: 8, vocab: 16000, experts: 12, top_k: 2}
  gpu: h100
  tp: 2
  dp: 12
  ep: 12
  zero: 1
  global_batch: 12
  seq_len: 2048
variants: [%s]
`

func run(t *testing.T, src string, opt Options) *Result {
	t.Helper()
	s, err := Parse([]byte(src), "test.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(context.Background(), s, opt)
	if err != nil {
		t.Fatal(err)
	}
	checkIdentity(t, r)
	return r
}

// checkIdentity: step time = compute + exposed communication within 1 % (it is exact by
// construction: the longest path has no idle gaps).
func checkIdentity(t *testing.T, r *Result) {
	t.Helper()
	for _, v := range r.Variants {
		for k, st := range v.Steps {
			if d := math.Abs(st.StepTime - st.Compute - st.ExposedComm); d > 0.01*st.StepTime {
				t.Errorf("%s step %d: step %g != compute %g + exposed %g", v.Variant.Name, k, st.StepTime, st.Compute, st.ExposedComm)
			}
			var sum float64
			for _, x := range st.Exposed {
				sum += x
			}
			if math.Abs(sum-st.ExposedComm) > 1e-9 {
				t.Errorf("%s: exposed by dimension sums to %g, total %g", v.Variant.Name, sum, st.ExposedComm)
			}
		}
	}
}

func variant(t *testing.T, r *Result, name string) *VariantResult {
	t.Helper()
	for _, v := range r.Variants {
		if v.Variant.Name == name {
			return v
		}
	}
	t.Fatalf("no variant %s", name)
	return nil
}

// TestDense64Scenario: examples/compare-dense-64.yaml, the default of compare before the
// 1,024-GPU one, on the analytic backend.
func TestDense64Scenario(t *testing.T) {
	data, err := examples.Read("compare-dense-64.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse(data, "compare-dense-64.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	if got := len(s.Variants); got != 4 {
		t.Errorf("dense-64 has %d variants, want 4", got)
	}
	if s.Workload.GPUs != 64 || s.Cluster.LinkRate.Gbps() != 400 {
		t.Errorf("dense-64: %d GPUs at %v", s.Workload.GPUs, s.Cluster.LinkRate)
	}
	// The analytic backend runs it in well under a second: check the table and the identity.
	r, err := Run(context.Background(), s, Options{Backend: "analytic", Variants: []string{"ib-ndr", "roce-default"}})
	if err != nil {
		t.Fatal(err)
	}
	checkIdentity(t, r)
	var b bytes.Buffer
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ib-ndr", "roce-default", "step", "exposed", "network $", "dearer network", "cheaper network"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	// Llama-3-8B, 64 GPUs, TP 8: compute per GPU = step FLOPs / 64 / (989 TFLOPS x 0.5) plus
	// selective recomputation and the optimizer; the critical path holds all of one GPU's
	// compute (every GPU computes the same).
	for _, v := range r.Variants {
		if math.Abs(v.Compute-r.Plan.ComputeSeconds)/r.Plan.ComputeSeconds > 0.01 {
			t.Errorf("%s: compute on the critical path %g s, busiest GPU %g s", v.Variant.Name, v.Compute, r.Plan.ComputeSeconds)
		}
	}
}

// TestLinkRate: halving the link rate doubles the time of the bandwidth-bound DP collectives
// (25 MiB reduce-scatter/all-gather over 8 ranks: 7/8 x 25 MiB per rank = 459 us at 400G of
// goodput, 918 us at 200G, plus a few microseconds of latency that do not scale).
func TestLinkRate(t *testing.T) {
	r4 := run(t, fmt.Sprintf(dense, "400Gbps", "gpudirect", "roce-default"), Options{})
	r2 := run(t, fmt.Sprintf(dense, "200Gbps", "gpudirect", "roce-default"), Options{})
	a, b := r4.Variants[0], r2.Variants[0]
	ratio := b.CollP50 / a.CollP50
	t.Logf("p50 %s -> %s (x%.3f), step %s -> %s", seconds(a.CollP50), seconds(b.CollP50), ratio, seconds(a.StepTime), seconds(b.StepTime))
	if ratio < 1.9 || ratio > 2.02 {
		t.Errorf("DP collective p50 x%.3f at half the link rate, want 1.9..2.02", ratio)
	}
	if b.StepTime <= a.StepTime || b.Exposed["dp network"] < 1.8*a.Exposed["dp network"] {
		t.Errorf("step %g -> %g, exposed dp %g -> %g: want the network part to about double", a.StepTime, b.StepTime, a.Exposed["dp network"], b.Exposed["dp network"])
	}
	if a.Compute != b.Compute {
		t.Errorf("compute changed with the link rate: %g vs %g", a.Compute, b.Compute)
	}
}

// TestDataPath: GPUDirect moves 0.92 x 52 GB/s = 47.8 GB/s per GPU over PCIe peer-to-peer
// (package gpu's H100 server; a little under the 400G NIC's payload rate, as the 46-48 GB/s
// measured per NDR NIC, [EST]); host-staged is bound by the proxy's CPU copy, 20 GB/s
// shared by a GPU's sent and received bytes: 10 GB/s each way. DP collectives take
// 47.8/10 = 4.8x as long.
func TestDataPath(t *testing.T) {
	g := run(t, fmt.Sprintf(dense, "400Gbps", "gpudirect", "roce-default"), Options{})
	h := run(t, fmt.Sprintf(dense, "400Gbps", "host-staged", "roce-default"), Options{})
	a, b := g.Variants[0], h.Variants[0]
	ratio := b.CollP50 / a.CollP50
	t.Logf("p50 %s -> %s (x%.2f), step %s -> %s", seconds(a.CollP50), seconds(b.CollP50), ratio, seconds(a.StepTime), seconds(b.StepTime))
	if ratio < 4.4 || ratio > 5.1 {
		t.Errorf("host-staged DP collective x%.2f, want about 47.8/10 = 4.8", ratio)
	}
	if b.StepTime < 2*a.StepTime {
		t.Errorf("host-staged step %g vs gpudirect %g: want at least 2x on this network-bound step", b.StepTime, a.StepTime)
	}
	// The bill of materials does not change with the data path.
	if a.NetworkUSD != b.NetworkUSD || a.NetworkUSD == 0 {
		t.Errorf("network cost %g vs %g", a.NetworkUSD, b.NetworkUSD)
	}
}

// TestOversubscription: at 3:1 a leaf holds 6 servers and 2 uplinks per rail; each
// all-to-all sends 6 x 8 MiB x 6/12 = 24 MiB from those 6 NICs to the other leaf over 800 Gb/s
// (~0.5 ms), where at 1:1 (4 servers, 4 uplinks per leaf) every NIC sends its 7.7 MB at line
// rate (~0.16 ms). Run with PFC only (no DCQCN reaction on top; TestDCQCNTuning covers that),
// the expert all-to-all's exposed time grows by the bottleneck's ratio, about 1.6-1.8x.
func TestOversubscription(t *testing.T) {
	one := run(t, fmt.Sprintf(moe, 1.0, "roce-pfc-only"), Options{})
	three := run(t, fmt.Sprintf(moe, 3.0, "roce-pfc-only"), Options{})
	a, b := one.Variants[0], three.Variants[0]
	ratio := b.Exposed["ep network"] / a.Exposed["ep network"]
	t.Logf("ep exposed %s -> %s (x%.2f), step %s -> %s, network %s -> %s", seconds(a.Exposed["ep network"]), seconds(b.Exposed["ep network"]), ratio,
		seconds(a.StepTime), seconds(b.StepTime), money(a.NetworkUSD), money(b.NetworkUSD))
	if ratio < 1.4 || ratio > 2.2 || b.StepTime <= a.StepTime {
		t.Errorf("3:1: ep exposed x%.2f (want 1.4..2.2), step %g vs %g at 1:1", ratio, b.StepTime, a.StepTime)
	}
	if b.NetworkUSD >= a.NetworkUSD {
		t.Errorf("3:1 network %g not cheaper than 1:1 %g", b.NetworkUSD, a.NetworkUSD)
	}
}

// TestBOM1024: the compare cluster's bill of materials for 128 servers x 8 GPUs on 64-port
// switches has the closed-form counts of cost.TestBOMRail1024: D = 32 NIC ports per leaf, 4
// leaves per rail, 32 leaves, 32 uplinks each, 16 spines; 1,024 NICs; 1,024 host links and
// 1,024 leaf-spine links.
func TestBOM1024(t *testing.T) {
	src := strings.Replace(fmt.Sprintf(dense, "400Gbps", "gpudirect", "ib-ndr, roce-default"), "servers: 8, gpus_per_server: 2", "servers: 128, gpus_per_server: 8", 1)
	src = strings.Replace(src, "tp: 2\n  dp: 8", "tp: 8\n  dp: 128", 1)
	src = strings.Replace(src, "global_batch: 8", "global_batch: 128", 1)
	s, err := Parse([]byte(src), "bom.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	g, err := s.Topology()
	if err != nil {
		t.Fatal(err)
	}
	for _, fab := range []string{cost.InfiniBand, cost.Ethernet} {
		b, err := cost.BOM(g, fab, cost.Default(), cost.Options{GPUs: 1024, RailOptimized: true})
		if err != nil {
			t.Fatal(err)
		}
		c := b.Counts
		if c.Switches != 48 || c.SwitchesTier[1] != 32 || c.SwitchesTier[2] != 16 || c.NICs != 1024 || c.Links != 2048 {
			t.Errorf("%s: %d switches (%v), %d NICs, %d links; want 48 (32 leaves, 16 spines), 1024, 2048", fab, c.Switches, c.SwitchesTier, c.NICs, c.Links)
		}
	}
}

// TestBadWorkloads: each conflict is rejected at its line with the numbers involved.
func TestBadWorkloads(t *testing.T) {
	base := fmt.Sprintf(dense, "400Gbps", "gpudirect", "roce-default")
	for _, c := range []struct {
		name, from, to string
		want           []string
	}{
		{"tp does not divide server", "tp: 2\n  dp: 8", "tp: 3\n  dp: 8", []string{"test.yaml:8", "tp 3", "gpus_per_server 2"}},
		{"pp above layers", "tp: 2\n  dp: 8", "tp: 2\n  pp: 4\n  dp: 4", []string{"test.yaml:", "pp", "4", "2"}},
		{"batch not divisible", "global_batch: 8", "global_batch: 12", []string{"test.yaml:11", "global_batch 12", "1 x 8 = 8"}},
		{"does not fit", "model: {base: llama3-8b, layers: 2, hidden: 1024, ffn: 4096, heads: 8, kv_heads: 8, vocab: 16000}", "model: llama3-70b", []string{"test.yaml:", "does not fit", "80"}},
		{"gpus vs cluster", "dp: 8", "dp: 8\n  gpus: 32", []string{"test.yaml:", "32", "16"}},
		{"unknown key", "steps: 1", "steps: 1\nfabrik: {}", []string{"test.yaml:3", "fabrik", "unknown key"}},
		{"bad variant field", "variants: [roce-default]", "variants:\n  - {name: x, base: roce-default, fabric: {dcqcn_rate_ai: fast}}", []string{"test.yaml:14:59: variants[x].fabric.dcqcn_rate_ai", "fast"}},
		{"unknown variant", "variants: [roce-default]", "variants: [roce-fast]", []string{"test.yaml:13:12", "roce-fast", "built-in"}},
		{"variants not a list", "variants: [roce-default]", "variants: {a: 1}", []string{"test.yaml:13:11: variants: want a list of variants"}},
		{"variant without a name", "variants: [roce-default]", "variants: [{label: x}]", []string{"test.yaml:13:12: variants[0].name: missing"}},
		{"unknown base", "variants: [roce-default]", "variants: [{name: x, base: nope}]", []string{"test.yaml:13:12: variants[0].base:", `"nope"`, "known: ib-ndr"}},
		{"unknown variant key", "variants: [roce-default]", "variants: [{name: x, fabrik: {}}]", []string{"test.yaml:13:22: variants[0].fabrik: unknown key (valid keys here: base, fabric, from_tune, label, name)"}},
		{"workload key", "zero: 1", "zero: 1\n  zer0: 1", []string{"test.yaml:11:3: workload.zer0: unknown key"}},
	} {
		src := strings.Replace(base, c.from, c.to, 1)
		if src == base {
			t.Fatalf("%s: replacement did not apply", c.name)
		}
		_, err := Parse([]byte(src), "test.yaml", "")
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", c.name, err, w)
			}
		}
	}
}

// TestCompileStep: the full-fidelity graph of a step keeps every op's dependencies, and played
// on the analytic backend with NVLink-free uniform links it gives the same step time as the
// class-by-class evaluation on the analytic backend within 5 % (the two differ only in how the
// concurrent collectives of different classes share NICs).
func TestCompileStep(t *testing.T) {
	s, err := Parse([]byte(fmt.Sprintf(dense, "400Gbps", "gpudirect", "roce-default")), "test.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	cfg := *s.Workload
	p, err := training.Build(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	g, done, err := s.CompileStep(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(done) != len(p.Ops) {
		t.Fatalf("%d done nodes for %d ops", len(done), len(p.Ops))
	}
	sim, err := s.simTopology(s.simRate(s.Variants[0].Fabric))
	if err != nil {
		t.Fatal(err)
	}
	full, err := analytic.Run(g, analyticNet(sim, s.Variants[0].Fabric))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(context.Background(), s, Options{Backend: "analytic", Fidelity: FidelityClasses})
	if err != nil {
		t.Fatal(err)
	}
	fs, cs := full.Makespan.Seconds(), r.Variants[0].StepTime
	t.Logf("%d messages; full graph %s, class by class %s", len(g.Msgs), seconds(fs), seconds(cs))
	if math.Abs(fs-cs)/cs > 0.05 {
		t.Errorf("full graph %g s vs class-by-class %g s", fs, cs)
	}
}

func TestMain(m *testing.M) {
	os.Exit(m.Run())
}

// TestDCQCNTuning: at 3:1 the all-to-all's cross-leaf flows queue at the leaf uplinks past the
// 150 KB ECN threshold. ConnectX defaults cut a flow's rate by up to half per CNP (every 4 us)
// and recover on a 300 us timer, longer than the all-to-all itself, so the uplinks go partly
// idle; the tuned values cut by at most 10 % and recover within 50 us, keeping them busy. The
// all-to-all approaches its bottleneck bound (24 MiB over 2 x 400G, ~0.5 ms per leaf pair of
// directions, ~0.3 ms at the p50) only when tuned.
func TestDCQCNTuning(t *testing.T) {
	r := run(t, fmt.Sprintf(moe, 3.0, "roce-default, roce-tuned"), Options{})
	d, tu := variant(t, r, "roce-default"), variant(t, r, "roce-tuned")
	t.Logf("a2a p50 %s -> %s, step %s -> %s; rate decreases %g -> %g", seconds(d.CollP50), seconds(tu.CollP50),
		seconds(d.StepTime), seconds(tu.StepTime), d.Counters["dcqcn_rate_decreases"], tu.Counters["dcqcn_rate_decreases"])
	if d.ECNMarks == 0 || tu.ECNMarks == 0 {
		t.Fatalf("no ECN marks (%g, %g): the test no longer congests", d.ECNMarks, tu.ECNMarks)
	}
	if tu.StepTime > 0.9*d.StepTime {
		t.Errorf("tuned step %g vs default %g: want at least 10 %% faster", tu.StepTime, d.StepTime)
	}
	if !strings.Contains(tu.Verdict, "faster than roce-default") {
		t.Errorf("verdict %q", tu.Verdict)
	}
}

// TestExamples: every compare-*.yaml example parses (the run examples are the scenario
// package's).
func TestExamples(t *testing.T) {
	n := 0
	for _, name := range examples.Names() {
		if !strings.HasPrefix(name, "compare-") {
			continue
		}
		data, _ := examples.Read(name)
		if _, err := Parse(data, name, "../examples"); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		n++
	}
	if n < 3 {
		t.Errorf("%d compare examples, want compare-default.yaml, compare-dense-64.yaml and compare-moe-3to1.yaml", n)
	}
}

// TestShapes: other parallelism layouts compile and run: pipeline stages across servers
// (send-recv on the network), TP 1 with DP groups spanning rails (hierarchical rings, NVLink
// hops as delay nodes), ZeRO-0 (all-reduce) and ZeRO-3 (parameter gathers).
func TestShapes(t *testing.T) {
	base := fmt.Sprintf(dense, "400Gbps", "gpudirect", "ib-ndr, roce-default")
	for _, c := range []struct{ name, from, to, backend string }{
		{"pp2", "tp: 2\n  dp: 8", "tp: 2\n  pp: 2\n  dp: 4", "packet"},
		{"tp1", "tp: 2\n  dp: 8", "tp: 1\n  dp: 16", "analytic"},
		{"zero0", "zero: 1", "zero: 0", "analytic"},
		{"zero3", "zero: 1", "zero: 3", "analytic"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := strings.Replace(base, c.from, c.to, 1)
			if c.name == "tp1" {
				src = strings.Replace(src, "global_batch: 8", "global_batch: 16", 1)
			}
			r := run(t, src, Options{Backend: backend.Name(c.backend)})
			for _, v := range r.Variants {
				if v.StepTime <= v.Compute || v.CollP50 <= 0 {
					t.Errorf("%s: step %g, compute %g, p50 %g", v.Variant.Name, v.StepTime, v.Compute, v.CollP50)
				}
			}
			if c.name == "pp2" && !strings.Contains(fmt.Sprint(r.Fidelity.Classes), "send-recv") {
				t.Errorf("no send-recv class: %v", r.Fidelity.Classes)
			}
		})
	}
}

// TestDeterministic: the same scenario and seed give the same numbers, whatever the order the
// parallel workers finish in.
func TestDeterministic(t *testing.T) {
	src := fmt.Sprintf(moe, 3.0, "roce-default, ib-ndr")
	a := run(t, src, Options{Workers: 1})
	b := run(t, src, Options{Workers: 3})
	for i := range a.Variants {
		x, y := a.Variants[i], b.Variants[i]
		if x.StepTime != y.StepTime || x.CollP99 != y.CollP99 || x.Events != y.Events || fmt.Sprint(x.Counters) != fmt.Sprint(y.Counters) {
			t.Errorf("%s: step %g vs %g, p99 %g vs %g, events %d vs %d", x.Variant.Name, x.StepTime, y.StepTime, x.CollP99, y.CollP99, x.Events, y.Events)
		}
	}
}

// FuzzParse: no input panics the loader, and every error names the file first.
func FuzzParse(f *testing.F) {
	for _, name := range examples.Names() {
		if strings.HasPrefix(name, "compare-") {
			data, _ := examples.Read(name)
			f.Add(data)
		}
	}
	f.Add([]byte(fmt.Sprintf(dense, "400Gbps", "gpudirect", "roce-default")))
	f.Add([]byte("cluster: {servers: 1}\nworkload: {model: llama3-8b, tp: 8}\nvariants: [{name: a, base: ib-ndr, fabric: {mtu: 2048}}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := Parse(data, "fuzz.yaml", "")
		if err != nil && !strings.HasPrefix(err.Error(), "fuzz.yaml") {
			t.Fatalf("error does not start with the file name: %v", err)
		}
	})
}

// TestClassesVsFullStep: on configurations small enough to simulate whole steps packet by
// packet, class-by-class runs reproduce the full run exactly where different classes do not
// overlap (the dense model: the gradient buckets of one group run one at a time, the TP
// collectives stay on NVLink), and are optimistic where they do: in the MoE step the backward
// all-to-all and the gradient reduce-scatter both wait only for the backward compute and share
// the NICs, which class runs do not see (15-17 % here). Fidelity auto therefore runs such
// steps whole.
func TestClassesVsFullStep(t *testing.T) {
	for _, c := range []struct {
		name, src string
		lo, hi    float64 // classes / full - 1
	}{
		{"dense", fmt.Sprintf(dense, "400Gbps", "gpudirect", "roce-default"), -0.005, 0.005},
		{"moe-3to1", fmt.Sprintf(moe, 3.0, "roce-tuned"), -0.30, -0.05},
		{"moe-1to1-ib", fmt.Sprintf(moe, 1.0, "ib-ndr"), -0.30, -0.05},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := Parse([]byte(c.src), "test.yaml", "")
			if err != nil {
				t.Fatal(err)
			}
			full, err := Run(context.Background(), s, Options{Fidelity: FidelityFull})
			if err != nil {
				t.Fatal(err)
			}
			checkIdentity(t, full)
			cls, err := Run(context.Background(), s, Options{Fidelity: FidelityClasses})
			if err != nil {
				t.Fatal(err)
			}
			auto, err := Run(context.Background(), s, Options{})
			if err != nil {
				t.Fatal(err)
			}
			fs, cs := full.Variants[0].StepTime, cls.Variants[0].StepTime
			d := cs/fs - 1
			t.Logf("%.3g packets: full step %s, class by class %s (%+.2f %%)", full.Fidelity.StepPackets, seconds(fs), seconds(cs), d*100)
			if d < c.lo || d > c.hi {
				t.Errorf("classes/full - 1 = %+.4f, want %+.3f..%+.3f", d, c.lo, c.hi)
			}
			if auto.Fidelity.Mode != FidelityFull || auto.Variants[0].StepTime != fs {
				t.Errorf("auto ran %s (step %g), want the full step %g", auto.Fidelity.Mode, auto.Variants[0].StepTime, fs)
			}
		})
	}
}
