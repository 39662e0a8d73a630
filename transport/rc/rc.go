// Package rc is the reliable connection (RDMA RC) transport of one queue pair as two state
// machines without I/O: the Sender (requester) decides which bytes go out next, the Receiver
// (responder) decides what an arriving data packet means and whether it is acknowledged. They
// never touch an event queue or a packet: the NIC feeds them what happened (a packet was sent,
// a data packet or an ACK/NAK arrived, a timer fired, the time now) and applies what they
// return (a packet to send, an ACK or NAK to send, a timer to arm, a message complete).
//
// Three loss recoveries, one per network (Mode), chosen once when the fabric is built:
//
//   - GoBackN, RDMA RC as ConnectX NICs run it: the receiver accepts only the next expected
//     byte, acknowledges cumulatively, and answers the first packet beyond a gap with one NAK
//     (PSN sequence error) carrying the expected offset; it ignores later packets beyond the gap
//     until the expected one arrives (IBA vol. 1 §9.7.5, responder behaviour on a sequence
//     error). The sender rewinds to the NAK's offset, or to the first unacknowledged byte on a
//     timeout, and resends everything from there.
//   - Selective, IRN's selective repeat (Mittal et al., "Revisiting Network Support for RDMA",
//     SIGCOMM'18, §3): the receiver holds packets beyond a gap and answers each with a NAK
//     carrying the cumulative acknowledgement and the offset that arrived (a SACK); the sender,
//     on the first NAK, enters loss recovery and resends only the packets below the highest
//     SACK that the receiver does not hold, before new data; a timeout resends every
//     unacknowledged, unSACKed packet. In-flight bytes (sent and neither cumulatively nor
//     selectively acknowledged: the SACK "pipe" of RFC 6675) are capped at one bandwidth-delay
//     product; the span from the first unacknowledged byte to the next new one is capped at
//     four, which bounds both bitmaps. The timeout is RTOLow while at most LowThreshold packets
//     are outstanding, RTOHigh otherwise (IRN §3.1).
//   - RUD, the reliable unordered delivery of Ultra Ethernet's packet delivery sublayer (UET 1.0,
//     PDS RUD): packets are sprayed and arrive in any order; the receiver places (holds) each and
//     acknowledges every packet with the cumulative acknowledgement and the packet's own offset
//     (a SACK). The sender keeps selective repeat's bookkeeping but tells reordering from loss:
//     a packet not SACKed is lost once OOOThreshold SACKed packets lie above it (RFC 6675's
//     IsLost with the out-of-order threshold of UEC's htsim as DupThresh); the sender then
//     resends the packets so declared lost, before new data. A timeout (RTOLow / RTOHigh as
//     under Selective) declares every unacknowledged, unSACKed packet lost.
//   - Reorder, the receiver of an InfiniBand HCA under adaptive routing: a QP's packets take
//     different paths and may arrive out of order on a lossless fabric, so the receiver places
//     them (holds them) and never NAKs; it acknowledges the contiguous prefix. The sender is
//     go-back-N's, whose timeout a lossless fabric does not reach. (NVIDIA HCAs place the
//     packets of an RDMA WRITE at their offset in the target buffer whatever their order when
//     adaptive routing is on; docs/infiniband.md.) With ReorderWindow set, the receiver tracks
//     only that many packets from the next expected one: a packet further ahead is dropped and
//     NAKed once per gap, as go-back-N's receiver does, and the sender goes back to the gap.
//
// Offsets are bytes of the QP's share of a message. Packet numbers are offsets divided by the
// MTU: every packet but a QP's last is full, which the NIC's segmentation guarantees.
package rc

import (
	"fmt"

	"github.com/fabricsim/fabricsim/units"
)

// Mode is a connection's loss recovery.
type Mode uint8

const (
	// GoBackN accepts in order only, NAKs a gap once and resends from the gap.
	GoBackN Mode = iota
	// Selective is IRN's selective repeat with SACKs and a BDP cap on in-flight bytes.
	Selective
	// Reorder accepts packets in any order and never NAKs (adaptive routing on a lossless
	// fabric); its sender is go-back-N's.
	Reorder
	// RUD is Ultra Ethernet's reliable unordered delivery: every packet ACKed with a SACK, loss
	// declared after OOOThreshold SACKed packets beyond the gap.
	RUD
)

