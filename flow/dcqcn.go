package flow

import (
	"math"

	"github.com/fabricsim/fabricsim/sim"
	"github.com/fabricsim/fabricsim/transport/cc/dcqcn"
	"github.com/fabricsim/fabricsim/units"
)

// dcqcnModel runs DCQCN's own state machines (package transport/cc/dcqcn, the ones the packet
// backend runs) for every flow, fed by the fluid network instead of packets:
//   - the reaction point's byte counter counts the frame bytes the flow injected in each step,
//     its increase timer fires at its exact time, and the flow's rate is the RP's current rate,
//     less its wait for its NIC's round robin where that rate holds it below the NIC's level
//     (rrWait);
//   - the frames whose first byte joins a queue above Kmin in a step are ECN-marked with RED's
//     probability, so a flow that started n frames through a queue marking with p carries a
//     mark with probability 1 - (1-p)^n, drawn from the flow's own random stream when the first
//     of those bytes reaches the receiver, a frame's serialisation later (the queues are FIFO,
//     so the flow's bytes arrive in the order they were sent: markAt files the marks under the
//     bytes they are on, deliveredMarks reads them as the flow's delivered bytes pass them);
//   - a flow paced below a packet per microsecond is marked packet by packet instead: each
//     packet, sent at its pacer's time (afterStep), crosses its path's queues one after the
//     other, marked at each with RED's probability at the depth it finds there (join,
//     pacedArrivals);
//   - the notification point turns a mark, when it reaches the receiver, into a CNP at most once
//     per CNP interval, and the CNP cuts the sender's rate when it arrives a path latency later.
//
// This is the DCQCN fluid model of Zhu et al. (SIGCOMM'15 §5) with its expectations replaced by
// the state machines themselves, so the rate cuts, recovery, hyper increase, the alpha EWMA and
// the feedback delay behave as they do packet by packet, and flows of different round-trip
// times get their different shares.
type dcqcnModel struct {
	e         *engine
	p         dcqcn.Params
	st        []ccFlow
	frame     float64 // frame bytes (what the NIC's byte counter counts) per wire byte
	cnpWire   float64
	cnpsSent  int64
	cnpsRcvd  int64
	decreases int64
	// rr is every host NIC's round robin as its last step's fill left it (round, rrWait).
	rr []rrHost
}

// rrHost is a NIC's round robin after a step's fill (round): level is the rate (wire bytes per
// second) of the flows the fill held to its level, n their number; n is 0 where the NIC sent
// less than it could (no flow is held to a level: a flow whose interval has passed is served at
// once, after at most the packet being sent).
type rrHost struct {
	level float64
	n     int32
}

// ccFlow is one flow's DCQCN state.
type ccFlow struct {
	rp   dcqcn.RP
	np   dcqcn.NP
	cnps []units.Time // CNPs on their way to the sender, by arrival
	// lastCNP is when the receiver last sent a CNP (cnpSent: it has).
	lastCNP units.Time
	cnpSent bool
	on      bool
	// The pacer of a flow sending less than a packet per step (afterStep, paced): next is when
	// it sends the flow's next packet, at the interval of pace, the rate the flow had when it
	// sent the one before (so a cut takes effect after the packet already scheduled, as the
	// NIC's rate limiter does: the packet backend's dcqcnCC); pkts are its packets on their
	// way, in the order sent (pacedArrivals).
	next units.Time
	pace float64
	pkts []pacedPkt
	// pktsAt is the earliest time one of pkts leaves its queue: pacedArrivals has nothing to do
	// before it (a paced flow's packets wait behind deep queues for many steps).
	pktsAt units.Time
	// marks are the marks on their way to the receiver, in the order of the flow's bytes they
	// are on; seen is the flow's bytes delivered by the last step's end (deliveredMarks).
	marks markQueue
	seen  float64
	// ser is a frame's serialisation at the path's slowest link: a packet leaves a queue whole,
	// its last byte ser after its first (deliveredMarks).
	ser units.Time
}

// pacedPkt is a paced flow's packet on its way: it leaves the queue of its path's hop hop at
// at; logKeep is the log of the probability that none of the queues it joined marked it.
type pacedPkt struct {
	hop     int32
	at      units.Time
	logKeep float64
}

func newDCQCN(e *engine) *dcqcnModel {
	c := &e.cfg
	full := float64(int(c.MTU) + c.HeaderBytes)
	return &dcqcnModel{e: e, p: c.RoCE.DCQCNParams, frame: full / (full + float64(c.L1Overhead)),
		cnpWire: float64(max(c.CNPBytes, c.MinFrame) + c.L1Overhead), rr: make([]rrHost, len(e.hostSt))}
}

