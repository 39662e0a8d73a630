package fabric

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/fabricsim/fabricsim/sim"
	"github.com/fabricsim/fabricsim/units"
)

// The transmit-event skip. A switch port that starts a frame schedules the frame's arrival at
// the far node at once (start + serialization + delay) and records the end of the
// transmission, which frees the frame's buffer and PFC ingress bytes and lets the port start
// the next one, as a pending completion (txPend) of its switch instead of a transmit-done
// event. About half the transmit-done events of a k=16 fat tree find nothing queued behind
// their frame; skipping them removes a quarter of the run's events.
//
// The results stay byte-identical to the plain path (a transmit-done event per frame) because
// every effect of a completion is applied at the place in the switch's event order where the
// transmit-done event would have run. Events of equal time run in the order of their
// scheduling entity, then of that entity's own count (sim.SetEntities), so against an event
// of the switch at time t a completion at time at precedes it when at < t, or at == t and
//   - the event is an arrival from a node numbered above the switch (a lower one runs first);
//   - the event is the switch's own (a completion, a PFC timer) scheduled after the frame
//     started, which the switch's own count of such draws (Switch.kseq) tells;
//   - the event is the run's global entity's, which runs after every node's.
//
// Every event of the switch first completes what precedes it (settle), so what it reads (the
// shared pool, PFC's ingress counts, whether the port is busy) is what the plain path reads.
// A completion that must act at its own time rather than when the next event reads it is
// materialized (scheduled as an opTxEnd event): when a frame or a PAUSE waits behind it (it
// starts the next frame) and when its ingress class is pausing upstream (it may send XON).
// Otherwise it only frees bytes, which nothing reads before the switch's next event.
//
// Arrivals drawn when the frame starts keep their tie order at the far node: two arrivals of
// the same time there from the same switch come over links of equal delay (txSkipAllowed
// checks it), so they ended transmitting at the same time, in the order they started.
//
// The skip runs only where these arguments hold (txSkipAllowed), and only when asked for
// (Network.txSkipOn): its bookkeeping (the pending list, the settle before every event of a
// switch) costs about what the skipped events did, and it measured no faster on the RoCE runs
// (docs/architecture.md, "The transmit-event skip"), so it is off by default.
// TestTxSkipMatchesPlain runs both paths to the same outputs.

// txPend is a switch port's transmission whose end is pending: what the end frees. seq is
// Switch.kseq when it started (its place among the switch's own events; compared modulo 2^32,
// the entries pending at once being far fewer); size 0 marks a PAUSE frame, which holds no
// buffer; mat is set once an opTxEnd event is scheduled for it.
type txPend struct {
	at   units.Time
	seq  uint32
	size int32
	port uint16
	in   uint16
	prio uint8
	mat  bool
}

// seqBefore reports whether draw a came before draw b (modulo 2^32).
func seqBefore(a, b uint32) bool { return int32(a-b) < 0 }

// opTxEnd is a materialized completion: Port.Handle settles the switch up to it.
const opTxEnd = opWatchdog + 100

// txSkipAllowed reports whether the run may skip transmit-done events: a sequential run of an
// Ethernet or RoCE fabric whose switches meet only the policies the settle order covers.
func (n *Network) txSkipAllowed() bool {
	if !n.txSkipOn || n.par != nil || n.faults != nil || n.ibfc != nil || n.spray ||
		n.router != nil || n.deqMarker != nil || n.ints != nil {
		return false
	}
	if n.cfg.Kind != KindEthernet && n.cfg.Kind != KindRoCE {
		return false
	}
	if n.fc != nil && n.pfc == nil { // another flow control's Departed takes the packet
		return false
	}
	if f := n.pfc; f != nil && (f.cfg.Watchdog > 0 || f.cfg.StormHost >= 0) {
		return false // their timers would need places in the settle order too
	}
	for _, s := range n.Switches {
		if s == nil {
			continue
		}
		delay := map[int32]units.Time{}
		for _, p := range s.Ports {
			if p.flags&(portLossy|portDown|portHeld) != 0 || p.psPerByte == 0 && p.Rate <= 0 {
				return false
			}
			if d, ok := delay[p.peerEnt]; ok && d != p.delay {
				return false // parallel links of unequal delay (the far node's tie order)
			}
			delay[p.peerEnt] = p.delay
		}
	}
	return true
}