func (m Mode) String() string {
	switch m {
	case GoBackN:
		return "go-back-N"
	case Selective:
		return "selective"
	case Reorder:
		return "reorder"
	case RUD:
		return "rud"
	}
	return fmt.Sprintf("Mode(%d)", m)
}

// Params are one network's transport settings, shared by every QP.
type Params struct {
	Mode Mode
	// MTU is the payload of a full packet in bytes.
	MTU int64
	// AckEvery is how many in-order packets the receiver coalesces into one ACK.
	AckEvery int
	// RTO is the retransmission timeout of GoBackN and Reorder.
	RTO units.Time
	// RTOLow applies under Selective while at most LowThreshold packets are outstanding,
	// RTOHigh otherwise (IRN §3.1: 100 us, 320 us, N = 3).
	RTOLow, RTOHigh units.Time
	LowThreshold    int64
	// Cap is Selective's in-flight cap in bytes (one bandwidth-delay product), RUD's too.
	Cap int64
	// OOOThreshold is RUD's reordering tolerance: recovery starts when this many packets
	// beyond the cumulative acknowledgement have been SACKed.
	OOOThreshold int64
	// ReorderWindow, when positive, bounds Reorder's receiver: a packet this many packets or
	// more beyond the next expected one is dropped and NAKed (go-back-N from the gap) instead of
	// placed, as a NIC whose out-of-order tracking has that many entries must.
	ReorderWindow int64
}

// selective reports whether the mode keeps selective repeat's SACK bookkeeping.
func (p *Params) selective() bool { return p.Mode == Selective || p.Mode == RUD }

// window is the packets a Selective bitmap spans: four in-flight caps (the sender keeps the
// span from the first unacknowledged packet to the next new one below that) and two spare.
func (p *Params) window() int64 { return 4*((p.Cap+p.MTU-1)/p.MTU) + 2 }

// Window is the packets the Selective and RUD bitmaps span: a sender never has more than this
// many packets between its first unacknowledged one and the next new one.
func (p *Params) Window() int64 { return p.window() }

// Reply is the control packet a receiver sends back. Every reply carries the receiver's
// cumulative acknowledgement, Receiver.Next: every byte before it has arrived.
type Reply uint8

const (
	NoReply Reply = iota
	// Ack acknowledges every byte before Receiver.Next.
	Ack
	// Nak is go-back-N's PSN sequence error: resend from Receiver.Next.
	Nak
	// NakSack is selective repeat's NAK: every byte before Receiver.Next has arrived, and so
	// has the packet that triggered it, whose offset it carries as the SACK.
	NakSack
	// AckSack is RUD's ACK: every byte before Receiver.Next has arrived, and so has the packet
	// that triggered it, whose offset it carries as the SACK.
	AckSack
)

// Class says what an arriving data packet was.
type Class uint8

const (
	// InOrder: the packet started at the next expected byte and was delivered.
	InOrder Class = iota
	// OutOfOrder: the packet lay beyond a gap: dropped (go-back-N) or held.
	OutOfOrder
	// Duplicate: every byte of it had arrived before.
	Duplicate
	// Overrun: the packet reaches beyond the message: a sender bug, nothing was changed.
	Overrun
	// BeyondWindow: the packet lies beyond the receive bitmap (selective repeat): a sender
	// that broke its cap, nothing was changed.
	BeyondWindow
)

// Recv is the receiver's verdict on one data packet and what the NIC does about it: send
// Reply, if any; count Delivered bytes as delivered in order; complete the QP's message if
// Complete (true once per QP). (Four fields: the compiler keeps it in registers.)
type Recv struct {
	Class     Class
	Reply     Reply
	Complete  bool
	Delivered int64 // bytes newly delivered in order (this packet and the held ones it releases)
}

