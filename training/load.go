package training

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/fabricsim/fabricsim/units"
	"github.com/fabricsim/fabricsim/yamlstrict"
)

// Load decodes a `workload:` mapping strictly: unknown keys, wrong types and bad values are
// errors naming file:line and the field (file may be empty). Load applies no defaults and does
// not validate; call Defaults and Validate (or Build) next.
//
// model: takes a preset name or a mapping, e.g. {base: llama3-8b, layers: 16} or a full shape;
// gpu: a preset name or {base: h100, tflops: 989, memory: 80GB, hbm_bandwidth: 3.35TB/s}.
func Load(node *yaml.Node, file string) (*Config, error) {
	c := &Config{file: file, pos: map[string]int{}}
	if err := c.decode(node, file); err != nil {
		return nil, err
	}
	return c, nil
}

// UnmarshalYAML lets a scenario struct embed Config and decode it with yaml.v3 while keeping
// the strict checks and line numbers of Load (without a file name).
func (c *Config) UnmarshalYAML(node *yaml.Node) error {
	*c = Config{pos: map[string]int{}}
	return c.decode(node, "")
}

// SetFile names the YAML file in later validation messages (for configs decoded through
// UnmarshalYAML).
func (c *Config) SetFile(file string) { c.file = file }

var configFields = []string{"kind", "model", "gpu", "gpus", "gpus_per_server", "tp", "pp", "dp", "ep", "zero",
	"micro_batch", "global_batch", "seq_len", "sequence_parallel", "recompute", "efficiency", "bucket_size",
	"layers_per_block", "reserved_memory", "optimizer_bytes_per_param"}

var modelFields = []string{"base", "name", "layers", "hidden", "ffn", "heads", "kv_heads", "head_dim", "vocab",
	"seq_len", "gated_mlp", "norm", "bias", "tied_embeddings", "learned_positions", "experts", "top_k",
	"params", "active_params", "source"}

var gpuFields = []string{"base", "name", "tflops", "memory", "hbm_bandwidth", "source"}

type dec struct{ file string }

func (d dec) errf(n *yaml.Node, field, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	loc := ""
	switch {
	case d.file != "" && n != nil:
		loc = fmt.Sprintf("%s:%d: ", d.file, n.Line)
	case n != nil:
		loc = fmt.Sprintf("line %d: ", n.Line)
	case d.file != "":
		loc = d.file + ": "
	}
	return fmt.Errorf("%sworkload.%s: %s", loc, field, msg)
}

func (d dec) fields(n *yaml.Node, path string, allowed []string, set func(key string, k, v *yaml.Node) error) error {
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	if n.Kind != yaml.MappingNode {
		return d.errf(n, strings.TrimSuffix(path, "."), "want a mapping, got %s", yamlstrict.Describe(n))
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !slices.Contains(allowed, k.Value) {
			valid := append([]string(nil), allowed...)
			sort.Strings(valid)
			return d.errf(k, path+k.Value, "unknown field %q (valid: %s)", k.Value, strings.Join(valid, ", "))
		}
		if seen[k.Value] {
			return d.errf(k, path+k.Value, "given twice")
		}
		seen[k.Value] = true
		if err := set(k.Value, k, v); err != nil {
			return err
		}
	}
	return nil
}

func (d dec) scalar(n *yaml.Node, f string) (string, error) {
	return yamlstrict.Scalar(n, f, d.errf)
}

func (d dec) integer(n *yaml.Node, f string) (int, error) {
	s, err := d.scalar(n, f)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(strings.ReplaceAll(s, "_", ""), 10, 64)
	if err != nil || v < 0 || v > math.MaxInt32 {
		return 0, d.errf(n, f, "want a whole number >= 0, got %q", s)
	}
	return int(v), nil
}

func (d dec) count(n *yaml.Node, f string) (int64, error) {
	s, err := d.scalar(n, f)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseFloat(strings.ReplaceAll(s, "_", ""), 64)
	if err != nil || v < 0 || v > 1e15 || v != math.Trunc(v) {
		return 0, d.errf(n, f, "want a whole number of parameters (e.g. 8.03e9), got %q", s)
	}
	return int64(v), nil
}

func (d dec) number(n *yaml.Node, f string) (float64, error) {
	s, err := d.scalar(n, f)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseFloat(strings.ReplaceAll(s, "_", ""), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, d.errf(n, f, "want a number >= 0, got %q", s)
	}
	return v, nil
}

func (d dec) boolean(n *yaml.Node, f string) (bool, error) {
	return yamlstrict.Bool(n, f, d.errf)
}

func (d dec) size(n *yaml.Node, f string) (units.Size, error) {
	return yamlstrict.Parsed(n, f, d.errf, units.ParseSize)
}

func (c *Config) decode(node *yaml.Node, file string) error {
	d := dec{file: file}
	ints := map[string]*int{"gpus": &c.GPUs, "gpus_per_server": &c.GPUsPerServer, "tp": &c.TP, "pp": &c.PP,
		"dp": &c.DP, "ep": &c.EP, "zero": &c.ZeRO, "micro_batch": &c.MicroBatch, "global_batch": &c.GlobalBatch,
		"seq_len": &c.SeqLen, "layers_per_block": &c.LayersPerBlock}
	return d.fields(node, "", configFields, func(key string, k, v *yaml.Node) error {
		c.pos[key] = k.Line
		var err error
		if p, ok := ints[key]; ok {
			*p, err = d.integer(v, key)
			return err
		}
		switch key {
		case "kind":
			c.Kind, err = d.scalar(v, key)
		case "model":
			err = c.decodeModel(d, v)
		case "gpu":
			err = c.decodeGPU(d, v)
		case "sequence_parallel":
			c.SequenceParallel, err = d.boolean(v, key)
		case "recompute":
			c.Recompute, err = d.scalar(v, key)
		case "efficiency":
			c.Efficiency, err = d.number(v, key)
		case "bucket_size":
			c.BucketSize, err = d.size(v, key)
		case "reserved_memory":
			c.ReservedMemory, err = d.size(v, key)
		case "optimizer_bytes_per_param":
			c.OptimizerBytesPerParam, err = d.number(v, key)
		}
		return err
	})
}

