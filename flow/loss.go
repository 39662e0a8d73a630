package flow

import (
	"github.com/fabricsim/fabricsim/fabric"
	"math"

	"github.com/fabricsim/fabricsim/sim"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

// lossModel is what drops cost on a lossy class (no PFC, no credits), in the fluid limit of the
// packet backend's transports (fabric/nic.go, fabric/irn.go):
//   - a switch admits a packet while its shared buffer (and, with a dynamic threshold, the
//     queue's share of the free buffer) has room, and drops the rest (tail drop); links with an
//     error rate, and RoCE's random_loss, drop each packet with their probability;
//   - go-back-N: the receiver keeps only the bytes ahead of the first loss and discards the rest
//     until the sender, told by a NAK once the next packet shows the gap (or by its
//     retransmission timeout when nothing follows the loss), goes back to the gap: everything it
//     sent after the loss is sent again, and what was still in the network is discarded on
//     arrival, taking link capacity all the same;
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

func (l *lossModel) start(fid int32) { *l.state(fid) = lossFlow{} }

// lossy reports whether class c of the fabric drops rather than pushes back.
func (e *engine) lossy(c int32) bool {
	return e.loss != nil && (e.fc.kind == bpNone || !e.fc.lossless[c])
}

// admit returns how much of amt bytes arriving at resource r's queue the switch takes. A switch
// whose buffer fills within a step drops every arrival in the same proportion (tail drop treats
// packets alike; the fluid sweep must not favour the flows it visits first): the proportion is
// what the buffer had free plus what left it, over what arrived, in the last step.
func (l *lossModel) admit(r, c int32, amt float64) float64 {
	e := l.e
	res := &e.net.res[r]
	if res.fromHost {
		return amt
	}
	var free, ratio float64
	if len(res.chans) == 0 {
		b := &e.net.bufs[res.from]
		free, ratio = b.shared-b.used, l.ratio(res.from)
		b.arr += amt
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
	}
	return b.ratio
}

// endStep rolls the switches' arrival and departure counts over.
func (l *lossModel) endStep() {
	for _, sw := range l.touched {
		b := &l.e.net.bufs[sw]
		b.arrPrev, b.depPrev = b.arr, b.dep
		b.arr, b.dep = 0, 0
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
	if s.pending {
		if l.irn {
			s.lost += bytes
		}
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
	if st.pending && !l.irn {
		f := &l.e.flows[fid]
		s = max(0, min(s, st.good-f.deliv))
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
		if !s.pending || f.done {
			continue
		}
		busy = true
		if s.rewindAt > t {
			continue
		}
		if s.timeout {
			l.timeouts++
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
		s.pending = false
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