// Sender is the requester half of one QP. Its zero value is not ready: call Init.
type Sender struct {
	done  bool // every byte acknowledged
	armed bool // the NIC holds a retransmission timer event for this QP
	// The fields every sent packet reads and writes come first (the fabric keeps them in its
	// flow's first cache line: fabric.TestFlowLayout).
	size    int64 // bytes of the QP
	nxt     int64 // next new byte to send (go-back-N rewinds it)
	maxSent int64 // end of the highest byte sent: below it a send is a retransmission
	una     int64 // first unacknowledged byte
	rtoAt   units.Time
	sack    *sackState // Selective and RUD only
}

// sackState is the selective-repeat sender's loss recovery.
type sackState struct {
	sacked      bitring // packets the receiver reported holding beyond una
	nSacked     int64   // bits set in sacked
	recovery    bool
	retxNext    int64 // next offset to consider for retransmission
	retxEnd     int64 // resend unSACKed packets below this offset (the highest SACK)
	highSack    int64 // RUD: the highest offset SACKed
	recoverExit int64 // recovery ends when the cumulative ACK reaches this offset
}

// Init readies the sender of a QP of size bytes.
func (s *Sender) Init(p *Params, size int64) {
	*s = Sender{size: size}
	if p.selective() {
		s.sack = &sackState{sacked: newBitring(p.window())}
	}
}

// Size is the QP's bytes; NextNew the next byte never sent; Unacked the first unacknowledged one.
func (s *Sender) Size() int64    { return s.size }
func (s *Sender) NextNew() int64 { return s.nxt }
func (s *Sender) Unacked() int64 { return s.una }

// Done reports that every byte has been acknowledged.
func (s *Sender) Done() bool { return s.done }

// Idle reports that the sender has nothing to send whatever happens next short of an ACK, NAK
// or timeout: it is done or, going back N, has sent every byte. (Selective repeat answers in
// Next, as its window may be what holds it.)
func (s *Sender) Idle(p *Params) bool {
	return s.done || !p.selective() && s.nxt >= s.size
}

// InFlight is what a congestion window bounds: the bytes from the first unacknowledged one to
// the next new one, less (RUD) the bytes SACKed in between. (Selective's windows count the whole
// span, as they did before RUD existed.)
func (s *Sender) InFlight(p *Params) int64 {
	span := s.nxt - s.una
	if p.Mode == RUD {
		span -= s.sack.nSacked * p.MTU
	}
	return max(span, 0)
}

// Resending reports whether RUD's sender is in recovery with a lost packet to resend: a
// congestion window does not hold that back (the lost bytes are no longer in flight).
func (s *Sender) Resending(p *Params) bool {
	if p.Mode != RUD || !s.sack.recovery {
		return false
	}
	_, retx, ok := s.pick(p)
	return ok && retx
}

// Received is the bytes the receiver has reported holding: the cumulative acknowledgement and
// (Selective, RUD) the SACKed packets beyond it.
func (s *Sender) Received(p *Params) int64 {
	r := s.una
	if s.sack != nil {
		r += s.sack.nSacked * p.MTU
	}
	return min(r, s.size)
}

// Next returns the packet to send now: its offset, its payload and whether it resends bytes
// sent before. payload is 0 when none may go: every byte is sent, or selective repeat's window
// is full with nothing to resend. Next changes nothing a second call would not.
func (s *Sender) Next(p *Params) (seq, payload int64, retx bool) {
	if p.selective() {
		return s.nextSelective(p)
	}
	if s.nxt >= s.size {
		return 0, 0, false
	}
	return s.nxt, min(s.size-s.nxt, p.MTU), s.nxt < s.maxSent
}

func (s *Sender) nextSelective(p *Params) (seq, payload int64, retx bool) {
	seq, retx, ok := s.pick(p)
	if !ok {
		return 0, 0, false
	}
	return seq, min(s.size-seq, p.MTU), retx
}

// HasData reports whether Next would return a packet.
func (s *Sender) HasData(p *Params) bool {
	if p.selective() {
		_, _, ok := s.pick(p)
		return ok
	}
	return s.nxt < s.size
}

