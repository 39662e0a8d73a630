// Package training models one training step of a transformer as the compute and collective
// operations every GPU performs: tensor parallelism (TP), pipeline parallelism (PP, 1F1B
// schedule), data parallelism (DP, with ZeRO stages 0-3) and expert parallelism (EP) for
// mixtures of experts. Build turns a Config into a Plan, an abstract dependency graph of Ops
// over global GPU ranks that a later step compiles into message graphs (msggraph); this package
// knows nothing of collective algorithms or the network.
//
// The formulas (parameters, FLOPs, memory) and their sources are in docs/training-model.md.
package training

import (
	"errors"
	"fmt"
	"strings"

	"github.com/fabricsim/fabricsim/units"
	"github.com/fabricsim/fabricsim/yamlstrict"
)

// Recomputation modes (Korthikanti et al. 2022).
const (
	RecomputeNone      = "none"
	RecomputeSelective = "selective" // recompute the attention core only
	RecomputeFull      = "full"      // store each layer's input only, recompute the layer
)

// Defaults applied by Config.Defaults.
const (
	// DefaultEfficiency is the fraction of peak dense BF16 throughput a GPU sustains while it
	// computes. Narayanan et al. 2021 (Table 1) reach 44-52 % of A100 peak end to end, and the
	// Llama 3 report (Llama Team 2024, Table 4) 38-43 % BF16 MFU on H100 at 8-16k GPUs; both
	// include communication stalls, which fabricsim simulates separately, so 0.5 is a modest
	// compute-only figure (est.).
	DefaultEfficiency = 0.5
	// DefaultBucketSize is PyTorch DistributedDataParallel's bucket_cap_mb = 25 (MiB).
	DefaultBucketSize = 25 * units.MiB
	// DefaultLayersPerBlock groups 4 layers into one compute op and one collective op per TP
	// group and phase: Llama-3-8B on 64 GPUs then has about 10.5k ops (1 is per-layer fidelity).
	DefaultLayersPerBlock = 4
	// DefaultGPUsPerServer is an HGX/DGX H100 server ([H100]).
	DefaultGPUsPerServer = 8
	// DefaultOptimizerBytesPerParam is the HBM traffic of one mixed-precision Adam update per
	// parameter (est.): read fp32 master, momentum, variance (12 B) and the gradient (4 B), write
	// the three fp32 states (12 B): 28 B. The optimizer step is memory-bound.
	DefaultOptimizerBytesPerParam = 28
)

// ModelSpec names a model preset, or carries a whole shape (Shape != nil; Name is then the
// preset it started from, if any).
type ModelSpec struct {
	Name  string `yaml:"name" json:"name,omitempty"`
	Shape *Model `yaml:"shape" json:"shape,omitempty"`
}

// GPUSpec names a GPU preset, or carries custom numbers.
type GPUSpec struct {
	Name string `yaml:"name" json:"name,omitempty"`
	Spec *GPU   `yaml:"spec" json:"spec,omitempty"`
}

// Config is the `workload: {kind: training, ...}` section of a scenario.
type Config struct {
	Kind  string    `yaml:"kind" json:"kind"` // "training" (optional in Go)
	Model ModelSpec `yaml:"model" json:"model"`
	GPU   GPUSpec   `yaml:"gpu" json:"gpu"`
	// GPUs is the total; 0 means TP x PP x DP. GPUsPerServer bounds a TP group (NVLink domain).
	GPUs          int `yaml:"gpus" json:"gpus"`
	GPUsPerServer int `yaml:"gpus_per_server" json:"gpus_per_server"`
	TP            int `yaml:"tp" json:"tp"`
	PP            int `yaml:"pp" json:"pp"`
	DP            int `yaml:"dp" json:"dp"` // 0: GPUs / (TP x PP)
	EP            int `yaml:"ep" json:"ep"` // expert parallelism, carved out of DP
	// ZeRO stage (Rajbhandari et al. 2020): 0 plain DP, 1 shard optimizer states, 2 and
	// gradients, 3 and parameters (FSDP full sharding).
	ZeRO int `yaml:"zero" json:"zero"`
	// MicroBatch and GlobalBatch count sequences; GlobalBatch 0 means MicroBatch x DP.
	MicroBatch  int `yaml:"micro_batch" json:"micro_batch"`
	GlobalBatch int `yaml:"global_batch" json:"global_batch"`
	SeqLen      int `yaml:"seq_len" json:"seq_len"` // 0: the model's
	// SequenceParallel replaces each TP all-reduce by an all-gather and a reduce-scatter and
	// shards the activations between them (Korthikanti et al. 2022).
	SequenceParallel bool    `yaml:"sequence_parallel" json:"sequence_parallel"`
	Recompute        string  `yaml:"recompute" json:"recompute"`   // none | selective | full
	Efficiency       float64 `yaml:"efficiency" json:"efficiency"` // fraction of peak while computing
	// BucketSize is the gradient bucket of the DP reduction.
	BucketSize units.Size `yaml:"bucket_size" json:"bucket_size"`
	// LayersPerBlock sets the plan's granularity: that many consecutive layers of a stage become
	// one compute op per GPU and one collective op (Repeat = the layers' collectives) per group.
	LayersPerBlock int `yaml:"layers_per_block" json:"layers_per_block"`
	// ReservedMemory is HBM the framework keeps for itself (CUDA context, allocator slack);
	// default 0 so that only plans that cannot fit at all are rejected.
	ReservedMemory units.Size `yaml:"reserved_memory" json:"reserved_memory"`
	// OptimizerBytesPerParam is the HBM traffic of an Adam update per parameter.
	OptimizerBytesPerParam float64 `yaml:"optimizer_bytes_per_param" json:"optimizer_bytes_per_param"`

	// d is the decoder of the file the config came from (nil when built in Go), path its field
	// path there ("workload"): validation messages name the fields' lines and columns.
	d    *yamlstrict.Decoder
	path string
}

