package training

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/fabricsim/fabricsim/units"
)

// The example workload, as it sits in a scenario file (fields from line 3).
var baseFields = [][2]string{
	{"kind", "training"}, {"model", "llama3-8b"}, {"gpu", "h100"}, {"tp", "8"}, {"pp", "1"}, {"dp", "8"},
	{"zero", "1"}, {"micro_batch", "1"}, {"global_batch", "64"}, {"seq_len", "8192"},
}

// scenario renders baseFields with overrides (value "-" drops a field; new keys go last) and
// returns the text and each field's line.
func scenario(over map[string]string) (string, map[string]int) {
	var b strings.Builder
	b.WriteString("name: test\nworkload:\n")
	lines := map[string]int{}
	line := 3
	emit := func(k, v string) {
		fmt.Fprintf(&b, "  %s: %s\n", k, v)
		lines[k] = line
		line++
	}
	done := map[string]bool{}
	for _, f := range baseFields {
		v := f[1]
		if o, ok := over[f[0]]; ok {
			v = o
		}
		done[f[0]] = true
		if v != "-" {
			emit(f[0], v)
		}
	}
	var extra []string
	for k := range over {
		if !done[k] {
			extra = append(extra, k)
		}
	}
	// Deterministic order for the extra keys.
	for i := range extra {
		for j := i + 1; j < len(extra); j++ {
			if extra[j] < extra[i] {
				extra[i], extra[j] = extra[j], extra[i]
			}
		}
	}
	for _, k := range extra {
		emit(k, over[k])
	}
	return b.String(), lines
}

func load(t *testing.T, src string) (*Config, error) {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatal(err)
	}
	root := doc.Content[0]
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "workload" {
			return Load(root.Content[i+1], "scenario.yaml")
		}
	}
	t.Fatal("no workload section")
	return nil, nil
}

// at matches a message's position and field: "scenario.yaml:LINE:COLUMN: workload.FIELD: ".
func at(line int, field string) *regexp.Regexp {
	return regexp.MustCompile(fmt.Sprintf(`^scenario\.yaml:%d:\d+: workload\.%s: `, line, regexp.QuoteMeta(field)))
}