// pick is selective repeat's choice: a lost packet in recovery first, then new data while the
// in-flight bytes are under the cap (one packet is always allowed when none is in flight).
func (s *Sender) pick(p *Params) (seq int64, retx, ok bool) {
	k := s.sack
	if k.recovery {
		if k.retxNext < s.una {
			k.retxNext = s.una
		}
		for k.retxNext < k.retxEnd {
			if !k.sacked.get(k.retxNext / p.MTU) {
				return k.retxNext, true, true
			}
			k.retxNext += p.MTU
		}
	}
	span := s.nxt - s.una
	if s.nxt < s.size && (span-k.nSacked*p.MTU < p.Cap && span+p.MTU < (k.sacked.width()-2)*p.MTU || span == 0) {
		return s.nxt, false, true
	}
	return 0, false, false
}

// Sent records that the packet Next returned went out at now. armAt is nonzero when no
// retransmission timer was armed: the NIC arms one to fire then (and calls OnTimer).
func (s *Sender) Sent(p *Params, seq, payload int64, retx bool, now units.Time) (armAt units.Time) {
	if p.selective() && retx {
		s.sack.retxNext = seq + payload
	} else {
		s.nxt += payload
	}
	if s.nxt > s.maxSent {
		s.maxSent = s.nxt
	}
	if s.armed {
		return 0
	}
	s.armed = true
	s.rtoAt = now + s.rto(p)
	return s.rtoAt
}

// rto is the retransmission timeout for the bytes now outstanding.
func (s *Sender) rto(p *Params) units.Time {
	if !p.selective() {
		return p.RTO
	}
	if s.nxt-s.una <= p.LowThreshold*p.MTU {
		return p.RTOLow
	}
	return p.RTOHigh
}

// OnAck applies an ACK (nak false) or NAK that arrived at now: seq is its cumulative
// acknowledgement, sack (selective NAKs) the offset the receiver reported holding. wake reports
// that the sender may have something to send again: the NIC puts it back in its round robin.
func (s *Sender) OnAck(p *Params, nak bool, seq, sack int64, now units.Time) (wake bool) {
	if s.done {
		return false
	}
	if p.selective() {
		return s.onAckSelective(p, nak, seq, sack, now)
	}
	if seq > s.una {
		s.una = seq
		s.rtoAt = now + p.RTO // the timer restarts with every advance
		if s.nxt < seq {
			s.nxt = seq // resending after a timeout: skip what the receiver already has
		}
	}
	if nak && s.nxt > seq {
		s.nxt = seq // go back N: resend everything from the gap
		wake = true
	}
	if s.una >= s.size {
		s.done = true
	}
	return wake
}

func (s *Sender) onAckSelective(p *Params, nak bool, seq, sack int64, now units.Time) bool {
	k := s.sack
	if seq > s.una {
		for i := s.una / p.MTU; i < (seq+p.MTU-1)/p.MTU; i++ {
			if k.sacked.get(i) {
				k.sacked.clear(i)
				k.nSacked--
			}
		}
		s.una = seq
		s.rtoAt = now + s.rto(p)
	}
	if p.Mode == RUD && sack > 0 {
		s.sackRUD(p, sack)
	} else if nak {
		if i := sack / p.MTU; sack >= s.una && sack < s.nxt && !k.sacked.get(i) {
			k.sacked.set(i)
			k.nSacked++
		}
		if !k.recovery {
			k.recovery = true
			k.retxNext = s.una
			k.retxEnd = 0
			k.recoverExit = s.nxt
		}
		if sack > k.retxEnd {
			k.retxEnd = sack
		}
	}
	if k.recovery && s.una >= k.recoverExit {
		k.recovery = false
	}
	if s.una >= s.size {
		s.done = true
		return false
	}
	return true
}

