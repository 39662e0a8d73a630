package flow

import (
	"math"

	"github.com/fabricsim/fabricsim/units"
)

// Hot and quiet flows: where the rate allocation changes only locally.
//
// A flow is quiet while nothing on its path queues or throttles, its host's round robin is
// settled and its congestion control sends at line rate: it then moves its bytes at a constant
// rate, its end is an event, and no step touches it. Everything else is hot and stepped. A
// flow's arrival or departure heats only its host's flows (their shares of the round robin
// change); a queue that forms on a resource heats the quiet flows crossing it. A host whose hot
// flows have all been steady for a step, with no byte queued anywhere on their paths, cools: its
// flows go quiet at the rates they had. So the work of a step is proportional to the flows that
// are actually in a transient, not to the network.

// heatHost makes host h's flows hot (and lists h for injection).
func (e *engine) heatHost(h int32) {
	hs := &e.hostSt[h]
	if hs.active >= 0 || len(hs.flows) == 0 {
		return
	}
	hs.active = int32(len(e.activeHosts))
	e.activeHosts = append(e.activeHosts, h)
	e.heatAll(hs.flows)
}

// heatAll heats the given flows (a copy is taken: a flow that ends meanwhile leaves the lists).
func (e *engine) heatAll(fids []int32) {
	buf := append(e.heatBuf[:0], fids...)
	for _, fid := range buf {
		e.heatFlow(fid)
	}
	e.heatBuf = buf[:0]
}

// heatFlow makes a quiet flow hot, its bytes brought up to now.
func (e *engine) heatFlow(fid int32) {
	f := &e.flows[fid]
	if f.hot || f.done {
		return
	}
	if fam := e.ar.family(fid); fam != nil {
		e.heatFamily(fam)
		return
	}
	if f.rate <= 0 {
		// A flow that never sent (its share was not set yet): nothing to bring up to date.
	} else if end := f.t0 + units.Time(math.Ceil(f.rem/f.rate*float64(units.Second))); end <= e.now {
		e.ends.remove(fid)
		e.quietEnd(fid, end) // it ended already: nothing left to heat
		return
	}
	e.materialize(fid)
	e.ends.remove(fid)
	f.from = e.now
	f.hot, f.hotIdx = true, int32(len(e.hot))
	f.ver++
	e.hot = append(e.hot, fid)
	e.heatPath(fid)
	f.prevRate = f.rate
	e.stationary = false
	if f.hidx >= 0 {
		e.heatHost(f.src)
	}
}

// heatPath moves flow fid's load from the quiet to the hot members of the resources it crosses.
func (e *engine) heatPath(fid int32) {
	f := &e.flows[fid]
	load := e.qload(fid)
	for _, r := range e.path[f.off : f.off+f.hops] {
		res := &e.net.res[r]
		e.quietN[r]--
		e.quietMembers--
		res.quietLoad -= load
		if e.quietN[r] == 0 {
			res.quietLoad = 0
		}
		e.hotJoin(r)
	}
}

// qload is the rate a quiet flow puts on every resource of its path: its injection rate, or a
// family member's share of its root's (arflows.go).
func (e *engine) qload(fid int32) float64 {
	if e.ar != nil && int(fid) < len(e.ar.carry) && e.ar.famOf[fid] >= 0 {
		return e.ar.carry[fid]
	}
	return e.flows[fid].rate
}

// materialize brings a quiet flow's bytes up to now: injected and, passing straight through,
// delivered at its rate since t0.
func (e *engine) materialize(fid int32) {
	if fam := e.ar.family(fid); fam != nil {
		e.materializeFamily(fam)
		return
	}
	f := &e.flows[fid]
	if f.hot || e.now <= f.t0 {
		return
	}
	dt := (e.now - f.t0).Seconds()
	x := min(f.rem, f.rate*dt)
	f.rem -= x
	if e.twin != nil {
		e.twin.sub(fid, x)
	}
	f.deliv += x
	e.stats.injected += x
	e.stats.deliveredWire += x
	f.t0 = e.now
}

