package fabric

import (
	"fmt"

	"github.com/fabricsim/fabricsim/sim"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/transport/cc/hpcc"
	"github.com/fabricsim/fabricsim/transport/rc"
	"github.com/fabricsim/fabricsim/units"
)

// Flow is one message, or one QP of a message striped over several (qp.go), as the NICs see
// it: its identity, the pacing congestion control sets, and the two halves of its reliable
// connection (transport/rc): the requester at the source NIC, the responder at the destination.
// Loss recovery is the network's rc.Mode (go-back-N, selective repeat or reorder-tolerant),
// chosen once in New.
//
// A flow is three whole cache lines (TestFlowLayout): the first holds what the source NIC's
// round robin reads for every flow it visits (identity, pacing deadline, the sender's state
// flags, size and next byte); the second the rest of the sender and the pacing; the third the
// receiver, which only the destination NIC touches.
type Flow struct {
	id       int32 // index in Network.flows: the message ID for a message's first QP
	qp       int32 // queue pair of the message's connection (0..QPsPerConn-1)
	src, dst int32
	hash     uint32
	prio     uint8
	active   bool // in the source NIC's round robin
	// nextSend is when pacing (Rate, Gap) lets the flow send its next packet.
	nextSend units.Time
	snd      rc.Sender

	// Rate, when positive, paces the flow: after a packet of w wire bytes the next may start
	// w/Rate later (DCQCN's rate limiter). Gap is added after every packet (InfiniBand CC's
	// injection delay from the congestion control table). Both are set by the fabric's
	// congestion control; zero means line rate.
	Rate    units.Rate
	Gap     units.Time
	started units.Time
	msg     int32
	nextQP  int32 // flow ID of the message's next QP, 0 if none
	qpLeft  int32 // on a message's first QP: QPs not yet fully received

	rcv rc.Receiver
	_   [8]byte // whole lines
}

// NIC is a host's network interface: it segments messages into MTU-sized packets, sends them at
// line rate (round robin across the flows it has data for), and runs both halves of every
// flow's reliable connection: it applies what the transport's state machines (transport/rc)
// return, a packet to send, an ACK or NAK, a timer, a completion.
type NIC struct {
	net    *Network
	Host   int32
	Node   topo.NodeID
	Port   *Port
	active []int32 // flows with data to send, served round robin
	rr     int
	wakeAt units.Time // a pending opWake, 0 if none
	rx     *slowRx    // a slow receiver's buffer (fault slow_receiver), nil if none
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
	if !f.active && !f.snd.Done() && f.snd.HasData(&c.net.rc) {
		f.active = true
		c.active = append(c.active, f.id)
	}
}

