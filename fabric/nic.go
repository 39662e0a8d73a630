package fabric

import (
	"fmt"

	"github.com/fabricsim/fabricsim/sim"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

// Flow is the transport state of one message, or of one QP of a message striped over several
// (qp.go): the sender's half (at the source NIC) and the receiver's half (at the destination NIC).
// The transport is a reliable connection in the style of RDMA RC with go-back-N by default: the
// receiver accepts only the next expected byte offset, ACKs cumulatively, NAKs the first gap
// once, and the sender rewinds on NAK or timeout. Config.Transport "irn" switches to selective
// repeat (irn.go).
type Flow struct {
	// The first line holds what the sender reads and writes for every packet, the second what
	// it reads for most (pacing, the retransmission timer); the receiver's fields follow. A
	// flow is three whole lines (TestFlowLayout), so that its lines are its own.
	id       int32 // index in Network.flows: the message ID for a message's first QP
	qp       int32 // queue pair of the message's connection (0..QPsPerConn-1)
	src, dst int32
	hash     uint32
	prio     uint8
	// senderDone: every byte acknowledged; timerPending: a retransmission timer is scheduled.
	senderDone   bool
	timerPending bool
	active       bool // in the NIC's round-robin list
	size         int64
	sndNxt       int64
	maxSent      int64
	nextSend     units.Time
	// sr is the selective-repeat (IRN) state, nil under go-back-N (irn.go).
	sr *selRepeat

	// Rate, when positive, paces the flow: after a packet of w wire bytes the next may start
	// w/Rate later (DCQCN's rate limiter). Gap is added after every packet (InfiniBand CC's
	// injection delay from the congestion control table). Both are set by the fabric's
	// congestion control; zero means line rate.
	Rate        units.Rate
	Gap         units.Time
	rtoDeadline units.Time
	sndUna      int64
	started     units.Time
	msg         int32
	nextQP      int32 // flow ID of the message's next QP, 0 if none
	qpLeft      int32 // on a message's first QP: QPs not yet fully received

	// Receiver.
	unacked  int
	rcvNxt   int64
	nakSent  bool
	received bool
	// oooBits marks packets held beyond rcvNxt by the out-of-order receiver (ibooo.go).
	oooBits []uint64
	_       [22]byte
}

// NIC is a host's network interface: it segments messages into MTU-sized packets, sends them at
// line rate (round robin across the flows it has data for), acknowledges what it receives, and
// recovers from loss with go-back-N.
type NIC struct {
	net    *Network
	Host   int32
	Node   topo.NodeID
	Port   *Port
	active []int32 // flows with data to send, served round robin
	rr     int
	wakeAt units.Time // a pending opWake, 0 if none
}

func (c *NIC) startFlow(f *Flow) {
	f.started = c.net.sim.Now()
	if c.net.cc != nil {
		c.net.cc.Start(f)
	}
	c.activate(f)
	c.Port.kick()
}

func (c *NIC) activate(f *Flow) {
	if !f.active && !f.senderDone && f.hasData() {
		f.active = true
		c.active = append(c.active, f.id)
	}
}

// nextData builds the next data packet, or returns nil if no flow may send now: none has data,
// their priority is paused, or their pacing rate makes them wait (then a wake-up is scheduled).
func (c *NIC) nextData() *Packet {
	n := c.net
	now := n.sim.Now()
	var wake units.Time
	for tried := 0; tried < len(c.active); {
		if c.rr >= len(c.active) {
			c.rr = 0
		}
		f := n.flows[c.active[c.rr]]
		if f.senderDone || (f.sr == nil && f.sndNxt >= f.size) {
			c.deactivate(c.rr)
			continue
		}
		if c.Port.Paused&(1<<f.prio) != 0 {
			c.rr++
			tried++
			continue
		}
		if f.nextSend > now {
			if wake == 0 || f.nextSend < wake {
				wake = f.nextSend
			}
			c.rr++
			tried++
			continue
		}
		seq, retx := f.sndNxt, f.sndNxt < f.maxSent
		if f.sr != nil {
			var ok bool
			if seq, retx, ok = f.sr.pick(f); !ok {
				// Window full, or nothing to resend: an ACK, NAK or timeout reactivates it.
				c.deactivate(c.rr)
				continue
			}
		}
		payload := f.size - seq
		if mtu := int64(n.cfg.MTU); payload > mtu {
			payload = mtu
		}
		hdr := n.cfg.HeaderBytes
		if seq == 0 {
			hdr += n.cfg.FirstHeaderExtra // RETH on WRITE First/Only
		}
		pkt := n.pool.get()
		pkt.Kind = Data
		pkt.SL = f.prio
		pkt.Prio = c.Port.VLOf(f.prio)
		pkt.Flow = f.id
		pkt.QP = f.qp
		pkt.Src, pkt.Dst = f.src, f.dst
		pkt.Seq = seq
		pkt.Payload = int32(payload)
		pkt.Size, _ = n.cfg.frame(int(payload), hdr)
		pkt.Hash = f.hash
		if n.blocked(c.Port, pkt) { // no credits for it (InfiniBand)
			n.pool.put(pkt)
			c.rr++
			tried++
			continue
		}
		if f.Rate > 0 || f.Gap > 0 {
			f.nextSend = now + f.Gap
			if f.Rate > 0 {
				f.nextSend += f.Rate.TransmitTime(units.Size(n.wireBytes(pkt)))
			}
		}
		if retx {
			n.stats.BytesRetransmitted += payload
		}
		if f.sr == nil {
			f.sndNxt += payload
		} else {
			f.sr.sent(f, seq, payload, retx)
		}
		if f.sndNxt > f.maxSent {
			f.maxSent = f.sndNxt
		}
		n.stats.BytesSent += payload
		n.dataInjected += payload
		if n.cc != nil {
			n.cc.Sent(f, pkt)
		}
		if !f.timerPending {
			f.rtoDeadline = now + c.rto(f)
			f.timerPending = true
			n.sim.Schedule(f.rtoDeadline, c, opTimer, f.id, nil)
		}
		if !f.hasData() {
			c.deactivate(c.rr)
		} else {
			c.rr++
		}
		return pkt
	}
	if wake > 0 && (c.wakeAt <= now || wake < c.wakeAt) {
		c.wakeAt = wake
		n.sim.Schedule(wake, c, opWake, 0, nil)
	}
	return nil
}

// deactivate removes active[i] keeping the order of the others (round robin stays fair).
func (c *NIC) deactivate(i int) {
	c.net.flows[c.active[i]].active = false
	copy(c.active[i:], c.active[i+1:])
	c.active = c.active[:len(c.active)-1]
}

// Handle receives packets and timer events.
func (c *NIC) Handle(ev *sim.Event) {
	switch ev.Op {
	case opArrive:
		pkt := (*Packet)(ev.P)
		if f := c.net.ibfc; f != nil && pkt.Kind != LinkCtrl {
			f.HostArrived(c.Port, pkt) // an HCA returns the packet's credits
		} else if c.net.hostRx != nil && pkt.Kind != LinkCtrl {
			c.net.hostRx.HostArrived(c.Port, pkt)
		}
		switch pkt.Kind {
		case Data:
			c.receiveData(pkt)
		case Ack, Nak:
			c.receiveAck(pkt)
		case CNP:
			if f := c.net.flows[pkt.Flow]; c.net.cc != nil && !f.senderDone {
				c.net.cc.Notified(f, pkt)
			}
		case LinkCtrl:
			c.net.fc.Control(c.Port, pkt)
		}
		c.net.pool.put(pkt)
	case opTimer:
		c.timer(c.net.flows[ev.I])
	case opWake:
		if c.wakeAt == c.net.sim.Now() {
			c.wakeAt = 0
		}
		c.Port.kick()
	}
}

func (c *NIC) receiveData(pkt *Packet) {
	n := c.net
	f := n.flows[pkt.Flow]
	n.dataArrived += int64(pkt.Payload)
	if n.cc != nil {
		n.cc.Received(c, f, pkt)
	}
	if f.sr != nil {
		c.receiveSR(f, pkt)
		return
	}
	if n.cfg.Transport == "ooo" {
		c.receiveOOO(f, pkt)
		return
	}
	switch {
	case pkt.Seq == f.rcvNxt && !f.received:
		f.rcvNxt += int64(pkt.Payload)
		n.stats.BytesDelivered += int64(pkt.Payload)
		n.lastDelivery = n.sim.Now()
		f.nakSent = false
		f.unacked++
		if n.cfg.Check && f.rcvNxt > f.size {
			n.violation(fmt.Sprintf("host%d", c.Host), fmt.Sprintf("flow %d delivered %d B of a %d B message", f.msg, f.rcvNxt, f.size))
			return
		}
		if f.rcvNxt == f.size {
			f.received = true
			c.sendControl(f, Ack, f.rcvNxt)
			n.delivered(f)
		} else if f.unacked >= n.cfg.AckEvery {
			c.sendControl(f, Ack, f.rcvNxt)
		}
	case pkt.Seq > f.rcvNxt && !f.received:
		// A gap: the packet at rcvNxt was lost or overtaken. Go-back-N discards and NAKs once.
		n.stats.OutOfOrder++
		if !f.nakSent {
			f.nakSent = true
			n.stats.NAKs++
			c.sendControl(f, Nak, f.rcvNxt)
		}
	default:
		// Duplicate (a retransmission of bytes already delivered). Re-ACK at the end of the
		// resent window so that a sender whose final ACK was lost can finish.
		n.stats.Duplicates++
		if pkt.Seq+int64(pkt.Payload) >= f.size || f.received {
			c.sendControl(f, Ack, f.rcvNxt)
		}
	}
}

// sendControl queues an ACK or NAK toward the flow's sender ahead of data.
func (c *NIC) sendControl(f *Flow, kind PacketKind, seq int64) { c.sendCtl(f, kind, seq, 0) }

// sendCtl is sendControl with a selective-repeat NAK's SACK offset.
func (c *NIC) sendCtl(f *Flow, kind PacketKind, seq, sack int64) {
	n := c.net
	if kind != CNP {
		f.unacked = 0
	}
	pkt := n.pool.get()
	pkt.Kind = kind
	pkt.SL = f.prio
	pkt.Prio = c.Port.VLOf(f.prio)
	pkt.Flow = f.id
	pkt.QP = f.qp
	pkt.Src, pkt.Dst = f.dst, f.src
	pkt.Seq = seq
	pkt.Sack = sack
	pkt.Size, _ = n.cfg.frame(0, n.cfg.AckBytes)
	if kind == CNP {
		pkt.Size, _ = n.cfg.frame(0, n.cfg.CNPBytes)
		if n.cfg.CNPPriority > 0 {
			pkt.Prio = n.cfg.CNPPriority // CNPs on their own strict-priority class ([NVIDIA-RoCE])
		}
	}
	pkt.Hash = f.hash
	c.Port.enqueue(pkt)
	c.Port.kick()
}

func (c *NIC) receiveAck(pkt *Packet) {
	n := c.net
	f := n.flows[pkt.Flow]
	if f.senderDone {
		return
	}
	if f.sr != nil {
		c.receiveAckSR(f, pkt)
		return
	}
	if pkt.Seq > f.sndUna {
		f.sndUna = pkt.Seq
		f.rtoDeadline = n.sim.Now() + n.cfg.RTO
	}
	if pkt.Kind == Nak && f.sndNxt > pkt.Seq {
		f.sndNxt = pkt.Seq
		c.activate(f)
		c.Port.kick()
	}
	if f.sndUna >= f.size {
		f.senderDone = true
	}
}

func (c *NIC) timer(f *Flow) {
	n := c.net
	f.timerPending = false
	if f.senderDone || (f.sndUna >= f.sndNxt && !f.active) {
		return
	}
	now := n.sim.Now()
	if now < f.rtoDeadline {
		f.timerPending = true
		n.sim.Schedule(f.rtoDeadline, c, opTimer, f.id, nil)
		return
	}
	// Timeout: go-back-N resends everything from the first unacknowledged byte; selective
	// repeat resends what is neither acknowledged nor selectively acknowledged.
	n.stats.Timeouts++
	if f.sr != nil {
		f.sr.timeout(f)
	} else {
		f.sndNxt = f.sndUna
	}
	f.rtoDeadline = now + c.rto(f)
	f.timerPending = true
	n.sim.Schedule(f.rtoDeadline, c, opTimer, f.id, nil)
	c.activate(f)
	c.Port.kick()
}
