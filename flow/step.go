package flow

import (
	"math"
	"slices"

	"github.com/fabricsim/fabricsim/units"
)

// Tolerances of the stationarity test: a step after which no queue moved by more than relTol of
// what its link carries in a step, and no injection rate by more than relTol of itself, is
// stationary, and the run jumps to the next event.
const relTol = 1e-7

// fill is one water-filling demand.
type fill struct {
	d float64
	i int32
}

// waterFill shares capacity c max-min fairly among demands: each gets min(demand, level), with
// level the largest that fits (the round robin of a NIC serving flows with their own rate caps).
// It writes each grant into d and returns what was used.
func waterFill(c float64, d []fill) float64 {
	var sum float64
	for _, x := range d {
		sum += x.d
	}
	if sum <= c {
		return sum
	}
	slices.SortFunc(d, func(a, b fill) int {
		switch {
		case a.d < b.d:
			return -1
		case a.d > b.d:
			return 1
		}
		return int(a.i - b.i)
	})
	left := c
	for k := range d {
		share := left / float64(len(d)-k)
		if d[k].d > share {
			for j := k; j < len(d); j++ {
				d[j].d = share
			}
			return c
		}
		left -= d[k].d
	}
	return c - left
}

// eps is the amount of a flow's bytes below which it counts as done (floating-point residue).
func eps(total float64) float64 { return 1e-9*total + 1e-6 }

// stepTo advances every flow in flight from e.now to tEnd in one step of the fluid network:
//
//  1. Each NIC injects: its link rate over the step (less what PFC or credits allow on its link)
//     shared max-min among its flows, each capped by its congestion-control rate and its bytes.
//  2. Each switch egress queue, in rank order (climbing links first, then descending ones, so a
//     byte can cross a whole uncongested path in one step), serves what it holds first in first
//     out (fifo): its link's bytes for the step, or less where the next hop's PFC or credits
//     throttle it. Bytes joining a queue are ECN-marked with RED's probability at its depth.
//  3. Back-pressure (PFC thresholds, credits), congestion control (DCQCN) and completions are
//     brought up to date for the next step.
//
// It reports whether the step left every rate and queue as it found them (stationary).
func (e *engine) stepTo(tEnd units.Time) bool {
	tau := float64(tEnd-e.now) / float64(units.Second)
	if tau <= 0 {
		return false
	}
	e.steps++
	if e.ar != nil {
		e.ar.tau = tau
	}
	e.changed = false
	e.horizon = math.Inf(1)
	e.preheat()
	for _, fid := range e.hot {
		f := &e.flows[fid]
		f.inj, f.out, f.tInj = 0, 0, 0
	}
	e.inject(tau, tEnd)
	for rank := 1; rank < len(e.act); rank++ {
		if e.ar != nil {
			e.arFlush() // the adaptive switches' choices for the bytes that reached them
		}
		for _, r := range e.act[rank] {
			e.serve(r, tau)
		}
	}
	if e.ar != nil {
		e.arFlush() // (none is left where the choices are all upward)
	}
	calm := true
	if e.fc.update(tau) {
		e.changed = true
	}
	if e.cc != nil && e.cc.afterStep(tEnd, tau) {
		e.changed = true
		calm = false // congestion control is reacting (adaptive.go)
	}
	if e.loss != nil {
		e.loss.endStep()
		if e.loss.rewind(tEnd) || e.loss.random {
			e.changed = true
		}
	}
	out := e.live > len(e.hot) // quiet flows deliver all the time
	for _, fid := range e.hot {
		if e.flows[fid].out > 0 {
			out = true
			break
		}
	}
	if out {
		e.lastDeliv = tEnd
	}
	if len(e.ended) > 0 {
		for _, fid := range e.ended {
			f := &e.flows[fid]
			// The last byte left within the step, at tOut seconds into it (serve).
			at := e.now + units.Time(math.Ceil(min(f.tOut, tau)*float64(units.Second)))
			e.retire(fid, min(at, tEnd))
		}
		e.ended = e.ended[:0]
		e.changed = true
	}
	e.now = tEnd // the flows that cool go quiet from the step's end
	for _, fid := range e.hot {
		e.flows[fid].from = tEnd
	}
	e.settle(tau)
	if e.adaptive {
		e.nextStep(calm)
		e.creditNext()
	}
	return !e.changed
}