// unhot takes a flow off the hot list.
func (e *engine) unhot(fid int32) {
	f := &e.flows[fid]
	last := e.hot[len(e.hot)-1]
	e.hot[f.hotIdx] = last
	e.flows[last].hotIdx = f.hotIdx
	e.hot = e.hot[:len(e.hot)-1]
	f.hot = false
}

// coolFlow makes a hot flow quiet at its current rate and schedules its end.
func (e *engine) coolFlow(fid int32) {
	if fam := e.ar.family(fid); fam != nil {
		e.coolFamily(fam)
		return
	}
	f := &e.flows[fid]
	e.unhot(fid)
	f.ver++
	f.t0 = e.now
	e.coolPath(fid)
	e.setEnd(fid, f.rem, f.rate)
}

// setEnd files the end of quiet flow id, rem bytes left at rate bytes a second from now (at
// least 1 ps ahead); none where it would fall beyond the clock's range.
func (e *engine) setEnd(id int32, rem, rate float64) {
	d := math.Ceil(rem / rate * float64(units.Second))
	filed := d < float64(units.MaxTime-e.now)
	if filed {
		e.seq++
		e.ends.set(id, e.now+max(units.Time(d), 1), e.seq)
	}
	if e.twin != nil {
		e.twin.setEnd(e.now, id, rate, filed)
	}
}

// coolPath moves flow fid's load from the hot to the quiet members of the resources it crosses.
func (e *engine) coolPath(fid int32) {
	f := &e.flows[fid]
	load := e.qload(fid)
	for _, r := range e.path[f.off : f.off+f.hops] {
		res := &e.net.res[r]
		e.quietN[r]++
		e.quietMembers++
		res.quietLoad += load
		e.hotLeave(r)
	}
}

// quietEnd is a quiet flow's projected end: its last byte leaves its NIC, and passes through.
func (e *engine) quietEnd(fid int32, t units.Time) {
	f := &e.flows[fid]
	if f.done || f.hot {
		return
	}
	if fam := e.ar.family(fid); fam != nil {
		e.quietFamilyEnd(fam, t)
		return
	}
	e.materialize(fid)
	f.rem, f.deliv = 0, f.total // what rounding left
	e.retire(fid, t)
}

// coolable reports whether hot flow fid is steady: injecting at the rate it had the step
// before, none of its bytes queued, nothing on its path queued or throttled, congestion control
// at rest, no loss being recovered.
func (e *engine) coolable(fid int32, tau float64) bool {
	if fam := e.ar.family(fid); fam != nil {
		return e.famCoolable(fam, tau)
	}
	f := &e.flows[fid]
	if f.rem <= 0 || f.rate <= 0 || math.Abs(f.rate-f.prevRate) > relTol*f.rate {
		return false
	}
	if e.cc != nil && !e.cc.steady(fid) {
		return false
	}
	if e.loss != nil && (e.loss.random || e.loss.state(fid).pending) {
		return false
	}
	if e.faults != nil && e.faults.crossesDown(f) {
		return false // its bytes are lost at a down link (faults.go)
	}
	for h, r := range e.path[f.off : f.off+f.hops] {
		if h > 0 && e.owner[f.off+int32(h)].back > 0 {
			return false
		}
		if e.net.res[r].q > 0 || e.fc.throttled(r) {
			return false
		}
	}
	return true
}

