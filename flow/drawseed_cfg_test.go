package flow_test

import (
	"reflect"
	"testing"

	"github.com/fabricsim/fabricsim/flow"
	"github.com/fabricsim/fabricsim/result"
)

// TestConfigDrawSeed: the fabric's DrawSeed (fabric.Config.DrawSeed, which the packet backend
// reads) seeds the flow backend's draws as Options.DrawSeed does, and Options.DrawSeed wins
// where both are set: the same draws, so the same messages' times to the picosecond.
func TestConfigDrawSeed(t *testing.T) {
	run := func(cfgSeed, optSeed uint64) []result.Message {
		g, cfg, mg := loadExample(t, "roce-dcqcn-permutation.yaml")
		cfg.DrawSeed = cfgSeed
		r, err := flow.Run(g, nil, cfg, mg, flow.Options{DrawSeed: optSeed})
		if err != nil {
			t.Fatal(err)
		}
		return r.Messages
	}
	byOpt, byCfg, both := run(0, 7), run(7, 0), run(3, 7)
	if !reflect.DeepEqual(byOpt, byCfg) {
		t.Error("fabric.Config.DrawSeed 7 and Options.DrawSeed 7 give different runs")
	}
	if !reflect.DeepEqual(byOpt, both) {
		t.Error("Options.DrawSeed 7 with fabric.Config.DrawSeed 3 differs from Options.DrawSeed 7 alone")
	}
	if reflect.DeepEqual(byOpt, run(0, 8)) {
		t.Error("draw seeds 7 and 8 give the same DCQCN run: the draws do not reach the marks")
	}
}
