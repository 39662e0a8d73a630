package training

import (
	"fmt"
	"strings"

	"github.com/fabricsim/fabricsim/units"
)

// Bytes per parameter in mixed-precision Adam training (Rajbhandari et al. 2020, "ZeRO", §3.1):
// bf16 weights 2 B + bf16 gradients 2 B + optimizer states K = 12 B (fp32 master weights,
// momentum and variance), 16 B in all.
const (
	weightBytes    = 2
	gradBytes      = 2
	optimizerBytes = 12
)

// Memory is the per-GPU memory estimate of the most loaded pipeline stage.
type Memory struct {
	Stage int `json:"stage"`
	// Params is the parameters held by one GPU of that stage before ZeRO sharding (its 1/TP
	// slice of the stage's dense parameters plus its 1/(TP x EP) slice of the experts).
	Params      float64    `json:"params"`
	Weights     units.Size `json:"weights"`
	Gradients   units.Size `json:"gradients"`
	Optimizer   units.Size `json:"optimizer"`
	Activations units.Size `json:"activations"`
	Logits      units.Size `json:"logits"`
	Reserved    units.Size `json:"reserved"`
	Total       units.Size `json:"total"`
	Capacity    units.Size `json:"capacity"`
	// Activation detail: bytes per layer per micro-batch, layers on the stage, micro-batches
	// whose activations the stage holds at once under 1F1B, and the formula used.
	PerLayer units.Size `json:"activations_per_layer"`
	Layers   int        `json:"layers"`
	InFlight int        `json:"in_flight"`
	Formula  string     `json:"activation_formula"`
	zero     int
	dp       int
}

// activationsPerLayer is Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large
// Transformer Models"), Table 2, bytes per layer for one micro-batch of b sequences of length s,
// width h, a heads, tensor parallel t:
//
//	none:      s*b*h*(10 + 24/t + 5*a*s/(h*t));  with sequence parallel s*b*h*(34/t + 5*a*s/(h*t))
//	selective: s*b*h*(10 + 24/t);                with sequence parallel s*b*h*34/t
//	full:      2*s*b*h (the layer input);        with sequence parallel 2*s*b*h/t
//
// The paper derives them for GPT blocks (f = 4h); fabricsim applies them to other shapes as
// they stand.
func activationsPerLayer(m Model, b, s, t int, sp bool, recompute string) (float64, string) {
	sbh := float64(s) * float64(b) * float64(m.Hidden)
	tf := float64(t)
	attn := 5 * float64(m.Heads) * float64(s) / (float64(m.Hidden) * tf)
	switch {
	case recompute == RecomputeFull && sp:
		return 2 * sbh / tf, "2sbh/t"
	case recompute == RecomputeFull:
		return 2 * sbh, "2sbh"
	case recompute == RecomputeSelective && sp:
		return sbh * 34 / tf, "sbh(34/t)"
	case recompute == RecomputeSelective:
		return sbh * (10 + 24/tf), "sbh(10 + 24/t)"
	case sp:
		return sbh * (34/tf + attn), "sbh(34/t + 5as/(ht))"
	}
	return sbh * (10 + 24/tf + attn), "sbh(10 + 24/t + 5as/(ht))"
}

// stageParams is one GPU's share of stage p's parameters: dense (split by TP) and experts
// (split by TP and EP).
func stageParams(c *Config, m Model, p int) (dense, experts float64) {
	pc := m.ParamCount()
	lps := float64(m.Layers / c.PP)
	d := lps * float64(pc.LayerDense)
	e := lps * float64(pc.LayerExperts)
	if !m.MoE() {
		d, e = d+e, 0
	}
	if p == 0 {
		d += float64(pc.Embedding)
	}
	if p == c.PP-1 {
		d += float64(pc.Output)
	}
	return d / float64(c.TP), e / float64(c.TP*c.EP)
}

