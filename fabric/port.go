package fabric

import (
	"math/rand/v2"
	"unsafe"

	"github.com/fabricsim/fabricsim/sim"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

// Event opcodes. Every component reads only the opcodes scheduled for it.
const (
	opTxDone   int32 = iota // Port: the packet in ev.P (a *Packet) finished serializing
	opArrive                // Switch/NIC: ev.P arrived (fully received) on port ev.I
	opTimer                 // NIC: retransmission timer of flow ev.I
	opWake                  // NIC: paced sender may send again
	opMsgStart              // engine: message ev.I starts
	opWatchdog              // engine: no-progress check
)

// Port is the egress half of one end of a link: per-priority queues, a transmitter that
// serializes one packet at a time at the link rate, and the link's propagation delay to the node
// at the other end. The ingress half is implicit: a packet arriving at a node carries the port
// index it came in on.
type Port struct {
	// The first two cache lines hold what every packet through the port reads or writes (the
	// ports lie in one array, each a whole number of lines: TestPortLayout); the queues follow
	// inside the struct, so that reaching a queue costs no further pointer.
	busy bool
	// Paused has bit p set while priority p may not start a new packet (link-level flow control
	// such as PFC or IB credits sets it).
	Paused uint8
	// inlineFC has bit v set while an InfiniBand flow-control update for VL v waits to be sent
	// on this port without a packet (ibcredit.go: ibCredits.flushFC sends it at the next packet
	// boundary). freeAt is when the last inline frame
	// leaves the wire: the port starts nothing before it. Both stay zero on other fabrics.
	inlineFC uint16
	// qmask has bit p set while priority p's queue holds a packet.
	qmask uint16
	nprio uint8 // queues in use (Config.Priorities)
	// flags caches, in the first line, what would otherwise be read from colder fields
	// (portLossy, portCtrl, portTapped).
	flags uint8
	// gidx is the port's index among all the network's ports (nodes in order, each node's ports
	// in order): per-port state kept elsewhere (InfiniBand credits) is found without reading
	// Owner and Index.
	gidx     int32
	peerPort int32
	// psPerByte is the serialization time of a byte when the rate makes it a whole number of
	// picoseconds (every standard rate: 80 ps at 100 Gb/s), so that a frame's time is one
	// multiplication; otherwise 0, and lastSer caches the last frame's time (TransmitTime
	// divides in 128 bits).
	freeAt    units.Time
	psPerByte units.Time
	// delay is the propagation delay plus the receiving switch's port-to-port latency: the
	// time from the last bit leaving here to the packet being ready at the peer's egress.
	delay units.Time
	net   *Network
	sw    *Switch // set on a switch's port: buffer accounting on departure
	// SL2VL maps a packet's service level to the queue (InfiniBand VL) it uses on this port's
	// link; nil means the queue is the service level itself (Port.VLOf).
	SL2VL *[16]uint8

	// The second line.
	peer sim.Handler
	nic  *NIC    // set on a host's port: data is pulled from the NIC when queues are empty
	ibc  *ibPort // InfiniBand's credit state, ibCredits.ports[gidx] (nil elsewhere; ibPort)
	// Counters.
	TxPackets int64
	TxBytes   int64 // wire bytes
	BusyTime  units.Time
	// lastWire is the size of the last frame started (adaptive routing reads it).
	lastWire int32
	// peerEnt is the node at the other end of the link, the entity its arrivals belong to
	// (sim.ScheduleTo): Network.peerNode[gidx], kept here, in the line Handle reads anyway.
	peerEnt int32

	// q holds the queues, one per priority, each with the frame bytes it holds.
	q    [maxPrio]prioQueue
	ctrl fifo // link-control frames (portCtrl): sent at the next packet boundary, never paused

	Owner   topo.NodeID
	Index   int32
	errRate float64 // probability a frame is lost on the wire (portLossy)
	lastSer units.Time
	Link    topo.LinkID
	Rate    units.Rate
	rng     *rand.Rand
	// errCause: errRate's drop cause, DropCorrupt (bit errors) or DropRandom (SetRandomLoss).
	errCause int
	tap      *capFile // set while this port is captured to pcap (flags' portTapped)
	_        [40]byte // whole lines (TestPortLayout)
}

// Bits of Port.flags.
const (
	portLossy  uint8 = 1 << iota // errRate > 0
	portCtrl                     // the link-control queue holds a frame
	portTapped                   // tap is set (the port is captured)
	portDown                     // the link is down (faults.go): a frame ending is lost
	portHeld                     // busy is set only to hold the port while its link is down
)

// setErrRate sets the probability that a frame sent on the port is lost.
func (p *Port) setErrRate(r float64) {
	p.errRate = r
	p.flags &^= portLossy
	if r > 0 {
		p.flags |= portLossy
	}
}

// prioQueue is one priority's queue of a port.
type prioQueue struct {
	fifo
	bytes int64 // frame bytes queued
}

const maxPrio = 16 // the most queues a port has (InfiniBand: one per service level)

// QueueBytes returns the frame bytes waiting in priority prio's queue.
func (p *Port) QueueBytes(prio int) int64 { return p.q[prio].bytes }

// enqueue appends a packet to its priority's queue.
func (p *Port) enqueue(pkt *Packet) {
	q := &p.q[pkt.Prio] // once: after push's stores the compiler indexed q (and checked) again
	q.push(pkt)
	q.bytes += int64(pkt.Size)
	p.qmask |= 1 << (pkt.Prio & (maxPrio - 1)) // the mask: no test for shifts beyond the word (pkt.Prio < maxPrio: it indexed q)
}

// dequeue takes the packet at the head of priority prio's queue, which must not be empty.
func (p *Port) dequeue(prio int) *Packet {
	q := &p.q[prio]
	pkt := q.pop()
	q.bytes -= int64(pkt.Size)
	if q.size == 0 {
		p.qmask &^= 1 << prio
	}
	return pkt
}

// SendCtrl transmits a link-control frame (PAUSE, credit update) ahead of every queue as soon as
// the current packet, if any, has finished.
func (p *Port) SendCtrl(pkt *Packet) {
	pkt.Kind = LinkCtrl
	p.ctrl.push(pkt)
	p.flags |= portCtrl
	p.kick()
}

// next picks the packet to send: link-control frames first, then the queue the scheduler picks
// (strict priority when none is installed), skipping classes that are paused or that link-level
// flow control blocks; a host port then asks its NIC for data.
func (p *Port) next() *Packet {
	if p.flags&portCtrl != 0 {
		pkt := p.ctrl.pop()
		if p.ctrl.len() == 0 {
			p.flags &^= portCtrl
		}
		return pkt
	}
	n := p.net
	if p.qmask != 0 { // (most calls at a host port find its queues empty)
		if pkt := n.dequeue(p); pkt != nil {
			return pkt
		}
	}
	if p.nic != nil {
		pkt := p.nic.nextData()
		if pkt != nil {
			n.sent(p, pkt)
		}
		return pkt
	}
	return nil
}

// Eligible reports whether priority prio has a packet that may start now: queued, not paused,
// not blocked by link-level flow control.
func (p *Port) Eligible(prio int) bool {
	if (p.qmask&^uint16(p.Paused))&(1<<prio) == 0 { // empty or paused
		return false
	}
	return !p.net.blocked(p, p.q[prio].peek())
}

// Head returns the packet at the head of priority prio's queue, or nil.
func (p *Port) Head(prio int) *Packet { return p.q[prio].peek() }

// NumPrio is the number of priority queues.
func (p *Port) NumPrio() int { return int(p.nprio) }

// Kick restarts a port that may have been blocked (a pause expired, credits returned).
func (p *Port) Kick() { p.kick() }

// Net returns the network the port belongs to.
func (p *Port) Net() *Network { return p.net }

// Peer returns the node at the other end of the link and the port index there.
func (p *Port) Peer() (sim.Handler, int32) { return p.peer, p.peerPort }

// kick starts a transmission if the port is idle and has something to send. On InfiniBand the
// flow-control updates pending on the port go first, serialized back to back without events
// (ibCredits.flushFC); the packet chosen now starts when they have left.
func (p *Port) kick() {
	if p.busy { // (also while the link is down: faults.go holds the port busy)
		return
	}
	// Inline flow-control frames may still occupy the wire (until freeAt): a packet chosen now
	// starts when they have left.
	start := max(p.net.sim.Now(), p.freeAt)
	if p.inlineFC != 0 {
		start = p.net.ibfc.flushFC(p, start)
		p.freeAt = start
	}
	pkt := p.next()
	if pkt == nil {
		return
	}
	p.busy = true
	if p.flags&portTapped != 0 {
		p.net.capture.record(p, p.tap, pkt, start)
	}
	wire := p.net.wireBytes(pkt)
	var ser units.Time
	if p.psPerByte != 0 {
		ser = units.Time(wire) * p.psPerByte
	} else {
		if wire != p.lastWire || p.lastSer == 0 {
			p.lastSer = p.Rate.TransmitTime(units.Size(wire))
		}
		ser = p.lastSer
	}
	p.lastWire = wire
	p.BusyTime += ser
	p.TxPackets++
	p.TxBytes += int64(wire)
	p.net.sim.Schedule(start+ser, p, opTxDone, 0, unsafe.Pointer(pkt))
}

// Handle finishes a transmission: the packet leaves this node's buffer and is on its way to
// the peer, which has it after the propagation delay (plus its switch latency). An event
// without a packet is the wake-up of a port that waited for inline flow-control frames to
// leave the wire (kick).
func (p *Port) Handle(ev *sim.Event) {
	pkt := (*Packet)(ev.P)
	p.busy = false
	if pkt == nil {
		if p.flags&portDown != 0 {
			p.hold()
			return
		}
		p.kick()
		return
	}
	if p.sw != nil && pkt.Kind != LinkCtrl {
		p.sw.release(p, pkt)
	}
	n := p.net
	n.packetHops++
	if p.flags&(portLossy|portDown) != 0 && p.lost(pkt) {
		if p.flags&portDown == 0 {
			p.kick()
		}
		return
	}
	n.sim.AfterTo(p.peerEnt, p.delay, p.peer, opArrive, p.peerPort, unsafe.Pointer(pkt))
	p.kick()
}

// lost drops pkt, which finished serializing, when the link is down (the frame was on it as it
// failed: faults.go; the port is then held) or the link's error rate takes it.
func (p *Port) lost(pkt *Packet) bool {
	n := p.net
	if p.flags&portDown != 0 {
		n.faults.wireLost++
		n.drop(pkt, DropLinkDown)
		p.hold()
		return true
	}
	if p.rng.Float64() < p.errRate {
		n.drop(pkt, p.errCause)
		return true
	}
	return false
}

// hold keeps a port whose link is down from starting anything (faults.go releases it at
// link-up): it looks busy, so kick returns at once and InfiniBand's credit updates wait.
func (p *Port) hold() {
	p.busy = true
	p.flags |= portHeld
}
