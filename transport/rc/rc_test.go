package rc

import (
	"math/bits"
	"math/rand/v2"
	"testing"

	"github.com/fabricsim/fabricsim/units"
)

const us = units.Microsecond

// mtu is a round packet size so that offsets read as packet numbers (1000 = packet 1).
const mtu = 1000

func params(m Mode) *Params {
	return &Params{Mode: m, MTU: mtu, AckEvery: 1, RTO: 100 * us,
		RTOLow: 10 * us, RTOHigh: 30 * us, LowThreshold: 3, Cap: 4 * mtu}
}

// send takes the sender's next packet, records it as sent at now and returns it.
func send(t *testing.T, s *Sender, p *Params, now units.Time) (seq int64, retx bool, armAt units.Time) {
	t.Helper()
	seq, payload, retx := s.Next(p)
	if payload == 0 {
		t.Fatalf("sender has nothing to send (next %d, unacked %d)", s.nxt, s.una)
	}
	return seq, retx, s.Sent(p, seq, payload, retx, now)
}

// rx is one data packet offered to a receiver, the verdict it must give and the cumulative
// acknowledgement (Receiver.Next) after it, which a reply carries. Its payload is a full packet,
// or what is left of the QP.
type rx struct {
	what string
	seq  int64
	want Recv
	next int64
}

func receive(t *testing.T, r *Receiver, p *Params, steps []rx) {
	t.Helper()
	for i, s := range steps {
		payload := min(int64(mtu), r.size-s.seq)
		if got := r.OnData(p, s.seq, payload); got != s.want || r.Next() != s.next {
			t.Fatalf("step %d (%s, packet at %d): got %+v next %d, want %+v next %d", i, s.what, s.seq, got, r.Next(), s.want, s.next)
		}
	}
}

// TestGoBackNGapOneNakRewind drives a go-back-N QP of ten packets message by message through one
// loss: the receiver answers the first packet beyond the gap with a NAK carrying the expected
// offset (the PSN sequence error NAK, IBA vol. 1 §9.7.5: its PSN is the responder's expected
// PSN) and ignores the later ones; the sender rewinds to the NAK's offset and resends from there,
// every resent packet counted as a retransmission; once the gap is filled a new gap NAKs again.
func TestGoBackNGapOneNakRewind(t *testing.T) {
	p := params(GoBackN)
	var s Sender
	var r Receiver
	s.Init(p, 10*mtu)
	r.Init(p, 10*mtu)
	for i := int64(0); i < 5; i++ {
		seq, retx, armAt := send(t, &s, p, units.Time(i)*us)
		if seq != i*mtu || retx {
			t.Fatalf("packet %d: sent %d (retransmission %v)", i, seq, retx)
		}
		// The first send arms the timer for RTO later, the others find it armed.
		if want := map[bool]units.Time{true: 100 * us, false: 0}[i == 0]; armAt != want {
			t.Fatalf("packet %d: arm at %v, want %v", i, armAt, want)
		}
	}
	// Packet 1 is lost.
	receive(t, &r, p, []rx{
		{"in order", 0, Recv{Class: InOrder, Reply: Ack, Delivered: 1000}, 1000},
		{"first beyond the gap: one NAK", 2000, Recv{Class: OutOfOrder, Reply: Nak}, 1000},
		{"second beyond the gap: silently dropped", 3000, Recv{Class: OutOfOrder}, 1000},
		{"third", 4000, Recv{Class: OutOfOrder}, 1000},
	})
	if wake := s.OnAck(p, false, 1000, 0, 6*us); wake || s.una != 1000 || s.nxt != 5000 {
		t.Fatalf("ACK 1000: wake %v, unacked %d next %d; want no wake, 1000, 5000", wake, s.una, s.nxt)
	}
	if s.rtoAt != 106*us {
		t.Fatalf("the ACK's advance restarts the timer: deadline %v, want 106us", s.rtoAt)
	}
	if wake := s.OnAck(p, true, 1000, 0, 7*us); !wake || s.nxt != 1000 {
		t.Fatalf("NAK 1000: wake %v next %d, want a rewind to 1000", wake, s.nxt)
	}
	// A NAK at the byte the sender is about to send changes nothing.
	if wake := s.OnAck(p, true, 1000, 0, 8*us); wake || s.nxt != 1000 || s.una != 1000 {
		t.Fatalf("repeated NAK: wake %v next %d unacked %d, want no change", wake, s.nxt, s.una)
	}
	// Resend 1..4 (retransmissions), then 5 is new.
	for i := int64(1); i <= 5; i++ {
		seq, retx, _ := send(t, &s, p, 10*us)
		if seq != i*mtu || retx != (i < 5) {
			t.Fatalf("after the rewind: sent %d (retransmission %v), want %d (%v)", seq, retx, i*mtu, i < 5)
		}
	}
	receive(t, &r, p, []rx{
		{"resent packet 1 fills the gap", 1000, Recv{Class: InOrder, Reply: Ack, Delivered: 1000}, 2000},
		{"2", 2000, Recv{Class: InOrder, Reply: Ack, Delivered: 1000}, 3000},
		{"a new gap (3 lost again) NAKs again", 4000, Recv{Class: OutOfOrder, Reply: Nak}, 3000},
	})
}

