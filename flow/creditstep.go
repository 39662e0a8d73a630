package flow

import "github.com/fabricsim/fabricsim/units"

// The credit step (docs/flow.md, "Where the step is not a resolution").
//
// A queue's arrivals in one step form one FIFO segment, and a segment its link cannot send whole
// is served in proportion to its entries, so every message in a partly sent segment stays
// unfinished until the whole segment is sent (fifo.serve). Where InfiniBand credits bind, the
// jobs' closed loops amplify that error with the step's length: late ring chunks make more
// messages concurrent at a NIC, the larger incast fills a bundle's pooled VL buffers with one
// host's bytes, and the bundle's other bytes wait (compare/testdata/shared-ib-232-aggressor.yaml:
// 27.31 ms at a fixed 1 us step, 18.93 at 250 ns, 18.37 at 125 ns; the packet backend 20.94).
// So while any credit throttle binds, the next step is CreditStep (where the base step is
// longer); once none binds, the adaptive step returns to the base (adaptive.go) and doubles
// from there. The step's length does not matter elsewhere beyond its resolution (the 2,048-GPU
// PFC class; adaptive.go), and these steps are taken only while credits bind: where they never
// do (credit-limited links alone, deep VL buffers) the run is step for step the plain one.
// Options.CoarseCreditStep keeps the base step (TestCreditStepMatchesFineStep compares them).

// CreditStep is the step while InfiniBand credits bind, where the base step is longer: the
// reproducers above come within 3-4 % of their 125 ns figures at 250 ns, against +49 % (the
// aggressor) at 1 us.
const CreditStep = 250 * units.Nanosecond

// creditNext makes the credit step the base step, for the rest of the run, once a credit throttle
// has bound.
func (e *engine) creditNext() {
	if e.creditStep > 0 && e.fc.anyBinding {
		e.step, e.creditStep = e.creditStep, 0
		e.cur = min(e.cur, e.step)
	}
}