// Defaults fills unset fields (see the Default* constants). Fields whose zero value is
// meaningful (zero, sequence_parallel, reserved_memory) are left alone.
func (c *Config) Defaults() {
	if c.Kind == "" {
		c.Kind = "training"
	}
	if c.GPU.Name == "" && c.GPU.Spec == nil {
		c.GPU.Name = "h100"
	}
	if c.GPUsPerServer == 0 {
		c.GPUsPerServer = DefaultGPUsPerServer
	}
	for _, p := range []*int{&c.TP, &c.PP, &c.EP, &c.MicroBatch} {
		if *p == 0 {
			*p = 1
		}
	}
	if c.DP == 0 {
		if c.GPUs == 0 {
			c.DP = 1
		} else if c.TP > 0 && c.PP > 0 && c.GPUs%(c.TP*c.PP) == 0 {
			c.DP = c.GPUs / (c.TP * c.PP)
		}
	}
	if c.GPUs == 0 {
		c.GPUs = c.TP * c.PP * c.DP
	}
	if c.GlobalBatch == 0 {
		c.GlobalBatch = c.MicroBatch * c.DP
	}
	if c.SeqLen == 0 {
		if m, err := c.ResolveModel(); err == nil {
			c.SeqLen = m.SeqLen
		}
	}
	if c.Recompute == "" {
		c.Recompute = RecomputeSelective
	}
	if c.Efficiency == 0 {
		c.Efficiency = DefaultEfficiency
	}
	if c.BucketSize == 0 {
		c.BucketSize = DefaultBucketSize
	}
	if c.LayersPerBlock == 0 {
		c.LayersPerBlock = DefaultLayersPerBlock
	}
	if c.OptimizerBytesPerParam == 0 {
		c.OptimizerBytesPerParam = DefaultOptimizerBytesPerParam
	}
}

// ResolveModel returns the model shape the config names.
func (c *Config) ResolveModel() (Model, error) {
	if c.Model.Shape != nil {
		m := *c.Model.Shape
		if m.Name == "" {
			m.Name = c.Model.Name
		}
		if m.Name == "" {
			m.Name = "custom"
		}
		return m, nil
	}
	if c.Model.Name == "" {
		return Model{}, c.errAt("model", "missing: name a preset (%s) or give a shape", strings.Join(PresetNames(), ", "))
	}
	m, ok := Preset(c.Model.Name)
	if !ok {
		return Model{}, c.errAt("model", "unknown model %q (presets: %s)", c.Model.Name, strings.Join(PresetNames(), ", "))
	}
	return m, nil
}

// ResolveGPU returns the GPU the config names.
func (c *Config) ResolveGPU() (GPU, error) {
	if c.GPU.Spec != nil {
		g := *c.GPU.Spec
		if g.Name == "" {
			g.Name = c.GPU.Name
		}
		return g, nil
	}
	g, ok := GPUPreset(c.GPU.Name)
	if !ok {
		return GPU{}, c.errAt("gpu", "unknown gpu %q (presets: %s)", c.GPU.Name, strings.Join(GPUPresetNames(), ", "))
	}
	return g, nil
}

// MicroBatches is the number of micro-batches each data-parallel replica runs per step
// (gradient accumulation steps): GlobalBatch / (MicroBatch x DP).
func (c *Config) MicroBatches() int {
	if c.MicroBatch <= 0 || c.DP <= 0 {
		return 0
	}
	return c.GlobalBatch / (c.MicroBatch * c.DP)
}

// errAt makes an error about a field, placed at its line and column when the config came from
// a file.
func (c *Config) errAt(field, format string, args ...any) error {
	if c.d != nil {
		return c.d.At(c.path+"."+field, format, args...)
	}
	return fmt.Errorf("workload.%s: %s", field, fmt.Sprintf(format, args...))
}