func (c *Config) decodeModel(d dec, v *yaml.Node) error {
	if v.Kind == yaml.ScalarNode {
		c.Model = ModelSpec{Name: v.Value}
		if _, ok := Preset(v.Value); !ok {
			return d.errf(v, "model", "unknown model %q (presets: %s; or give a shape mapping)", v.Value, strings.Join(PresetNames(), ", "))
		}
		return nil
	}
	m := Model{Norm: RMSNorm}
	// base first, whatever its position, so the other keys override it.
	if v.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(v.Content); i += 2 {
			if v.Content[i].Value == "base" {
				b := v.Content[i+1]
				p, ok := Preset(b.Value)
				if !ok {
					return d.errf(b, "model.base", "unknown model %q (presets: %s)", b.Value, strings.Join(PresetNames(), ", "))
				}
				m = p
				m.Params, m.ActiveParams = 0, 0 // a changed shape no longer has the published count
				c.Model.Name = b.Value
			}
		}
	}
	ints := map[string]*int{"layers": &m.Layers, "hidden": &m.Hidden, "ffn": &m.FFN, "heads": &m.Heads,
		"kv_heads": &m.KVHeads, "head_dim": &m.HeadDim, "vocab": &m.Vocab, "seq_len": &m.SeqLen,
		"experts": &m.Experts, "top_k": &m.TopK}
	bools := map[string]*bool{"gated_mlp": &m.GatedMLP, "bias": &m.Bias, "tied_embeddings": &m.TiedEmbeddings,
		"learned_positions": &m.LearnedPositions}
	err := d.fields(v, "model.", modelFields, func(key string, _, fv *yaml.Node) error {
		f := "model." + key
		var err error
		if p, ok := ints[key]; ok {
			*p, err = d.integer(fv, f)
			return err
		}
		if p, ok := bools[key]; ok {
			*p, err = d.boolean(fv, f)
			return err
		}
		switch key {
		case "name":
			m.Name, err = d.scalar(fv, f)
		case "norm":
			m.Norm, err = d.scalar(fv, f)
		case "source":
			m.Source, err = d.scalar(fv, f)
		case "params":
			m.Params, err = d.count(fv, f)
		case "active_params":
			m.ActiveParams, err = d.count(fv, f)
		}
		return err
	})
	if err != nil {
		return err
	}
	switch {
	case m.Name == "" && c.Model.Name == "":
		m.Name = "custom"
	case m.Name == "" || m.Name == c.Model.Name:
		m.Name = c.Model.Name + "(custom)"
	}
	c.Model.Shape = &m
	return nil
}

func (c *Config) decodeGPU(d dec, v *yaml.Node) error {
	if v.Kind == yaml.ScalarNode {
		c.GPU = GPUSpec{Name: v.Value}
		if _, ok := GPUPreset(v.Value); !ok {
			return d.errf(v, "gpu", "unknown gpu %q (presets: %s; or give {tflops, memory, hbm_bandwidth})", v.Value, strings.Join(GPUPresetNames(), ", "))
		}
		return nil
	}
	var g GPU
	if v.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(v.Content); i += 2 {
			if v.Content[i].Value == "base" {
				b := v.Content[i+1]
				p, ok := GPUPreset(b.Value)
				if !ok {
					return d.errf(b, "gpu.base", "unknown gpu %q (presets: %s)", b.Value, strings.Join(GPUPresetNames(), ", "))
				}
				g = p
				c.GPU.Name = b.Value
			}
		}
	}
	err := d.fields(v, "gpu.", gpuFields, func(key string, _, fv *yaml.Node) error {
		f := "gpu." + key
		var err error
		switch key {
		case "name":
			g.Name, err = d.scalar(fv, f)
		case "source":
			g.Source, err = d.scalar(fv, f)
		case "tflops":
			var t float64
			t, err = d.number(fv, f)
			g.PeakFLOPS = t * 1e12
		case "memory":
			g.Memory, err = d.size(fv, f)
		case "hbm_bandwidth":
			var s string
			if s, err = d.scalar(fv, f); err != nil {
				return err
			}
			bw, ok := parseBandwidth(s)
			if !ok {
				return d.errf(fv, f, "want bytes per second such as \"3.35TB/s\" or \"900GB/s\", got %q", s)
			}
			g.HBMBytesPerSec = bw
		}
		return err
	})
	if err != nil {
		return err
	}
	if g.Name == "" {
		g.Name = c.GPU.Name
		if g.Name == "" {
			g.Name = "custom"
		}
	}
	c.GPU.Spec = &g
	return nil
}

// parseBandwidth reads "3.35TB/s", "900GB/s" or "819.2GiB/s" as bytes per second.
func parseBandwidth(s string) (float64, bool) {
	t, ok := strings.CutSuffix(strings.TrimSpace(s), "/s")
	if !ok {
		return 0, false
	}
	for _, u := range []struct {
		suf  string
		mult float64
	}{{"TiB", float64(units.TiB)}, {"GiB", float64(units.GiB)}, {"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}} {
		if num, ok := strings.CutSuffix(t, u.suf); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
			if err != nil || v <= 0 || math.IsInf(v, 0) {
				return 0, false
			}
			return v * u.mult, true
		}
	}
	return 0, false
}
