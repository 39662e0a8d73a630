package flow

import (
	"cmp"
	"math"
	"slices"

	"github.com/fabricsim/fabricsim/fabric"

	"github.com/fabricsim/fabricsim/sim"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

// lossModel is what drops cost on a lossy class (no PFC, no credits), in the fluid limit of the
// packet backend's transports (fabric/nic.go, fabric/irn.go, transport/rc):
//   - a switch admits a packet while its shared buffer (and, with a dynamic threshold, the
//     queue's share of the free buffer) has room, and drops the rest (tail drop). A full buffer
//     takes as much as leaves it, and gives that space by the inputs' phase, not in proportion
//     (inShare): first to one input's flows, flow after flow, whole, then what that input leaves
//     to the other inputs in proportion, in whole packets (drawShare); only the input that locked
//     a switch first locks it. Links with an error rate, and RoCE's random_loss, drop
//     each packet with their probability;
//   - go-back-N (transport/rc GoBackN, IBA vol. 1 §9.7.5): the receiver keeps only the bytes
//     ahead of the first loss and discards the rest; it NAKs the gap when the first byte beyond
//     it arrives, once per gap (a retransmission lost at its first packet is not NAKed again).
//     The sender goes back to the gap on the NAK, or on its retransmission timer, which runs
//     from the last advance of the cumulative acknowledgement (or its last firing) and so
//     recovers what no NAK announces: a loss with nothing of the flow admitted after it, a
//     retransmission lost at its first packet. (A fault's losses set their timer themselves,
//     faults.go.) Everything sent after the loss is sent again, and
//     what was still in the network is discarded on arrival, taking link capacity all the same;
//   - IRN (selective repeat): only the lost bytes are sent again, after the NAK with its SACK (or
//     the low retransmission timeout), and a flow keeps at most its BDP cap unacknowledged.
type lossModel struct {
	e   *engine
	irn bool
	rto units.Time
	// linkLoss is each channel's drop probability per packet (0: none); random says any is set
	// (the network is then never stationary: losses are drawn step by step).
	linkLoss []float64
	random   bool
	st       []lossFlow
	bdpCap   float64

	// touched lists the switches that took arrivals this step (admit).
	touched []topo.NodeID
	// Tail drop by phase (inShare): each switch's path slots that brought bytes this step (ins)
	// and the last (insPrev), their arrivals (inArr, inArrPrev, by slot) and admitted share this
	// step (inRatio, valid where inStamp is the step); inRest, a switch's share for slots that
	// brought nothing last step; order, allot's scratch.
	ins, insPrev     [][]int32
	inArr, inArrPrev []float64
	inRatio          []float64
	inStamp          []int64
	// inLock: the slot's share was the lock holder's (valid with inStamp); lockIn, the input
	// (its phase draw) that first held a switch's lock, once lockSet.
	inLock  []bool
	lockIn  []uint64
	lockSet []bool
	inRest  []float64
	order   []phaseKey

	// retryLimit is how long a QP may go without an ACK under a fault plan (0: no limit);
	// failed is the QP that went longer, which stops the run.
	retryLimit units.Time
	failed     error

	naks, timeouts                  int64
	retransmitted                   float64
	drops, randomDrops, bufferDrops float64
}

// lossFlow is one flow's loss recovery.
type lossFlow struct {
	// pending: a loss is outstanding; the sender goes back at rewindAt. good is the in-order
	// bytes ahead of the first loss (the receiver keeps these), injAt what the flow had injected
	// then, lost what was dropped (IRN resends only that).
	pending  bool
	timeout  bool
	rewindAt units.Time
	good     float64
	injAt    float64
	lost     float64
	// waste is the flow's bytes in the network that the receiver will discard.
	waste float64
	// hadLoss: the flow lost bytes (its per-flow byte balance no longer holds, check); resent the
	// bytes it sent again.
	hadLoss bool
	resent  float64
	// progDeliv and progAt are the delivered bytes at the last timeout that saw progress and
	// when the stall began (fabric.FaultRecovery.RetryLimit); progSet once recorded.
	progDeliv float64
	progAt    units.Time
	progSet   bool
	// Go-back-N as the packet transport runs it (transport/rc), for the losses dropGoBackN
	// records (gbn; a fault's losses, faults.go, set rewindAt themselves): ackAt is when the
	// sender last heard the cumulative acknowledgement advance, at ackDeliv bytes delivered (or
	// its timer last fired): its retransmission timer runs from there. nakOff is the gap the
	// receiver last NAKed (-1: none since it last took a byte in order): it NAKs a gap once.
	// nakDue: the receiver has seen this loss's gap, the NAK is on its way (rewindAt); until then
	// only the timer (ackAt + RTO) recovers it.
	gbn      bool
	ackAt    units.Time
	ackDeliv float64
	nakOff   float64
	nakDue   bool
	// streams counts the flow's rewinds: each starts a stream of packets with a phase of its own
	// (inShare).
	streams uint32
}

func newLossModel(e *engine) *lossModel {
	c := &e.cfg
	l := &lossModel{e: e, irn: c.Transport == fabric.TransportIRN, rto: c.RTO}
	if len(c.Faults.Faults) > 0 {
		l.retryLimit = c.Faults.Recovery.RetryLimit()
	}
	if l.irn {
		l.rto = c.IRNRTOLow
		l.bdpCap = float64(c.IRNBDPCap)
	}
	extra := 0.0
	if c.Kind == fabric.KindRoCE {
		extra = c.RoCE.RandomLoss
	}
	l.linkLoss = make([]float64, e.net.chanBase[len(e.g.Nodes)])
	for n := range e.g.Nodes {
		for p := range e.g.Nodes[n].Ports {
			er := e.g.PortLink(topo.NodeID(n), p).ErrorRate
			x := 1 - (1-er)*(1-extra)
			l.linkLoss[e.net.channel(topo.NodeID(n), int32(p))] = x
			l.random = l.random || x > 0
		}
	}
	n := len(e.g.Nodes)
	l.ins, l.insPrev = make([][]int32, n), make([][]int32, n)
	l.inRest = make([]float64, n)
	l.lockIn, l.lockSet = make([]uint64, n), make([]bool, n)
	if l.irn && l.bdpCap == 0 {
		l.bdpCap = l.defaultCap()
	}
	return l
}

// defaultCap is IRN's default in-flight cap (fabric/irn.go irnCap): one bandwidth-delay product,
// host 0's link rate times the round trip of a full packet to the farthest host and back.
func (l *lossModel) defaultCap() float64 {
	e := l.e
	var far []int32
	for d := 1; d < len(e.g.Hosts); d++ {
		p, err := e.rt.firstPath(0, int32(d), nil)
		if err == nil && len(p) > len(far) {
			far = p
		}
	}
	mtu := float64(e.cfg.MTU)
	if far == nil {
		return mtu * 8
	}
	rtt := 2 * e.ideal.fct(e.net, far, int64(e.cfg.MTU))
	return max(mtu, float64(e.hostSt[0].rate)*rtt.Seconds())
}

func (l *lossModel) state(fid int32) *lossFlow {
	for int(fid) >= len(l.st) {
		l.st = append(l.st, lossFlow{})
	}
	return &l.st[fid]
}

func (l *lossModel) start(fid int32) { *l.state(fid) = lossFlow{ackAt: l.e.now, nakOff: -1} }

// lossy reports whether class c of the fabric drops rather than pushes back.
func (e *engine) lossy(c int32) bool {
	return e.loss != nil && (e.fc.kind == bpNone || !e.fc.lossless[c])
}

// admit returns how much of amt bytes of path slot slot (a flow's hop) arriving at resource r's
// queue the switch takes. A switch whose buffer fills within a step admits, over the step, what
// its buffer had free plus what left it in the last step; which arrivals take that space is the
// inputs' phase (inShare). Bundles that end on several switches share it in proportion.
func (l *lossModel) admit(r, slot, c int32, amt float64) float64 {
	e := l.e
	res := &e.net.res[r]
	if res.fromHost {
		return amt
	}
	var free, ratio float64
	if len(res.chans) == 0 {
		sw := res.from
		b := &e.net.bufs[sw]
		free, ratio = b.shared-b.used, l.ratio(sw)
		b.arr += amt
		var rest bool
		ratio, rest = l.inShare(sw, slot, amt, ratio)
		if rest && ratio > 0 && ratio < 1 {
			ratio = l.drawShare(slot, ratio)
		}
	} else {
		ratio = 1
		for _, ch := range res.chans {
			sw := e.net.res[ch].from
			b := &e.net.bufs[sw]
			free += (b.shared - b.used) / float64(len(res.chans))
			ratio = min(ratio, l.ratio(sw))
			b.arr += amt / float64(len(res.chans))
		}
	}
	ok := min(amt*ratio, max(0, free))
	if a := e.cfg.BufferAlpha; a > 0 {
		q := e.queue(r, c)
		ok = min(ok, max(0, a*free-q.bytes))
	}
	if amt-ok <= 1e-9*amt+1e-6 {
		// Rounding, not a loss: where the input holding the lock brings just what left the buffer,
		// its share comes out a hair below 1 (incast-32: shortfalls of 1e-14 to 1e-8 bytes), and a
		// loss of any size opens a go-back-N gap that costs a round trip and everything sent
		// after it (docs/flow.md, "Tail drop and go-back-N (row 7)", rounding residues).
		return amt
	}
	return ok
}

// ratio is the share of arrivals switch sw admits this step.
func (l *lossModel) ratio(sw topo.NodeID) float64 {
	b := &l.e.net.bufs[sw]
	if b.stamp != l.e.steps {
		// First arrival of the step: judge it by the last step.
		b.stamp = l.e.steps
		b.ratio = 1
		if b.arrPrev > 0 {
			b.ratio = min(1, max(0, (b.shared-b.used)+b.depPrev)/b.arrPrev)
		}
		l.touched = append(l.touched, sw)
		if b.ratio < 1 {
			l.allot(sw, b.ratio*b.arrPrev)
		}
	}
	return b.ratio
}

// inShare records amt bytes of path slot slot arriving at switch sw and returns the share of them
// the switch admits this step, ratio being the share of all arrivals it admits.
//
// A full buffer takes a packet for each packet that leaves it, and tail drop does not share the
// freed space in proportion: the packet that arrives first after a departure takes it. Packets
// of one size arriving back to back at one line rate keep their phase to the departures, so the
// same input takes every freed slot while the others lose every packet they bring (the phase
// effect of tail drop, [FloydJacobson92] in docs/references.md); the packet backend's incast-32
// shows it: its drops fall on whole uplinks at a time, and a flow loses none of its burst or a
// run of it. So a full switch gives last step's freed space first to the arrivals of one input,
// flow after flow (its upstream queue interleaves them in a fixed pattern too), and what that
// input leaves to the other inputs' arrivals in proportion (allot). The order is drawn per
// switch and input from the seed, and per flow and go-back-N stream within an input (a rewind
// starts a stream of packets with a phase of its own); the input first in it among those that
// bring bytes holds the lock, if it is the one that held the switch's first lock (allot). rest
// reports a share of what the lock holder left (drawShare makes it whole packets).
func (l *lossModel) inShare(sw topo.NodeID, slot int32, amt, ratio float64) (share float64, rest bool) {
	if int(slot) >= len(l.inArr) {
		n := max(int(slot)+1, 2*len(l.inArr))
		l.inArr = append(l.inArr, make([]float64, n-len(l.inArr))...)
		l.inArrPrev = append(l.inArrPrev, make([]float64, n-len(l.inArrPrev))...)
		l.inRatio = append(l.inRatio, make([]float64, n-len(l.inRatio))...)
		l.inStamp = append(l.inStamp, make([]int64, n-len(l.inStamp))...)
		l.inLock = append(l.inLock, make([]bool, n-len(l.inLock))...)
	}
	if l.inArr[slot] == 0 {
		l.ins[sw] = append(l.ins[sw], slot)
	}
	l.inArr[slot] += amt
	if ratio >= 1 {
		return 1, false
	}
	if l.inStamp[slot] == l.e.steps {
		return l.inRatio[slot], !l.inLock[slot]
	}
	// Nothing arrived from this slot last step: it takes what the others left.
	return l.inRest[sw], true
}

// drawShare turns ratio, the share of a path slot's arrivals a full switch admits out of what
// the lock holder leaves (allot), into whole packets: the packets that get in take a slot each,
// so what a flow brings in a step (less than a packet on incast-32) gets in whole with that
// probability, drawn from the flow's stream, or not at all. In proportion, every flow of the
// other inputs would get a sliver of a packet in every step and have its gap NAKed at once,
// where the packet backend's lose everything until the lock holder's burst ends (docs/flow.md,
// "Tail drop and go-back-N (row 7)", *Whole packets*).
func (l *lossModel) drawShare(slot int32, ratio float64) float64 {
	f := &l.e.flows[l.e.owner[slot].flow]
	f.rng += 0x9e3779b97f4a7c15
	if float64(sim.Mix64(f.rng)>>11)/(1<<53) < ratio {
		return 1
	}
	return 0
}

// allot shares budget, the bytes full switch sw admits this step, among the path slots that
// brought bytes last step (inShare): the input first in phase order takes it first, flow by flow,
// each slot as much as it brought then; the other inputs' slots share what it leaves in
// proportion to what they brought, and so do slots new this step.
func (l *lossModel) allot(sw topo.NodeID, budget float64) {
	seed := l.e.drawSeed()*0x9e3779b97f4a7c15 ^ uint64(sw)<<40
	o := l.order[:0]
	for _, slot := range l.insPrev[sw] {
		fid := l.e.owner[slot].flow
		o = append(o, phaseKey{
			in:   sim.Mix64(seed ^ uint64(l.e.ingRes(slot))),
			flow: sim.Mix64(seed ^ 1<<39 ^ uint64(l.st[fid].streams)<<32 ^ uint64(fid)),
			slot: slot})
	}
	slices.SortFunc(o, func(a, b phaseKey) int {
		if c := cmp.Compare(a.in, b.in); c != 0 {
			return c
		}
		if c := cmp.Compare(a.flow, b.flow); c != 0 {
			return c
		}
		return cmp.Compare(a.slot, b.slot)
	})
	l.order = o
	if len(o) > 0 && !l.lockSet[sw] {
		l.lockSet[sw], l.lockIn[sw] = true, o[0].in
	}
	// Only the input that locked the switch first holds the lock, while it is first in phase
	// order among the inputs bringing bytes: once its burst has ended, the others get in
	// together, none of them locking (docs/flow.md, *Whole packets*).
	n := 0
	if len(o) > 0 && o[0].in == l.lockIn[sw] {
		n = len(o)
	}
	i := 0
	for ; i < n && o[i].in == o[0].in; i++ {
		a := l.inArrPrev[o[i].slot]
		x := 0.0
		if a > 0 {
			x = min(1, max(0, budget)/a)
		}
		budget -= x * a
		l.inRatio[o[i].slot], l.inStamp[o[i].slot] = x, l.e.steps
		l.inLock[o[i].slot] = true
	}
	var rest float64
	for _, k := range o[i:] {
		rest += l.inArrPrev[k.slot]
	}
	x := 0.0
	if rest > 0 {
		x = min(1, max(0, budget)/rest)
	} else if budget > 0 {
		x = 1
	}
	for _, k := range o[i:] {
		l.inRatio[k.slot], l.inStamp[k.slot] = x, l.e.steps
		l.inLock[k.slot] = false
	}
	l.inRest[sw] = x
}

// phaseKey orders a path slot's arrivals at a full switch (allot): its input's draw, its flow's.
type phaseKey struct {
	in, flow uint64
	slot     int32
}

// endStep rolls the switches' arrival and departure counts over.
func (l *lossModel) endStep() {
	for _, sw := range l.touched {
		b := &l.e.net.bufs[sw]
		b.arrPrev, b.depPrev = b.arr, b.dep
		b.arr, b.dep = 0, 0
		for _, slot := range l.insPrev[sw] {
			l.inArrPrev[slot] = 0
		}
		for _, slot := range l.ins[sw] {
			l.inArrPrev[slot], l.inArr[slot] = l.inArr[slot], 0
		}
		l.insPrev[sw], l.ins[sw] = l.ins[sw], l.insPrev[sw][:0]
	}
	l.touched = l.touched[:0]
}

// drop records dropped bytes of flow fid lost at hop h (buffer overflow or corruption) at t.
func (l *lossModel) drop(fid, h int32, bytes float64, t units.Time, random bool) {
	e := l.e
	f := &e.flows[fid]
	s := l.state(fid)
	n := bytes / e.ideal.maxWire
	l.drops += n
	if random {
		l.randomDrops += n
	} else {
		l.bufferDrops += n
	}
	s.hadLoss = true
	if !l.irn {
		l.dropGoBackN(fid, h, bytes)
		return
	}
	if s.pending {
		s.lost += bytes
		return
	}
	// Bytes of the flow ahead of the loss: delivered, or queued at this hop and beyond.
	ahead := f.deliv
	for k := max(h, 1); k < f.hops; k++ {
		ahead += e.owner[f.off+k].back
	}
	s.pending = true
	s.good = ahead
	s.injAt = f.total - f.rem
	s.lost = bytes
	// The receiver sees the gap when the next packet arrives, and NAKs it; the NAK returns over
	// the path. With nothing behind the loss, only the timeout notices it.
	behind := f.rem
	for k := int32(1); k < h && k < f.hops; k++ {
		behind += e.owner[f.off+k].back
	}
	if behind > 0 && !l.lostOn(f, f.ackOff, f.ackHops) {
		s.rewindAt = t + e.queueDelay(fid) + 2*f.lat
		s.timeout = false
	} else {
		// Nothing follows the loss, or the NAK itself is lost: the timeout notices it.
		s.rewindAt = t + l.rto
		s.timeout = true
	}
	e.stationary = false
}

// dropGoBackN records a go-back-N loss of bytes of flow fid at hop h, as the packet transport's
// receiver and sender handle it (transport/rc, GoBackN; IBA vol. 1 §9.7.5): the receiver keeps
// the bytes ahead of the gap and discards everything after it; it NAKs the gap when the first
// packet beyond it arrives (delivered), once per gap; the sender's timer, restarted by every
// advance of the cumulative acknowledgement, recovers what no NAK announces.
func (l *lossModel) dropGoBackN(fid, h int32, bytes float64) {
	e := l.e
	f := &e.flows[fid]
	s := &l.st[fid]
	// The flow's bytes queued past this hop are older than the dropped ones; the discarded
	// stream of the last rewind (waste) is the oldest. Dropped bytes of that stream were to be
	// discarded anyway.
	var beyond float64
	for k := max(h, 1); k < f.hops; k++ {
		beyond += e.owner[f.off+k].back
	}
	if w := min(bytes, s.waste-beyond); w > 0 {
		s.waste -= w
		if bytes -= w; bytes <= 0 {
			return
		}
	}
	ahead := f.deliv + max(0, beyond-s.waste)
	if s.pending {
		// Beyond the gap, the receiver discards these bytes anyway; before it (bytes that were
		// ahead when the gap formed, lost further on in the same step), the gap moves back.
		s.good = min(s.good, ahead)
		return
	}
	if f.deliv > s.ackDeliv+eps(f.total) {
		// Delivered while the network was stationary (jump), up to now.
		s.ackAt, s.ackDeliv = e.now+f.lat, f.deliv
	}
	if s.nakOff >= 0 && f.deliv <= s.nakOff+eps(f.total) && ahead-s.nakOff < e.ideal.maxWire {
		// The first packet resent after the NAK meets the loss: it gets through with the share
		// of it the switch admitted (the fluid's fraction of a packet, drawn). If lost, the gap
		// is the one the receiver NAKed: it NAKs no more, and only the timer recovers it.
		f.rng += 0x9e3779b97f4a7c15
		if float64(sim.Mix64(f.rng)>>11)/(1<<53) >= (ahead-s.nakOff)/e.ideal.maxWire {
			ahead = s.nakOff
		}
	}
	s.pending, s.timeout, s.nakDue, s.gbn = true, true, false, true
	s.good = ahead
	s.injAt = f.total - f.rem
	s.lost = bytes
	s.rewindAt = s.ackAt + l.rto
	e.stationary = false
}

// randomLoss draws whether any of k packets sent over channel r was lost, and returns the bytes
// lost (one packet per loss under go-back-N, which resends from the first anyway; the expected
// count under IRN).
func (l *lossModel) randomLoss(r int32, f *flowState, amt float64) float64 {
	if int(r) >= len(l.linkLoss) {
		return 0
	}
	p := l.linkLoss[r]
	if p <= 0 || amt <= 0 {
		return 0
	}
	k := amt / l.e.ideal.maxWire
	pAny := -math.Expm1(k * math.Log1p(-p))
	if k < 1 {
		pAny = k * p
	}
	f.rng += 0x9e3779b97f4a7c15
	u := float64(sim.Mix64(f.rng)>>11) / (1 << 53)
	if u >= pAny {
		return 0
	}
	lost := l.e.ideal.maxWire
	if l.irn {
		lost = max(lost, k*p*l.e.ideal.maxWire)
	}
	return min(amt, lost)
}

// lostOn draws whether one packet is lost on the hops path slots [off, off+n) of flow f (a NAK
// on the ACK path, a retransmission on the data path), with each link's loss probability.
func (l *lossModel) lostOn(f *flowState, off, n int32) bool {
	if !l.random {
		return false
	}
	keep := 1.0
	for _, r := range l.e.path[off : off+n] {
		if int(r) < len(l.linkLoss) {
			keep *= 1 - l.linkLoss[r]
		}
	}
	if keep >= 1 {
		return false
	}
	f.rng += 0x9e3779b97f4a7c15
	return float64(sim.Mix64(f.rng)>>11)/(1<<53) >= keep
}

// delivered takes s bytes arriving at the receiver and returns those it keeps (in order).
func (l *lossModel) delivered(fid int32, s float64) float64 {
	st := l.state(fid)
	if st.waste > 0 {
		w := min(st.waste, s)
		st.waste -= w
		s -= w
	}
	if l.irn {
		return s
	}
	f := &l.e.flows[fid]
	if st.pending {
		keep := max(0, min(s, st.good-f.deliv))
		if st.gbn && s > keep+eps(f.total) && !st.nakDue && f.deliv+keep >= st.good-eps(f.total) {
			// A packet beyond the gap: the receiver NAKs the gap, unless it did already.
			if st.nakOff < st.good-eps(f.total) || st.nakOff > st.good+eps(f.total) {
				st.nakOff = st.good
				if !l.lostOn(f, f.ackOff, f.ackHops) {
					st.nakDue, st.timeout = true, false
					st.rewindAt = l.e.now + f.lat
				}
			}
		}
		s = keep
	}
	if s > 0 {
		st.ackAt, st.ackDeliv = l.e.now+f.lat, f.deliv+s // the cumulative acknowledgement advances
		if f.deliv+s > st.nakOff+eps(f.total) {
			st.nakOff = -1
		}
	}
	return s
}

// rewind sends the sender back for every flow whose NAK or timeout is due by t.
func (l *lossModel) rewind(t units.Time) bool {
	e := l.e
	busy := false
	for _, fid := range e.hot {
		s := &l.st[fid]
		f := &e.flows[fid]
		if !s.pending && !l.irn && !f.done && f.rem == 0 && f.deliv < f.total-eps(f.total) && l.e.inNetwork(fid) <= eps(f.total) {
			// Everything sent, nothing on its way, the receiver short: the sender's timer
			// (running while bytes are unacknowledged) resends from the first it lacks.
			s.pending, s.timeout, s.nakDue, s.gbn = true, true, false, true
			s.good, s.injAt = f.deliv, f.total
		}
		if !s.pending || f.done {
			continue
		}
		busy = true
		if s.gbn && s.timeout {
			s.rewindAt = s.ackAt + l.rto // the timer restarts with every advance
		}
		if s.rewindAt > t {
			continue
		}
		if s.timeout {
			l.timeouts++
			s.ackAt = s.rewindAt // the timer is armed again
			if l.retryLimit > 0 && l.failed == nil {
				if !s.progSet || f.deliv > s.progDeliv {
					s.progSet, s.progDeliv, s.progAt = true, f.deliv, max(0, s.rewindAt-l.rto)
				} else if s.rewindAt-s.progAt > l.retryLimit {
					r := &e.cfg.Faults.Recovery
					m := &e.mg.Msgs[f.msg]
					l.failed = &fabric.QPRetryError{Src: int(m.Src), Dst: int(m.Dst),
						Since: s.progAt, At: s.rewindAt, Limit: l.retryLimit, Timeout: r.IBTimeout, RetryCnt: r.IBRetryCnt}
				}
			}
		} else {
			l.naks++
		}
		var again float64
		if l.irn {
			again = s.lost
		} else {
			// Everything sent after the loss goes again; what of it is still in the network is
			// discarded on arrival.
			injected := f.total - f.rem
			again = max(0, injected-s.good)
			var inNet float64
			for k := int32(1); k < f.hops; k++ {
				inNet += e.owner[f.off+k].back
			}
			aheadInNet := max(0, s.good-f.deliv)
			s.waste = max(0, inNet-aheadInNet)
		}
		l.retransmitted += again
		s.resent += again
		f.rem += again
		s.pending, s.nakDue, s.gbn = false, false, false
		s.streams++
		if l.lostOn(f, f.off, f.hops) {
			// The first packet sent again is lost too: the receiver NAKs a gap once, so only the
			// timeout recovers it.
			s.pending, s.timeout, s.rewindAt = true, true, s.rewindAt+l.rto
			s.injAt = f.total - f.rem
			s.lost = min(again, l.e.ideal.maxWire)
		}
		if f.hidx < 0 && f.rem > 0 {
			e.rehost(fid)
		}
	}
	return busy
}