func TestLoadExample(t *testing.T) {
	src, _ := scenario(map[string]string{"bucket_size": "50MiB", "sequence_parallel": "true", "recompute": "full",
		"efficiency": "0.45", "layers_per_block": "2", "reserved_memory": "2GiB"})
	c, err := load(t, src)
	if err != nil {
		t.Fatal(err)
	}
	c.Defaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Model.Name != "llama3-8b" || c.TP != 8 || c.DP != 8 || c.GPUs != 64 || c.ZeRO != 1 || c.BucketSize != 50*units.MiB ||
		!c.SequenceParallel || c.Recompute != RecomputeFull || c.Efficiency != 0.45 || c.LayersPerBlock != 2 ||
		c.ReservedMemory != 2*units.GiB || c.GPUsPerServer != 8 || c.MicroBatches() != 8 {
		t.Fatalf("decoded %+v", c)
	}
	// dp derived from gpus; global batch and seq_len defaulted.
	src, _ = scenario(map[string]string{"dp": "-", "global_batch": "-", "seq_len": "-", "gpus": "64"})
	c, err = load(t, src)
	if err != nil {
		t.Fatal(err)
	}
	c.Defaults()
	if c.DP != 8 || c.GlobalBatch != 8 || c.SeqLen != 8192 || c.Validate() != nil {
		t.Fatalf("defaults: dp %d global %d seq %d: %v", c.DP, c.GlobalBatch, c.SeqLen, c.Validate())
	}
	// An inline shape on top of a preset, and a custom GPU.
	src, _ = scenario(map[string]string{"model": "{base: llama3-8b, layers: 16}",
		"gpu": "{base: h100, memory: 94GB, hbm_bandwidth: 3.9TB/s}"})
	c, err = load(t, src)
	if err != nil {
		t.Fatal(err)
	}
	c.Defaults()
	m, _ := c.ResolveModel()
	g, _ := c.ResolveGPU()
	if m.Layers != 16 || m.Hidden != 4096 || m.Name != "llama3-8b(custom)" || g.Memory != 94*units.GB || g.HBMBytesPerSec != 3.9e12 || g.PeakFLOPS != 989e12 {
		t.Fatalf("model %+v gpu %+v", m, g)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	// Parameter counts as papers write them.
	src, _ = scenario(map[string]string{"model": "{base: llama3-8b, params: 8.03e9, active_params: 8_030_000_000}"})
	if c, err = load(t, src); err != nil || c.Model.Shape.Params != 8_030_000_000 || c.Model.Shape.ActiveParams != 8_030_000_000 {
		t.Fatalf("params: %+v %v", c, err)
	}
}

func TestValidationErrors(t *testing.T) {
	for _, c := range []struct {
		name  string
		over  map[string]string
		field string // the field whose line the message must name
		want  string
	}{
		{"tp vs server", map[string]string{"gpus_per_server": "4"}, "tp",
			"tp 8 does not divide gpus_per_server 4: a tensor-parallel group must sit inside one server's NVLink domain"},
		{"tp x pp x dp", map[string]string{"gpus": "128"}, "gpus", "tp x pp x dp = 8 x 1 x 8 = 64 GPUs, but gpus is 128"},
		{"dp not derivable", map[string]string{"gpus": "60", "dp": "-"}, "gpus", "gpus 60 is not a multiple of tp x pp = 8 x 1 = 8, so dp cannot be derived"},
		{"pp > layers", map[string]string{"tp": "1", "pp": "64", "dp": "1"}, "pp", "pp 64 is more than the 32 layers of llama3-8b"},
		{"layers % pp", map[string]string{"pp": "3", "dp": "1", "global_batch": "3"}, "pp",
			"the 32 layers of llama3-8b do not split evenly into pp 3 stages (32 = 3 x 10 + 2); choose pp dividing 32"},
		{"global batch", map[string]string{"global_batch": "60"}, "global_batch", "global_batch 60 is not a multiple of micro_batch x dp = 1 x 8 = 8"},
		{"global batch micro", map[string]string{"micro_batch": "4", "global_batch": "48"}, "global_batch", "global_batch 48 is not a multiple of micro_batch x dp = 4 x 8 = 32"},
		{"heads", map[string]string{"model": "{base: llama3-8b, heads: 36, kv_heads: 12, head_dim: 128}"}, "tp",
			"the 36 attention heads of llama3-8b(custom) do not divide among tp 8 GPUs"},
		{"kv heads", map[string]string{"tp": "16", "dp": "4", "gpus_per_server": "16"}, "tp",
			"the 8 key/value heads of llama3-8b do not divide among tp 16 GPUs"},
		{"ep dense", map[string]string{"ep": "2"}, "ep", "ep 2 needs a mixture-of-experts model; llama3-8b is dense"},
		{"ep experts", map[string]string{"model": "mixtral-8x7b", "ep": "3", "dp": "6", "global_batch": "48"}, "ep", "ep 3 does not divide the 8 experts of mixtral-8x7b"},
		{"ep dp", map[string]string{"model": "mixtral-8x7b", "ep": "8", "dp": "4"}, "ep",
			"ep 8 does not divide dp 4: expert-parallel groups are carved out of the data-parallel ranks"},
		{"zero", map[string]string{"zero": "4"}, "zero", "stage 4 does not exist"},
		{"negative", map[string]string{"tp": "-2"}, "tp", "-2 must be at least 1"},
		{"recompute", map[string]string{"recompute": "some"}, "recompute", `"some" is not none, selective or full`},
		{"efficiency", map[string]string{"efficiency": "1.5"}, "efficiency", "1.5 must be in (0, 1]"},
		{"kind", map[string]string{"kind": "inference"}, "kind", `"inference" is not a training workload`},
		// The model does not fit: Llama-3-70B on one 8-GPU server, ZeRO-0: 70.55 B / 8 =
		// 8.82 B parameters per GPU, 2 + 2 + 12 B each = 141 GB; activations 8192 x 8192 x 13 B
		// per layer x 80 layers = 69.8 GB; fp32 logits 4 x 8192 x 128256 / 8 = 0.5 GB.
		{"memory", map[string]string{"model": "llama3-70b", "dp": "1", "zero": "0", "global_batch": "1"}, "model",
			"llama3-70b does not fit on h100 (80GB) at tp 8, pp 1, dp 1, zero 0, micro_batch 1, seq_len 8192, recompute selective: " +
				"stage 0 needs 211.4 GB per GPU, which exceeds 80.0 GB: weights 17.6 GB (2 B x 8.82B params) + gradients 17.6 GB (2 B) + " +
				"optimizer states 105.8 GB (12 B; ZeRO-0, Rajbhandari et al. 2020) + activations 69.8 GB (80 layers x 1 micro-batches in flight x 0.9 GB per layer, " +
				"sbh(10 + 24/t), Korthikanti et al. 2022) + logits 0.5 GB; try a higher zero stage"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src, lines := scenario(c.over)
			cfg, err := load(t, src)
			if err == nil {
				cfg.Defaults()
				err = cfg.Validate()
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error:\n%v\nwant it to contain:\n%s", err, c.want)
			}
			if prefix := at(lines[c.field], c.field); !prefix.MatchString(err.Error()) {
				t.Fatalf("error:\n%v\nwant the position %s", err, prefix)
			}
		})
	}
}

