package compare

import (
	"fmt"
	"math"
	"testing"
)

func sum(xs []float64) (s float64) {
	for _, x := range xs {
		s += x
	}
	return s
}

// TestTimelineMeasured: the pause, credit-stall and mark timelines of the congested MoE case
// (3:1 leaves) are the packet runs' measured bins placed on the step. In fidelity full each
// bin holds whole pause frames and marks (counts, not shares of a total) and the bins sum to
// the step's counters exactly; in fidelity classes they sum to the counters within rounding.
// Something must happen in each series for the test to mean anything.
func TestTimelineMeasured(t *testing.T) {
	src := fmt.Sprintf(moe, 3.0, "ib-ndr, roce-default, roce-pfc-only")
	var pauses, stalls, marks float64 // over both modes (classes runs here have no pause)
	for _, mode := range []FidelityMode{FidelityFull, FidelityClasses} {
		r := run(t, src, Options{Fidelity: mode})
		for _, v := range r.Variants {
			tl := v.Timeline
			if tl == nil || len(tl.Pauses) == 0 || len(tl.Pauses) > timelineBins {
				t.Fatalf("%s %s: timeline %+v", mode, v.Variant.Name, tl)
			}
			// One step: the per-step counters are step 1's.
			for _, c := range []struct {
				name      string
				bins      []float64
				total     float64
				wholeBins bool
			}{
				{"pauses", tl.Pauses, v.Pauses, true},
				{"stall", tl.Stalls, v.CreditStall, false},
				{"marks", tl.Marks, v.ECNMarks, true},
			} {
				got := sum(c.bins)
				tol := 1e-9 * math.Max(1, c.total)
				if c.name == "stall" {
					tol = 1e-15 + 1e-9*c.total // seconds, summed from picoseconds
				}
				if math.Abs(got-c.total) > tol {
					t.Errorf("%s %s: %s bins sum to %g, the step's counter is %g", mode, v.Variant.Name, c.name, got, c.total)
				}
				if mode == FidelityFull && c.wholeBins {
					for k, x := range c.bins {
						if x != math.Trunc(x) {
							t.Errorf("%s %s: %s bin %d holds %g, not a count", mode, v.Variant.Name, c.name, k, x)
							break
						}
					}
				}
			}
			pauses += v.Pauses
			stalls += v.CreditStall
			marks += v.ECNMarks
		}
	}
	if pauses == 0 || stalls == 0 || marks == 0 {
		t.Errorf("pauses %g, stall %g s, marks %g: the case does not exercise every series", pauses, stalls, marks)
	}
}
