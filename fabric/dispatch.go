package fabric

import (
	"math/bits"

	"github.com/fabricsim/fabricsim/sim"
)

// The per-hop path reaches the installed policies (hooks.go) only through the methods in this
// file: it is the one place that knows that InfiniBand's credits, arbiter and router are called
// directly (on the per-hop path an interface call costs more than the work they do) while every
// other policy goes through its extension interface. Nothing else on the path tests which
// fabric it runs on, but for Port.kick, which sends the InfiniBand credit updates a port has
// pending (Port.inlineFC, set only by ibCredits), and the prefetchers (prefetch.go), which read
// ahead what the InfiniBand credits will touch.

// policies are the network's installed policies; nil means none (hooks.go says what each nil
// does). The set methods of hooks.go keep the typed fields in step with the interfaces.
type policies struct {
	fc     LinkFlowControl
	adm    Admitter // fc as an Admitter, if it is one
	marker Marker
	// deqMarker marks at a switch's dequeue (ecn_mark: dequeue); nil: none.
	deqMarker DequeueMarker
	cc        CongestionControl
	sched     Scheduler
	router    Router
	// routerTables: router is a tableRouter (no shortest-path lookup on its behalf).
	routerTables bool
	// spray picks among equal-cost next hops per packet rather than per flow (Config.Routing
	// "spray"), resolved once in New.
	spray bool
	// sprayLeast: spraying picks the next hop with the least queued (spray_policy least_queue).
	sprayLeast bool
	// ibfc, ibArb and ibRouter are fc, sched and router when they are InfiniBand's, else nil.
	ibfc     *ibCredits
	ibArb    *ibArbiter
	ibRouter *ibRouter
	// pfc and ets are fc and sched when they are RoCE's PFC and ETS scheduler, else nil: called
	// directly too (PFC's Blocked and Sent, which do nothing, not at all).
	pfc *pfc
	ets *dwrr
	// ecn is marker when it is RoCE's RED marker at enqueue, else nil: called directly.
	ecn *ecnRED
	// noRouteMemo turns off Packet.route (for TestRouteMemoMatchesLookup).
	noRouteMemo bool
}

// route picks the egress port for pkt at switch s: the router's choice, or ECMP over the
// shortest-path candidates (by flow hash, or per packet when spraying); -1 if none.
func (n *Network) route(s *Switch, pkt *Packet) int32 {
	if r := n.ibRouter; r != nil {
		return r.Route(s, pkt, nil)
	}
	if n.routerTables {
		return n.router.Route(s, pkt, nil)
	}
	hops := n.routes.NextHops(s.Node, int(pkt.Dst))
	if n.router != nil {
		return n.router.Route(s, pkt, hops)
	}
	switch len(hops) {
	case 0:
		return -1
	case 1:
		return hops[0]
	}
	if n.spray {
		if n.sprayLeast {
			return leastQueued(s, pkt, hops, sim.Mix64(uint64(n.packetHops)^s.salt))
		}
		return hops[int(sim.Mix64(uint64(n.packetHops)^s.salt)%uint64(len(hops)))]
	}
	return hops[int(sim.Mix64(uint64(pkt.Hash)^s.salt)%uint64(len(hops)))]
}

// A packet at a switch meets the policies three times: ingress (admission and arrival),
// dequeue (the scheduler's pick and the credits it consumes) and departed (its buffer space
// freed). Each is one call from the switch or port, which calls the policies; the hooks that a
// fabric without link-level flow control skips are split in two, a guard small enough to be
// inlined at the call site (one test, no call) and the dispatch proper. The hooks find the
// packet's ingress port (pkt.InPort) themselves: a fabric without the policy does not read it.