// TestGoBackNDuplicatesAndCompletion: duplicates are counted and answered (IBA vol. 1 §9.7.5):
// before completion every AckEvery-th, so that a sender whose ACKs were lost and that resends
// only bytes the receiver holds learns the next byte; after completion every one, so that a
// sender whose final ACK was lost can finish. The QP completes exactly once; AckEvery coalesces
// ACKs but never delays the last one.
func TestGoBackNDuplicatesAndCompletion(t *testing.T) {
	p := params(GoBackN)
	p.AckEvery = 2
	var r Receiver
	r.Init(p, 3*mtu+500) // the last packet is short
	receive(t, &r, p, []rx{
		{"first: coalesced", 0, Recv{Class: InOrder, Delivered: 1000}, 1000},
		{"second: ACK", 1000, Recv{Class: InOrder, Reply: Ack, Delivered: 1000}, 2000},
		{"duplicate inside the window: coalesced", 1000, Recv{Class: Duplicate}, 2000},
		{"second duplicate: ACK, so that a sender whose ACKs were lost learns the next byte", 0, Recv{Class: Duplicate, Reply: Ack}, 2000},
		{"third", 2000, Recv{Class: InOrder, Delivered: 1000}, 3000},
		{"last (short): complete, ACK at once", 3000, Recv{Class: InOrder, Reply: Ack, Complete: true, Delivered: 500}, 3500},
		{"resent last after completion: ACK, no second completion", 3000, Recv{Class: Duplicate, Reply: Ack}, 3500},
		{"resent first after completion: ACK", 0, Recv{Class: Duplicate, Reply: Ack}, 3500},
	})
	// The sender finishes on the final cumulative ACK and ignores everything after.
	var s Sender
	s.Init(p, 3*mtu+500)
	for s.HasData(p) {
		send(t, &s, p, 0)
	}
	if s.OnAck(p, false, 3500, 0, us); !s.Done() {
		t.Fatal("the final ACK does not finish the sender")
	}
	if s.OnAck(p, true, 0, 0, 2*us) || s.nxt != 3500 {
		t.Fatal("a NAK after the sender finished moved it")
	}
	if at, out := s.OnTimer(p, 200*us, false); at != 0 || out {
		t.Fatalf("the timer of a finished sender: rearm %v timeout %v, want neither", at, out)
	}
}

// TestGoBackNTimeout: the timer stops when nothing is outstanding, follows a deadline an ACK
// moved, and on expiry rewinds to the first unacknowledged byte and rearms.
func TestGoBackNTimeout(t *testing.T) {
	p := params(GoBackN)
	var s Sender
	s.Init(p, 10*mtu)
	send(t, &s, p, 0)
	send(t, &s, p, us)
	s.OnAck(p, false, 1000, 0, 50*us) // deadline moves to 150us
	if at, out := s.OnTimer(p, 100*us, false); at != 150*us || out {
		t.Fatalf("timer at 100us after an ACK at 50us: rearm %v timeout %v, want 150us, none", at, out)
	}
	at, out := s.OnTimer(p, 150*us, false)
	if !out || at != 250*us || s.nxt != 1000 {
		t.Fatalf("timeout at 150us: rearm %v timeout %v next %d, want 250us, true, 1000", at, out, s.nxt)
	}
	if seq, retx, armAt := send(t, &s, p, 151*us); seq != 1000 || !retx || armAt != 0 {
		t.Fatalf("after the timeout: sent %d retransmission %v arm %v, want 1000, true, none (armed)", seq, retx, armAt)
	}
	s.OnAck(p, false, 2000, 0, 160*us)
	// Nothing outstanding and the NIC holds no data for it: the timer stops.
	if at, out := s.OnTimer(p, 260*us, false); at != 0 || out {
		t.Fatalf("idle timer: rearm %v timeout %v, want neither", at, out)
	}
	// The next send arms it again.
	if _, _, armAt := send(t, &s, p, 300*us); armAt != 400*us {
		t.Fatalf("send after the timer stopped arms at %v, want 400us", armAt)
	}
}