func (d *dcqcnModel) start(fid int32, t units.Time) {
	for int(fid) >= len(d.st) {
		d.st = append(d.st, ccFlow{})
	}
	s := &d.st[fid]
	cnps, marks, pkts := s.cnps[:0], s.marks, s.pkts[:0]
	marks.reset()
	*s = ccFlow{on: true, cnps: cnps, next: t, marks: marks, pkts: pkts}
	f := &d.e.flows[fid]
	line := units.Rate(d.e.hostSt[f.src].rate * 8)
	s.rp.Init(&d.p, line, t)
	bott := math.Inf(1)
	for _, r := range d.e.path[f.off : f.off+f.hops] {
		bott = min(bott, float64(d.e.net.res[r].linkRate)/8)
	}
	if bott > 0 && !math.IsInf(bott, 1) {
		s.ser = units.Time(math.Round(d.e.ideal.maxWire / bott * float64(units.Second)))
	}
}

func (d *dcqcnModel) end(fid int32) { d.st[fid].on = false }

// congestionControl is a sender's rate control fed by the fluid network: DCQCN on RoCE, IB CC on
// InfiniBand.
type congestionControl interface {
	start(fid int32, t units.Time)
	end(fid int32)
	// rate is what the flow may send now, wire bytes per second.
	rate(fid int32) float64
	// enqueued sees amt bytes of flow fid join queue q of resource r (marking).
	enqueued(fid, r int32, q *fifo, amt float64)
	// afterStep feeds the step that ended at tEnd to the hot flows; true while any rate may
	// still change.
	afterStep(tEnd units.Time, tau float64) bool
	// steady reports whether the flow sends at line rate with nothing under way.
	steady(fid int32) bool
	report(c map[string]float64)
}

// enqueued marks the bytes with RED's probability at the depth the queue had when the step began
// (the link serves while packets arrive; this step's arrivals are not all ahead of them).
func (d *dcqcnModel) enqueued(fid, r int32, q *fifo, amt float64) {
	p := q.markP // RED's probability at q.left (fifo.setLeft)
	if p <= 0 {
		return
	}
	e := d.e
	e.net.res[r].marks += amt / e.ideal.maxWire * p
	d.markAt(fid, r, &e.flows[fid], amt, p, q.markLog)
}

// markAt files the marks of amt bytes of flow f joining resource r, where RED marks with
// probability p (markLog: log(1 - p)), under the flow's bytes they are: the queues are FIFO, so
// ahead of them are the flow's delivered bytes and its bytes at r and the hops after it.
//
// A mark is on a whole frame, and the NIC sends a frame whole, at its turn in the round robin:
// the frame's bytes leave the NIC at once where the fluid spreads them over the frame's share
// of the round, the first of them when the fluid's first byte of the frame goes (flows offered
// together are served one packet each in the order offered, which the fluid's start follows:
// engine.joinDelay). Every queue is FIFO, so the packet leaves each queue when the fluid's first
// byte of its frame does, and reaches the receiver a frame's serialisation later (its last
// byte; deliveredMarks adds ser). So the bytes joining r carry one mark draw for every frame
// whose first byte is among them, filed at that byte: a flow sending less than a frame a step
// marks only the steps that hold a frame's first byte, and its marks reach the receiver a
// frame apart, as the packets do (where a step's share of a frame marked with probability p
// made them random: docs/jitter.md, "Why fewer CNPs").
func (d *dcqcnModel) markAt(fid, r int32, f *flowState, amt, p, markLog float64) {
	s := &d.st[fid]
	if s.rp.RC < d.e.ideal.maxWire/pacedInterval.Seconds()*8 {
		return // paced: marked packet by packet (afterStep)
	}
	e := d.e
	h := f.hops - 1
	for h > 1 && e.owner[f.off+h].res != r {
		h--
	}
	end := f.deliv
	for j := h; j < f.hops; j++ {
		end += e.owner[f.off+j].back
	}
	j0, n := frameStarts(end-amt, end, e.ideal.maxWire)
	if n <= 0 {
		return
	}
	lk := math.Inf(-1)
	if p < 1 {
		lk = float64(n) * markLog
	}
	w := e.ideal.maxWire
	s.marks.file(h, markBatch{start: j0*w + 1, end: (j0+float64(n-1))*w + 1, logKeep: lk})
}

