package training

import (
	"fmt"
	"sort"
	"strings"
)

// Norm kinds.
const (
	RMSNorm   = "rmsnorm"   // gain only: h parameters (Llama, Mixtral)
	LayerNorm = "layernorm" // gain and bias: 2h parameters (GPT-3)
)

// Model is the shape of a decoder-only transformer. Parameter counts and FLOPs are derived from
// the shape (see docs/training-model.md for the formulas).
type Model struct {
	Name    string `yaml:"name" json:"name"`
	Layers  int    `yaml:"layers" json:"layers"`
	Hidden  int    `yaml:"hidden" json:"hidden"`     // model width h
	FFN     int    `yaml:"ffn" json:"ffn"`           // MLP inner width (per expert)
	Heads   int    `yaml:"heads" json:"heads"`       // query heads a
	KVHeads int    `yaml:"kv_heads" json:"kv_heads"` // key/value heads (GQA); 0 = Heads (MHA)
	HeadDim int    `yaml:"head_dim" json:"head_dim"` // 0 = Hidden / Heads
	Vocab   int    `yaml:"vocab" json:"vocab"`
	// SeqLen is the context length the model was trained at (the default sequence length).
	SeqLen int `yaml:"seq_len" json:"seq_len"`
	// GatedMLP: SwiGLU MLP with three matrices (gate, up, down) instead of two.
	GatedMLP bool   `yaml:"gated_mlp" json:"gated_mlp"`
	Norm     string `yaml:"norm" json:"norm"` // rmsnorm | layernorm
	// Bias: linear layers carry bias vectors (GPT-2/3).
	Bias             bool `yaml:"bias" json:"bias"`
	TiedEmbeddings   bool `yaml:"tied_embeddings" json:"tied_embeddings"`     // output head shares the embedding matrix
	LearnedPositions bool `yaml:"learned_positions" json:"learned_positions"` // a SeqLen x h position table (GPT); false: RoPE
	// Experts > 1 makes every layer's MLP a mixture of Experts experts with TopK routed per token.
	Experts int `yaml:"experts" json:"experts,omitempty"`
	TopK    int `yaml:"top_k" json:"top_k,omitempty"`
	// Params is the published total parameter count, if any: a typo check (Validate rejects a
	// shape more than 5 % away); all arithmetic uses the count derived from the shape.
	Params int64 `yaml:"params" json:"params,omitempty"`
	// ActiveParams is the published count used per token (mixture of experts), if any.
	ActiveParams int64  `yaml:"active_params" json:"active_params,omitempty"`
	Source       string `yaml:"source" json:"source,omitempty"`
}