// TestSelectiveSACKRecovery walks IRN's loss recovery (Mittal et al. SIGCOMM'18, §3.1): packet 1
// of four in flight is lost; the receiver holds 2 and 3 and NAKs each with its SACK; the sender
// enters recovery on the first NAK, resends only packet 1 and then continues with new data
// within its cap; the resent packet releases the held ones and is ACKed at once.
func TestSelectiveSACKRecovery(t *testing.T) {
	p := params(Selective)
	var s Sender
	var r Receiver
	s.Init(p, 10*mtu)
	r.Init(p, 10*mtu)
	for i := int64(0); i < 4; i++ {
		send(t, &s, p, 0)
	}
	// Four packets = the cap: no more new data.
	if _, payload, _ := s.Next(p); payload != 0 || s.HasData(p) {
		t.Fatalf("a fifth packet within a 4-packet cap (payload %d)", payload)
	}
	receive(t, &r, p, []rx{
		{"0 in order", 0, Recv{Class: InOrder, Reply: Ack, Delivered: 1000}, 1000},
		{"2 held, NAK (SACK: this packet)", 2000, Recv{Class: OutOfOrder, Reply: NakSack}, 1000},
		{"3 held, NAK (SACK: this packet)", 3000, Recv{Class: OutOfOrder, Reply: NakSack}, 1000},
		{"2 again: a duplicate, NAKed again", 2000, Recv{Class: Duplicate, Reply: NakSack}, 1000},
	})
	if !s.OnAck(p, false, 1000, 0, us) {
		t.Fatal("an ACK that opens the window does not wake the sender")
	}
	s.OnAck(p, true, 1000, 2000, 2*us)
	s.OnAck(p, true, 1000, 3000, 3*us)
	if !s.sack.recovery || s.sack.nSacked != 2 || s.sack.retxEnd != 3000 {
		t.Fatalf("after two NAKs: recovery %v, %d SACKed, resend below %d; want true, 2, 3000", s.sack.recovery, s.sack.nSacked, s.sack.retxEnd)
	}
	// Only packet 1 is resent; then new data: the pipe is 3 packets sent minus 2 SACKed.
	for _, want := range []struct {
		seq  int64
		retx bool
	}{{1000, true}, {4000, false}, {5000, false}, {6000, false}} {
		if seq, retx, _ := send(t, &s, p, 4*us); seq != want.seq || retx != want.retx {
			t.Fatalf("recovery: sent %d (retransmission %v), want %d (%v)", seq, retx, want.seq, want.retx)
		}
	}
	receive(t, &r, p, []rx{
		{"resent 1 releases 2 and 3: ACK at once", 1000, Recv{Class: InOrder, Reply: Ack, Delivered: 3000}, 4000},
	})
	s.OnAck(p, false, 4000, 0, 5*us)
	if s.sack.recovery || s.sack.nSacked != 0 {
		t.Fatalf("the ACK past the recovery point: recovery %v, %d SACKed; want false, 0", s.sack.recovery, s.sack.nSacked)
	}
}

// TestSelectiveTimeout: a timeout marks every unacknowledged, unSACKed packet lost; the timeout
// is RTOLow while at most LowThreshold packets are outstanding, RTOHigh beyond (IRN §3.1).
func TestSelectiveTimeout(t *testing.T) {
	p := params(Selective)
	var s Sender
	s.Init(p, 10*mtu)
	if _, _, armAt := send(t, &s, p, 0); armAt != p.RTOLow {
		t.Fatalf("one packet outstanding: armed at %v, want RTOLow %v", armAt, p.RTOLow)
	}
	for i := 0; i < 3; i++ {
		send(t, &s, p, 0)
	}
	s.OnAck(p, true, 0, 2000, us) // packet 2 SACKed; 4 outstanding: RTOHigh from here
	if s.rtoAt != p.RTOLow {
		t.Fatalf("a NAK without an advance moved the deadline to %v", s.rtoAt)
	}
	at, out := s.OnTimer(p, p.RTOLow, false)
	if !out || at != p.RTOLow+p.RTOHigh {
		t.Fatalf("timeout: rearm %v timeout %v, want %v, true", at, out, p.RTOLow+p.RTOHigh)
	}
	var resent []int64
	for {
		seq, payload, retx := s.Next(p)
		if payload == 0 || !retx {
			break
		}
		resent = append(resent, seq)
		s.Sent(p, seq, payload, retx, 20*us)
	}
	if len(resent) != 3 || resent[0] != 0 || resent[1] != 1000 || resent[2] != 3000 {
		t.Fatalf("after the timeout resent %v, want [0 1000 3000] (2000 is SACKed)", resent)
	}
}

