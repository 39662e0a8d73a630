package training

import (
	"fmt"
	"sort"
	"strings"

	"github.com/fabricsim/fabricsim/units"
)

// GPU is what the step model needs to know about an accelerator.
type GPU struct {
	Name string `yaml:"name" json:"name"`
	// PeakFLOPS is dense (no sparsity) BF16 tensor-core throughput, FLOP/s.
	PeakFLOPS float64 `yaml:"-" json:"peak_flops"`
	// Memory is HBM capacity as the datasheet states it (decimal GB).
	Memory units.Size `yaml:"-" json:"memory"`
	// HBMBytesPerSec is HBM bandwidth, bytes/s (the optimizer step is bound by it).
	HBMBytesPerSec float64 `yaml:"-" json:"hbm_bytes_per_sec"`
	Source         string  `yaml:"source" json:"source,omitempty"`
}

var gpuPresets = map[string]GPU{
	// NVIDIA H100 Tensor Core GPU datasheet, SXM5: BF16 1,979 TFLOPS with sparsity = 989 dense;
	// 80 GB HBM3 at 3.35 TB/s.
	"h100": {Name: "h100", PeakFLOPS: 989e12, Memory: 80 * units.GB, HBMBytesPerSec: 3.35e12,
		Source: "NVIDIA H100 datasheet (SXM5)"},
	// NVIDIA H200 datasheet (SXM): same Hopper compute as H100; 141 GB HBM3e at 4.8 TB/s.
	"h200": {Name: "h200", PeakFLOPS: 989e12, Memory: 141 * units.GB, HBMBytesPerSec: 4.8e12,
		Source: "NVIDIA H200 datasheet (SXM)"},
	// NVIDIA HGX B200 specifications, per GPU at 1,000 W: BF16 4.5 PFLOPS with sparsity = 2.25
	// dense; 192 GB HBM3e at 8 TB/s (Blackwell launch figures).
	"b200": {Name: "b200", PeakFLOPS: 2250e12, Memory: 192 * units.GB, HBMBytesPerSec: 8e12,
		Source: "NVIDIA HGX B200 specifications (per GPU, 1,000 W)"},
}

// GPUPreset returns a copy of the named GPU.
func GPUPreset(name string) (GPU, bool) {
	g, ok := gpuPresets[strings.ToLower(name)]
	return g, ok
}

// GPUPresetNames lists the GPU presets.
func GPUPresetNames() []string {
	var out []string
	for k := range gpuPresets {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Validate checks the GPU's numbers are usable.
func (g *GPU) Validate() error {
	if g.PeakFLOPS <= 0 || g.Memory <= 0 || g.HBMBytesPerSec <= 0 {
		return fmt.Errorf("gpu %s: tflops, memory and hbm_bandwidth must all be positive (got %g TFLOPS, %s, %g TB/s)",
			g.Name, g.PeakFLOPS/1e12, g.Memory, g.HBMBytesPerSec/1e12)
	}
	return nil
}