// frameStarts is the frames whose first byte is among a flow's bytes (a, b] (frame j, from 0,
// starts with byte j*w + 1, its bytes counted from 1): the first of them, j0, and their number.
func frameStarts(a, b, w float64) (j0 float64, n int) {
	j0 = math.Floor((a-1)/w) + 1
	j1 := math.Floor((b - 1) / w)
	return j0, int(j1 - j0 + 1)
}

func (d *dcqcnModel) report(c map[string]float64) {
	c["cnps_sent"] = float64(d.cnpsSent)
	c["cnps_received"] = float64(d.cnpsRcvd)
	c["dcqcn_rate_decreases"] = float64(d.decreases)
}

// rate is the flow's DCQCN rate in wire bytes per second or, after a cut, until the paced
// packet already scheduled has gone, the rate it was scheduled at; where that holds the flow
// below its NIC's round-robin level, less its wait for the round robin (rrWait).
func (d *dcqcnModel) rate(fid int32) float64 {
	s := &d.st[fid]
	r := max(s.rp.RC, s.pace) / 8
	f := &d.e.flows[fid]
	if wait := d.rrWait(f.src, r, f.rate); wait > 0 {
		w := d.e.ideal.maxWire
		return w / (w/r + wait)
	}
	return r
}

// round records host h's round robin after the step's fill (grants: the flows' bytes, indexing
// flows; capB what the NIC could send): the rate of the flows held to the fill's level and
// their number (rrHost).
func (d *dcqcnModel) round(h int32, grants []fill, flows []int32, tEnd units.Time, tau, capB float64) {
	rr := &d.rr[h]
	rr.level, rr.n = 0, 0
	var sum float64
	for _, x := range grants {
		sum += x.d
	}
	if capB <= 0 || sum < capB*(1-1e-9) {
		return
	}
	rateOf := func(x fill) float64 {
		f := &d.e.flows[flows[x.i]]
		return x.d / max(float64(tEnd-f.from)/float64(units.Second), tau*1e-9)
	}
	for _, x := range grants {
		rr.level = max(rr.level, rateOf(x))
	}
	for _, x := range grants {
		if rateOf(x) >= rr.level*(1-1e-9) {
			rr.n++
		}
	}
}

// rrWait is the mean time, in seconds, a packet of a flow of host h whose pacer holds it to r
// (wire bytes per second; it was sent at g) waits for its NIC's round robin once its interval
// has passed. The NIC serves its flows one packet each in turn and passes over a flow whose
// interval has not passed, which then waits for the round to come back to it, and the next
// interval counts from the send (fabric/nic.go, nextData). In a round each of the n flows the
// fill holds to its level (rate L) sends a frame, and the NIC sends at its level throughout, so
// the flows at the level and this one's g fill the NIC's rate less the others held below it:
// a round is R = n w / (n L + g), and the flow waits half of it on average (the packet
// backend's rate-limited sends 60-90 us into the 1,024-GPU all-to-all came 1.4 us after their
// interval, against half a round of 1.3 us: docs/jitter.md, "What keeps the event rarer on the
// flow backend"). A flow at the level is served every round; none waits where the NIC is not
// busy (rrHost.n 0).
func (d *dcqcnModel) rrWait(h int32, r, g float64) float64 {
	rr := &d.rr[h]
	if rr.n == 0 || r >= rr.level {
		return 0
	}
	n := float64(rr.n)
	return n * d.e.ideal.maxWire / (2 * (n*rr.level + g))
}

// pacedInterval is the pacing interval from which a flow's packets are marked one by one
// (afterStep): the default step's length, whatever the step, so that the model does not
// change with the step (TestDCQCNBaseStepConverged).
const pacedInterval = units.Microsecond