// TestSelectiveBeyondWindow: a packet beyond the receive bitmap is a sender that broke its cap;
// the receiver reports it and changes nothing. Packets past the QP's end likewise.
func TestSelectiveBeyondWindow(t *testing.T) {
	p := params(Selective)
	var r Receiver
	r.Init(p, 1000*mtu)
	w := r.held.width() // 4 caps of 4 packets + 2, rounded up to 64
	if w != 64 {
		t.Fatalf("bitmap of %d packets, want 64", w)
	}
	receive(t, &r, p, []rx{
		{"last packet within the window", (w - 1) * mtu, Recv{Class: OutOfOrder, Reply: NakSack}, 0},
		{"first beyond it", w * mtu, Recv{Class: BeyondWindow}, 0},
	})
	if a := r.OnData(p, 1000*mtu-500, mtu); a != (Recv{Class: Overrun}) {
		t.Fatalf("a full packet 500 B before the QP's end: %+v, want an overrun", a)
	}
	held := 0
	for _, x := range r.held.w {
		held += bits.OnesCount64(x)
	}
	if r.nxt != 0 || held != 1 {
		t.Fatalf("after two rejected packets: next %d, %d packets held; want 0, 1", r.nxt, held)
	}
}

// TestReorderNeverNaks delivers the six packets of a QP in every order (720), each order with
// one packet repeated: the reorder-tolerant receiver never NAKs, ACKs the contiguous prefix
// whenever it grows by a held packet or completes, completes exactly once, and delivers every
// byte exactly once.
func TestReorderNeverNaks(t *testing.T) {
	p := params(Reorder)
	p.AckEvery = 1 << 20 // only releases and completion ACK
	const pkts = 6
	size := int64(pkts*mtu - 300)
	order := []int64{0, 1, 2, 3, 4, 5}
	var permute func(k int)
	count := 0
	permute = func(k int) {
		if k == pkts {
			count++
			var r Receiver
			r.Init(p, size)
			var delivered int64
			completions := 0
			k := count % pkts // packet order[k] arrives twice in a row
			seq := append(append(append([]int64(nil), order[:k+1]...), order[k]), order[k+1:]...)
			for _, i := range seq {
				a := r.OnData(p, i*mtu, min(int64(mtu), size-i*mtu))
				if a.Reply == Nak || a.Reply == NakSack {
					t.Fatalf("order %v: NAK at packet %d", seq, i)
				}
				if a.Complete {
					completions++
				}
				delivered += a.Delivered
				released := a.Delivered > min(int64(mtu), size-i*mtu)
				if a.Class == InOrder && (a.Reply == Ack) != (released || a.Complete) {
					t.Fatalf("order %v, packet %d: reply %v with %d B delivered", seq, i, a.Reply, a.Delivered)
				}
				if a.Class == Duplicate && a.Reply != Ack {
					t.Fatalf("order %v, packet %d: a duplicate must be ACKed", seq, i)
				}
			}
			if completions != 1 || delivered != size || r.Next() != size {
				t.Fatalf("order %v: %d completions, %d B delivered, next %d; want 1, %d, %d", seq, completions, delivered, r.Next(), size, size)
			}
			return
		}
		for i := k; i < pkts; i++ {
			order[k], order[i] = order[i], order[k]
			permute(k + 1)
			order[k], order[i] = order[i], order[k]
		}
	}
	permute(0)
	if count != 720 {
		t.Fatalf("%d orders, want 720", count)
	}
}