// Validate checks the config after Defaults: every parallelism constraint, then whether the
// model fits in GPU memory. All structural problems are reported together.
func (c *Config) Validate() error {
	m, err := c.ResolveModel()
	if err != nil {
		return err
	}
	if err := m.Validate(); err != nil {
		return c.errAt("model", "%v", err)
	}
	g, err := c.ResolveGPU()
	if err != nil {
		return err
	}
	if err := g.Validate(); err != nil {
		return c.errAt("gpu", "%v", err)
	}
	var errs []error
	bad := func(field, format string, args ...any) { errs = append(errs, c.errAt(field, format, args...)) }
	if c.Kind != "training" {
		bad("kind", "%q is not a training workload (want kind: training)", c.Kind)
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"tp", c.TP}, {"pp", c.PP}, {"dp", c.DP}, {"ep", c.EP}, {"micro_batch", c.MicroBatch},
		{"global_batch", c.GlobalBatch}, {"seq_len", c.SeqLen}, {"gpus_per_server", c.GPUsPerServer},
		{"layers_per_block", c.LayersPerBlock}, {"gpus", c.GPUs}} {
		if f.v < 1 {
			if f.name == "dp" && c.GPUs > 0 && c.TP > 0 && c.PP > 0 {
				bad("gpus", "gpus %d is not a multiple of tp x pp = %d x %d = %d, so dp cannot be derived", c.GPUs, c.TP, c.PP, c.TP*c.PP)
				continue
			}
			bad(f.name, "%d must be at least 1", f.v)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if c.ZeRO < 0 || c.ZeRO > 3 {
		bad("zero", "stage %d does not exist (valid: 0 plain data parallel, 1 optimizer states, 2 + gradients, 3 + parameters)", c.ZeRO)
	}
	if c.Recompute != RecomputeNone && c.Recompute != RecomputeSelective && c.Recompute != RecomputeFull {
		bad("recompute", "%q is not none, selective or full", c.Recompute)
	}
	if c.Efficiency <= 0 || c.Efficiency > 1 {
		bad("efficiency", "%g must be in (0, 1]: it is the fraction of peak FLOPS sustained", c.Efficiency)
	}
	if c.BucketSize <= 0 {
		bad("bucket_size", "%s must be positive", c.BucketSize)
	}
	if c.OptimizerBytesPerParam <= 0 {
		bad("optimizer_bytes_per_param", "%g must be positive", c.OptimizerBytesPerParam)
	}
	if c.ReservedMemory < 0 {
		bad("reserved_memory", "%s must not be negative", c.ReservedMemory)
	}
	if c.GPUsPerServer%c.TP != 0 {
		bad("tp", "tp %d does not divide gpus_per_server %d: a tensor-parallel group must sit inside one server's NVLink domain", c.TP, c.GPUsPerServer)
	}
	if prod := c.TP * c.PP * c.DP; prod != c.GPUs {
		bad("gpus", "tp x pp x dp = %d x %d x %d = %d GPUs, but gpus is %d", c.TP, c.PP, c.DP, prod, c.GPUs)
	}
	if c.GPUs%c.GPUsPerServer != 0 && c.GPUs > c.GPUsPerServer {
		bad("gpus", "gpus %d is not a whole number of servers of gpus_per_server %d", c.GPUs, c.GPUsPerServer)
	}
	if c.PP > m.Layers {
		bad("pp", "pp %d is more than the %d layers of %s: a pipeline stage needs at least one layer", c.PP, m.Layers, m.Name)
	} else if m.Layers%c.PP != 0 {
		bad("pp", "the %d layers of %s do not split evenly into pp %d stages (%d = %d x %d + %d); choose pp dividing %d",
			m.Layers, m.Name, c.PP, m.Layers, c.PP, m.Layers/c.PP, m.Layers%c.PP, m.Layers)
	}
	if per := c.MicroBatch * c.DP; c.GlobalBatch%per != 0 {
		bad("global_batch", "global_batch %d is not a multiple of micro_batch x dp = %d x %d = %d", c.GlobalBatch, c.MicroBatch, c.DP, per)
	}
	if m.Heads%c.TP != 0 {
		bad("tp", "the %d attention heads of %s do not divide among tp %d GPUs", m.Heads, m.Name, c.TP)
	} else if kv := m.kvHeads(); kv%c.TP != 0 {
		bad("tp", "the %d key/value heads of %s do not divide among tp %d GPUs", kv, m.Name, c.TP)
	}
	if c.EP > 1 {
		switch {
		case !m.MoE():
			bad("ep", "ep %d needs a mixture-of-experts model; %s is dense", c.EP, m.Name)
		case m.Experts%c.EP != 0:
			bad("ep", "ep %d does not divide the %d experts of %s", c.EP, m.Experts, m.Name)
		case c.DP%c.EP != 0:
			bad("ep", "ep %d does not divide dp %d: expert-parallel groups are carved out of the data-parallel ranks", c.EP, c.DP)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	mem := EstimateMemory(c, m, g)
	if mem.Total > mem.Capacity {
		return c.errAt("model", "%s does not fit on %s (%s) at tp %d, pp %d, dp %d, zero %d, micro_batch %d, seq_len %d, recompute %s: %s",
			m.Name, g.Name, g.Memory, c.TP, c.PP, c.DP, c.ZeRO, c.MicroBatch, c.SeqLen, c.Recompute, mem.Explain())
	}
	return nil
}
