package fabric

import (
	"fmt"

	"github.com/fabricsim/fabricsim/units"
)

// Selective repeat in the style of IRN (Mittal et al., "Revisiting Network Support for RDMA",
// SIGCOMM'18, §3): the receiver keeps out-of-order packets (a bitmap of packet numbers beyond
// the cumulative acknowledgement) and answers each one with a NAK carrying the cumulative
// acknowledgement and the offset that arrived (a SACK); the sender, on the first NAK, enters
// loss recovery and resends only the packets below the highest SACK that the receiver does not
// hold, before new data; a timeout resends every unacknowledged, unSACKed packet. In-flight bytes
// (sent and neither cumulatively nor selectively acknowledged: the SACK "pipe" of RFC 6675) are
// capped at one bandwidth-delay product; the span from the first unacknowledged byte to the next
// new one is capped at four, which bounds both bitmaps. The timeout is
// RTOlow while at most N packets are outstanding, RTOhigh otherwise ([IRN] §3.1).
//
// Packet numbers are byte offsets divided by the MTU: every packet but a QP's last is full.

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

// selRepeat is one QP's selective-repeat state, sender and receiver halves.
type selRepeat struct {
	mtu int64
	cap int64 // in-flight cap in bytes (one BDP)

	// Sender.
	sacked      bitring // packets the receiver reported holding beyond sndUna
	nSacked     int64   // bits set in sacked
	recovery    bool
	retxNext    int64 // next offset to consider for retransmission
	retxEnd     int64 // resend unSACKed packets below this offset (the highest SACK)
	recoverExit int64 // recovery ends when the cumulative ACK reaches this offset

	// Receiver.
	rcvd bitring // packets held beyond rcvNxt
}

func newSelRepeat(capBytes, mtu int64) *selRepeat {
	pkts := 4*((capBytes+mtu-1)/mtu) + 2
	return &selRepeat{mtu: mtu, cap: capBytes, sacked: newBitring(pkts), rcvd: newBitring(pkts)}
}

// hasData reports whether the flow's sender has a packet it may send now.
func (f *Flow) hasData() bool {
	if f.sr != nil {
		_, _, ok := f.sr.pick(f)
		return ok
	}
	return f.sndNxt < f.size
}

// pick returns the offset to send next: a lost packet in recovery first, then new data while
// the in-flight bytes are under the cap (one packet is always allowed when none is in flight).
func (s *selRepeat) pick(f *Flow) (seq int64, retx, ok bool) {
	if s.recovery {
		if s.retxNext < f.sndUna {
			s.retxNext = f.sndUna
		}
		for s.retxNext < s.retxEnd {
			if !s.sacked.get(s.retxNext / s.mtu) {
				return s.retxNext, true, true
			}
			s.retxNext += s.mtu
		}
	}
	span := f.sndNxt - f.sndUna
	if f.sndNxt < f.size && (span-s.nSacked*s.mtu < s.cap && span+s.mtu < (s.sacked.width()-2)*s.mtu || span == 0) {
		return f.sndNxt, false, true
	}
	return 0, false, false
}

// sent records that the packet at seq went out.
func (s *selRepeat) sent(f *Flow, seq, payload int64, retx bool) {
	if retx {
		s.retxNext = seq + payload
		return
	}
	f.sndNxt += payload
}

// timeout marks every unacknowledged, unSACKed packet lost.
func (s *selRepeat) timeout(f *Flow) {
	s.recovery = true
	s.retxNext = f.sndUna
	s.retxEnd = f.sndNxt
	s.recoverExit = f.sndNxt
}

// rto is the flow's retransmission timeout.
func (c *NIC) rto(f *Flow) units.Time {
	cfg := &c.net.cfg
	if f.sr == nil {
		return cfg.RTO
	}
	if f.sndNxt-f.sndUna <= int64(cfg.IRNLowThreshold)*f.sr.mtu {
		return cfg.IRNRTOLow
	}
	return cfg.IRNRTOHigh
}