func TestMemoryFixes(t *testing.T) {
	// The 70B model that does not fit at ZeRO-0 on 8 GPUs fits on 64 with ZeRO-3 and sequence
	// parallelism: 16 B x 8.82 B / 8 = 17.6 GB of states, activations 34 s b h / t per layer.
	src, _ := scenario(map[string]string{"model": "llama3-70b", "zero": "3", "sequence_parallel": "true"})
	c, err := load(t, src)
	if err != nil {
		t.Fatal(err)
	}
	c.Defaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	// Without sequence parallelism the activations, 13 s b h per layer x 80 layers = 69.8 GB,
	// push it over.
	c.SequenceParallel = false
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "activations 69.8 GB (80 layers x 1 micro-batches in flight x 0.9 GB per layer, sbh(10 + 24/t)") {
		t.Fatalf("want an activation-bound memory error, got %v", err)
	}
}

func TestMemoryEstimate(t *testing.T) {
	// Llama-3-8B, TP 8, DP 8, ZeRO-1, micro batch 1, seq 8192, selective recompute:
	// 8,030,261,248 / 8 = 1,003,782,656 parameters per GPU.
	c := &Config{Model: ModelSpec{Name: "llama3-8b"}, TP: 8, DP: 8, ZeRO: 1, GlobalBatch: 64}
	c.Defaults()
	m, _ := c.ResolveModel()
	g, _ := c.ResolveGPU()
	mem := EstimateMemory(c, m, g)
	const perGPU = 1_003_782_656
	sbh := 8192.0 * 4096
	want := Memory{Weights: 2 * perGPU, Gradients: 2 * perGPU, Optimizer: 12 * perGPU / 8,
		Activations: units.Size(sbh * (10 + 24.0/8) * 32), Logits: 4 * 8192 * 128256 / 8}
	if mem.Weights != want.Weights || mem.Gradients != want.Gradients || mem.Optimizer != want.Optimizer ||
		mem.Activations != want.Activations || mem.Logits != want.Logits || mem.Capacity != 80*units.GB {
		t.Fatalf("memory %+v\nwant %+v", mem, want)
	}
	for _, z := range []struct {
		zero              int
		w, grad, opt      units.Size
		withGatherBuffers bool
	}{
		{0, 2 * perGPU, 2 * perGPU, 12 * perGPU, false},
		{2, 2 * perGPU, 2 * perGPU / 8, 12 * perGPU / 8, false},
		{3, 2 * perGPU / 8, 2 * perGPU / 8, 12 * perGPU / 8, true},
	} {
		c.ZeRO = z.zero
		mem := EstimateMemory(c, m, g)
		w := z.w
		if z.withGatherBuffers { // two gathered 4-layer blocks of 218,112,000 / 8 parameters, bf16
			w += 2 * 2 * 4 * 218_112_000 / 8
		}
		if mem.Weights != w || mem.Gradients != z.grad || mem.Optimizer != z.opt {
			t.Errorf("ZeRO-%d: %s %s %s, want %s %s %s", z.zero, mem.Weights, mem.Gradients, mem.Optimizer, w, z.grad, z.opt)
		}
	}
	// Korthikanti et al. 2022 Table 2 with t = 1: no recomputation keeps s b h (34 + 5 a s / h).
	per, f := activationsPerLayer(m, 1, 8192, 1, false, RecomputeNone)
	if want := sbh * (34 + 5*32*8192.0/4096); per != want || f != "sbh(10 + 24/t + 5as/(ht))" {
		t.Errorf("no recompute, t=1: %g (%s), want %g", per, f, want)
	}
	// 1F1B: stage 0 of 4 holds 4 micro-batches, the last stage 1.
	c = &Config{Model: ModelSpec{Name: "llama3-8b"}, TP: 2, PP: 4, DP: 8, GlobalBatch: 64}
	c.Defaults()
	if mem := EstimateMemory(c, m, g); mem.Stage != 0 || mem.InFlight != 4 || mem.Layers != 8 {
		t.Errorf("pp 4: worst stage %d in flight %d layers %d, want 0, 4, 8", mem.Stage, mem.InFlight, mem.Layers)
	}
}

