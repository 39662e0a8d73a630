package fabric

import (
	"fmt"

	"github.com/fabricsim/fabricsim/sim"
	"github.com/fabricsim/fabricsim/topo"
)

// Switch is an output-queued switch with one shared packet buffer: a packet is admitted to its
// egress queue if the buffer (and, with a dynamic threshold, the queue's share of it) has room,
// and tail-dropped otherwise.
type Switch struct {
	// The first cache line holds what every packet's arrival and departure reads or writes
	// (a switch is 128 bytes, a size class whose objects start on 128-byte boundaries:
	// TestSwitchLayout); the second what only the route lookup, setup, output and drops read.
	net   *Network
	Ports []*Port
	// base is the gidx of the switch's port 0 (Network.portBase[Node]), so that the per-port
	// state kept by gidx (PFC, InfiniBand credits) is found from a packet's InPort without
	// reading the shared slice and checking the index.
	base int32
	Node topo.NodeID
	// pool is, on RoCE with PFC, the switch's shared pool (pfc.go), which every lossless packet
	// reads at ingress and departure: in this line, beside bufUsed, rather than in an array of
	// its own (one line fewer a packet at both ends).
	pool    pfcNode
	bufUsed int64
	// Counters.
	MaxBufUsed int64

	salt  uint64
	Drops int64
	Name  string
	_     [32]byte // two whole lines (TestSwitchLayout)
}

// BufferUsed returns the bytes currently held.
func (s *Switch) BufferUsed() int64 { return s.bufUsed }

// Handle receives a packet on port ev.I, routes it and queues it at the egress port.
func (s *Switch) Handle(ev *sim.Event) {
	pkt := (*Packet)(ev.P)
	pkt.InPort = ev.I
	pkt.InVL = pkt.Prio
	n := s.net
	if n.faulty && n.faults.lostOnWire(s.Ports[ev.I], pkt) {
		return
	}
	if pkt.Kind == LinkCtrl {
		n.fc.Control(s.Ports[ev.I], pkt)
		n.pool.put(pkt)
		return
	}
	var out int32
	if r := pkt.route; r != 0 {
		out, pkt.route = int32(r)-1, 0 // found by Switch.Prefetch
	} else {
		out = n.route(s, pkt)
	}
	if out < 0 {
		n.drop(pkt, DropNoRoute)
		return
	}
	port := s.Ports[out]
	if n.faulty && port.flags&portDown != 0 {
		n.faults.dropAtDown(s, pkt)
		return
	}
	var cause int
	if f := n.pfc; f != nil {
		cause = f.ingress(s, port, pkt) // RoCE's PFC, called directly (dispatch.go)
	} else if n.fc != nil {
		cause = n.ingress(s, port, pkt) // admission and arrival (dispatch.go)
	} else {
		cause = s.sharedBufferAdmits(port, pkt)
	}
	if cause >= 0 {
		s.Drops++
		n.drop(pkt, cause)
		return
	}
	buf := int64(n.cfg.Buffer)
	s.bufUsed += int64(pkt.Size)
	if s.bufUsed > s.MaxBufUsed {
		s.MaxBufUsed = s.bufUsed
		if n.cfg.Check && s.bufUsed > buf {
			n.violation(s.Name, fmt.Sprintf("buffer holds %d B, above its %d B", s.bufUsed, buf))
		}
	}
	if e := n.ecn; e != nil {
		e.Enqueue(port, pkt) // RoCE's RED, called directly (dispatch.go)
	} else if n.marker != nil {
		n.marker.Enqueue(port, pkt)
	}
	port.enqueue(pkt)
	port.kick()
}

// sharedBufferAdmits is the default admission: the packet fits in the shared buffer and, with a
// dynamic threshold, in its queue's share of the free buffer (-1); else DropBuffer.
func (s *Switch) sharedBufferAdmits(port *Port, pkt *Packet) int {
	size := int64(pkt.Size)
	buf := int64(s.net.cfg.Buffer)
	if s.bufUsed+size > buf {
		return DropBuffer
	}
	if a := s.net.cfg.BufferAlpha; a > 0 && float64(port.q[pkt.Prio].bytes+size) > a*float64(buf-s.bufUsed) {
		return DropBuffer
	}
	return -1
}

// release returns a departing packet's buffer space (PFC, IB credits: called directly).
func (s *Switch) release(p *Port, pkt *Packet) {
	s.bufUsed -= int64(pkt.Size)
	if f := s.net.pfc; f != nil {
		f.departed(s, pkt) // RoCE's PFC, called directly (dispatch.go)
	} else if s.net.fc != nil { // Ethernet without flow control has none
		if f := s.net.ibfc; f != nil && !f.plain { // plain: Network.departed's dispatch
			f.Departed(s.Ports[pkt.InPort], pkt)
		} else {
			s.net.departed(s, pkt)
		}
	}
	if s.net.cfg.Check && s.bufUsed < 0 {
		s.net.violation(s.Name, fmt.Sprintf("buffer accounting went negative (%d B) on port %d", s.bufUsed, p.Index))
	}
}
