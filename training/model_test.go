package training

import (
	"math"
	"strings"
	"testing"
)

func relErr(got, want float64) float64 { return math.Abs(got-want) / math.Abs(want) }

func TestPresetParameterCounts(t *testing.T) {
	// Published counts (model cards / papers) and the exact count the shape gives, which is
	// also the number of parameters in the released checkpoints.
	for _, c := range []struct {
		name           string
		published      float64 // total, as the source states it
		exact          int64   // derived from the shape
		activePub      float64
		exactActive    int64
		perLayer, embV int64 // one layer's parameters; vocab x hidden
	}{
		// Llama 2 7B: 32 x (4 x 4096^2 + 3 x 4096 x 11008 + 2 x 4096) + 2 x 32000 x 4096 + 4096.
		{"llama2-7b", 6.74e9, 6_738_415_616, 0, 0, 202_383_360, 32000 * 4096},
		// Llama 3 8B: GQA, q/o 4096^2, k/v 4096 x 1024 each; 3 x 4096 x 14336 MLP.
		{"llama3-8b", 8.03e9, 8_030_261_248, 0, 0, 218_112_000, 128256 * 4096},
		{"llama3-70b", 70.6e9, 70_553_706_496, 0, 0, 855_654_400, 128256 * 8192},
		// Mixtral: 8 experts of 3 x 4096 x 14336 per layer plus a 4096 x 8 router; 2 active.
		{"mixtral-8x7b", 46.7e9, 46_702_792_704, 12.9e9, 12_879_925_248, 1_451_270_144, 32000 * 4096},
		// GPT-3: 12h^2 + 13h per layer (Kaplan et al. 2020's 12 n_layer d_model^2 plus biases
		// and LayerNorms), tied embeddings, 2048 learned positions.
		{"gpt3-175b", 175e9, 174_604_259_328, 0, 0, 12*12288*12288 + 13*12288, 50257 * 12288},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, ok := Preset(c.name)
			if !ok {
				t.Fatal("no preset")
			}
			if err := m.Validate(); err != nil {
				t.Fatal(err)
			}
			pc := m.ParamCount()
			if pc.Total != c.exact {
				t.Errorf("total %d, want %d", pc.Total, c.exact)
			}
			if e := relErr(float64(pc.Total), c.published); e > 0.02 {
				t.Errorf("total %d is %.2f %% from the published %.4g", pc.Total, 100*e, c.published)
			}
			if pc.LayerDense+pc.LayerExperts != c.perLayer {
				t.Errorf("per layer %d, want %d", pc.LayerDense+pc.LayerExperts, c.perLayer)
			}
			if v := int64(m.Vocab) * int64(m.Hidden); v != c.embV {
				t.Errorf("vocab x hidden %d, want %d", v, c.embV)
			}
			if c.activePub > 0 {
				if pc.Active != c.exactActive || relErr(float64(pc.Active), c.activePub) > 0.02 {
					t.Errorf("active %d, want %d (published %.3g)", pc.Active, c.exactActive, c.activePub)
				}
			} else if pc.Active != pc.Total {
				t.Errorf("dense model: active %d != total %d", pc.Active, pc.Total)
			}
		})
	}
}

func TestNarayananFLOPs(t *testing.T) {
	// Narayanan et al. 2021 ("Efficient Large-Scale Language Model Training on GPU Clusters
	// Using Megatron-LM"), §5.1: a step of B sequences costs 72 B s l h^2 (1 + s/(6h) + V/(12 l h))
	// FLOPs without recomputation and 96 B s l h^2 (1 + s/(6h) + V/(16 l h)) with full
	// activation recomputation. GPT-3 175B with their batch of 1536:
	m, _ := Preset("gpt3-175b")
	B, s, l, h, V := 1536.0, 2048.0, 96.0, 12288.0, 50257.0
	want72 := 72 * B * s * l * h * h * (1 + s/(6*h) + V/(12*l*h))
	want96 := 96 * B * s * l * h * h * (1 + s/(6*h) + V/(16*l*h))
	if got := m.StepFLOPs(1536, 2048); relErr(got, want72) > 1e-12 {
		t.Errorf("step FLOPs %.6e, want %.6e", got, want72)
	}
	if got := m.HardwareFLOPs(1536, 2048, RecomputeFull); relErr(got, want96) > 1e-12 {
		t.Errorf("full-recompute FLOPs %.6e, want %.6e", got, want96)
	}
	if got := m.HardwareFLOPs(1536, 2048, RecomputeNone); relErr(got, want72) > 1e-12 {
		t.Errorf("no-recompute FLOPs %.6e, want %.6e", got, want72)
	}
	// Selective recomputation repeats only QK^T and AV: 4 B s^2 h per layer.
	if got, want := m.HardwareFLOPs(1536, 2048, RecomputeSelective), want72+l*4*B*s*s*h; relErr(got, want) > 1e-12 {
		t.Errorf("selective FLOPs %.6e, want %.6e", got, want)
	}
	// The familiar 6 x parameters x tokens is the leading term (within the attention and
	// embedding corrections: 1 + s/6h = 1.028).
	if r := m.StepFLOPs(1536, 2048) / (6 * float64(m.ParamCount().Total) * B * s); r < 1 || r > 1.05 {
		t.Errorf("step FLOPs / 6NT = %.4f", r)
	}
}

func TestModelValidate(t *testing.T) {
	base, _ := Preset("llama3-8b")
	for _, c := range []struct {
		name string
		edit func(*Model)
		want string
	}{
		{"layers", func(m *Model) { m.Layers = 0 }, "layers must be positive, got 0"},
		{"hidden/heads", func(m *Model) { m.Hidden = 4100 }, "hidden 4100 is not a multiple of heads 32"},
		{"kv", func(m *Model) { m.KVHeads = 5 }, "heads 32 is not a multiple of kv_heads 5"},
		{"norm", func(m *Model) { m.Norm = "batchnorm" }, `norm "batchnorm" is not rmsnorm or layernorm`},
		{"top_k", func(m *Model) { m.Experts, m.TopK = 8, 9 }, "top_k 9 must be between 1 and experts 8"},
		{"top_k dense", func(m *Model) { m.TopK = 2 }, "top_k 2 without experts"},
		{"params typo", func(m *Model) { m.Layers = 40 }, "the shape gives 9.78B parameters but params says 8.03B (+21.7 %)"},
		{"positions", func(m *Model) { m.LearnedPositions, m.SeqLen = true, 0 }, "learned_positions needs seq_len"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := base
			c.edit(&m)
			err := m.Validate()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}
