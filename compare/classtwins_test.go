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
// the same sizes, so half of its network classes are twins. Also where the flow backend runs the
// rings as prefixes (ringprefix.go: 40-rank rings, ringsAcrossSUs), whose twins extrapolate alike
// (samePrefixes), as the 16,384-GPU compare's 256-rank DP rings do: there one of the two pairs
// (25 MiB; 14,913 KiB does not divide into 40 equal blocks, so the reduce-scatter and the
// all-gather send blocks of other sizes in the same step) runs once, 12 simulations for 16.
func TestClassTwinsRunOnce(t *testing.T) {
	for _, c := range []struct {
		name backend.Name
		src  string
		runs [2]int // simulations with twins run once, and every class
	}{
		{backend.Packet, acrossLeaves, [2]int{12, 24}},
		{backend.Flow, acrossLeaves, [2]int{12, 24}},
		{backend.Flow, ringsAcrossSUs("twins", "ib-ndr, roce-default"), [2]int{12, 16}},
	} {
		name := c.name
		var out [2][]byte
		var sims [2]int
		for i, every := range []bool{false, true} {
			s, err := Parse([]byte(c.src), "test.yaml", "")
			if err != nil {
				t.Fatal(err)
			}
			s.Steps = 2
			s.Fidelity = FidelityClasses
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
		if sims != c.runs {
			t.Errorf("%s: %d simulations with twins run once, %d running every class: want %d, %d", name, sims[0], sims[1], c.runs[0], c.runs[1])
		}
		t.Logf("%s: %d simulations, %d running every class", name, sims[0], sims[1])
	}
}