// settle runs after a step: queues that formed heat the quiet flows crossing them; hosts whose
// flows are all steady cool.
func (e *engine) settle(tau float64) {
	for rank := 0; rank < len(e.act) && e.quietMembers > 0; rank++ {
		for _, r := range e.act[rank] {
			if e.quietN[r] > 0 && (e.net.res[r].q > 0 || e.fc.throttled(r)) {
				e.heatMembers(r)
			}
		}
	}
	for hi := 0; hi < len(e.activeHosts) && !e.allHot; hi++ {
		h := e.activeHosts[hi]
		hs := &e.hostSt[h]
		ok := true
		for _, fid := range hs.flows {
			if !e.coolable(fid, tau) {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		for _, fid := range hs.flows {
			e.coolFlow(fid)
		}
		e.unlistHost(h)
		hi--
	}
	for i := range e.hot {
		f := &e.flows[e.hot[i]]
		f.prevRate = f.rate
	}
}

// preheat runs before a step: a resource whose quiet flows and hot flows together could send
// more than it carries heats its quiet flows, so that they share it from the first byte (a flow
// that starts is counted at its NIC's rate). Without it a new flow would wait a step behind quiet
// flows that keep their whole rate.
func (e *engine) preheat() {
	for rank := 0; rank < len(e.act) && e.quietMembers > 0; rank++ {
		for k := 0; k < len(e.act[rank]); k++ {
			r := e.act[rank][k]
			if e.quietN[r] == 0 {
				continue
			}
			res := &e.net.res[r]
			if e.ar != nil && res.hotN > 0 {
				// A hot family's switches choose among ports by their packets' backlog, which a
				// quiet family's packets are part of: both step (arflows.go, "Quiet families").
				e.heatMembers(r)
				continue
			}
			demand := res.quietLoad
			for _, m := range res.members {
				if f := &e.flows[m.f]; f.hot {
					if e.ar != nil && e.ar.family(m.f) != nil {
						demand += e.famDemand(e.ar.family(m.f)) // its share, the family spread evenly
					} else if f.rate > 0 {
						demand += f.rate
					} else {
						demand += e.hostSt[f.src].rate
					}
				}
			}
			if demand <= e.capacity(r)*(1+relTol) {
				continue
			}
			e.heatMembers(r)
		}
	}
}

// heatMembers heats every quiet flow crossing resource r.
func (e *engine) heatMembers(r int32) {
	buf := e.heatBuf[:0]
	for _, m := range e.net.res[r].members {
		if !e.flows[m.f].hot {
			buf = append(buf, m.f)
		}
	}
	e.heatBuf = buf
	e.heatAll(buf)
}

// reshare shares quiet host h's NIC among its flows again (a flow arrived or left): the round
// robin's max-min shares, each flow capped by its congestion control. The flows stay quiet at
// their new rates if no link on their paths then carries more than it can and none has a queue,
// a throttle or a hot flow; it reports false otherwise (the caller heats the host). This is the
// event-driven update of the rates: it touches the links the host's flows cross, not the network.
func (e *engine) reshare(h int32) bool {
	hs := &e.hostSt[h]
	if e.allHot || len(hs.flows) == 0 || e.loss != nil && e.loss.random {
		return false
	}
	if e.ar != nil {
		for _, fid := range hs.flows {
			if e.ar.family(fid) != nil {
				return false // a family's shares are those it had when it cooled: it steps again
			}
		}
	}
	d := e.scratch[:0]
	for k, fid := range hs.flows {
		if e.cc != nil && !e.cc.steady(fid) {
			e.scratch = d
			return false
		}
		d = append(d, fill{d: min(hs.rate, e.ccRate(fid)), i: int32(k)})
	}
	waterFill(hs.rate, d)
	e.scratch = d
	// Tentatively move every changed flow's load, checking each link it crosses.
	ok := true
	n := 0
	for _, x := range d {
		f := &e.flows[hs.flows[x.i]]
		delta := x.d - f.rate
		if delta == 0 {
			continue
		}
		n++
		for _, r := range e.path[f.off : f.off+f.hops] {
			res := &e.net.res[r]
			res.quietLoad += delta
			if res.hotN > 0 || res.q > 0 || e.fc.throttled(r) || res.quietLoad > e.capacity(r)*(1+1e-12) {
				ok = false
			}
		}
	}
	if !ok {
		for _, x := range d {
			f := &e.flows[hs.flows[x.i]]
			if delta := x.d - f.rate; delta != 0 {
				for _, r := range e.path[f.off : f.off+f.hops] {
					e.net.res[r].quietLoad -= delta
				}
			}
		}
		return false
	}
	for _, x := range d {
		fid := hs.flows[x.i]
		f := &e.flows[fid]
		if x.d == f.rate {
			continue
		}
		e.materialize(fid)
		f.rate, f.prevRate = x.d, x.d
		f.ver++
		f.t0 = e.now
		if f.rate <= 0 {
			continue
		}
		e.setEnd(fid, f.rem, f.rate)
	}
	return true
}