// receiveAckSR is the selective-repeat sender's ACK/NAK handling.
func (c *NIC) receiveAckSR(f *Flow, pkt *Packet) {
	n := c.net
	s := f.sr
	if pkt.Seq > f.sndUna {
		for i := f.sndUna / s.mtu; i < (pkt.Seq+s.mtu-1)/s.mtu; i++ {
			if s.sacked.get(i) {
				s.sacked.clear(i)
				s.nSacked--
			}
		}
		f.sndUna = pkt.Seq
		f.rtoDeadline = n.sim.Now() + c.rto(f)
	}
	if pkt.Kind == Nak {
		if i := pkt.Sack / s.mtu; pkt.Sack >= f.sndUna && pkt.Sack < f.sndNxt && !s.sacked.get(i) {
			s.sacked.set(i)
			s.nSacked++
		}
		if !s.recovery {
			s.recovery = true
			s.retxNext = f.sndUna
			s.retxEnd = 0
			s.recoverExit = f.sndNxt
		}
		if pkt.Sack > s.retxEnd {
			s.retxEnd = pkt.Sack
		}
	}
	if s.recovery && f.sndUna >= s.recoverExit {
		s.recovery = false
	}
	if f.sndUna >= f.size {
		f.senderDone = true
		return
	}
	c.activate(f)
	c.Port.kick()
}

// receiveSR is the selective-repeat receiver: it accepts packets out of order.
func (c *NIC) receiveSR(f *Flow, pkt *Packet) {
	n := c.net
	s := f.sr
	seq := pkt.Seq
	switch {
	case f.received || seq < f.rcvNxt:
		n.stats.Duplicates++
		c.sendControl(f, Ack, f.rcvNxt)
	case seq == f.rcvNxt:
		c.acceptInOrder(f, pkt, s.mtu, func(i int64) bool {
			if !s.rcvd.get(i) {
				return false
			}
			s.rcvd.clear(i)
			return true
		})
	default:
		idx := seq / s.mtu
		if idx-f.rcvNxt/s.mtu >= s.rcvd.width() {
			n.violation(fmt.Sprintf("host%d", c.Host), fmt.Sprintf("flow %d: packet at %d beyond the receive window at %d", f.id, seq, f.rcvNxt))
			return
		}
		if s.rcvd.get(idx) {
			n.stats.Duplicates++
		} else {
			s.rcvd.set(idx)
			n.stats.OutOfOrder++
		}
		n.stats.NAKs++
		c.sendCtl(f, Nak, f.rcvNxt, seq)
	}
}

// irnCap is IRN's default in-flight cap: one bandwidth-delay product, the host link rate times
// the base round trip of the longest path from host 0 (a full packet there, a full packet back).
func (n *Network) irnCap() int64 {
	if n.cfg.IRNBDPCap > 0 {
		return int64(n.cfg.IRNBDPCap)
	}
	far, hops := int32(-1), -1
	for d := 1; d < len(n.g.Hosts); d++ {
		if h := n.routes.Hops(n.g.Hosts[0], d); h > hops {
			far, hops = int32(d), h
		}
	}
	if far < 0 {
		return int64(n.cfg.MTU) * 8
	}
	rtt := 2 * newIdealCache(n).fct(0, far, int64(n.cfg.MTU))
	bdp := int64(n.NICs[0].Port.Rate.BytesIn(rtt))
	if bdp < int64(n.cfg.MTU) {
		bdp = int64(n.cfg.MTU)
	}
	return bdp
}

// acceptInOrder delivers pkt, which starts at f.rcvNxt, and then every packet already held beyond
// it (held reports packet index i as held and releases it), and acknowledges: at once when held
// packets were released or the message is complete, else every AckEvery packets. The selective
// repeat (IRN) and the out-of-order (adaptive routing) receivers share it.
func (c *NIC) acceptInOrder(f *Flow, pkt *Packet, mtu int64, held func(i int64) bool) {
	n := c.net
	adv := int64(pkt.Payload)
	f.rcvNxt += adv
	for f.rcvNxt < f.size && held(f.rcvNxt/mtu) {
		p := min(mtu, f.size-f.rcvNxt)
		f.rcvNxt += p
		adv += p
	}
	n.stats.BytesDelivered += adv
	n.lastDelivery = n.sim.Now()
	f.unacked++
	if n.cfg.Check && f.rcvNxt > f.size {
		n.violation(fmt.Sprintf("host%d", c.Host), fmt.Sprintf("flow %d delivered %d B of a %d B message", f.id, f.rcvNxt, f.size))
		return
	}
	if f.rcvNxt == f.size {
		f.received = true
		c.sendControl(f, Ack, f.rcvNxt)
		n.delivered(f)
	} else if f.unacked >= n.cfg.AckEvery || adv > int64(pkt.Payload) {
		c.sendControl(f, Ack, f.rcvNxt)
	}
}