// afterStep feeds the step that ended at tEnd to every flow's RP and NP. It reports whether any
// flow is away from line rate or has CNPs under way (the network is then not stationary).
//
// A flow whose rate allows less than a packet per microsecond (paced; DCQCN's cuts take a congested
// flow to a fraction of a gigabit per second, hundreds of microseconds per packet) is marked
// packet by packet, at its pacer's times, instead of with the step's share of a packet: its
// last marked packet before a queue empties is then the one its pacer sent while the queue was
// still deep, and its CNP comes back when that packet is delivered, as on the packet
// backend, where a stalled ring position's flows all get their last CNP as their common queue
// empties and their increase timers fire together (docs/flow.md, "Limits": a ring's backlog
// after a stall).
func (d *dcqcnModel) afterStep(tEnd units.Time, tau float64) bool {
	e := d.e
	busy := false
	tStart := tEnd - units.Time(math.Round(tau*float64(units.Second)))
	w := e.ideal.maxWire
	paceAt := w / pacedInterval.Seconds() * 8 // bits per second
	for _, fid := range e.hot {
		s := &d.st[fid]
		f := &e.flows[fid]
		rp := &s.rp
		paced := rp.RC < paceAt
		// raised moves the packet already scheduled when the rate rose from old at t (the NIC
		// shortens the wait in proportion, as the packet backend's dcqcnCC.apply does).
		raised := func(old float64, t units.Time) {
			if rp.RC > old && s.next > t {
				s.next = t + units.Time(float64(s.next-t)*old/rp.RC)
			}
		}
		// The step's events in time order, the bytes sent between them counted first: CNPs
		// that arrived, then the increase timer (which a CNP re-arms), and a paced flow's
		// packets.
		sent := f.inj * d.frame
		fed := tStart
		feed := func(t units.Time) {
			if t <= fed || sent <= 0 {
				return
			}
			x := sent * float64(t-fed) / float64(tEnd-fed)
			sent -= x
			fed = t
			old := rp.RC
			for a := rp.OnSent(int64(x+0.5), t); a.Stage != dcqcn.None; a = rp.OnSent(0, t) {
			}
			raised(old, t)
		}
		var cutAt units.Time
		var cutFrom float64
		k := 0
		for {
			timer := rp.TimerAt != 0 && rp.TimerAt <= tEnd
			cnp := k < len(s.cnps) && s.cnps[k] <= tEnd
			// A paced flow's packet goes at its pacer's time if the flow is sending (a packet
			// held back by PFC or its NIC goes in the first step it sends again).
			tp := max(s.next, tStart+1)
			if paced && f.inj > 0 && s.next <= tEnd && (!cnp || tp < s.cnps[k]) && (!timer || tp < rp.TimerAt) {
				feed(tp)
				s.pace = rp.RC
				wait := d.rrWait(f.src, rp.RC/8, f.rate) // (its next packet's turn)
				s.next = tp + units.Time(math.Ceil((w/(rp.RC/8)+wait)*float64(units.Second)))
				p := d.join(f, pacedPkt{hop: 1, at: tp})
				if len(s.pkts) == 0 || p.at < s.pktsAt {
					s.pktsAt = p.at
				}
				s.pkts = append(s.pkts, p)
				continue
			}
			if cnp && (!timer || s.cnps[k] <= rp.TimerAt) {
				feed(s.cnps[k])
				d.cnpsRcvd++
				before, old := rp.Decreases, rp.RC
				rp.OnCNP(s.cnps[k])
				if rp.RC < old {
					cutAt, cutFrom = s.cnps[k], old
				}
				d.decreases += rp.Decreases - before
				k++
				continue
			}
			if timer {
				feed(rp.TimerAt)
				old := rp.RC
				rp.OnTimer(rp.TimerAt)
				raised(old, fed)
				continue
			}
			break
		}
		feed(tEnd)
		if !paced {
			// The step's packets went back to back; after a cut, the packet already scheduled
			// at the rate before it goes half that rate's interval after the cut on average.
			s.next, s.pace = tEnd, 0
			if cutAt > 0 {
				s.next = cutAt + units.Time(math.Ceil(w/(cutFrom/8)*float64(units.Second)/2))
			}
		}
		s.cnps = append(s.cnps[:0], s.cnps[k:]...)
		// The step's deliveries reached the receiver over (tStart, tEnd] plus the path's latency.
		d.deliveredMarks(fid, s, f, tStart+f.lat, tEnd+f.lat)
		d.pacedArrivals(s, f, tEnd)
		if !rp.AtLine() || len(s.cnps) > 0 {
			busy = true
		}
	}
	return busy
}

// join is packet p of flow f joining the queue of its path's hop p.hop at p.at: marked with
// RED's probability at the queue's depth, it leaves after the bytes ahead of it (the queues
// are FIFO). A packet waiting at one hop finds the next one's queue as it is when it gets
// there, not as it was when it was sent.
func (d *dcqcnModel) join(f *flowState, p pacedPkt) pacedPkt {
	e := d.e
	r := e.path[f.off+p.hop]
	switch q := e.queue(r, f.cls); {
	case q.markP <= 0:
	case q.markP >= 1:
		p.logKeep = math.Inf(-1)
	default:
		p.logKeep += q.markLog
	}
	res := &e.net.res[r]
	p.at += units.Time(res.q / res.rate * float64(units.Second))
	return p
}

