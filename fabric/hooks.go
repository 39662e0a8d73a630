package fabric

import (
	"github.com/fabricsim/fabricsim/result"
	"github.com/fabricsim/fabricsim/topo"
)

// LinkFlowControl is a link-level flow-control policy: PFC (per-priority PAUSE driven by ingress
// occupancy) or InfiniBand's credit loop (per-VL credits in 64-byte blocks). The network calls
// it at these points; nil means no link-level flow control (the generic Ethernet fabric, which
// tail-drops instead).
//
// Ports are link ends: the same *Port is the egress of packets leaving a node on that link and
// the ingress of packets arriving on it, so per-ingress state (PFC counters, IB receive buffers)
// lives in the policy keyed by port.
type LinkFlowControl interface {
	// Arrived: pkt was admitted to a switch's buffer through ingress port in.
	Arrived(in *Port, pkt *Packet)
	// Departed: pkt left the switch's buffer (finished serializing on its egress); in is the
	// ingress port it came through.
	Departed(in *Port, pkt *Packet)
	// Blocked reports whether egress port out may not start pkt now (no credits). Classes
	// paused by PFC are gated by Port.Paused instead, which is cheaper.
	Blocked(out *Port, pkt *Packet) bool
	// Sent: out started transmitting pkt (consume credits).
	Sent(out *Port, pkt *Packet)
	// Control: a LinkCtrl frame sent by the peer with Port.SendCtrl arrived on port in. The
	// network returns pkt to the pool after the call.
	Control(in *Port, pkt *Packet)
}

// Admitter is implemented by a LinkFlowControl that decides buffer admission itself (PFC with
// per-port headroom, IB with per-VL receive buffers). Admit returns -1 to admit pkt, or a drop
// cause (DropBuffer, DropHeadroom ...).
type Admitter interface {
	Admit(s *Switch, in, out *Port, pkt *Packet) int
}

// Marker marks packets for congestion as they are queued at a switch egress (ECN RED marking on
// Ethernet, FECN on InfiniBand). nil means no marking.
type Marker interface {
	Enqueue(out *Port, pkt *Packet)
}

// DequeueMarker marks packets for congestion as they leave a switch's egress queue (ECN with
// ecn_mark: dequeue): pkt has just been taken from out's queue, which no longer counts it.
type DequeueMarker interface {
	Dequeue(out *Port, pkt *Packet)
}

// SetDequeueMarker installs a marker called at dequeue (instead of, or beside, SetMarker's);
// call before Run.
func (n *Network) SetDequeueMarker(m DequeueMarker) { n.deqMarker = m }

// SetLinkFlowControl installs a link-level flow-control policy; call before Run.
func (n *Network) SetLinkFlowControl(fc LinkFlowControl) {
	n.fc = fc
	n.adm, _ = fc.(Admitter)
	n.ibfc, _ = fc.(*ibCredits) // the per-hop path calls InfiniBand's credits and PFC directly
	n.pfc, _ = fc.(*pfc)
}

// SetMarker installs a congestion marker; call before Run.
func (n *Network) SetMarker(m Marker) {
	n.marker = m
	n.ecn, _ = m.(*ecnRED) // called directly on the per-hop path
}

// Ports returns every port of node id (a switch's ports or a host's single NIC port).
func (n *Network) Ports(id int32) []*Port {
	if sw := n.Switches[id]; sw != nil {
		return sw.Ports
	}
	return []*Port{n.NICs[n.g.Nodes[id].Host].Port}
}

// NewPacket takes a packet from the pool (for control frames built by policies).
func (n *Network) NewPacket() *Packet { return n.pool.get() }

// CongestionControl is an endpoint congestion-control algorithm (DCQCN, InfiniBand CC): it sets
// a flow's pacing (Flow.Rate, Flow.Gap) from the signals the NICs see. nil means none: every flow
// sends at line rate.
type CongestionControl interface {
	// Start: flow f is about to send its first packet.
	Start(f *Flow)
	// Sent: the sender NIC put data packet pkt of flow f on the wire.
	Sent(f *Flow, pkt *Packet)
	// Received: the receiver NIC got data packet pkt of f (ECN/FECN marks visible); the
	// notification point sends CNPs with NIC.SendCNP.
	Received(rx *NIC, f *Flow, pkt *Packet)
	// Notified: the sender NIC got a CNP (or BECN) for f.
	Notified(f *Flow, pkt *Packet)
}