// sackRUD applies RUD's SACK of the packet at offset sack. A packet not SACKed is declared lost
// once OOOThreshold SACKed packets lie above it (the rule of RFC 6675's IsLost, with UEC
// htsim's out-of-order threshold as DupThresh): up to then it may only be on a slower path.
// Recovery resends the packets so declared lost, below retxEnd.
func (s *Sender) sackRUD(p *Params, sack int64) {
	k := s.sack
	if i := sack / p.MTU; sack >= s.una && sack < s.nxt && !k.sacked.get(i) {
		k.sacked.set(i)
		k.nSacked++
		k.highSack = max(k.highSack, sack)
	}
	if k.nSacked < p.OOOThreshold {
		return
	}
	// The OOOThreshold-th SACKed packet from the top: every unSACKed packet below it has that
	// many SACKed above it.
	end, n := int64(0), int64(0)
	for i := k.highSack / p.MTU; i >= s.una/p.MTU; i-- {
		if k.sacked.get(i) {
			if n++; n == p.OOOThreshold {
				end = i * p.MTU
				break
			}
		}
	}
	if end <= s.una {
		return // no hole below it: nothing is lost yet
	}
	if !k.recovery {
		k.recovery = true
		k.retxNext = s.una
		k.retxEnd = end
		k.recoverExit = s.nxt
	} else if end > k.retxEnd {
		k.retxEnd = end
	}
}

// OnTimer handles the retransmission timer the NIC armed, firing at now; queued says whether
// the NIC still has the QP in its round robin (it has data in hand, so the timer keeps
// running). rearmAt is nonzero when the NIC must arm the timer again for then; timedOut
// reports a timeout: the sender has rewound (go-back-N: to the first unacknowledged byte;
// selective: every unacknowledged, unSACKed packet is marked lost) and the NIC puts it back in
// its round robin.
func (s *Sender) OnTimer(p *Params, now units.Time, queued bool) (rearmAt units.Time, timedOut bool) {
	s.armed = false
	if s.done || (s.una >= s.nxt && !queued) {
		return 0, false // nothing outstanding: the timer stops until the next send arms it
	}
	if now < s.rtoAt {
		s.armed = true // an ACK moved the deadline: wait for it
		return s.rtoAt, false
	}
	if p.selective() {
		k := s.sack
		k.recovery = true
		k.retxNext = s.una
		k.retxEnd = s.nxt
		k.recoverExit = s.nxt
	} else {
		s.nxt = s.una
	}
	s.armed = true
	s.rtoAt = now + s.rto(p)
	return s.rtoAt, true
}

// Receiver is the responder half of one QP. Its zero value is not ready: call Init.
type Receiver struct {
	complete bool  // every byte arrived (reported once)
	nakSent  bool  // go-back-N: a NAK for the current gap was sent
	unacked  int32 // in-order packets not yet acknowledged
	size     int64
	nxt      int64   // next expected byte: every byte before it has arrived
	held     bitring // Selective and Reorder: packets held beyond nxt
}

// Init readies the receiver of a QP of size bytes.
func (r *Receiver) Init(p *Params, size int64) {
	*r = Receiver{size: size}
	switch p.Mode {
	case Selective, RUD:
		r.held = newBitring(p.window())
	case Reorder:
		r.held = newBitring((size + p.MTU - 1) / p.MTU) // a bit for every packet: no window
	}
}

// Next is the next expected byte; Complete reports that every byte has arrived.
func (r *Receiver) Next() int64    { return r.nxt }
func (r *Receiver) Complete() bool { return r.complete }

// OnData takes a data packet of payload bytes at offset seq and returns what it was and the
// reply, if any.
func (r *Receiver) OnData(p *Params, seq, payload int64) Recv {
	if seq+payload > r.size {
		return Recv{Class: Overrun}
	}
	if seq != r.nxt || r.complete {
		if p.Mode == GoBackN {
			return r.outOfOrderGoBackN(p, seq)
		}
		return r.outOfOrderHolding(p, seq)
	}
	// In order: deliver the packet and every packet held beyond it, and acknowledge at once
	// when held packets were released or the QP is complete, else every AckEvery packets.
	adv := payload
	r.nxt += payload
	if p.Mode != GoBackN {
		adv += r.release(p)
	}
	r.nakSent = false
	r.unacked++
	switch {
	case r.nxt == r.size:
		r.complete = true
		r.unacked = 0
		return Recv{Class: InOrder, Reply: Ack, Complete: true, Delivered: adv}
	case int(r.unacked) >= p.AckEvery || adv > payload:
		r.unacked = 0
		return Recv{Class: InOrder, Reply: Ack, Delivered: adv}
	}
	return Recv{Class: InOrder, Delivered: adv}
}

