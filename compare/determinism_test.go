package compare

import (
	"bytes"
	"context"
	"testing"

	"github.com/fabricsim/fabricsim/examples"
)

// Same scenario and seed, same compare.json bytes, on the flow backend: with one worker, with
// four, and again with four (the order in which workers finish differs between runs). The
// scenario is the MoE step over 3:1 leaves (examples/compare-moe-3to1.yaml), whose RoCE
// variants congest: DCQCN draws ECN marks from each flow's random stream, PFC pauses, and the
// symmetry reduction stops and reruns plain where a mark reaches a representative; any of
// these depending on the schedule of the workers would show here.
func TestFlowCompareJSONDeterministic(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the MoE step on four variants three times")
	}
	data, err := examples.Read("compare-moe-3to1.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var out [3][]byte
	for k, w := range []int{1, 4, 4} {
		s, err := Parse(data, "compare-moe-3to1.yaml", "../examples")
		if err != nil {
			t.Fatal(err)
		}
		r, err := Run(context.Background(), s, Options{Backend: "flow", Workers: w})
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := r.WriteJSON(&b); err != nil {
			t.Fatal(err)
		}
		out[k] = b.Bytes()
		if k == 0 {
			var marks, pauses float64
			for _, v := range r.Variants {
				marks += v.ECNMarks
				pauses += v.Pauses
			}
			if marks == 0 || pauses == 0 {
				t.Fatalf("%.0f ECN marks and %.0f pauses per step: the scenario no longer congests, and the test would not cover DCQCN's and PFC's paths", marks, pauses)
			}
		}
	}
	if !bytes.Equal(out[0], out[1]) {
		t.Error("compare.json differs between 1 and 4 workers")
	}
	if !bytes.Equal(out[1], out[2]) {
		t.Error("compare.json differs between two runs with 4 workers")
	}
}