// nextData builds the next data packet, or returns nil if no flow may send now: none has data,
// their priority is paused, or their pacing rate makes them wait (then a wake-up is scheduled).
func (c *NIC) nextData() *Packet {
	n := c.net
	p := &n.rc
	now := n.sim.Now()
	var wake units.Time
	for tried := 0; tried < len(c.active); {
		if c.rr >= len(c.active) {
			c.rr = 0
		}
		f := n.flows[c.active[c.rr]]
		if f.snd.Idle(p) {
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
		if a := n.acker; a != nil && f.snd.InFlight(p) >= a.window(f) && !f.snd.Resending(p) {
			c.rr++ // the window is full: an ACK reopens it (receiveAck)
			tried++
			continue
		}
		seq, payload, retx := f.snd.Next(p)
		if payload == 0 {
			// Selective repeat's window is full, or nothing is left to resend: an ACK, NAK or
			// timeout reactivates the flow.
			c.deactivate(c.rr)
			continue
		}
		hdr := n.cfg.HeaderBytes
		if n.ints != nil {
			hdr += hpcc.StackBytes // the INT header (hpcc.go)
		}
		if seq == 0 {
			hdr += n.cfg.FirstHeaderExtra // RETH on WRITE First/Only
		}
		pkt := n.pool.get()
		c.label(pkt, f, Data, f.src, f.dst, seq)
		pkt.Payload = int32(payload)
		pkt.Size, _ = n.cfg.frame(int(payload), hdr)
		if n.blocked(c.Port, pkt) { // no credits for it (InfiniBand)
			n.pool.put(pkt)
			c.rr++
			tried++
			continue
		}
		if n.ints != nil {
			pkt.Sack = n.ints.get()
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
		armAt := f.snd.Sent(p, seq, payload, retx, now)
		n.stats.BytesSent += payload
		n.dataInjected += payload
		if n.cc != nil {
			n.cc.Sent(f, pkt)
		}
		if armAt != 0 {
			n.sim.Schedule(armAt, c, opTimer, f.id, nil)
		}
		if !f.snd.HasData(p) {
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
		if c.net.faulty && c.net.faults.arrive(c, pkt) {
			return
		}
		c.deliver(pkt)
	case opTimer:
		c.timer(c.net.flows[ev.I])
	case opWake:
		if c.wakeAt == c.net.sim.Now() {
			c.wakeAt = 0
		}
		c.Port.kick()
	}
}

// deliver hands a packet that arrived to the transport (or to link-level flow control).
func (c *NIC) deliver(pkt *Packet) {
	if pkt.Kind != LinkCtrl {
		c.net.hostArrived(c.Port, pkt)
	}
	switch pkt.Kind {
	case Data:
		c.receiveData(pkt)
	case Ack, Nak:
		c.receiveAck(pkt)
	case CNP:
		if f := c.net.flows[pkt.Flow]; c.net.cc != nil && !f.snd.Done() {
			c.net.cc.Notified(f, pkt)
		}
	case LinkCtrl:
		c.net.fc.Control(c.Port, pkt)
	}
	c.net.pool.put(pkt)
}

// receiveData hands a data packet to the flow's receiver and applies its verdict: count it,
// send the ACK or NAK, complete the message.
func (c *NIC) receiveData(pkt *Packet) {
	n := c.net
	f := n.flows[pkt.Flow]
	n.dataArrived += int64(pkt.Payload)
	if n.cc != nil {
		n.cc.Received(c, f, pkt)
	}
	// With `cnp: ack-flag` the ACK or NAK this packet causes carries its CE mark back.
	// DCTCP echoes every mark on the ACK ([DCTCP] §3.1) whatever `cnp` says.
	// So does UET: NSCC reads the CE echo of every ACK (uet.go).
	flag := pkt.ECN == ECNCE && (n.cfg.RoCE.CNP == CNPAckFlag || n.cfg.RoCE.DCTCP || n.rc.Mode == rc.RUD) && n.cc != nil
	a := f.rcv.OnData(&n.rc, pkt.Seq, int64(pkt.Payload))
	switch a.Class {
	case rc.InOrder:
		n.stats.BytesDelivered += a.Delivered
		n.lastDelivery = n.sim.Now()
	case rc.OutOfOrder:
		n.stats.OutOfOrder++
	case rc.Duplicate:
		n.stats.Duplicates++
	case rc.Overrun:
		n.violation(fmt.Sprintf("host%d", c.Host), fmt.Sprintf("flow %d (message %d): a packet at %d B of %d B runs past the QP's %d B", f.id, f.msg, pkt.Seq, pkt.Payload, f.snd.Size()))
		return
	case rc.BeyondWindow:
		n.violation(fmt.Sprintf("host%d", c.Host), fmt.Sprintf("flow %d: packet at %d beyond the receive window at %d", f.id, pkt.Seq, f.rcv.Next()))
		return
	}
	var ctl *Packet
	switch a.Reply {
	case rc.Ack:
		ctl = c.newCtl(f, Ack, f.rcv.Next(), 0)
	case rc.Nak:
		n.stats.NAKs++
		ctl = c.newCtl(f, Nak, f.rcv.Next(), 0)
	case rc.NakSack:
		n.stats.NAKs++
		ctl = c.newCtl(f, Nak, f.rcv.Next(), pkt.Seq)
	case rc.AckSack:
		ctl = c.newCtl(f, Ack, f.rcv.Next(), pkt.Seq)
	}
	if ctl != nil {
		if (n.ints != nil || n.cfg.RoCE.Swift || n.cfg.RoCE.Timely) && ctl.Kind == Ack {
			ctl.Sack, pkt.Sack = pkt.Sack, 0 // the ACK echoes the INT stack or the send stamp
			if n.cfg.RoCE.Swift {
				ctl.Payload = c.hostDelayNs() // Swift's host delay (swift.go)
			}
		} else if n.rc.Mode == rc.RUD {
			ctl.Sack = pkt.Seq // UET: every ACK names the packet it answers (its SACK)
		}
		if flag {
			ctl.ECN = ECNCE // the CNP flag (HPCC ns-3: qbbHeader FLAG_CNP)
			if d, ok := n.cc.(*dcqcnCC); ok {
				d.cnpsSent++
			}
		}
		c.queueCtl(ctl)
	}
	if a.Complete && n.cfg.FCTEnd != FCTLastAck {
		n.delivered(f)
	}
}

// sendCtl queues an ACK, NAK (with a selective-repeat NAK's SACK offset) or CNP toward the
// flow's sender, ahead of data, and returns it.
func (c *NIC) sendCtl(f *Flow, kind PacketKind, seq, sack int64) *Packet {
	pkt := c.newCtl(f, kind, seq, sack)
	c.queueCtl(pkt)
	return pkt
}

// queueCtl puts a control packet built by newCtl on the NIC's port.
func (c *NIC) queueCtl(pkt *Packet) {
	c.Port.enqueue(pkt)
	c.Port.kick()
}

// newCtl builds an ACK, NAK or CNP for flow f, to be sent with queueCtl.
func (c *NIC) newCtl(f *Flow, kind PacketKind, seq, sack int64) *Packet {
	n := c.net
	pkt := n.pool.get()
	c.label(pkt, f, kind, f.dst, f.src, seq)
	pkt.Sack = sack
	pkt.Size, _ = n.cfg.frame(0, n.cfg.AckBytes)
	if kind == CNP {
		pkt.Size, _ = n.cfg.frame(0, n.cfg.CNPBytes)
		if n.cfg.CNPPriority > 0 {
			pkt.Prio = n.cfg.CNPPriority // CNPs on their own strict-priority class ([NVIDIA-RoCE])
		}
	} else if n.cfg.AckPriority > 0 {
		pkt.Prio = n.cfg.AckPriority // ACKs ahead of data (HPCC ns-3's ACK_HIGH_PRIO)
	}
	if kind == Ack && n.ints != nil {
		pkt.Size += hpcc.StackBytes // the echoed INT header
	}
	return pkt
}

// label writes what every packet of flow f carries, data or control, whichever way it goes:
// its kind, service level and the NIC port's VL for it, flow and QP, endpoints, byte offset,
// and the flow's ECMP hash.
func (c *NIC) label(pkt *Packet, f *Flow, kind PacketKind, src, dst int32, seq int64) {
	pkt.Kind = kind
	pkt.SL = f.prio
	pkt.Prio = c.Port.VLOf(f.prio)
	pkt.Flow = f.id
	pkt.QP = f.qp
	pkt.Src, pkt.Dst = src, dst
	pkt.Seq = seq
	pkt.Hash = f.hash
}

// receiveAck hands an ACK or NAK to the flow's sender; one that lets it send again puts it back
// in the round robin.
func (c *NIC) receiveAck(pkt *Packet) {
	n := c.net
	f := n.flows[pkt.Flow]
	done := f.snd.Done()
	if pkt.ECN == ECNCE && n.cc != nil && !done { // the CNP flag (cnp: ack-flag)
		n.cc.Notified(f, pkt)
	}
	sack := pkt.Sack
	if (n.ints != nil || n.cfg.RoCE.Swift || n.cfg.RoCE.Timely) && pkt.Kind == Ack {
		sack = 0 // an ACK's Sack is its INT stack or an echoed send stamp
	}
	if f.snd.OnAck(&n.rc, pkt.Kind == Nak, pkt.Seq, sack, n.sim.Now()) {
		c.activate(f)
		c.Port.kick()
	}
	if n.acker != nil && pkt.Kind == Ack {
		n.acker.Acked(f, pkt)
		c.activate(f) // the ACK may have opened the window
		c.Port.kick()
	}
	if !done && f.snd.Done() && n.cfg.FCTEnd == FCTLastAck {
		n.delivered(f) // the ACK of the last byte is back: the QP is complete (fct_end)
	}
}

// timer runs flow f's retransmission timer.
func (c *NIC) timer(f *Flow) {
	n := c.net
	at, timedOut := f.snd.OnTimer(&n.rc, n.sim.Now(), f.active)
	if timedOut {
		n.stats.Timeouts++
		if n.faults != nil { // a fault may stall the QP past its retry limit (faults.go)
			if err := n.faults.retryExceeded(f, n.sim.Now()); err != nil {
				n.sim.Stop(err)
				return
			}
		}
	}
	if at != 0 {
		n.sim.Schedule(at, c, opTimer, f.id, nil)
	}
	if timedOut {
		c.activate(f)
		c.Port.kick()
	}
}
