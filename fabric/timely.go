package fabric

import (
	"github.com/fabricsim/fabricsim/result"
	"github.com/fabricsim/fabricsim/transport/cc/timely"
	"github.com/fabricsim/fabricsim/units"
)

// TIMELY rates on RoCE (`timely: true`, [TIMELY]): the sender cuts each flow into segments of
// timely_segment bytes, sends a segment's packets back to back and paces segments, not packets:
// the next segment may start when the last one's wire bytes at the flow's rate have passed
// since it started ([TIMELY] §4, rate control engine: the rate is enforced between segments, each sent as a burst).
// Each data packet carries the send time of its segment's first packet (in the packet's Sack
// word, which a go-back-N data packet does not use); the receiver echoes it on the ACK the
// packet causes. The ACK whose cumulative sequence first reaches a segment's end is the
// segment's completion event: its RTT is now - the echoed time - the segment's wire bytes at
// line rate ([TIMELY] §4, RTT measurement engine), fed to the flow's state machine (transport/cc/timely). No switch
// support is needed (no ECN, no INT).

// timelyCC runs a TIMELY sender per QP; ACKs reach it through Acked (ackObserver).
type timelyCC struct {
	*roce
	p           timely.Params
	snd         []timely.Sender
	seg         []timelySeg
	completions int64
	decreases   int64
	trace       func(f *Flow, rtt units.Time) // tests: every completion's RTT
}

// timelySeg is a flow's segment bookkeeping at the sender.
type timelySeg struct {
	start   units.Time // when the segment being sent began
	wire    int64      // its wire bytes sent so far
	sentEnd int64      // the end of the last byte sent (a go-back-N rewind starts a segment)
	// gapStart and gapWire are the last fully sent segment's: the pacing gap runs from them.
	gapStart units.Time
	gapWire  int64
	nextEnd  int64 // the cumulative ACK that completes the oldest segment not yet completed
}

func newTimely(r *roce) *timelyCC { return &timelyCC{roce: r, p: r.cfg.TimelyParams} }

func (t *timelyCC) segEnd(f *Flow, off int64) int64 {
	s := int64(t.p.Segment)
	return min((off/s+1)*s, f.snd.Size())
}

// Start sets f at line rate with its first segment's end as the first completion.
func (t *timelyCC) Start(f *Flow) {
	if nf := len(t.n.flows); len(t.snd) < nf {
		t.snd = append(t.snd, make([]timely.Sender, nf-len(t.snd))...)
		t.seg = append(t.seg, make([]timelySeg, nf-len(t.seg))...)
	}
	t.snd[f.id].Init(&t.p, t.n.NICs[f.src].Port.Rate)
	t.seg[f.id] = timelySeg{nextEnd: t.segEnd(f, 0)}
	f.Rate = 0
}

// Sent stamps the data packet with its segment's start (+1, so that 0 means "no stamp") and,
// on a segment's last packet, holds the flow until the segment's time at the flow's rate.
func (t *timelyCC) Sent(f *Flow, pkt *Packet) {
	now, st := t.n.sim.Now(), &t.seg[f.id]
	end := pkt.Seq + int64(pkt.Payload)
	if pkt.Seq%int64(t.p.Segment) == 0 || pkt.Seq != st.sentEnd {
		st.start, st.wire = now, 0
	}
	st.wire += int64(t.n.wireBytes(pkt))
	st.sentEnd = end
	pkt.Sack = int64(st.start) + 1
	if end == t.segEnd(f, pkt.Seq) {
		st.gapStart, st.gapWire = st.start, st.wire
		t.pace(f, now)
	}
}

// pace sets when f's next segment may start: the last segment's wire bytes at the flow's rate
// after it began (nothing to wait for at line rate).
func (t *timelyCC) pace(f *Flow, now units.Time) {
	st := &t.seg[f.id]
	rate := t.snd[f.id].Rate()
	if rate >= t.n.NICs[f.src].Port.Rate {
		f.nextSend = 0
		return
	}
	f.nextSend = max(st.gapStart+rate.TransmitTime(units.Size(st.gapWire)), now)
}

func (t *timelyCC) Received(rx *NIC, f *Flow, pkt *Packet) {}
func (t *timelyCC) Notified(f *Flow, pkt *Packet)          {}

// window: TIMELY is rate-based; it never bounds the bytes in flight.
func (t *timelyCC) window(f *Flow) int64 { return 1 << 62 }

// Acked turns the ACK that completes a segment into a completion event: the RTT, the rate
// update, and the gap of a flow waiting for its next segment re-timed at the new rate.
func (t *timelyCC) Acked(f *Flow, pkt *Packet) {
	st := &t.seg[f.id]
	if f.snd.Done() || pkt.Sack == 0 || pkt.Seq < st.nextEnd {
		return
	}
	now := t.n.sim.Now()
	s := int64(t.p.Segment)
	first := (pkt.Seq - 1) / s * s // the completed segment's first byte
	payload := pkt.Seq - first
	mtu := int64(t.n.cfg.MTU)
	pkts := (payload + mtu - 1) / mtu
	wire := payload + pkts*int64(t.n.cfg.HeaderBytes+t.n.cfg.L1Overhead)
	line := t.n.NICs[f.src].Port.Rate
	rtt := max(now-units.Time(pkt.Sack-1)-line.TransmitTime(units.Size(wire)), 0)
	st.nextEnd = t.segEnd(f, pkt.Seq)
	t.completions++
	if t.trace != nil {
		t.trace(f, rtt)
	}
	old := t.snd[f.id].Rate()
	if t.snd[f.id].OnCompletion(rtt).Decrease() {
		t.decreases++
	}
	if f.nextSend > now && t.snd[f.id].Rate() != old {
		t.pace(f, now)
		if t.snd[f.id].Rate() > old {
			t.n.NICs[f.src].Port.kick()
		}
	}
}

func (t *timelyCC) Report(res *result.Run) {
	res.Counters["timely_completions"] = float64(t.completions)
	res.Counters["timely_rate_decreases"] = float64(t.decreases)
}