// retire clears a finished flow's residue from the queues and ends it.
func (e *engine) retire(fid int32, tLast units.Time) {
	f := &e.flows[fid]
	for h := int32(1); h < f.hops; h++ {
		if b := e.owner[f.off+h].back; b != 0 {
			e.addIng(e.ingRes(f.off+h), f.cls, -b)
			e.owner[f.off+h].back = 0
			e.queue(e.path[f.off+h], f.cls).drop(f.off+h, e.owner[f.off+h].gen)
		}
	}
	e.endFlow(fid, tLast)
}

// ccRate is what congestion control lets flow f send, bytes per second (the line rate without it).
func (e *engine) ccRate(fid int32) float64 {
	if e.cc != nil {
		return e.cc.rate(fid)
	}
	return math.Inf(1)
}

// inject is step 1: every NIC's round robin over its flows.
func (e *engine) inject(tau float64, tEnd units.Time) {
	nc := e.nc
	dq, _ := e.cc.(*dcqcnModel)
	for hi := 0; hi < len(e.activeHosts); hi++ {
		h := e.activeHosts[hi]
		hs := &e.hostSt[h]
		var wmax float64
		d := e.scratch[:0]
		for k, fid := range hs.flows {
			f := &e.flows[fid]
			// The flow sends from f.from (within the step if it started or heated then, before
			// it if it catches up) to the step's end.
			w := max(0, float64(tEnd-f.from)/float64(units.Second))
			wmax = max(wmax, w)
			dem := min(f.rem, e.ccRate(fid)*w)
			if e.loss != nil && e.loss.irn {
				dem = min(dem, max(0, e.loss.bdpCap-e.inNetwork(fid)))
			}
			d = append(d, fill{d: dem, i: int32(k)})
		}
		capB := hs.rate * wmax
		split := false
		if nc == 1 {
			capB = min(capB, e.rc[hs.link].allow)
			if e.joinIntervals && (e.loss == nil || !e.loss.irn) {
				split = e.joinFill(hs, tEnd, tau, wmax, capB, d)
			}
			if !split {
				if e.twin != nil && e.cc == nil {
					e.twin.order(hs, d, capB)
				}
				waterFill(capB, d)
			}
		} else {
			e.classFill(hs.link, capB, hs.flows, d)
		}
		if dq != nil {
			dq.round(h, d, hs.flows, tEnd, tau, capB) // (its round robin's level: rrWait)
		}
		var finished []int32
		sending := 0
		for _, x := range d {
			if x.d > 0 {
				sending++
			}
		}
		for _, x := range d {
			fid := hs.flows[x.i]
			f := &e.flows[fid]
			amt := x.d
			if f.rem-amt <= eps(f.total) {
				amt = f.rem
			}
			rate := amt / max(float64(tEnd-f.from)/float64(units.Second), tau*1e-9)
			if math.Abs(rate-f.rate) > relTol*math.Max(rate, f.rate) {
				e.changed = true
			}
			f.rate = rate
			if amt <= 0 {
				continue
			}
			f.rem -= amt
			if e.twin != nil {
				e.twin.sub(fid, amt)
			}
			f.inj = amt
			e.stats.injected += amt
			// The first hop's resource, from its slot record (in the line forward reads the next
			// hop's from) rather than from e.path: one line less per flow and step (docs/flow.md,
			// "Fewer lines a congested step reads"; check holds the records to the paths).
			r0 := e.owner[f.off].res
			e.age = int32(e.steps)
			tLast := tau // when the last byte left the NIC, if it did: at the flow's share of the round robin
			if f.rem == 0 {
				tLast = min(tau, amt/(min(e.ccRate(fid), hs.rate)/float64(sending)))
				if split && e.joinFin[x.i] >= 0 {
					tLast = e.joinFin[x.i]
				}
			}
			if e.subStep {
				// The flow sent from its start (or the step's) to its last byte (tInj below) or
				// the step's end.
				e.w0 = max(0, 1-float64(tEnd-f.from)/float64(units.Second)/tau)
				e.w1 = 1.0
				if f.rem == 0 {
					e.w1 = max(e.w0, tLast/tau)
				}
			}
			e.forward(r0, fid, 0, amt)
			if f.rem == 0 {
				finished = append(finished, fid)
				f.tInj = tLast
				if f.hops == 1 && e.finished(fid) {
					f.tOut = f.tInj
					f.done = true
					e.ended = append(e.ended, fid)
				}
			}
		}
		e.scratch = d
		for _, fid := range finished {
			e.unhost(fid)
			e.changed = true
		}
		if hi >= len(e.activeHosts) || e.activeHosts[hi] != h {
			hi-- // the host left the list; another took its place
		}
	}
}