// EstimateMemory is the per-GPU memory of the most loaded pipeline stage: ZeRO-sharded weights,
// gradients and optimizer states, activations of the micro-batches in flight, the output
// logits on the last stage and the reserve. Config must be valid apart from memory.
func EstimateMemory(c *Config, m Model, g GPU) Memory {
	mb := c.MicroBatches()
	edp := max(c.DP/max(c.EP, 1), 1)
	var worst Memory
	for p := 0; p < c.PP; p++ {
		dense, experts := stageParams(c, m, p)
		mem := Memory{Stage: p, Params: dense + experts, Capacity: g.Memory, Reserved: c.ReservedMemory, zero: c.ZeRO, dp: c.DP}
		shard := func(stage int) float64 { // parameters this GPU keeps after sharding at stage
			if c.ZeRO >= stage {
				return dense/float64(c.DP) + experts/float64(edp)
			}
			return dense + experts
		}
		weights := weightBytes * shard(3)
		if c.ZeRO >= 3 {
			// Gathered working copies: the block being computed and the one prefetched.
			pc := m.ParamCount()
			block := float64(c.LayersPerBlock) * (float64(pc.LayerDense)/float64(c.TP) + float64(pc.LayerExperts)/float64(c.TP*c.EP))
			if !m.MoE() {
				block = float64(c.LayersPerBlock) * float64(pc.LayerDense+pc.LayerExperts) / float64(c.TP)
			}
			weights += 2 * weightBytes * block
		}
		mem.Weights = units.Size(weights)
		mem.Gradients = units.Size(gradBytes * shard(2))
		mem.Optimizer = units.Size(optimizerBytes * shard(1))
		per, formula := activationsPerLayer(m, c.MicroBatch, c.SeqLen, c.TP, c.SequenceParallel, c.Recompute)
		mem.PerLayer, mem.Formula = units.Size(per), formula
		mem.Layers = m.Layers / c.PP
		mem.InFlight = min(c.PP-p, mb) // 1F1B: stage p holds at most PP-p micro-batches
		mem.Activations = units.Size(per * float64(mem.Layers) * float64(mem.InFlight))
		if p == c.PP-1 {
			// fp32 logits of one micro-batch for the vocab-parallel cross-entropy (est.).
			mem.Logits = units.Size(4 * float64(c.MicroBatch) * float64(c.SeqLen) * float64(m.Vocab) / float64(c.TP))
		}
		mem.Total = mem.Weights + mem.Gradients + mem.Optimizer + mem.Activations + mem.Logits + mem.Reserved
		if p == 0 || mem.Total > worst.Total {
			worst = mem
		}
	}
	return worst
}

func gb(s units.Size) string { return fmt.Sprintf("%.1f GB", float64(s)/1e9) }

// Explain spells out the estimate with its formula and numbers, for error messages and reports.
func (m Memory) Explain() string {
	var b strings.Builder
	verb := "fits in"
	if m.Total > m.Capacity {
		verb = "exceeds"
	}
	fmt.Fprintf(&b, "stage %d needs %s per GPU, which %s %s: ", m.Stage, gb(m.Total), verb, gb(m.Capacity))
	shardNote := func(stage int) string {
		if m.zero >= stage {
			return fmt.Sprintf(" sharded over dp %d", m.dp)
		}
		return ""
	}
	fmt.Fprintf(&b, "weights %s (2 B x %s params%s) + gradients %s (2 B%s) + optimizer states %s (12 B%s; ZeRO-%d, Rajbhandari et al. 2020)",
		gb(m.Weights), fmtCount(int64(m.Params)), shardNote(3), gb(m.Gradients), shardNote(2), gb(m.Optimizer), shardNote(1), m.zero)
	fmt.Fprintf(&b, " + activations %s (%d layers x %d micro-batches in flight x %s per layer, %s, Korthikanti et al. 2022)",
		gb(m.Activations), m.Layers, m.InFlight, gb(m.PerLayer), m.Formula)
	if m.Logits > 0 {
		fmt.Fprintf(&b, " + logits %s", gb(m.Logits))
	}
	if m.Reserved > 0 {
		fmt.Fprintf(&b, " + reserved %s", gb(m.Reserved))
	}
	if m.Total > m.Capacity {
		b.WriteString("; try a higher zero stage, more tp or pp, recompute: full, sequence_parallel: true or a smaller micro_batch")
	}
	return b.String()
}
