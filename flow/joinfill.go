package flow

import (
	"slices"

	"github.com/fabricsim/fabricsim/units"
)

// joinFill is inject's share of a NIC among its flows (nc == 1) when they joined at different
// times within the step (Options.JoinIntervals): the step is cut at the join times, and each
// interval's capacity (the link rate over it, scaled as the whole step's capacity was to the
// link's allowance) is shared max-min among the flows present then, each capped by its
// congestion-control rate over the interval and the bytes it has left; a flow that runs out
// within an interval leaves the rest of it to the others (waterFill). Without it a flow that
// joins late in a step takes an equal share of the whole step, as if it had joined at its start:
// messages offered to a NIC within one step are brought level, and the lead the first of them
// had is lost (the ring's hops stay in lockstep the longer the step; docs/flow.md, Limits).
//
// d holds each flow's demand over the step (min of its bytes and its rate over its part of the
// step, d[k].i == k); joinFill writes each flow's grant into it and, in fin (indexed as
// hs.flows), when within the step (seconds from its start, at most tau) the flows that
// ran out sent their last byte. It reports false, changing nothing, where every flow was there
// for the whole of capB's span: the plain fill is then exact.
func (e *engine) joinFill(hs *hostState, tEnd units.Time, tau, wmax, capB float64, d []fill) bool {
	n := len(hs.flows)
	if n < 2 || wmax <= 0 || hs.rate <= 0 {
		return false
	}
	// Each flow's start, in seconds from the earliest span's start (tEnd - wmax).
	at := e.joinAt[:0]
	ord := e.joinOrd[:0]
	mixed := false
	for k, fid := range hs.flows {
		w := max(0, float64(tEnd-e.flows[fid].from)/float64(units.Second))
		s := max(0, wmax-w)
		at = append(at, s)
		ord = append(ord, int32(k))
		if s != at[0] {
			mixed = true
		}
	}
	e.joinAt, e.joinOrd = at, ord
	if !mixed {
		return false
	}
	slices.SortFunc(ord, func(a, b int32) int {
		switch {
		case at[a] < at[b]:
			return -1
		case at[a] > at[b]:
			return 1
		}
		return int(a - b)
	})
	scale := capB / (hs.rate * wmax)
	left := e.joinLeft[:0]
	got := e.joinGot[:0]
	fin := e.joinFin[:0]
	for k := range d {
		left = append(left, d[k].d)
		got = append(got, 0)
		fin = append(fin, -1)
	}
	e.joinLeft, e.joinGot, e.joinFin = left, got, fin
	step0 := wmax - tau // the step's start in these seconds
	sub := e.joinSub[:0]
	for j := 0; j < n; {
		t0 := at[ord[j]]
		// The flows present from t0: every one that joined by then.
		for j < n && at[ord[j]] <= t0 {
			j++
		}
		t1 := wmax
		if j < n {
			t1 = at[ord[j]]
		}
		L := t1 - t0
		if L <= 0 {
			continue
		}
		sub = sub[:0]
		for _, k := range ord[:j] {
			if left[k] <= 0 {
				continue
			}
			dem := min(left[k], e.ccRate(hs.flows[k])*L)
			sub = append(sub, fill{d: dem, i: k})
		}
		if len(sub) == 0 {
			continue
		}
		c := hs.rate * L * scale
		waterFill(c, sub)
		sending := 0
		for _, x := range sub {
			if x.d > 0 {
				sending++
			}
		}
		for _, x := range sub {
			k := x.i
			got[k] += x.d
			left[k] -= x.d
			if left[k] <= eps(e.flows[hs.flows[k]].total) && x.d > 0 {
				left[k] = 0
				// Its last byte left at its share of the interval's round robin.
				r := min(e.ccRate(hs.flows[k]), hs.rate*scale) / float64(sending)
				fin[k] = min(tau, max(0, t0+min(L, x.d/r)-step0))
			}
		}
		e.joinSub = sub
	}
	for k := range d {
		d[k].d = got[k]
	}
	return true
}