// TestLossyChannelCompletesOnce runs a sender and a receiver of each mode against each other
// over a channel that loses, duplicates and reorders packets and ACKs (seeded), with the
// timer: every QP completes exactly once, the receiver delivers every byte exactly once, and
// go-back-N NAKs a gap once: after a NAK, the next NAK comes only once the expected packet
// has arrived (IBA vol. 1 §9.7.5).
func TestLossyChannelCompletesOnce(t *testing.T) {
	for _, m := range []Mode{GoBackN, Selective, Reorder, RUD} {
		for seed := uint64(1); seed <= 20; seed++ {
			p := params(m)
			p.Cap = 8 * mtu
			p.OOOThreshold = 3
			rng := rand.New(rand.NewPCG(seed, uint64(m)))
			const size = 200*mtu + 123
			var s Sender
			var r Receiver
			s.Init(p, size)
			r.Init(p, size)
			type msg struct {
				data      bool
				nak       bool
				seq, sack int64
				payload   int64
			}
			var wire []msg // in flight, delivered in random order
			now := units.Time(0)
			timerAt := units.Time(0)
			var delivered int64
			completions := 0
			nakPending := false // go-back-N: a NAK was sent and the expected packet has not arrived
			for step := 0; !s.Done() && step < 200000; step++ {
				now += us / 4
				if timerAt != 0 && now >= timerAt {
					timerAt = 0
					if at, _ := s.OnTimer(p, now, s.HasData(p)); at != 0 {
						timerAt = at
					}
				}
				if len(wire) < 16 && !s.Idle(p) {
					if seq, payload, retx := s.Next(p); payload > 0 {
						if at := s.Sent(p, seq, payload, retx, now); at != 0 {
							timerAt = at
						}
						if rng.Float64() > 0.05 { // 5 % loss
							wire = append(wire, msg{data: true, seq: seq, payload: payload})
						}
					}
				}
				if len(wire) == 0 || rng.Float64() < 0.3 {
					continue
				}
				i := 0
				if m == Reorder || m == RUD || rng.Float64() < 0.2 {
					i = rng.IntN(len(wire)) // reordering
				}
				x := wire[i]
				if rng.Float64() > 0.03 { // 3 % duplication
					wire = append(wire[:i], wire[i+1:]...)
				}
				if !x.data {
					s.OnAck(p, x.nak, x.seq, x.sack, now)
					continue
				}
				a := r.OnData(p, x.seq, x.payload)
				if a.Class == Overrun || a.Class == BeyondWindow {
					t.Fatalf("%v seed %d: the sender sent a packet the receiver rejects (%+v)", m, seed, a)
				}
				delivered += a.Delivered
				if a.Complete {
					completions++
				}
				if m == GoBackN && a.Class == InOrder {
					nakPending = false
				}
				if m == GoBackN && a.Reply == Nak {
					if nakPending {
						t.Fatalf("go-back-N seed %d: a second NAK for the gap at %d", seed, r.Next())
					}
					nakPending = true
				}
				if (m == Reorder || m == RUD) && a.Reply != Ack && a.Reply != NoReply && a.Reply != AckSack {
					t.Fatalf("%v seed %d: NAK", m, seed)
				}
				if a.Reply != NoReply && rng.Float64() > 0.05 {
					m := msg{nak: a.Reply != Ack && a.Reply != AckSack, seq: r.Next()}
					if a.Reply == NakSack || a.Reply == AckSack {
						m.sack = x.seq
					}
					wire = append(wire, m)
				}
			}
			if !s.Done() || completions != 1 || delivered != size {
				t.Fatalf("%v seed %d: sender done %v, %d completions, %d of %d B delivered", m, seed, s.Done(), completions, delivered, size)
			}
		}
	}
}

