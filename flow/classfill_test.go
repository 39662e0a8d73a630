package flow

import (
	"math"
	"testing"
)

// TestClassFill: a NIC's link shared among flows of two classes, each class at most its
// allowance (the next hop's credits or PFC), as the packet NIC's round robin skips a blocked
// class: max-min over the flows, a held class's flows max-min within its allowance, the rest to
// the others. The grants are worked out by hand (bytes in a step).
func TestClassFill(t *testing.T) {
	inf := math.Inf(1)
	cases := []struct {
		name   string
		cls    []int32
		want   []float64 // demands in, grants out
		allow  [2]float64
		capB   float64
		grants []float64
	}{
		// No allowance binds: 12 over three flows, 4 each.
		{"free", []int32{0, 0, 1}, []float64{10, 10, 10}, [2]float64{inf, inf}, 12, []float64{4, 4, 4}},
		// Class 0 held to 4 (2 + 2): class 1's flow takes the other 8, not 4 (what scaling class
		// 0's 8 down to 4 would have left unused).
		{"held", []int32{0, 0, 1}, []float64{10, 10, 10}, [2]float64{4, inf}, 12, []float64{2, 2, 8}},
		// Within a held class the flows share max-min: the small flow keeps its 1, the other
		// takes 3 of the allowance 4 (scaling in proportion would give 0.4 and 3.6 of 1 and 9).
		{"held max-min", []int32{0, 0, 1}, []float64{1, 9, 10}, [2]float64{4, inf}, 12, []float64{1, 3, 8}},
		// One class only: max-min within min(capB, allowance) = 6.
		{"one class", []int32{1, 1}, []float64{1, 10}, [2]float64{inf, 6}, 12, []float64{1, 5}},
		// Both held: each class its allowance.
		{"both held", []int32{0, 1, 1}, []float64{10, 10, 10}, [2]float64{3, 5}, 12, []float64{3, 2.5, 2.5}},
	}
	for _, c := range cases {
		e := &engine{nc: 2, flows: make([]flowState, len(c.cls)), rc: make([]classState, 2)}
		flows := make([]int32, len(c.cls))
		d := make([]fill, len(c.cls))
		for k, cl := range c.cls {
			e.flows[k].cls = cl
			flows[k] = int32(k)
			d[k] = fill{d: c.want[k], i: int32(k)}
		}
		e.rc[0].allow, e.rc[1].allow = c.allow[0], c.allow[1]
		e.classFill(0, c.capB, flows, d)
		got := make([]float64, len(d))
		for _, x := range d {
			got[x.i] = x.d
		}
		for k := range got {
			if math.Abs(got[k]-c.grants[k]) > 1e-12 {
				t.Errorf("%s: grants %v, want %v", c.name, got, c.grants)
				break
			}
		}
	}
}
