package compare

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/fabricsim/fabricsim/backend"
	"github.com/fabricsim/fabricsim/msggraph"
)

// TestSameClassRunFields: sameClassRun compares every field of msggraph.Message that the
// simulation reads (all but Tag): a field added to Message must be added there too.
func TestSameClassRunFields(t *testing.T) {
	if n := reflect.TypeFor[msggraph.Message]().NumField(); n != 9 {
		t.Errorf("msggraph.Message has %d fields, sameClassRun compares 8 and the tag (9): compare the new one too", n)
	}
}

// TestClassTwinsRunOnce: in class fidelity a ring reduce-scatter and the all-gather of the
// same size on the same groups send the same messages, so the second takes the first's run
// (sameAs in Run). The compare must be the same bytes as running every class
// (Options.EveryClass), on the packet and the flow backend, with fewer simulations: the dense
// model's gradient buckets are reduce-scattered and their parameters all-gathered in buckets of
// the same sizes, so half of its network classes are twins.
func TestClassTwinsRunOnce(t *testing.T) {
	for _, name := range []backend.Name{backend.Packet, backend.Flow} {
		var out [2][]byte
		var sims [2]int
		for i, every := range []bool{false, true} {
			s, err := Parse([]byte(acrossLeaves), "test.yaml", "")
			if err != nil {
				t.Fatal(err)
			}
			s.Steps = 2
			r, err := Run(context.Background(), s, Options{Backend: name, EveryClass: every, RunEveryStep: true,
				Progress: func(done, total int) { sims[i] = total }})
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range r.Variants {
				v.SimWall = 0
			}
			out[i], _ = json.Marshal(r.Variants)
		}
		if !bytes.Equal(out[0], out[1]) {
			t.Errorf("%s: the compare with twin classes run once differs from running every class", name)
		}
		if 2*sims[0] != sims[1] {
			t.Errorf("%s: %d simulations with twins run once, %d running every class: want half", name, sims[0], sims[1])
		}
		t.Logf("%s: %d simulations, %d running every class", name, sims[0], sims[1])
	}
}
