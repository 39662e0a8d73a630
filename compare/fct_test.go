package compare

import (
	"context"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/fabricsim/fabricsim/backend"
	"github.com/fabricsim/fabricsim/result"
	"github.com/fabricsim/fabricsim/units"
)

// The sketch's percentiles are the exact nearest-rank percentiles (result.Percentile) within
// its relative accuracy, on values spread over six decades, and merging two sketches gives the
// sketch of the union bin for bin.
func TestSketchPercentiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 7, 100, 10000} {
		var a, b, all sketch
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = math.Exp(rng.Float64()*14) * 1e-9 // 1 ns .. 1.2 ms
			all.add(xs[i], 1)
			if i%2 == 0 {
				a.add(xs[i], 1)
			} else {
				b.add(xs[i], 1)
			}
		}
		a.merge(&b, 1)
		sort.Float64s(xs)
		for _, p := range []float64{1, 50, 90, 99, 100} {
			want := result.Percentile(xs, p)
			if got := all.percentile(p); math.Abs(got-want) > fctAccuracy*want {
				t.Errorf("n=%d: p%g = %g, exact %g: beyond %g relative", n, p, got, want, fctAccuracy)
			}
			if got, m := all.percentile(p), a.percentile(p); got != m {
				t.Errorf("n=%d: p%g of the merged sketches %g, of one sketch %g", n, p, m, got)
			}
		}
	}
	var empty sketch
	if empty.percentile(50) != 0 {
		t.Error("an empty sketch's median is not 0")
	}
}

// A group's weight counts each of its messages that many times: the weighted percentiles are
// those of the list with every message repeated, a ring prefix's messages count steps/k each, a
// scaled-down send's FCT is stretched by its factor (its slowdown kept), and messages without
// bytes (NVLink delay nodes) or unfinished are left out.
func TestMessageStatsWeights(t *testing.T) {
	us := units.Microsecond
	msgs := []result.Message{
		{Bytes: 1, Start: 0, Finish: 10 * us, IdealFCT: 5 * us}, // group 0, weight 3
		{Bytes: 1, Start: 5 * us, Finish: 25 * us, IdealFCT: 5 * us},
		{Bytes: 0, Start: 0, Finish: 900 * us},                    // a delay node
		{Bytes: 1, Start: 0, Finish: 40 * us, IdealFCT: 10 * us},  // group 1, ring prefix 30/10
		{Bytes: 1, Start: 0, Finish: 0, IdealFCT: 10 * us},        // unfinished
		{Bytes: 1, Start: 0, Finish: 100 * us, IdealFCT: 50 * us}, // group 2, scaled by 4
	}
	ranges := [][2]int{{0, 3}, {3, 5}, {5, 6}}
	pre := []groupExtrap{nil, &ringPrefix{steps: 30, k: 10}, scaledSend(4)}
	st := messageStats(msgs, ranges, pre, msgWeights{group: []int{3, 1, 2}})
	// Expanded: FCT 10 us x3, 20 us x3, 40 us x3, 400 us x2 (11 messages);
	// slowdown 2 x3, 4 x3, 4 x3, 2 x2.
	var fct, slow []float64
	for _, x := range []struct {
		fct, slow float64
		n         int
	}{{10e-6, 2, 3}, {20e-6, 4, 3}, {40e-6, 4, 3}, {400e-6, 2, 2}} {
		for range x.n {
			fct, slow = append(fct, x.fct), append(slow, x.slow)
		}
	}
	sort.Float64s(fct)
	sort.Float64s(slow)
	if got := st.fct.total; math.Abs(got-11) > 1e-9 {
		t.Errorf("%g messages, want 11", got)
	}
	for _, p := range []float64{10, 50, 80, 99} {
		for _, c := range []struct {
			what string
			s    *sketch
			xs   []float64
		}{{"FCT", &st.fct, fct}, {"slowdown", &st.slow, slow}} {
			want := result.Percentile(c.xs, p)
			if got := c.s.percentile(p); math.Abs(got-want) > fctAccuracy*want {
				t.Errorf("%s p%g = %g, want %g", c.what, p, got, want)
			}
		}
	}
}

// Every backend reports the step's network messages, and counts them alike: run class by class
// (each group's messages weighted by its collectives per step) the analytic backend counts as
// many per step as the whole step's graph holds (fidelity full); the flow backend's ring
// prefixes (40-rank rings, 39 steps per pass, run as 16) count as the whole rings'. The flow
// backend's percentiles with prefixes stay within its 15 % FCT target of the whole rings'.
func TestMessagesPerStep(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	src := ringsAcrossSUs("msgs", "ib-ndr")
	s, err := Parse([]byte(src), "msgs.yaml", ".")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := s.Plan()
	if err != nil {
		t.Fatal(err)
	}
	g, _, _, err := s.compileStep(context.Background(), plan, false)
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, m := range g.Msgs {
		if m.Bytes > 0 {
			want++
		}
	}
	run := func(name backend.Name, mode FidelityMode, whole bool) *MessageStats {
		r, err := Run(context.Background(), s, Options{Backend: name, Fidelity: mode, WholeCollectives: whole})
		if err != nil {
			t.Fatal(err)
		}
		m := r.Variants[0].Messages
		if m == nil {
			t.Fatalf("%s %s: no message statistics", name, mode)
		}
		t.Logf("%s %s whole=%v: %+v", name, mode, whole, *m)
		return m
	}
	var got []*MessageStats
	for _, c := range []struct {
		name  backend.Name
		mode  FidelityMode
		whole bool
	}{{backend.Analytic, FidelityFull, false}, {backend.Analytic, FidelityClasses, false}, {backend.Flow, FidelityClasses, false}, {backend.Flow, FidelityClasses, true}} {
		m := run(c.name, c.mode, c.whole)
		got = append(got, m)
		if math.Abs(m.PerStep-float64(want)) > 1e-6*float64(want) {
			t.Errorf("%s %s (whole collectives %v): %.1f messages per step, the step's graph has %d", c.name, c.mode, c.whole, m.PerStep, want)
		}
	}
	pre, whole := got[2], got[3]
	for _, c := range [][3]any{{"FCT p50", pre.FCTP50, whole.FCTP50}, {"FCT p99", pre.FCTP99, whole.FCTP99}} {
		got, want := c[1].(float64), c[2].(float64)
		if math.Abs(got-want) > 0.15*want {
			t.Errorf("ring prefixes: message %s %.4g s, whole rings %.4g s: beyond 15 %%", c[0], got, want)
		}
	}
}