// classFill shares a NIC's capB among its flows (d, written in place) in a network of several
// classes. The NIC's round robin over its flows (fabric/nic.go nextData) passes over a flow whose
// class the next hop holds back (a PFC pause of its priority, no credits on its VL), so the flows
// share max-min, the flows of one class together at most the class's allowance on the link, and
// what a held-back class cannot send goes to the other classes' flows. (Scaling the max-min
// grants of a held-back class down in proportion instead starves every flow's last bytes
// geometrically: a collective then waits for its slowest flow far longer than the class's share
// of the link says; docs/jobs.md, "1,024 GPUs on the flow backend".)
func (e *engine) classFill(link int32, capB float64, flows []int32, d []fill) {
	if len(d) == 0 {
		return
	}
	nc := e.nc
	cls := func(k int) int32 { return e.flows[flows[d[k].i]].cls }
	allow := func(c int32) float64 { return e.rc[int(link)*nc+int(c)].allow }
	c0, mixed := cls(0), false
	for k := 1; k < len(d) && !mixed; k++ {
		mixed = cls(k) != c0
	}
	if !mixed { // the common case: a host's flows in one class (as with one class in the network)
		waterFill(min(capB, allow(c0)), d)
		return
	}
	// Several classes: raise the water level over every flow; a class whose flows would take
	// more than its allowance is held to it (its flows share the allowance max-min), and the
	// others share what is left, until no class exceeds its allowance (at most nc rounds: a
	// held class stays held, as the others' level only rises).
	want := make([]float64, len(d))
	for k := range d {
		want[k] = d[k].d
	}
	var held [16]bool
	sub := make([]fill, 0, len(d))
	for {
		left := capB
		for c := int32(0); c < int32(nc); c++ {
			if !held[c] {
				continue
			}
			sub = sub[:0]
			for k := range d {
				if cls(k) == c {
					sub = append(sub, fill{d: want[k], i: int32(k)})
				}
			}
			left -= waterFill(allow(c), sub)
			for _, x := range sub {
				d[x.i].d = x.d
			}
		}
		sub = sub[:0]
		for k := range d {
			if !held[cls(k)] {
				sub = append(sub, fill{d: want[k], i: int32(k)})
			}
		}
		waterFill(max(0, left), sub)
		var got [16]float64
		for _, x := range sub {
			d[x.i].d = x.d
			got[cls(int(x.i))] += x.d
		}
		more := false
		for c := int32(0); c < int32(nc); c++ {
			if !held[c] && got[c] > allow(c) {
				held[c], more = true, true
			}
		}
		if !more {
			return
		}
	}
}

// addIng records amt bytes entering (or, negative, leaving) the queues downstream of resource r
// on class c: r's ingress counter and the downstream switches' buffers.
func (e *engine) addIng(r, c int32, amt float64) {
	e.rc[int(r)*e.nc+int(c)].ing += amt
	res := &e.net.res[r]
	if amt > 0 && e.red != nil && e.red.coupled != nil {
		e.red.hold(res)
	}
	if to := res.to; to >= 0 {
		b := &e.net.bufs[to]
		u := b.used + amt
		b.used = u
		if u > b.maxUse { // max, without its NaN and signed-zero cases (neither occurs)
			b.maxUse = u
		}
		return
	}
	per := amt / float64(len(res.toSwitches))
	for _, s := range res.toSwitches {
		b := &e.net.bufs[s]
		b.used += per
		b.maxUse = max(b.maxUse, b.used)
	}
}

