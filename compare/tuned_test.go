package compare

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/units"
)

// tuneJSON is the part of a tune.json (written by fabricsim tune, docs/tune.md) that from_tune
// reads: the variant tuned and the winner's settings under their scenario keys.
const tuneJSON = `{
  "tool": "fabricsim tune",
  "scenario": "x.yaml",
  "variant": "roce-default",
  "best": {
    "evaluation": 12,
    "objective": 0.005,
    "fabric": {
      "dcqcn_rate_ai": "20Mbps",
      "dcqcn_min_dec_factor": "0.9",
      "ecn_kmin": "%s",
      "qps_per_conn": "4"
    }
  }
}
`

// A variant from a tune result is the tuned variant with the winner's settings, then the
// variant's own fabric: section on top; a bad value in tune.json is reported at its line there.
func TestFromTune(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("tune.json", fmt.Sprintf(tuneJSON, "100KB"))
	src := fmt.Sprintf(dense, "400Gbps", "gpudirect", "roce-default, {name: roce-autotuned, from_tune: tune.json}, {name: roce-auto-ecn, from_tune: tune.json, fabric: {ecn_kmin: 50KB}}")
	s, err := Load(write("s.yaml", src))
	if err != nil {
		t.Fatal(err)
	}
	def, auto, ecn := s.Variants[0], s.Variants[1], s.Variants[2]
	p := auto.Fabric.RoCE.DCQCNParams
	if p.AI != 20*units.Mbps || p.MinDecFactor != 0.9 || auto.Fabric.QPsPerConn != 4 || auto.Fabric.RoCE.Kmin != 100*units.KB {
		t.Errorf("autotuned variant: AI %v, min dec factor %g, QPs %d, Kmin %v; want 20Mbps, 0.9, 4, 100KB", p.AI, p.MinDecFactor, auto.Fabric.QPsPerConn, auto.Fabric.RoCE.Kmin)
	}
	// Everything the tune result does not set is roce-default's.
	if auto.Fabric.RoCE.Kmax != def.Fabric.RoCE.Kmax || p.IncreaseTimer != def.Fabric.RoCE.DCQCNParams.IncreaseTimer || auto.Base != "roce-default" {
		t.Errorf("autotuned variant lost roce-default's other settings: Kmax %v, T %v, base %q", auto.Fabric.RoCE.Kmax, p.IncreaseTimer, auto.Base)
	}
	if ecn.Fabric.RoCE.Kmin != 50*units.KB || ecn.Fabric.RoCE.DCQCNParams.AI != 20*units.Mbps {
		t.Errorf("fabric: over from_tune: Kmin %v AI %v, want 50KB and 20Mbps", ecn.Fabric.RoCE.Kmin, ecn.Fabric.RoCE.DCQCNParams.AI)
	}
	if !strings.Contains(auto.Label, "autotuned by fabricsim tune (tune.json, from roce-default)") {
		t.Errorf("label %q", auto.Label)
	}

	for _, c := range []struct{ name, json, want string }{
		{"bad value", fmt.Sprintf(tuneJSON, "100KBB"), filepath.Join(dir, "tune.json") + `:11:19: variants[roce-autotuned].fabric.ecn_kmin: size "100KBB"`},
		{"not a tune result", `{"best": {}}`, "s.yaml:13:60: variants[1].from_tune: tune.json is not a tune result (tune.json of fabricsim tune): it has no best.fabric settings"},
		{"missing", "", "s.yaml:13:60: variants[1].from_tune: cannot read tune result tune.json: no such file or directory"},
	} {
		os.Remove(filepath.Join(dir, "tune.json"))
		if c.json != "" {
			write("tune.json", c.json)
		}
		_, err := Load(write("s.yaml", fmt.Sprintf(dense, "400Gbps", "gpudirect", "roce-default, {name: roce-autotuned, from_tune: tune.json}")))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to hold %q", c.name, err, c.want)
		}
	}
}

// BuiltinOverrides gives roce-tuned's settings over roce-default, as the variants table lists
// them (docs/compare.md).
func TestBuiltinOverrides(t *testing.T) {
	base, fab, ok := BuiltinOverrides("roce-tuned")
	want := "[[dcqcn_cnp_interval 2us] [dcqcn_min_dec_factor 0.9] [dcqcn_decrease_period 2us] [dcqcn_rate_ai 10Mbps] [dcqcn_increase_timer 50us]]"
	if !ok || base != "roce-default" || fmt.Sprint(fab) != want {
		t.Errorf("roce-tuned: base %q %v %v", base, fab, ok)
	}
	if _, _, ok := BuiltinOverrides("roce-x"); ok {
		t.Error("roce-x is a built-in")
	}
}
