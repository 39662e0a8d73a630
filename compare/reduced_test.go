package compare

import (
	"math"
	"testing"
)

// checkReducedMatchesWhole compares a compare run reduced (ring prefixes, scaled-down sends)
// with the same compare run whole, variant by variant: step time within 2 % and the collective
// p50/p99 within 10 % (the tolerance for collective completion times). what names the
// reduction in messages ("prefix", "scaled").
func checkReducedMatchesWhole(t *testing.T, what string, reduced, whole *Result) {
	t.Helper()
	for i, v := range whole.Variants {
		p := reduced.Variants[i]
		for _, c := range []struct {
			what      string
			got, want float64
			tol       float64
		}{
			{"step time", p.Steps[0].StepTime, v.Steps[0].StepTime, 0.02},
			{"collective p50", p.CollP50, v.CollP50, 0.10},
			{"collective p99", p.CollP99, v.CollP99, 0.10},
		} {
			if math.Abs(c.got-c.want) > c.tol*c.want {
				t.Errorf("%s %s: %s %.6g, whole %.6g: more than %g %% apart", v.Variant.Name, c.what, what, c.got, c.want, 100*c.tol)
			} else {
				t.Logf("%s %s: %s %.6g, whole %.6g (%+.3f %%)", v.Variant.Name, c.what, what, c.got, c.want, 100*(c.got/c.want-1))
			}
		}
	}
}