// drained is addIng(prev, a.c, -s) for s bytes that left the queue at a, which they reached by
// resource prev, and counts them as drained from prev's ingress counter. It reads prev's
// downstream node from the dense engine.resTo rather than from the resource: that saves a cache
// line per entry a congested step hands on (BenchmarkPipelineClass). A bundle
// ending on several switches takes addIng's way.
func (e *engine) drained(prev int32, a *serveAt, s float64) {
	rc := &e.rc[int(prev)*e.nc+int(a.c)]
	to := e.resTo[prev]
	if to < 0 {
		e.addIng(prev, a.c, -s)
		rc.drain += s
		return
	}
	rc.ing += -s
	b := &e.net.bufs[to]
	u := b.used + -s
	b.used = u
	if u > b.maxUse { // as addIng
		b.maxUse = u
	}
	rc.drain += s
}

// enqueue adds amt bytes of flow fid, arriving at hop h (path slot idx), to the queue of
// resource r, where they are marked with RED's probability at the depth they find. On a lossy
// class the switch may take less (tail drop, lossModel); it returns what it took.
func (e *engine) enqueue(r, fid, h int32, amt float64) float64 {
	f := &e.flows[fid]
	if e.lossy(f.cls) {
		if ok := e.loss.admit(r, f.off+h, f.cls, amt); ok < amt {
			e.loss.drop(fid, h, amt-ok, e.now, false)
			amt = ok
			if amt <= 0 {
				return 0
			}
		}
	}
	idx := f.off + h
	e.owner[idx].back += amt
	q := e.queue(r, f.cls)
	if e.cc != nil {
		e.cc.enqueued(fid, r, q, amt)
	}
	if e.subStep {
		o := &e.owner[idx]
		last := &o.ent
		if !e.merge {
			last = nil
		}
		q.pushWin(idx, o.gen, amt, e.steps, e.w0, e.w1, last)
	} else if e.ageOrder {
		o := &e.owner[idx]
		last := &o.ent
		if !e.merge {
			last = nil
		}
		q.pushAge(idx, o.gen, amt, e.steps, e.age, last)
	} else if e.merge {
		o := &e.owner[idx]
		q.pushMerged(idx, o.gen, amt, e.steps, &o.ent)
	} else {
		q.push(idx, e.owner[idx].gen, amt, e.steps, window{})
	}
	return amt
}

// forward moves s bytes of flow fid that left resource r (its hop h) on to the next hop, less
// what the link corrupted.
func (e *engine) forward(r, fid, h int32, s float64) {
	if e.faults != nil {
		if s = e.faults.cut(r, fid, h, s); s <= 0 {
			return // r's link or the next hop's is down (faults.go)
		}
	}
	f := &e.flows[fid]
	if e.loss != nil {
		if lost := e.loss.randomLoss(r, f, s); lost > 0 {
			e.loss.drop(fid, h+1, lost, e.now, true)
			s -= lost
		}
	}
	if h == f.hops-1 {
		e.deliver(fid, s)
		return
	}
	if fam := e.ar.family(fid); fam != nil {
		e.arForward(r, fid, h, s, fam)
		return
	}
	if ok := e.enqueue(e.owner[f.off+h+1].res, fid, h+1, s); ok > 0 && !e.net.isPair(r) {
		e.addIng(r, f.cls, ok) // (a pair constraint's bytes stay counted on the link before it)
	}
}

// deliver hands s bytes to flow fid's receiver.
func (e *engine) deliver(fid int32, s float64) {
	f := &e.flows[fid]
	f.out += s
	e.stats.deliveredWire += s
	if e.loss != nil {
		s = e.loss.delivered(fid, s)
	}
	f.deliv += s
}

// finished reports whether flow f has delivered every byte (and no loss is being recovered).
func (e *engine) finished(fid int32) bool {
	if fam := e.ar.family(fid); fam != nil {
		return !e.flows[fid].done && e.famFinished(fam)
	}
	f := &e.flows[fid]
	if f.rem != 0 || f.deliv < f.total-eps(f.total) || f.done {
		return false
	}
	return e.loss == nil || !e.loss.state(fid).pending
}

// ingRes is the resource whose ingress counter holds the bytes queued at path slot: the hop
// before it, or the one before that where the hop before is a pair constraint (which is no link:
// its bytes and those it handed on wait in the buffers its link fills).
func (e *engine) ingRes(slot int32) int32 {
	r := e.path[slot-1]
	if e.net.isPair(r) {
		r = e.path[slot-2]
	}
	return r
}