// ingress takes pkt, which arrived at switch s through port pkt.InPort for egress out, into the
// switch's buffer as link-level flow control decides: admission by the Admitter (PFC, with its
// headroom; InfiniBand's credits never let a sender overrun a buffer and only check that with
// --check) or else the shared buffer, then, once admitted, the arrival (PFC may pause upstream;
// an InfiniBand VL buffer takes the blocks). It returns -1 when admitted, else the drop cause.
// (Without link-level flow control Switch.Handle asks the shared buffer itself.)
func (n *Network) ingress(s *Switch, out *Port, pkt *Packet) int {
	if f := n.pfc; f != nil {
		return f.ingress(s, out, pkt)
	}
	in := s.Ports[pkt.InPort]
	if f := n.ibfc; f != nil {
		if f.check {
			f.Admit(s, in, out, pkt)
		}
		f.Arrived(in, pkt)
		pkt.Prio = out.VLOf(pkt.SL) // the egress VL, as ibRouter.Route sets it: a memoized route skips Route
		return -1
	}
	var cause int
	if n.adm != nil {
		cause = n.adm.Admit(s, in, out, pkt)
	} else {
		cause = s.sharedBufferAdmits(out, pkt)
	}
	if cause < 0 {
		n.fc.Arrived(in, pkt)
	}
	return cause
}

// departed tells link-level flow control that pkt, which came in through port pkt.InPort,
// left switch s's buffer.
func (n *Network) departed(s *Switch, pkt *Packet) {
	if n.fc != nil {
		n.fcDeparted(s, pkt)
	}
}

func (n *Network) fcDeparted(s *Switch, pkt *Packet) {
	if f := n.pfc; f != nil {
		f.departed(s, pkt)
		return
	}
	in := s.Ports[pkt.InPort]
	if f := n.ibfc; f != nil {
		f.Departed(in, pkt)
	} else {
		n.fc.Departed(in, pkt)
	}
}

// hostArrived: pkt arrived at a host's NIC through in (an InfiniBand HCA returns its credits now).
func (n *Network) hostArrived(in *Port, pkt *Packet) {
	if f := n.ibfc; f != nil {
		f.HostArrived(in, pkt)
	}
}

// blocked asks link-level flow control whether out may not start pkt now.
func (n *Network) blocked(out *Port, pkt *Packet) bool {
	return n.fc != nil && n.pfc == nil && n.fcBlocked(out, pkt)
}

func (n *Network) fcBlocked(out *Port, pkt *Packet) bool {
	if f := n.ibfc; f != nil {
		return f.Blocked(out, pkt)
	}
	return n.fc.Blocked(out, pkt)
}

// sent tells link-level flow control that out started transmitting pkt.
func (n *Network) sent(out *Port, pkt *Packet) {
	if n.fc != nil && n.pfc == nil {
		n.fcSent(out, pkt)
	}
}

func (n *Network) fcSent(out *Port, pkt *Packet) {
	if f := n.ibfc; f != nil {
		f.Sent(out, pkt)
	} else {
		n.fc.Sent(out, pkt)
	}
}

// dequeue takes from p's queues the packet it sends next: the scheduler's pick among the classes
// that may start (nil if none may). Kept out of line for PGO (docs/architecture.md, issue 21).
//
//go:noinline
func (n *Network) dequeue(p *Port) *Packet {
	prio := -1
	if a := n.ibArb; a != nil {
		prio = a.Pick(p)
	} else if e := n.ets; e != nil {
		prio = e.Pick(p)
	} else if n.sched != nil {
		prio = n.sched.Pick(p)
	} else {
		for m := p.qmask; m != 0; {
			q := bits.Len16(m) - 1 // highest class first
			m &^= 1 << q
			if p.Eligible(q) {
				prio = q
				break
			}
		}
	}
	if prio < 0 {
		return nil
	}
	pkt := p.dequeue(prio)
	if n.deqMarker != nil && p.sw != nil {
		n.deqMarker.Dequeue(p, pkt)
	}
	if n.ints != nil && p.sw != nil && pkt.Kind == Data {
		n.pushINT(p, pkt) // HPCC's in-band telemetry (hpcc.go)
	}
	if f := n.ibfc; f != nil { // what sent does, without its call: one per packet per hop
		f.Sent(p, pkt)
	} else if n.fc != nil && n.pfc == nil {
		n.fc.Sent(p, pkt)
	}
	return pkt
}