// Presets are well-known open model shapes. Figures come from the papers and the models'
// published configuration files (Hugging Face config.json), cited per entry.
var presets = map[string]Model{
	// Touvron et al. 2023, "Llama 2: Open Foundation and Fine-Tuned Chat Models", Table 1 (7B,
	// 4k context); shape from meta-llama/Llama-2-7b-hf config.json (hidden 4096, intermediate
	// 11008, 32 layers, 32 heads, vocab 32000). The checkpoint holds 6.74 B parameters.
	"llama2-7b": {Name: "llama2-7b", Layers: 32, Hidden: 4096, FFN: 11008, Heads: 32, KVHeads: 32, Vocab: 32000,
		SeqLen: 4096, GatedMLP: true, Norm: RMSNorm, Params: 6_740_000_000,
		Source: "Touvron et al. 2023 (Llama 2) Table 1; meta-llama/Llama-2-7b-hf config.json"},
	// Meta Llama 3 model card and meta-llama/Meta-Llama-3-8B config.json: hidden 4096,
	// intermediate 14336, 32 layers, 32 heads, 8 KV heads, vocab 128256, 8k context, untied
	// embeddings; 8.03 B parameters.
	"llama3-8b": {Name: "llama3-8b", Layers: 32, Hidden: 4096, FFN: 14336, Heads: 32, KVHeads: 8, Vocab: 128256,
		SeqLen: 8192, GatedMLP: true, Norm: RMSNorm, Params: 8_030_000_000,
		Source: "Meta Llama 3 model card; meta-llama/Meta-Llama-3-8B config.json"},
	// meta-llama/Meta-Llama-3-70B config.json: hidden 8192, intermediate 28672, 80 layers,
	// 64 heads, 8 KV heads, vocab 128256; 70.6 B parameters.
	"llama3-70b": {Name: "llama3-70b", Layers: 80, Hidden: 8192, FFN: 28672, Heads: 64, KVHeads: 8, Vocab: 128256,
		SeqLen: 8192, GatedMLP: true, Norm: RMSNorm, Params: 70_600_000_000,
		Source: "Meta Llama 3 model card; meta-llama/Meta-Llama-3-70B config.json"},
	// Jiang et al. 2024, "Mixtral of Experts": 8 experts, top-2, 46.7 B total, 12.9 B active;
	// mistralai/Mixtral-8x7B-v0.1 config.json: hidden 4096, intermediate 14336, 32 layers,
	// 32 heads, 8 KV heads, vocab 32000, 32k context.
	"mixtral-8x7b": {Name: "mixtral-8x7b", Layers: 32, Hidden: 4096, FFN: 14336, Heads: 32, KVHeads: 8, Vocab: 32000,
		SeqLen: 32768, GatedMLP: true, Norm: RMSNorm, Experts: 8, TopK: 2,
		Params: 46_700_000_000, ActiveParams: 12_900_000_000,
		Source: "Jiang et al. 2024 (Mixtral of Experts); mistralai/Mixtral-8x7B-v0.1 config.json"},
	// Brown et al. 2020, "Language Models are Few-Shot Learners", Table 2.1: 96 layers,
	// d_model 12288, 96 heads of 128, d_ff = 4 d_model, 2048 context; GPT-2 BPE vocab 50257,
	// learned positions, LayerNorm, biases, tied embeddings. 175 B parameters.
	"gpt3-175b": {Name: "gpt3-175b", Layers: 96, Hidden: 12288, FFN: 49152, Heads: 96, KVHeads: 96, Vocab: 50257,
		SeqLen: 2048, Norm: LayerNorm, Bias: true, TiedEmbeddings: true, LearnedPositions: true,
		Params: 175_000_000_000,
		Source: "Brown et al. 2020 (GPT-3) Table 2.1"},
}

// Preset returns a copy of the named model shape.
func Preset(name string) (Model, bool) {
	m, ok := presets[strings.ToLower(name)]
	return m, ok
}