// SetCongestionControl installs an endpoint congestion control; call before Run.
func (n *Network) SetCongestionControl(cc CongestionControl) { n.cc = cc }

// Msg, Src, Dst, Size, Prio describe the flow; Sender and Receiver are its NICs.
func (f *Flow) Msg() int32              { return f.msg }
func (f *Flow) Src() int32              { return f.src }
func (f *Flow) Dst() int32              { return f.dst }
func (f *Flow) Size() int64             { return f.snd.Size() }
func (f *Flow) Prio() uint8             { return f.prio }
func (f *Flow) Done() bool              { return f.snd.Done() }
func (f *Flow) Remaining() int64        { return f.snd.Size() - f.snd.Unacked() }
func (n *Network) Flow(msg int32) *Flow { return n.flows[msg] }

// SendCNP sends a congestion notification for flow f from this (receiving) NIC to its sender.
func (c *NIC) SendCNP(f *Flow) { c.sendCtl(f, CNP, 0, 0) }

// Scheduler chooses which priority queue of a port sends next (ETS/DWRR on Ethernet, VL
// arbitration on InfiniBand). Pick returns a priority for which Port.Eligible is true, or -1.
// nil means strict priority, highest first. A host port's NIC data is offered only when Pick
// returns -1 (the NIC paces and arbitrates its own flows).
type Scheduler interface {
	Pick(p *Port) int
}

// Router chooses a switch's egress port for a packet among the shortest-path candidates (or
// from its own tables). nil means ECMP by flow hash, or per-packet spray (Config.Routing).
type Router interface {
	Route(s *Switch, pkt *Packet, candidates []int32) int32
}

// SetScheduler installs a port scheduler; call before Run.
func (n *Network) SetScheduler(s Scheduler) {
	n.sched = s
	n.ibArb, _ = s.(*ibArbiter) // called directly on the per-hop path
	n.ets, _ = s.(*dwrr)
}

// SetRouter installs a routing policy; call before Run.
func (n *Network) SetRouter(r Router) {
	n.router = r
	_, n.routerTables = r.(tableRouter)
	n.ibRouter, _ = r.(*ibRouter) // called directly on the per-hop path
}

// tableRouter is a Router that forwards by tables of its own (the subnet manager's LFTs): the
// network does not look up shortest-path candidates for it, and Route gets nil.
type tableRouter interface {
	Router
	// predict returns the port Route will most likely choose for pkt at s (the static table's
	// entry), reading the tables it needs; -1 if none. Used only to prefetch.
	predict(s *Switch, pkt *Packet) int32
}

// Routes returns the shortest-path next-hop table the network was built with.
func (n *Network) Routes() *topo.Routes { return n.routes }

// Graph returns the topology.
func (n *Network) Graph() *topo.Graph { return n.g }

// Config returns the network's configuration.
func (n *Network) Config() *Config { return &n.cfg }

// Drop discards a packet for the given cause (policies use it: PFC watchdog flushes, random
// loss); it is counted in the results.
func (n *Network) Drop(pkt *Packet, cause int) { n.drop(pkt, cause) }

// StallExplainer is implemented by a link-level flow control that can say why a network that
// stopped delivering is stuck (PFC: the cycle of ports pausing each other; a credit loop). The
// no-progress watchdog asks it before reporting a plain stall; "" means no explanation.
type StallExplainer interface {
	ExplainStall() string
}

// Reporter is implemented by installed policies (flow control, marker, congestion control,
// scheduler, router) that add their counters to a run's results (stable snake_case names).
type Reporter interface {
	Report(res *result.Run)
}

// wireBytes is what pkt occupies on a link: its frame plus the layer-1 overhead.
func (n *Network) wireBytes(pkt *Packet) int32 { return pkt.Size + int32(n.cfg.L1Overhead) }