// queue is the FIFO of resource r and class c.
func (e *engine) queue(r, c int32) *fifo {
	return &e.queues[int(r)*e.nc+int(c)]
}

// serve is step 2 at one resource: each class's queue sends, first in first out, what the link
// (less its ACK and credit overhead) and the next hop's PFC or credits allow.
func (e *engine) serve(r int32, tau float64) {
	res := &e.net.res[r]
	if res.fromHost {
		return
	}
	nc := e.nc
	old := res.q
	if nc == 1 {
		e.serveOne(r, res, tau)
		return
	}
	var q float64
	var qc [16]float64
	for c := 0; c < nc; c++ {
		b := e.queues[int(r)*nc+c].bytes
		qc[c] = b
		q += b
	}
	if q <= 0 {
		res.q = 0
		if old != 0 {
			e.changed = true
		}
		return
	}
	budget := max(0, res.rate-res.quietLoad) * tau
	var lim [16]float64
	if nc == 1 {
		lim[0] = min(budget, e.rc[r].allow, e.fc.window(r, 0)*tau)
	} else {
		e.classShares(r, tau, budget, &qc, &lim)
	}
	var served float64
	rate := budget / tau
	for c := 0; c < nc; c++ {
		fq := &e.queues[int(r)*nc+c]
		if fq.bytes <= 0 || lim[c] <= 0 {
			continue
		}
		served += fq.serve(lim[c], e, &serveAt{r: r, c: int32(c), before: served, tau: tau, rate: rate})
		// What the queue holds after its link has sent (serving r enqueues only downstream).
		fq.setLeft(&res.ecn, e.net.emptyUnmarked)
	}
	e.served(res, old, q-served, budget, tau)
}

// serveOne is serve for a network of one class (the common case; serve's per-class arrays cost
// as much as the rest of it): the same arithmetic in the same order.
func (e *engine) serveOne(r int32, res *resource, tau float64) {
	old := res.q
	fq := &e.queues[r]
	q := fq.bytes
	if q <= 0 {
		res.q = 0
		if old != 0 {
			e.changed = true
		}
		return
	}
	budget := max(0, res.rate-res.quietLoad) * tau
	var served float64
	if lim := min(budget, e.rc[r].allow, e.fc.window(r, 0)*tau); lim > 0 {
		served = fq.serve(lim, e, &serveAt{r: r, tau: tau, rate: budget / tau})
		fq.setLeft(&res.ecn, e.net.emptyUnmarked)
	}
	e.served(res, old, q-served, budget, tau)
}

// served records what r's queues hold after its link served them this step (q, was old), marks
// the network changed if that moved by more than the tolerance of the link's budget, and lets
// the adaptive step watch the queue; serve and serveOne end with it.
func (e *engine) served(res *resource, old, q, budget, tau float64) {
	res.q = q
	if math.Abs(q-old) > relTol*budget {
		e.changed = true
	}
	if e.adaptive && e.horizon > 0 { // (once 0, the next step is the base step)
		e.watchQueue(res, old, q, tau)
	}
}

// serveAt is the link a queue's bytes leave by (resource r, class c) and what take needs to time
// a flow's last byte: the bytes the link served before this queue in the step, the step's length
// and the link's rate.
type serveAt struct {
	r, c              int32
	before, tau, rate float64
}

// take hands s bytes of path slot (at generation gen) that the queue at a served to the next hop
// (a direct call from fifo.serve: a closure here cost a tenth of a congested step).
func (e *engine) take(a *serveAt, slot int32, gen uint32, s float64) {
	o := &e.owner[slot]
	if o.gen != gen {
		return // the residue of a flow that has ended
	}
	fid, h := o.flow, o.hop
	f := &e.flows[fid]
	o.back -= s
	if prev := e.owner[slot-1].res; len(e.net.pairMark) == 0 {
		e.drained(prev, a, s)
	} else if !e.net.isPair(a.r) {
		e.drained(e.ingRes(slot), a, s)
	}
	e.forward(a.r, fid, h, s)
	if h == f.hops-1 && e.finished(fid) {
		f.done = true // retired after the sweep
		e.ended = append(e.ended, fid)
		// Its last byte left when the link had sent what came before it, not before it
		// left the NIC.
		if e.subStep {
			f.tOut = max(f.tInj, min(a.tau, e.w1*a.tau))
		} else {
			f.tOut = max(f.tInj, min(a.tau, (a.before+s)/a.rate))
		}
		if fam := e.ar.family(fid); fam != nil {
			e.famEnded(fam, fid)
		}
	}
}

