package flow_test

import (
	"math"
	"testing"

	. "github.com/fabricsim/fabricsim/flow"
)

// TestSubStepMatchesFineStep runs ib-cc-victim (validation row 15: a 3:1 incast on EDR whose
// credits bind, and an innocent flow sharing the congested leaf's uplink) with queues that serve
// a segment in its bytes' arrival order within their step (the default): with its credit step
// (CreditStep) and with every step at 125 ns, in both cases with the bytes checked
// (Options.Check), against the plain FIFO (Options.ProportionalFIFO) at 125 ns. Arrival order is
// a finer FIFO, not another model: its fine-step run is the proportional one's (completion and the innocent flow's FCT within 1/128 of the proportional
// FIFO at 125 ns; at this commit 2,111.8 and 505.8 us against 2,111.8 and 507.4), and its credit
// step's run within 5 % of its fine-step run (2,136.4 and 497.8 us: +1.2 and -1.6 %; the plain
// 1 us stepping with arrival order 2,142.1 and 484.2, without it 2,145.8 and 485.8: here the
// step's error is not the FIFO's).
func TestSubStepMatchesFineStep(t *testing.T) {
	run := exampleRunner(t, "ib-cc-victim.yaml")
	const fine = 125_000 // ps
	sub := run(Options{})
	subFine := run(Options{Step: fine, FixedStep: true})
	propFine := run(Options{ProportionalFIFO: true, Step: fine, FixedStep: true})
	fct := innocentFCT
	for _, c := range []struct {
		what                   string
		sub, subFine, propFine float64
	}{
		{"completion", lastFinish(sub).Seconds() * 1e6, lastFinish(subFine).Seconds() * 1e6, lastFinish(propFine).Seconds() * 1e6},
		{"innocent flow's FCT", fct(sub), fct(subFine), fct(propFine)},
	} {
		t.Logf("%s: arrival order %.1f us (every step 125 ns: %.1f us), proportional every step 125 ns %.1f us", c.what, c.sub, c.subFine, c.propFine)
		if math.Abs(c.sub/c.subFine-1) > 0.05 {
			t.Errorf("%s: arrival order %.1f us, every step 125 ns %.1f us: want within 5 %%", c.what, c.sub, c.subFine)
		}
		if math.Abs(c.subFine/c.propFine-1) > 1.0/128 {
			t.Errorf("%s: arrival order every step 125 ns %.1f us, proportional %.1f us: want within 1/128", c.what, c.subFine, c.propFine)
		}
	}
}
