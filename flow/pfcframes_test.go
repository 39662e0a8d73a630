package flow

import (
	"math"
	"testing"

	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

// TestPauseCounterSaw drives one port's pause counter with the paused time of a congested
// ingress cut into stretches of 0.5 to 4 us (the steps) and checks the frames against the saw
// worked out by hand: a pause lasts tp paused seconds (the counter falling one amplitude), sends
// XOFF at its start, a refresh at every r seconds it holds and XON at its end.
func TestPauseCounterSaw(t *testing.T) {
	const us = 1e-6
	type stretch struct{ paused, tp float64 } // paused seconds; a pause's paused seconds (+Inf: no drain)
	for _, c := range []struct {
		name string
		runs []stretch
		want pauseFrames
	}{
		// 12 whole pauses of 8 us and half of a 13th, shorter than the 42 us refresh.
		{"short pauses", []stretch{{100 * us, 8 * us}}, pauseFrames{xoff: 13, xon: 12}},
		// Pauses of 100 us refresh at 42 and 84 us; the third, 50 us so far, at 42 us.
		{"long pauses", []stretch{{250 * us, 100 * us}}, pauseFrames{xoff: 3, refresh: 5, xon: 2}},
		// A counter that does not drain holds one pause: a refresh every 42 us.
		{"held", []stretch{{200 * us, math.Inf(1)}}, pauseFrames{xoff: 1, refresh: 4}},
		// 2.5 pauses of 8 us; the drain stops for 100 us (the third pause holds from 4 to 104 us:
		// refreshes at 42 and 84); it drains again: the third closes 4 us later, two whole pauses
		// and 1 us of a sixth follow.
		{"drain stops", []stretch{{20 * us, 8 * us}, {100 * us, math.Inf(1)}, {21 * us, 8 * us}}, pauseFrames{xoff: 6, refresh: 2, xon: 5}},
	} {
		for _, step := range []float64{0.5 * us, 1 * us, 2 * us, 4 * us, 3.3 * us} {
			var p pauseCounter
			var got pauseFrames
			for _, run := range c.runs {
				for left := run.paused; left > 1e-15; left -= step {
					s := min(step, left)
					f := p.advance(s, s/run.tp, 42*us)
					got.xoff, got.refresh, got.xon = got.xoff+f.xoff, got.refresh+f.refresh, got.xon+f.xon
				}
			}
			if got != c.want {
				t.Errorf("%s, stretches of %.1f us: %+v, want %+v", c.name, step/us, got, c.want)
			}
		}
	}
	var p pauseCounter
	p.advance(3*us, 0.1, 42*us)
	if f := p.release(); f != (pauseFrames{xon: 1}) || p.open() {
		t.Errorf("release of an open pause: %+v, open %v; want one XON", f, p.open())
	}
	if f := p.release(); f != (pauseFrames{}) {
		t.Errorf("release of no pause: %+v", f)
	}
}

// TestPauseFramesIndependentOfStep runs a congested PFC class (BenchmarkPipelineClass's, at
// 1,024 GPUs with PFC alone: ECMP collisions across the core, throttles near their XOFF) with
// every step at 0.5, 1, 2 and 4 us and with the adaptive step. The PAUSE frames (XOFF with
// refreshes) and XON frames stay within 5 % of the 1 us run's (measured: -2.4 to +2.6 %), as
// the paused time they follow does (within 2 %, TestAdaptiveMatchesFixed); counted at each
// throttle's transition they went from 1,930 at 0.5 us to 1,130 at 4 us (and 1,116 adaptive).
// With the proportional FIFO (ProportionalFIFO), which the figures are of: with arrival order
// (the default) the adaptive step's XOFF and XON frames are 6.3 % above the 1 us run's (7,066
// against 6,650), beyond the 5 %.
func TestPauseFramesIndependentOfStep(t *testing.T) {
	g, mg, c := pipelineClass(t, 128, 3)
	c.RoCE.DCQCN, c.RoCE.ECN = false, false
	rt, err := topo.ComputeRoutes(g)
	if err != nil {
		t.Fatal(err)
	}
	run := func(step units.Time) (xoff, xon float64) {
		r, err := Run(g, rt, c, mg, Options{Step: step, FixedStep: step != 0, ProportionalFIFO: true})
		if err != nil {
			t.Fatal(err)
		}
		return r.Counters["pfc_pause_frames_sent"], r.Counters["pfc_resume_frames_sent"]
	}
	xoff1, xon1 := run(units.Microsecond)
	if xoff1 < 1000 {
		t.Fatalf("%v PAUSE frames at 1 us: the class no longer congests", xoff1)
	}
	for _, step := range []units.Time{500 * units.Nanosecond, 2 * units.Microsecond, 4 * units.Microsecond, 0} {
		xoff, xon := run(step)
		what := "step " + step.String()
		if step == 0 {
			what = "adaptive step"
		}
		if math.Abs(xoff/xoff1-1) > 0.05 || math.Abs(xon/xon1-1) > 0.05 {
			t.Errorf("%s: %v XOFF and %v XON frames, at 1 us %v and %v: beyond 5 %%", what, xoff, xon, xoff1, xon1)
		}
	}
}