// release delivers the packets held from nxt on and returns their bytes.
func (r *Receiver) release(p *Params) (adv int64) {
	for r.nxt < r.size && r.held.take(r.nxt/p.MTU) {
		q := min(p.MTU, r.size-r.nxt)
		r.nxt += q
		adv += q
	}
	return adv
}

// outOfOrderGoBackN is go-back-N's answer to a packet not at nxt.
func (r *Receiver) outOfOrderGoBackN(p *Params, seq int64) Recv {
	if seq > r.nxt && !r.complete {
		// A gap: the packet at nxt was lost or overtaken. Discard, NAK once.
		if r.nakSent {
			return Recv{Class: OutOfOrder}
		}
		r.nakSent = true
		r.unacked = 0
		return Recv{Class: OutOfOrder, Reply: Nak}
	}
	// A duplicate (bytes resent after a NAK or timeout): ACK it with the cumulative
	// acknowledgement, as a responder must (IBA Vol 1 C9-105; Linux rxe_resp.c
	// duplicate_request: "Ack again"). Without it a sender whose ACKs were lost (a link that
	// failed under them) resends only bytes the receiver has, and if it cannot resend them all
	// within one timeout it rewinds again and never reaches new data.
	r.unacked = 0
	return Recv{Class: Duplicate, Reply: Ack}
}

// outOfOrderHolding is the answer of the receivers that hold packets (selective repeat,
// reorder) to a packet not at nxt: a duplicate is ACKed; a packet beyond nxt is held and,
// under selective repeat, NAKed with its SACK (a held one again too).
func (r *Receiver) outOfOrderHolding(p *Params, seq int64) Recv {
	if r.complete || seq < r.nxt {
		r.unacked = 0
		return Recv{Class: Duplicate, Reply: Ack}
	}
	idx := seq / p.MTU
	if p.Mode == Reorder && p.ReorderWindow > 0 && idx-r.nxt/p.MTU >= p.ReorderWindow {
		// Beyond the NIC's out-of-order tracking: drop it and fall back to go-back-N, a
		// NAK once per gap (cleared when the expected packet arrives).
		if r.nakSent {
			return Recv{Class: OutOfOrder}
		}
		r.nakSent = true
		r.unacked = 0
		return Recv{Class: OutOfOrder, Reply: Nak}
	}
	if idx-r.nxt/p.MTU >= r.held.width() {
		return Recv{Class: BeyondWindow}
	}
	class := OutOfOrder
	if r.held.get(idx) {
		class = Duplicate
	} else {
		r.held.set(idx)
	}
	switch {
	case p.Mode == Selective:
		r.unacked = 0
		return Recv{Class: class, Reply: NakSack} // every packet beyond a gap is SACKed
	case p.Mode == RUD:
		r.unacked = 0
		return Recv{Class: class, Reply: AckSack} // every packet ACKed with its SACK
	case class == Duplicate:
		r.unacked = 0
		return Recv{Class: class, Reply: Ack}
	}
	return Recv{Class: class}
}

// bitring is a bitmap over packet numbers in a sliding window of a power-of-two width.
type bitring struct {
	w    []uint64
	mask int64
}

func newBitring(n int64) bitring {
	size := int64(64)
	for size < n {
		size *= 2
	}
	return bitring{w: make([]uint64, size/64), mask: size - 1}
}

func (b *bitring) width() int64 { return b.mask + 1 }

func (b *bitring) get(i int64) bool {
	j := i & b.mask
	return b.w[j>>6]>>(j&63)&1 != 0
}

func (b *bitring) set(i int64) {
	j := i & b.mask
	b.w[j>>6] |= 1 << (j & 63)
}

func (b *bitring) clear(i int64) {
	j := i & b.mask
	b.w[j>>6] &^= 1 << (j & 63)
}

// take reports whether packet i is held and releases it.
func (b *bitring) take(i int64) bool {
	if !b.get(i) {
		return false
	}
	b.clear(i)
	return true
}