func TestLoadErrors(t *testing.T) {
	for _, c := range []struct {
		name  string
		over  map[string]string
		field string
		want  string
	}{
		{"unknown field", map[string]string{"tpp": "8"}, "tpp", `unknown key (valid keys here: bucket_size, dp, efficiency, ep, global_batch, gpu, gpus`},
		{"not a number", map[string]string{"tp": "eight"}, "tp", `"eight" is not a whole number`},
		{"fraction", map[string]string{"tp": "2.5"}, "tp", `"2.5" is not a whole number`},
		{"unknown model", map[string]string{"model": "llama4"}, "model", `unknown model "llama4" (presets: gpt3-175b, llama2-7b, llama3-70b, llama3-8b, mixtral-8x7b; or give a shape mapping)`},
		{"unknown gpu", map[string]string{"gpu": "a100"}, "gpu", `unknown gpu "a100" (presets: b200, h100, h200`},
		{"model field", map[string]string{"model": "{base: llama3-8b, layerz: 3}"}, "model.layerz", `unknown key (valid keys here: active_params, base, bias`},
		{"model base", map[string]string{"model": "{base: llama9}"}, "model.base", `unknown model "llama9"`},
		{"gpu bandwidth", map[string]string{"gpu": "{base: h100, hbm_bandwidth: fast}"}, "gpu.hbm_bandwidth", `want bytes per second such as "3.35TB/s"`},
		{"bucket", map[string]string{"bucket_size": "25MiX"}, "bucket_size", `unknown unit "MiX"`},
		{"bool", map[string]string{"sequence_parallel": "maybe"}, "sequence_parallel", `"maybe" is not true or false`},
		{"list", map[string]string{"tp": "[8]"}, "tp", `want a single value, got a list`},
	} {
		t.Run(c.name, func(t *testing.T) {
			src, lines := scenario(c.over)
			_, err := load(t, src)
			top := strings.SplitN(c.field, ".", 2)[0]
			prefix := at(lines[top], c.field)
			if err == nil || !prefix.MatchString(err.Error()) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v\nwant %s and %q", err, prefix, c.want)
			}
		})
	}
}

func TestUnmarshalEmbedded(t *testing.T) {
	// A scenario struct can embed Config and decode it with yaml.v3 directly.
	var s struct {
		Name     string `yaml:"name"`
		Workload Config `yaml:"workload"`
	}
	src, _ := scenario(nil)
	if err := yaml.Unmarshal([]byte(src), &s); err != nil {
		t.Fatal(err)
	}
	if s.Workload.TP != 8 || s.Workload.Model.Name != "llama3-8b" {
		t.Fatalf("%+v", s.Workload)
	}
	src, lines := scenario(map[string]string{"global_batch": "60"})
	if err := yaml.Unmarshal([]byte(src), &s); err != nil {
		t.Fatal(err)
	}
	s.Workload.SetFile("s.yaml")
	s.Workload.Defaults()
	want := fmt.Sprintf("s.yaml:%d:17: workload.global_batch: global_batch 60", lines["global_batch"])
	if err := s.Workload.Validate(); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want %q", err, want)
	}
	src, lines = scenario(map[string]string{"tp": "x"})
	err := yaml.Unmarshal([]byte(src), &s)
	if want := fmt.Sprintf("line %d:7: workload.tp:", lines["tp"]); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want %q", err, want)
	}
}

func FuzzLoad(f *testing.F) {
	src, _ := scenario(nil)
	f.Add(src)
	f.Add("workload: {model: {base: mixtral-8x7b, experts: 4}, ep: 2, dp: 4}")
	f.Fuzz(func(t *testing.T, s string) {
		var doc yaml.Node
		if yaml.Unmarshal([]byte(s), &doc) != nil || len(doc.Content) == 0 {
			return
		}
		c, err := Load(doc.Content[0], "fuzz.yaml")
		if err != nil {
			return
		}
		c.Defaults()
		_ = c.Validate() // must not panic
	})
}
