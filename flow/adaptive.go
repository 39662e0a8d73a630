package flow

import "math"

// The adaptive step (docs/flow.md, "Adaptive step").
//
// Options.Step is the base step: the finest resolution, and the step used whenever a mechanism
// whose outcome depends on the step's length is at work. Which mechanisms those are was
// measured on BenchmarkPipelineClass's 2,048-GPU class (docs/flow.md): with PFC alone, fixed
// steps of 1, 2 and 4 us give the same completion (2,744.0 us) and mean FCTs within 0.4 %, so
// queues, FIFO service, PFC and credit throttles and the NICs' round robins do not depend on
// the step beyond its resolution of their transitions; with DCQCN, 2 and 4 us steps move the
// slowest message by -7 to -11 % (four draw seeds), 0.25 and 0.5 us steps by +1 to +8 %:
// DCQCN's marks, cuts and recoveries do. So after each step the next one doubles, up to
// MaxStep, while
//   - congestion control is at rest: no hot flow away from its line rate or with a CNP or BECN
//     under way (congestionControl.afterStep), and no queue at the depth where it marks (ECN's
//     Kmin with DCQCN, IB CC's threshold) or projected, at its net fill rate of the step, to
//     reach it within the next step;
//   - the step is at most 1/128 of the time the youngest flow has been running (stepPerAge);
//   - nothing is lossy (tail drop, go-back-N) and no fault is planned;
// and falls back to the base step as soon as one of these fails (and after a jump or a time
// with no hot flow). Events within a longer step (a message's start or end, a quiet flow's end)
// happen at their own times, as within a base step: a flow that starts within one sends for its
// rest, at most MaxStep, before the age rule returns the step to the base; the PFC and credit
// allowances, computed for a step as long as the last one, are rescaled to the new length
// (rescaleAllowances).
//
// Error bound: what a longer step coarsens is the resolution of transitions (a queue forming or
// emptying, a throttle starting or stopping, a NIC's shares changing when a flow finishes) and
// the order within a queue (the bytes that arrive in one step form one segment, served in
// proportion): a byte's departure from each queue of its path is resolved to the step it falls
// in. With the step at most 1/128 of every flow's age, a message's completion moves by at most
// its path's resources x (FCT/128 + the base step), plus one MaxStep where it started within a
// longer step, and the mean over messages by about one step's resolution
// (TestAdaptiveMatchesFixed).

// stepPerAge bounds a longer step by the age of the youngest flow in flight: a step resolves a
// queue's or a throttle's transition to its length, so no step is longer than 1/128 of the
// time any flow in flight has been running (4 us from 512 us on): each transition on a flow's
// path then moves its completion by at most 0.8 % of it.
const stepPerAge = 1.0 / 128

// markDepth is the queue depth above which congestion control marks the bytes joining res's
// queue (+Inf where nothing marks): ECN's Kmin with DCQCN, the FECN threshold with IB CC.
func (e *engine) markDepth(res *resource) float64 {
	switch cc := e.cc.(type) {
	case *dcqcnModel:
		if res.ecn.pmax > 0 {
			return res.ecn.kmin
		}
	case *ibCCModel:
		return cc.thresh
	}
	return math.Inf(1)
}

// watchQueue narrows the next step's horizon (seconds) for a queue that held old bytes before
// the step and q after it, tau seconds long, where congestion control marks: a queue above the
// marking depth allows only the base step; one filling toward it allows the time until, at the
// same net rate, it reaches it. (Queues forming and emptying do not: the step resolves them.)
func (e *engine) watchQueue(res *resource, old, q, tau float64) {
	mark := e.markDepth(res)
	if math.IsInf(mark, 1) {
		return
	}
	if q > mark || old > mark {
		e.horizon = 0
		return
	}
	if rate := (q - old) / tau; rate > 0 {
		e.horizon = min(e.horizon, (mark-q)/rate)
	}
}

// nextStep sets the length of the step after one of tau seconds from what happened in it:
// twice the current length (at most MaxStep, at most the horizon, in powers of two of the base
// step) where nothing in it asked for the base step, else the base step.
func (e *engine) nextStep(calm bool) {
	if !calm || e.horizon <= 0 || e.loss != nil || e.faults != nil {
		e.cur = e.step
		return
	}
	next := min(2*e.cur, max(MaxStep, e.step))
	age := (e.now - e.lastStart).Seconds()
	for next > e.step && (next.Seconds() > e.horizon || next.Seconds() > age*stepPerAge) {
		next /= 2
	}
	e.cur = max(next, e.step)
}

// rescaleAllowances makes the PFC and credit allowances, computed by backpressure.update for a
// step as long as the last one, those of a step of tau seconds: what keeps each ingress counter
// at its bound is the bound less the counter plus the drain over the step, the drain taken at
// the last step's rate. A binding throttle's paused time is counted for the new length.
func (e *engine) rescaleAllowances(tau float64) {
	b := e.fc
	if b.kind == bpNone || b.tau <= 0 || tau == b.tau {
		return
	}
	k := tau / b.tau
	nc := e.nc
	for rank := range e.act {
		for _, r := range e.act[rank] {
			res := &e.net.res[r]
			if res.toHost {
				continue
			}
			for c := 0; c < nc; c++ {
				if !b.lossless[c] {
					continue
				}
				idx := int(r)*nc + c
				st := &e.rc[idx]
				old := st.allow
				st.allow = max(0, b.bound(r)-st.ing+st.lastDrain*k)
				if b.binding[idx] {
					b.stalled[idx] += tau*max(0, 1-st.allow/(res.rate*tau)) - b.tau*max(0, 1-old/(res.rate*b.tau))
				}
			}
		}
	}
	b.tau = tau
}