// startTxSkip turns the skip on for this run when it is allowed.
func (n *Network) startTxSkip() {
	n.txSkip = n.txSkipAllowed()
	if n.txSkip && n.pfc != nil {
		n.pfc.refreshSeq = make([]uint32, len(n.pfc.refreshAt))
		n.pfc.expireSeq = make([]uint32, len(n.pfc.refreshAt))
	}
}

// startPend ends the transmission of pkt on switch port p at end: as a pending completion with
// the arrival at the far node scheduled now when nothing waits behind pkt, else as the plain
// transmit-done event, which carries its place among the switch's own events in its I.
func (s *Switch) startPend(p *Port, pkt *Packet, end units.Time) {
	n := s.net
	seq := s.kseq
	s.kseq++
	if n.sim.Current() != int32(s.Node) {
		// Started by another entity's event: runs after the switch's own events of its time.
		n.sim.Schedule(end, p, opTxDone, -1, unsafe.Pointer(pkt))
		return
	}
	size := pkt.Size
	if pkt.Kind == LinkCtrl {
		size = 0
	}
	if p.qmask != 0 || p.flags&portCtrl != 0 || size != 0 && n.pfc != nil && n.pfc.pausingAt(n.pfc.portBase[s.Node]+pkt.InPort, pkt.Prio) {
		// A frame waits (the end starts it) or the ingress class is pausing (the end may
		// send XON): the end is an event of its own.
		n.sim.Schedule(end, p, opTxDone, int32(seq&math.MaxInt32), unsafe.Pointer(pkt))
		return
	}
	k := len(s.pend)
	if k == cap(s.pend) {
		s.pend = append(s.pend, txPend{})[:k]
	}
	s.pend = s.pend[:k+1]
	i := k
	for i > s.ph && s.pend[i-1].at > end { // after every entry not later: seq is the largest
		s.pend[i] = s.pend[i-1]
		i--
	}
	s.pend[i] = txPend{at: end, seq: uint32(seq), size: size, port: uint16(p.Index), in: uint16(pkt.InPort), prio: pkt.Prio}
	p.flags |= portPend
	n.sim.ScheduleTo(p.peerEnt, end+p.delay, p.peer, opArrive, p.peerPort, unsafe.Pointer(pkt))
}

// materialize schedules the completion pending on port p as an event at its time.
func (s *Switch) materialize(p *Port) {
	for i := s.ph; i < len(s.pend); i++ {
		if e := &s.pend[i]; e.port == uint16(p.Index) {
			e.mat = true
			p.flags |= portMat
			s.net.sim.Schedule(e.at, p, opTxEnd, 0, nil)
			return
		}
	}
}

// materializeIn materializes the pending completions of frames that came in through port in
// in class prio, which has just started pausing upstream (their ends may send XON).
func (s *Switch) materializeIn(in int32, prio uint8) {
	for i := s.ph; i < len(s.pend); i++ {
		if e := &s.pend[i]; !e.mat && e.size != 0 && e.in == uint16(in) && e.prio == prio {
			p := s.Ports[e.port]
			e.mat = true
			p.flags |= portMat
			s.net.sim.Schedule(e.at, p, opTxEnd, 0, nil)
		}
	}
}

