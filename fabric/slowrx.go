package fabric

import (
	"github.com/fabricsim/fabricsim/sim"
	"github.com/fabricsim/fabricsim/units"
)

// A slow receiver (fault slow_receiver): a host whose NIC drains what arrives more slowly than
// its link delivers it, for a while (a PCIe link trained narrower, host memory under contention,
// a receiver CPU that does not keep up). Arriving packets wait in the NIC's receive buffer and
// are handed to the transport at the drain rate. The fabric's link-level flow control makes it
// lossless where it can: on RoCE with PFC the NIC pauses its switch port while the buffer is
// above XOFF (half of it) and resumes at XON (a quarter); on InfiniBand the HCA returns a
// packet's credits when it drains it, not when it arrives; elsewhere a full buffer drops
// (drop cause buffer).
type slowRx struct {
	n    *Network
	c    *NIC
	rate units.Rate
	// The NIC is slow from from until until (units.MaxTime: to the end).
	from, until units.Time
	buf         int64 // receive buffer bytes
	q           fifo
	bytes       int64
	// draining: a drain event is scheduled.
	draining bool
	pauses   int64
	maxBytes int64
	// arrived holds the arrival time of each packet in q, from arrived[head]; waited is how long
	// the packet being handed to the transport waited (0 otherwise): the host delay a Swift
	// receiver reports on its ACK (swift.go).
	arrived []units.Time
	head    int
	waited  units.Time
}

// rxBufferBytes is the receive buffer of a slow NIC (est.: the on-chip receive buffer of a
// 100-400G NIC is a few hundred KiB).
const rxBufferBytes = 256 << 10

// Opcode of slowRx.Handle.
const opRxDrain int32 = 0

// take queues pkt, which arrived at the slow NIC, when the NIC is slow now or still has a
// backlog; false hands it on at once.
func (r *slowRx) take(pkt *Packet) bool {
	n := r.n
	now := n.sim.Now()
	if pkt.Kind == LinkCtrl || ((now < r.from || now >= r.until) && r.q.len() == 0) {
		return false
	}
	if n.ibfc == nil && r.bytes+int64(pkt.Size) > r.buf && !r.lossless(pkt) {
		n.drop(pkt, DropBuffer)
		return true
	}
	r.q.push(pkt)
	r.arrived = append(r.arrived, now)
	r.bytes += int64(pkt.Size)
	r.maxBytes = max(r.maxBytes, r.bytes)
	if pf, ok := n.fc.(*pfc); ok && r.lossless(pkt) {
		g := r.c.Port.gidx
		if r.bytes >= r.buf/2 && !pf.pausingAt(g, pkt.Prio) {
			pf.pause(g, pkt.Prio)
			r.pauses++
		}
	}
	if !r.draining {
		r.draining = true
		n.sim.Schedule(now+r.drainTime(pkt), r, opRxDrain, 0, nil)
	}
	return true
}

// lossless reports whether pkt's class is paused by PFC rather than dropped.
func (r *slowRx) lossless(pkt *Packet) bool {
	pf, ok := r.n.fc.(*pfc)
	return ok && pf.lossless&(1<<pkt.Prio) != 0
}

// drainTime is how long the NIC takes to drain pkt: at the slow rate while the fault lasts,
// at once after it (the backlog then goes at line rate, one packet time each).
func (r *slowRx) drainTime(pkt *Packet) units.Time {
	rate := r.rate
	if r.n.sim.Now() >= r.until {
		rate = r.c.Port.Rate
	}
	return rate.TransmitTime(units.Size(pkt.Size))
}

// Handle drains the packet at the head of the receive buffer into the NIC.
func (r *slowRx) Handle(*sim.Event) {
	n := r.n
	pkt := r.q.pop()
	r.bytes -= int64(pkt.Size)
	if pf, ok := n.fc.(*pfc); ok {
		g := r.c.Port.gidx
		if pf.pausingAt(g, pkt.Prio) && r.bytes <= r.buf/4 {
			pf.resume(g, pkt.Prio)
		}
	}
	r.waited = n.sim.Now() - r.arrived[r.head]
	if r.head++; r.head == len(r.arrived) {
		r.arrived, r.head = r.arrived[:0], 0
	}
	r.c.deliver(pkt)
	r.waited = 0
	if head := r.q.peek(); head != nil {
		n.sim.Schedule(n.sim.Now()+r.drainTime(head), r, opRxDrain, 0, nil)
	} else {
		r.draining = false
	}
}
