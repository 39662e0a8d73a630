package training

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/fabricsim/fabricsim/units"
	"github.com/fabricsim/fabricsim/yamlstrict"
)

// Load decodes a `workload:` mapping strictly (package yamlstrict): unknown keys, wrong types
// and bad values are errors naming file:line:column and the field (file may be empty). Load
// applies no defaults and does not validate; call Defaults and Validate (or Build) next.
//
// model: takes a preset name or a mapping, e.g. {base: llama3-8b, layers: 16} or a full shape;
// gpu: a preset name or {base: h100, tflops: 989, memory: 80GB, hbm_bandwidth: 3.35TB/s}.
func Load(node *yaml.Node, file string) (*Config, error) {
	c := &Config{}
	if err := c.DecodeYAML(yamlstrict.NewDecoder(file), node, "workload"); err != nil {
		return nil, err
	}
	return c, nil
}

// DecodeYAML decodes the workload at field path with d, the decoder of the file it is in, which
// later validation messages use for the fields' positions. A file format with a `workload:`
// key decodes it by declaring a Config (or *Config) field.
func (c *Config) DecodeYAML(d *yamlstrict.Decoder, n *yaml.Node, path string) error {
	type plain Config // the fields, without this method
	*c = Config{}
	if err := d.Decode(n, reflect.ValueOf((*plain)(c)).Elem(), path); err != nil {
		return err
	}
	c.d, c.path = d, path
	return nil
}

// UnmarshalYAML lets a struct decoded by yaml.v3 embed Config, with the strict checks and
// positions of Load (without a file name).
func (c *Config) UnmarshalYAML(node *yaml.Node) error {
	return c.DecodeYAML(yamlstrict.NewDecoder(""), node, "workload")
}

// SetFile names the YAML file in later validation messages (for configs decoded through
// UnmarshalYAML).
func (c *Config) SetFile(file string) {
	if c.d != nil {
		c.d.File = file
	}
}

// DecodeYAML reads a model preset's name or a shape mapping; a shape's `base` preset applies
// first, wherever it is written, so the other keys override it.
func (s *ModelSpec) DecodeYAML(d *yamlstrict.Decoder, n *yaml.Node, path string) error {
	if n.Kind == yaml.ScalarNode {
		if _, ok := Preset(n.Value); !ok {
			return d.ErrAt(n, path, "unknown model %q (presets: %s; or give a shape mapping)", n.Value, strings.Join(PresetNames(), ", "))
		}
		*s = ModelSpec{Name: n.Value}
		return nil
	}
	var shape struct {
		Base  string `yaml:"base"`
		Model `yaml:",inline"`
	}
	shape.Norm = RMSNorm
	base := ""
	if b := yamlstrict.Lookup(n, "base"); b != nil {
		p, ok := Preset(b.Value)
		if !ok {
			return d.ErrAt(b, path+".base", "unknown model %q (presets: %s)", b.Value, strings.Join(PresetNames(), ", "))
		}
		shape.Model = p
		shape.Params, shape.ActiveParams = 0, 0 // a changed shape no longer has the published count
		base = b.Value
	}
	if err := d.Decode(n, reflect.ValueOf(&shape).Elem(), path); err != nil {
		return err
	}
	m := shape.Model
	switch {
	case m.Name == "" && base == "":
		m.Name = "custom"
	case m.Name == "" || m.Name == base:
		m.Name = base + "(custom)"
	}
	*s = ModelSpec{Name: base, Shape: &m}
	return nil
}

// DecodeYAML reads a GPU preset's name or a mapping of its numbers over an optional `base`
// preset: tflops (dense BF16, 10^12 FLOP/s), memory, hbm_bandwidth ("3.35TB/s").
func (s *GPUSpec) DecodeYAML(d *yamlstrict.Decoder, n *yaml.Node, path string) error {
	if n.Kind == yaml.ScalarNode {
		if _, ok := GPUPreset(n.Value); !ok {
			return d.ErrAt(n, path, "unknown gpu %q (presets: %s; or give {tflops, memory, hbm_bandwidth})", n.Value, strings.Join(GPUPresetNames(), ", "))
		}
		*s = GPUSpec{Name: n.Value}
		return nil
	}
	var g GPU
	base := ""
	if b := yamlstrict.Lookup(n, "base"); b != nil {
		p, ok := GPUPreset(b.Value)
		if !ok {
			return d.ErrAt(b, path+".base", "unknown gpu %q (presets: %s)", b.Value, strings.Join(GPUPresetNames(), ", "))
		}
		g, base = p, b.Value
	}
	var in struct {
		Base         string     `yaml:"base"`
		Name         string     `yaml:"name"`
		TFLOPS       float64    `yaml:"tflops"`
		Memory       units.Size `yaml:"memory"`
		HBMBandwidth bandwidth  `yaml:"hbm_bandwidth"`
		Source       string     `yaml:"source"`
	}
	if err := d.Decode(n, reflect.ValueOf(&in).Elem(), path); err != nil {
		return err
	}
	for _, f := range []struct {
		key string
		set func()
	}{
		{"name", func() { g.Name = in.Name }},
		{"source", func() { g.Source = in.Source }},
		{"tflops", func() { g.PeakFLOPS = in.TFLOPS * 1e12 }},
		{"memory", func() { g.Memory = in.Memory }},
		{"hbm_bandwidth", func() { g.HBMBytesPerSec = float64(in.HBMBandwidth) }},
	} {
		if d.Has(path + "." + f.key) {
			f.set()
		}
	}
	if g.Name == "" {
		g.Name = base
		if g.Name == "" {
			g.Name = "custom"
		}
	}
	*s = GPUSpec{Name: base, Spec: &g}
	return nil
}

// bandwidth is bytes per second as written in a workload: "3.35TB/s", "900GB/s", "819.2GiB/s".
type bandwidth float64

func (b *bandwidth) UnmarshalText(text []byte) error {
	v, ok := parseBandwidth(string(text))
	if !ok {
		return fmt.Errorf("want bytes per second such as \"3.35TB/s\" or \"900GB/s\", got %q", text)
	}
	*b = bandwidth(v)
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