// TestRUDReorderingIsNotLoss: UET's reliable unordered delivery (PDS RUD). The receiver ACKs
// every packet beyond a gap with its SACK (never a NAK); the sender treats a packet not SACKed
// as reordered until OOOThreshold SACKed packets lie above it (RFC 6675's IsLost), then resends
// it alone, not the packets sent after it that may still be on their way.
func TestRUDReorderingIsNotLoss(t *testing.T) {
	p := params(RUD)
	p.Cap = 8 * mtu
	p.OOOThreshold = 3
	var s Sender
	var r Receiver
	s.Init(p, 10*mtu)
	r.Init(p, 10*mtu)
	for i := int64(0); i < 6; i++ {
		send(t, &s, p, 0)
	}
	// Packet 1 is lost; 0 and 2..5 arrive.
	receive(t, &r, p, []rx{
		{"0 in order", 0, Recv{Class: InOrder, Reply: Ack, Delivered: 1000}, 1000},
		{"2 held, ACK with SACK", 2000, Recv{Class: OutOfOrder, Reply: AckSack}, 1000},
		{"3 held, ACK with SACK", 3000, Recv{Class: OutOfOrder, Reply: AckSack}, 1000},
		{"4 held, ACK with SACK", 4000, Recv{Class: OutOfOrder, Reply: AckSack}, 1000},
		{"5 held, ACK with SACK", 5000, Recv{Class: OutOfOrder, Reply: AckSack}, 1000},
	})
	s.OnAck(p, false, 1000, 0, us)
	s.OnAck(p, false, 1000, 2000, us)
	s.OnAck(p, false, 1000, 3000, us)
	if s.sack.recovery || s.Resending(p) {
		t.Fatal("recovery after 2 SACKs beyond the gap: want it only at the threshold 3")
	}
	if got := s.InFlight(p); got != 3000 {
		t.Errorf("in flight %d B, want 3000 (packets 1, 4, 5: sent, neither ACKed nor SACKed)", got)
	}
	if seq, retx, _ := send(t, &s, p, us); seq != 6000 || retx {
		t.Fatalf("below the threshold sent %d (retransmission %v), want new data at 6000", seq, retx)
	}
	s.OnAck(p, false, 1000, 4000, 2*us)
	// SACKed 2, 3, 4: the third from the top is 2, so packet 1 is lost.
	if !s.sack.recovery || !s.Resending(p) || s.sack.retxEnd != 2000 {
		t.Fatalf("at the threshold: recovery %v, resending %v, resend below %d; want true, true, 2000", s.sack.recovery, s.Resending(p), s.sack.retxEnd)
	}
	if seq, retx, _ := send(t, &s, p, 2*us); seq != 1000 || !retx {
		t.Fatalf("recovery sent %d (retransmission %v), want packet 1 resent", seq, retx)
	}
	if seq, retx, _ := send(t, &s, p, 2*us); seq != 7000 || retx {
		t.Fatalf("after the one lost packet sent %d (retransmission %v), want new data at 7000", seq, retx)
	}
	s.OnAck(p, false, 1000, 5000, 3*us)
	// SACKed 2..5: packets below 3 have three SACKed above them; 6 and 7, sent later, are not
	// lost, and nothing is left to resend.
	if s.sack.retxEnd != 3000 || s.Resending(p) {
		t.Fatalf("after the SACK of 5: resend below %d, resending %v; want 3000, false", s.sack.retxEnd, s.Resending(p))
	}
	receive(t, &r, p, []rx{{"resent 1 releases 2..5", 1000, Recv{Class: InOrder, Reply: Ack, Delivered: 5000}, 6000}})
	s.OnAck(p, false, 6000, 1000, 4*us)
	if s.sack.nSacked != 0 || s.Received(p) != 6000 {
		t.Errorf("after the cumulative ACK: %d SACKed, received %d; want 0 and 6000", s.sack.nSacked, s.Received(p))
	}
}

// TestReorderWindow: a Reorder receiver tracking ReorderWindow packets holds a packet up to
// window - 1 beyond the next expected one; further ahead it drops it and NAKs once per gap (the
// go-back-N sender rewinds to the gap); the expected packet clears the NAK.
func TestReorderWindow(t *testing.T) {
	p := params(Reorder)
	p.ReorderWindow = 3
	var r Receiver
	r.Init(p, 10*mtu)
	receive(t, &r, p, []rx{
		{"2 held (2 beyond 0)", 2000, Recv{Class: OutOfOrder}, 0},
		{"3 dropped, NAK", 3000, Recv{Class: OutOfOrder, Reply: Nak}, 0},
		{"4 dropped, no second NAK", 4000, Recv{Class: OutOfOrder}, 0},
		{"0 in order", 0, Recv{Class: InOrder, Reply: Ack, Delivered: 1000}, 1000},
		{"1 releases the held 2", 1000, Recv{Class: InOrder, Reply: Ack, Delivered: 2000}, 3000},
		{"6 beyond 3 + 2: NAK again", 6000, Recv{Class: OutOfOrder, Reply: Nak}, 3000},
	})
	var s Sender
	s.Init(p, 10*mtu)
	for i := 0; i < 7; i++ {
		send(t, &s, p, 0)
	}
	if !s.OnAck(p, true, 3000, 0, us) || s.NextNew() != 3000 {
		t.Errorf("the NAK: next %d, want the sender back at 3000", s.NextNew())
	}
}