// settle completes, in their order, the pending transmissions that precede an event of the
// switch at time now: every one ending before now, and of those ending at now every one when
// tieAll (the event's entity runs after the switch's), else those that started before the
// switch's own draw tieSeq.
func (s *Switch) settle(now units.Time, tieAll bool, tieSeq uint32) {
	for s.ph < len(s.pend) {
		e := &s.pend[s.ph]
		if e.at > now || e.at == now && !tieAll && !seqBefore(e.seq, tieSeq) {
			break
		}
		s.ph++
		s.complete(e)
	}
	if s.ph == len(s.pend) {
		s.pend, s.ph = s.pend[:0], 0
	} else if s.ph >= len(s.Ports) {
		// At most one entry per port is live: slide them down rather than let the array grow.
		s.pend, s.ph = s.pend[:copy(s.pend, s.pend[s.ph:])], 0
	}
}

// settleArrival settles the switch before the arrival of a frame through port in.
func (s *Switch) settleArrival(now units.Time, in int32) {
	if s.pend[s.ph].at < now {
		s.settle(now-1, false, 0) // (the sender's number is read only for a tie in time)
	}
	if s.ph < len(s.pend) && s.pend[s.ph].at == now {
		s.settle(now, s.Ports[in].peerEnt > int32(s.Node), 0)
	}
}

// settleOwn settles the switch before its own event drawn at seq (-1: another entity's, which
// runs after the switch's).
func (s *Switch) settleOwn(now units.Time, seq int32) {
	if s.ph < len(s.pend) && s.pend[s.ph].at <= now {
		s.settle(now, seq < 0, uint32(seq))
	}
}

// complete does what the plain path's transmit-done event does for e, but for scheduling the
// arrival: the port is free, the frame's buffer and PFC bytes are released, and the port
// starts its next frame. (e stays valid: entries are added after s.ph only.)
func (s *Switch) complete(e *txPend) {
	p := s.Ports[e.port]
	n := s.net
	p.busy = false
	p.flags &^= portPend | portMat
	if e.size != 0 {
		s.bufUsed -= int64(e.size)
		if f := n.pfc; f != nil {
			f.release(f.portBase[s.Node]+int32(e.in), s.Node, int64(e.size), e.prio)
		}
		if n.cfg.Check && s.bufUsed < 0 {
			n.violation(s.Name, fmt.Sprintf("buffer accounting went negative (%d B) on port %d", s.bufUsed, p.Index))
		}
	}
	n.packetHops++
	if !e.mat {
		n.txSkipped++ // the plain path's event, counted in the summary's events
	}
	p.kick()
}

// txEnd runs a materialized completion of port p, unless an earlier event completed it.
func (s *Switch) txEnd(p *Port) {
	if p.flags&portMat == 0 {
		return
	}
	now := s.net.sim.Now()
	for i := s.ph; i < len(s.pend); i++ {
		if e := &s.pend[i]; e.port == uint16(p.Index) {
			if e.at == now { // (else an earlier event completed it, and this is a later one's)
				s.settle(now, false, e.seq+1)
			}
			return
		}
	}
}

// ownDraw returns the switch's next own draw, the place of a PFC timer it schedules.
func (s *Switch) ownDraw() uint32 {
	k := s.kseq
	s.kseq++
	return uint32(k)
}

// settleAll completes what the plain path would have by the end of Run: everything ending by
// until (the run's end when it stopped at until or ran dry), or by now when stopped. If the
// last of them ends after the last event, the clock is moved there by an empty event, which
// stands for that completion's.
func (n *Network) settleAll(until units.Time) {
	now := n.sim.Now()
	limit := until
	if n.sim.Stopped() {
		// Stopped by the watchdog (the global entity: after every node's events of now), an
		// invariant or an interrupt.
		limit = now
	}
	last := now
	for _, s := range n.Switches {
		if s == nil {
			continue
		}
		for s.ph < len(s.pend) {
			e := &s.pend[s.ph]
			if e.at > limit {
				break
			}
			last = max(last, e.at)
			s.ph++
			s.complete(e)
		}
	}
	if last > now && !n.sim.Stopped() {
		n.txSkipped--
		n.sim.Schedule(last, nopHandler{}, 0, 0, nil)
		n.sim.Run(last)
	}
}

// nopHandler is an event that only moves the clock.
type nopHandler struct{}

func (nopHandler) Handle(*sim.Event) {}
