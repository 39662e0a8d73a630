package flow

import "github.com/fabricsim/fabricsim/units"

// The credit step (docs/flow.md, "Where the step is not a resolution").
//
// A queue's arrivals in one step form one FIFO segment, and a segment its link cannot send whole
// is served in its bytes' arrival order within the step (fifo.serveWin), or, with
// Options.ProportionalFIFO, in proportion to its entries, so that every message in a partly sent
// segment stays unfinished until the whole segment is sent (fifo.serveShare). Where InfiniBand
// credits bind, the jobs' closed loops amplify the step's error with its length: late ring chunks
// make more messages concurrent at a NIC, the larger incast fills a bundle's pooled VL buffers
// with one host's bytes, and the bundle's other bytes wait (compare/testdata/shared-ib-232-
// aggressor.yaml, proportional FIFO: 27.31 ms at a fixed 1 us step, 18.93 at 250 ns, 18.37 at
// 125 ns; the packet backend 20.94). So once a credit throttle binds (its allowance below what
// its link sends in a step), the base step is the credit step for the rest of the run, where it
// was longer; the adaptive step doubles from it as from any base step (adaptive.go), and the
// allowances are rescaled to the shorter step (rescaleAllowances). For the rest of the run, not
// while a throttle binds: the step's error is in the FIFO also where credits do not bind at the
// moment (the victim job of the same reproducer, whose figures do not depend on the VL buffers),
// and the jobs' closed loop carries it on; the fine step only while one binds gave that victim
// 7.32 ms against 6.45 at a fixed 250 ns. A run where no throttle ever binds (credit-limited
// links alone, deep VL buffers) is the plain one step for step. Options.CoarseCreditStep keeps
// the base step (TestCreditStepMatchesFineStep compares them).

// CreditStep is the base step once InfiniBand credits bind, where the base step is longer, with
// queues that serve a segment in its bytes' arrival order (the default): the reproducers above
// come within 1.5 % of their fine-step figures with it, at half the steps of
// ProportionalCreditStep (docs/flow.md, "Where the step is not a resolution").
const CreditStep = 500 * units.Nanosecond

// ProportionalCreditStep is the credit step with Options.ProportionalFIFO: the reproducers above
// come within 5 % of their 125 ns figures with it (18.54 and 6.481 ms against 18.37 and 6.198),
// against +49 % (the aggressor) at 1 us; 500 ns is not enough there (22.34 ms).
const ProportionalCreditStep = 250 * units.Nanosecond

// creditStepLen is the credit step of this run's FIFO service.
func (e *engine) creditStepLen() units.Time {
	if e.subStep {
		return CreditStep
	}
	return ProportionalCreditStep
}

// creditNext makes the credit step the base step, for the rest of the run, once a credit throttle
// has bound.
func (e *engine) creditNext() {
	if e.creditStep > 0 && e.fc.anyBinding {
		e.step, e.creditStep = e.creditStep, 0
		e.cur = min(e.cur, e.step)
	}
}
