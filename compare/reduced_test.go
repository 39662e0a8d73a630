package compare

import (
	"context"
	"math"
	"testing"

	"github.com/fabricsim/fabricsim/backend"
)

// checkReducedMatchesWhole compares a compare run reduced (ring prefixes, scaled-down sends)
// with the same compare run whole, variant by variant: step time within 2 % and the collective
// p50/p99 within 10 % (the tolerance for collective completion times). what names the
// reduction in messages ("prefix", "scaled").
func checkReducedMatchesWhole(t *testing.T, what string, reduced, whole *Result) {
	t.Helper()
	checkNearWhole(t, what, reduced, whole, [3]float64{0.02, 0.10, 0.10})
}

// checkNearWhole compares reduced with whole variant by variant: step time, collective p50 and
// p99 each within its fraction tol of the whole run's.
func checkNearWhole(t *testing.T, what string, reduced, whole *Result, tol [3]float64) {
	t.Helper()
	for i, v := range whole.Variants {
		p := reduced.Variants[i]
		for k, c := range []struct {
			what      string
			got, want float64
		}{
			{"step time", p.Steps[0].StepTime, v.Steps[0].StepTime},
			{"collective p50", p.CollP50, v.CollP50},
			{"collective p99", p.CollP99, v.CollP99},
		} {
			if math.Abs(c.got-c.want) > tol[k]*c.want {
				t.Errorf("%s %s: %s %.6g, whole %.6g: more than %g %% apart", v.Variant.Name, c.what, what, c.got, c.want, 100*tol[k])
			} else {
				t.Logf("%s %s: %s %.6g, whole %.6g (%+.3f %%)", v.Variant.Name, c.what, what, c.got, c.want, 100*(c.got/c.want-1))
			}
		}
	}
}

// flowRunner runs scenario s on the flow backend with the options it is given.
func flowRunner(t *testing.T, s *Scenario) func(Options) *Result {
	return func(opt Options) *Result {
		t.Helper()
		opt.Backend = backend.Flow
		r, err := Run(context.Background(), s, opt)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
}