// PresetNames lists the model presets.
func PresetNames() []string {
	var out []string
	for k := range presets {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (m *Model) kvHeads() int {
	if m.KVHeads == 0 {
		return m.Heads
	}
	return m.KVHeads
}

func (m *Model) headDim() int {
	if m.HeadDim == 0 && m.Heads > 0 {
		return m.Hidden / m.Heads
	}
	return m.HeadDim
}

// MoE reports whether the model is a mixture of experts.
func (m *Model) MoE() bool { return m.Experts > 1 }

// Validate checks the shape is complete and consistent.
func (m *Model) Validate() error {
	var errs []string
	need := func(v int, field string) {
		if v <= 0 {
			errs = append(errs, fmt.Sprintf("%s must be positive, got %d", field, v))
		}
	}
	need(m.Layers, "layers")
	need(m.Hidden, "hidden")
	need(m.FFN, "ffn")
	need(m.Heads, "heads")
	need(m.Vocab, "vocab")
	if m.KVHeads < 0 || m.HeadDim < 0 || m.Experts < 0 || m.TopK < 0 || m.SeqLen < 0 {
		errs = append(errs, "kv_heads, head_dim, experts, top_k and seq_len must not be negative")
	}
	if m.Heads > 0 && m.HeadDim == 0 && m.Hidden%m.Heads != 0 {
		errs = append(errs, fmt.Sprintf("hidden %d is not a multiple of heads %d (give head_dim for such a shape)", m.Hidden, m.Heads))
	}
	if m.Heads > 0 && m.KVHeads > 0 && m.Heads%m.KVHeads != 0 {
		errs = append(errs, fmt.Sprintf("heads %d is not a multiple of kv_heads %d (each KV head serves a whole group of query heads)", m.Heads, m.KVHeads))
	}
	if m.Norm != RMSNorm && m.Norm != LayerNorm {
		errs = append(errs, fmt.Sprintf("norm %q is not %s or %s", m.Norm, RMSNorm, LayerNorm))
	}
	if m.MoE() && (m.TopK < 1 || m.TopK > m.Experts) {
		errs = append(errs, fmt.Sprintf("top_k %d must be between 1 and experts %d", m.TopK, m.Experts))
	}
	if !m.MoE() && m.TopK > 1 {
		errs = append(errs, fmt.Sprintf("top_k %d without experts (a dense model routes nothing)", m.TopK))
	}
	if m.LearnedPositions && m.SeqLen <= 0 {
		errs = append(errs, "learned_positions needs seq_len (the size of the position table)")
	}
	if len(errs) == 0 && m.Params > 0 {
		got := m.ParamCount().Total
		if d := float64(got-m.Params) / float64(m.Params); d > 0.05 || d < -0.05 {
			errs = append(errs, fmt.Sprintf("the shape gives %s parameters but params says %s (%+.1f %%): check layers, hidden, ffn, vocab",
				fmtCount(got), fmtCount(m.Params), 100*d))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("model %s: %s", m.Name, strings.Join(errs, "; "))
	}
	return nil
}

// ParamCounts breaks a model's parameters down the way they are placed on pipeline stages.
type ParamCounts struct {
	Embedding int64 `json:"embedding"` // vocab x h (+ position table), on the first stage
	Output    int64 `json:"output"`    // final norm + output head (0 head if tied), on the last stage
	// LayerDense is one layer's attention, norms and router; LayerExperts its MLP parameters
	// summed over all experts (the one MLP of a dense model); ExpertMLP one expert's MLP.
	LayerDense   int64 `json:"layer_dense"`
	LayerExperts int64 `json:"layer_experts"`
	ExpertMLP    int64 `json:"expert_mlp"`
	Total        int64 `json:"total"`
	Active       int64 `json:"active"` // used per token: top-k experts instead of all
}

// ParamCount derives parameter counts from the shape:
//
//	attention  = h*(a*d) + 2*h*(kv*d) + (a*d)*h       [+ biases (a*d) + 2(kv*d) + h]
//	MLP/expert = 3*h*f (gated) or 2*h*f               [+ biases 2f+h (gated) or f+h]
//	router     = h*E (mixture of experts)
//	norms      = 2 per layer, h (RMSNorm) or 2h (LayerNorm) each, plus a final one
//	embedding  = V*h (+ S*h learned positions); output head V*h unless tied
func (m *Model) ParamCount() ParamCounts {
	h, d, f := int64(m.Hidden), int64(m.headDim()), int64(m.FFN)
	a, kv := int64(m.Heads), int64(m.kvHeads())
	norm := h
	if m.Norm == LayerNorm {
		norm = 2 * h
	}
	attn := h*a*d + 2*h*kv*d + a*d*h
	mlp := 2 * h * f
	if m.GatedMLP {
		mlp = 3 * h * f
	}
	if m.Bias {
		attn += a*d + 2*kv*d + h
		if m.GatedMLP {
			mlp += 2*f + h
		} else {
			mlp += f + h
		}
	}
	experts, active := int64(1), int64(1)
	var router int64
	if m.MoE() {
		experts, active = int64(m.Experts), int64(m.TopK)
		router = h * experts
	}
	var p ParamCounts
	p.ExpertMLP = mlp
	p.LayerDense = attn + 2*norm + router
	p.LayerExperts = experts * mlp
	p.Embedding = int64(m.Vocab) * h
	if m.LearnedPositions {
		p.Embedding += int64(m.SeqLen) * h
	}
	p.Output = norm
	if !m.TiedEmbeddings {
		p.Output += int64(m.Vocab) * h
	}
	L := int64(m.Layers)
	p.Total = p.Embedding + p.Output + L*(p.LayerDense+p.LayerExperts)
	p.Active = p.Embedding + p.Output + L*(p.LayerDense+active*mlp)
	return p
}

// matmulPerToken is the number of weight multiply-adds one token makes in one layer's forward
// pass: attention projections, the top-k experts' MLPs and the router (biases and norms are
// elementwise and left out, as in Narayanan et al. 2021).
func (m *Model) matmulPerToken() float64 {
	h, d, f := float64(m.Hidden), float64(m.headDim()), float64(m.FFN)
	a, kv := float64(m.Heads), float64(m.kvHeads())
	attn := h*a*d + 2*h*kv*d + a*d*h
	mlp := 2 * h * f
	if m.GatedMLP {
		mlp = 3 * h * f
	}
	if m.MoE() {
		return attn + float64(m.TopK)*mlp + h*float64(m.Experts)
	}
	return attn + mlp
}

// LayerForwardFLOPs is one layer's forward FLOPs for b sequences of length s:
// 2 FLOPs per weight per token, plus the attention scores QK^T and their product with V,
// 2*s*(a*d) FLOPs each per token (Narayanan et al. 2021, §5.1: 24Bsh^2 + 4Bs^2h for GPT).
func (m *Model) LayerForwardFLOPs(b, s int) float64 {
	tokens := float64(b) * float64(s)
	return tokens*2*m.matmulPerToken() + m.AttentionCoreFLOPs(b, s)
}

// AttentionCoreFLOPs is the forward FLOPs of QK^T and softmax(.)V in one layer (what selective
// recomputation recomputes, Korthikanti et al. 2022): 4*b*s^2*(a*d). Causal masking is not
// subtracted, following Narayanan et al. 2021.
func (m *Model) AttentionCoreFLOPs(b, s int) float64 {
	return 4 * float64(b) * float64(s) * float64(s) * float64(m.Heads*m.headDim())
}

// LogitFLOPs is the output head's forward FLOPs: 2*b*s*h*V.
func (m *Model) LogitFLOPs(b, s int) float64 {
	return 2 * float64(b) * float64(s) * float64(m.Hidden) * float64(m.Vocab)
}

// StepFLOPs is the model FLOPs of one training step over batch sequences of length s: forward
// plus a backward of twice the forward, 3 x (L x layer + logits). For GPT shapes (f = 4h,
// a*d = h, no GQA) this is Narayanan et al. 2021's 72*B*s*l*h^2*(1 + s/(6h) + V/(12*l*h)).
func (m *Model) StepFLOPs(batch, s int) float64 {
	return 3 * (float64(m.Layers)*m.LayerForwardFLOPs(batch, s) + m.LogitFLOPs(batch, s))
}

// HardwareFLOPs adds the recomputation work: full recomputation repeats every layer's forward
// (Narayanan's 96*B*s*l*h^2*(1 + s/(6h) + V/(16*l*h))); selective repeats the attention core.
func (m *Model) HardwareFLOPs(batch, s int, recompute string) float64 {
	f := m.StepFLOPs(batch, s)
	switch recompute {
	case RecomputeFull:
		f += float64(m.Layers) * m.LayerForwardFLOPs(batch, s)
	case RecomputeSelective:
		f += float64(m.Layers) * m.AttentionCoreFLOPs(batch, s)
	}
	return f
}

// fmtCount prints a parameter count as "8.03B" / "560M".
func fmtCount(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.3gB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.3gM", float64(n)/1e6)
	}
	return fmt.Sprintf("%d", n)
}