// pacedArrivals moves flow f's paced packets on through the queues they have left by tEnd and
// is the notification point for those that reached the receiver (a path latency after the last
// queue).
func (d *dcqcnModel) pacedArrivals(s *ccFlow, f *flowState, tEnd units.Time) {
	if len(s.pkts) == 0 || s.pktsAt > tEnd && !d.e.opt.plainPaced {
		return // none has left its queue
	}
	n := 0
	s.pktsAt = math.MaxInt64
	for i := range s.pkts {
		p := s.pkts[i]
		for p.at <= tEnd && p.hop < f.hops-1 {
			p.hop++
			p = d.join(f, p)
		}
		if p.at <= tEnd {
			arr := p.at + f.lat
			d.notify(s, f, p.logKeep, arr-1, arr)
			continue
		}
		s.pkts[n] = p
		s.pktsAt = min(s.pktsAt, p.at)
		n++
	}
	s.pkts = s.pkts[:n]
}

// cnp is the notification point's answer to a marked packet reaching the receiver at t: a CNP,
// at most one per CNP interval, back to the sender a path latency later.
func (d *dcqcnModel) cnp(s *ccFlow, f *flowState, t units.Time) {
	e := d.e
	if !s.np.OnPacket(true, t, &d.p) {
		return
	}
	s.lastCNP, s.cnpSent = t, true
	d.cnpsSent++
	s.cnps = append(s.cnps, t+f.lat)
	// The CNP goes back along the ACKs' path (same hash).
	for _, r := range e.path[f.ackOff : f.ackOff+f.ackHops] {
		e.net.res[r].txBytes += d.cnpWire
	}
}

// notify is the receiver's notification point for packets of flow f that reach the receiver
// over (lo0, at] (deliveredMarks, pacedArrivals). Marked packets among them (the log of the probability that
// none is marked: noMark) make a CNP at the first of them after the CNP interval since the
// last CNP, drawn from the flow's random stream; the CNP returns over the path's latency on a
// strict-priority class.
func (d *dcqcnModel) notify(s *ccFlow, f *flowState, noMark float64, lo0, at units.Time) {
	e := d.e
	if noMark >= 0 {
		return
	}
	if e.red.copied(f.msg) {
		e.red.broken = true // its copies would draw their own marks
	}
	lo := lo0
	if s.cnpSent {
		lo = max(lo, s.lastCNP+d.p.CNPInterval)
	}
	if lo >= at {
		return
	}
	// The marks of the part of the step's packets that arrive after lo.
	logKeep := noMark * float64(at-lo) / float64(at-lo0)
	f.rng += 0x9e3779b97f4a7c15
	u := float64(sim.Mix64(f.rng)>>11) / (1 << 53)
	if u >= -math.Expm1(logKeep) {
		return
	}
	// The first marked packet: its position in (lo, at] given that one is marked (per-packet
	// marks are independent: P(first by x) = (1 - keep^x) / (1 - keep)).
	x := 0.0
	if !math.IsInf(logKeep, -1) {
		x = math.Log1p(-u) / logKeep
	}
	d.cnp(s, f, lo+units.Time(math.Ceil(min(1, x)*float64(at-lo))))
}

// queueDelay is the time flow fid's bytes wait in the queues of its path now.
func (e *engine) queueDelay(fid int32) units.Time {
	f := &e.flows[fid]
	var s float64
	for _, r := range e.path[f.off+1 : f.off+f.hops] {
		res := &e.net.res[r]
		s += res.q / res.rate
	}
	return units.Time(s * float64(units.Second))
}

func (d *dcqcnModel) steady(fid int32) bool {
	s := &d.st[fid]
	return s.rp.AtLine() && len(s.cnps) == 0
}

// deliveredMarks is the notification point for the marks on the bytes of flow f (fid) that the step
// delivered (s.seen to f.deliv), which reached the receiver over (t0, t1] (delivered).
func (d *dcqcnModel) deliveredMarks(fid int32, s *ccFlow, f *flowState, t0, t1 units.Time) {
	d0, d1 := s.seen, f.deliv
	if d1 <= d0 {
		return
	}
	s.seen = d1
	at := func(x float64) units.Time { // when byte x reached the receiver
		return t0 + units.Time(math.Round(float64(t1-t0)*min(1, (x-d0)/(d1-d0))))
	}
	if d.e.twin != nil {
		d.e.twin.marks(fid, s, d0, d1, 1e-9*f.total+1e-6)
	}
	s.marks.delivered(d0, d1, 1e-9*f.total+1e-6, func(lk, from, to float64) {
		// The marks are on frames' first bytes (markAt): each packet's last byte arrives a
		// frame's serialisation after its first.
		lo := at(from) + s.ser
		d.notify(s, f, lk, lo, max(lo+1, at(to)+s.ser))
	})
}
