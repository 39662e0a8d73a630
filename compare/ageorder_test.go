package compare

import (
	"context"
	"math"
	"os"
	"testing"
)

// TestAgeOrderNearFineStep: the single jobs of compare/testdata/shared-ib-232.yaml on InfiniBand
// with 128 KiB VL buffers, where the flow backend's FIFO (a step's arrivals one segment, a partly
// sent segment in proportion) depends on the step (docs/flow.md, "Where the step is not a
// resolution"). With Options.FlowAgeOrder (a partly sent segment oldest first) the default 1 us
// step comes within 20 % of the fine-step limit, recorded with fixed steps of 125 ns (a
// diagnostic override): aggressor alone 17.77 ms, victim alone 5.300 ms (62.5 ns: 5.254 ms);
// measured 20.60 ms (+15.9 %) and 5.733 ms (+8.2 %), where the default proportional service gives
// 25.99 ms (+46 %) and 6.243 ms (+18 %). (The packet backend's 20.94 and 6.804 ms are above the
// flow model's limit: the core tier pooled as one switch, docs/jobs.md item 2.)
func TestAgeOrderNearFineStep(t *testing.T) {
	if testing.Short() {
		t.Skip("two flow-level runs of 232 GPUs")
	}
	for _, c := range []struct {
		file string
		fine float64 // ms, fixed 125 ns steps, proportional service
	}{
		{"testdata/shared-ib-232-aggressor.yaml", 17.77},
		{"testdata/shared-ib-232-victim.yaml", 5.300},
	} {
		data, err := os.ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Parse(data, c.file, "")
		if err != nil {
			t.Fatal(err)
		}
		r, err := Run(context.Background(), s, Options{FlowAgeOrder: true})
		if err != nil {
			t.Fatal(err)
		}
		got := r.Variants[0].Jobs[0].Alone * 1e3
		t.Logf("%s: %.3f ms with age order, fine-step limit %.3f ms (%+.1f %%)", c.file, got, c.fine, 100*(got/c.fine-1))
		if math.Abs(got/c.fine-1) > 0.20 {
			t.Errorf("%s: %.3f ms, want within 20 %% of the fine-step %.3f ms", c.file, got, c.fine)
		}
	}
}