// classShares splits a resource's budget among its classes (by the fabric's scheduler,
// classes.go; each class at most what it holds and what the next hop allows it) and sets what
// each class may send.
func (e *engine) classShares(r int32, tau, budget float64, qc, lim *[16]float64) {
	nc := e.nc
	d := e.scratch[:0]
	for c := 0; c < nc; c++ {
		if qc[c] > 0 {
			lim := min(qc[c], e.rc[int(r)*nc+c].allow, e.fc.window(r, int32(c))*tau)
			d = append(d, fill{d: lim, i: int32(c)})
		}
	}
	e.schedBuf = e.sched.share(budget, d, e.schedBuf) // classes.go: the fabric's scheduler
	for _, x := range d {
		lim[x.i] = x.d
	}
	e.scratch = d
}

// jumpLimit is the earliest time a flow, injecting at its constant rate, runs out of bytes.
func (e *engine) jumpLimit() units.Time {
	t := units.MaxTime
	for _, h := range e.activeHosts {
		for _, fid := range e.hostSt[h].flows {
			f := &e.flows[fid]
			if f.rate <= 0 {
				continue
			}
			d := math.Ceil(f.rem / f.rate * float64(units.Second))
			if d < float64(units.MaxTime-e.now) {
				t = min(t, e.now+max(units.Time(d), 1))
			}
		}
	}
	return t
}

// jump advances a stationary network to tEnd: every flow injects and delivers at its constant
// rate, queues stay as they are.
func (e *engine) jump(tEnd units.Time) {
	T := float64(tEnd-e.now) / float64(units.Second)
	if T <= 0 {
		return
	}
	e.jumps++
	for rank := range e.act {
		for _, r := range e.act[rank] {
			e.jumpResource(r, T)
		}
	}
	e.fc.jump(T)
	e.jumpFlows(tEnd, T)
	for _, fid := range e.hot {
		e.flows[fid].from = tEnd
	}
}

// jumpResource counts T seconds of a stationary resource's hot traffic.
func (e *engine) jumpResource(r int32, T float64) {
	res := &e.net.res[r]
	{
		for _, m := range res.members {
			f := &e.flows[m.f]
			if !f.hot {
				continue // quiet flows are brought up to date when they change
			}
			x := f.rate * T
			if res.ecn.pmax > 0 {
				res.marks += x / e.ideal.maxWire * res.ecn.prob(res.q)
			}
		}
	}
}

// jumpFlows advances the hot flows' bytes over a stationary stretch of T seconds ending at tEnd.
func (e *engine) jumpFlows(tEnd units.Time, T float64) {
	var finished []int32
	for _, h := range e.activeHosts {
		for _, fid := range e.hostSt[h].flows {
			f := &e.flows[fid]
			x := f.rate * T
			if f.rem-x <= eps(f.total) || f.rate > 0 && tEnd == e.now+units.Time(math.Ceil(f.rem/f.rate*float64(units.Second))) {
				x = f.rem
			}
			f.rem -= x
			if e.twin != nil {
				e.twin.sub(fid, x)
			}
			f.deliv += x
			e.stats.injected += x
			e.stats.deliveredWire += x
			if x > 0 {
				e.lastDeliv = tEnd
			}
			if f.rem == 0 {
				finished = append(finished, fid)
			}
		}
	}
	for _, fid := range finished {
		e.unhost(fid)
		f := &e.flows[fid]
		if fam := e.ar.family(fid); fam != nil {
			if e.famFinished(fam) {
				for _, m := range slices.Clone(fam.members) {
					e.flows[m].done = true
					e.retire(m, tEnd)
				}
			}
		} else if f.deliv >= f.total-eps(f.total) {
			f.done = true
			e.retire(fid, tEnd)
		}
	}
	if len(finished) > 0 {
		e.stationary = false
	}
}

// inNetwork is the bytes of flow fid queued in the network.
func (e *engine) inNetwork(fid int32) float64 {
	f := &e.flows[fid]
	var x float64
	for _, o := range e.owner[f.off+1 : f.off+f.hops] {
		x += o.back
	}
	return x
}
