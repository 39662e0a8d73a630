package fabric

import (
	"math/bits"

	"github.com/fabricsim/fabricsim/sim"
)

// The per-hop path reaches the installed policies (hooks.go) only through the methods in this
// file: it is the one place that knows that InfiniBand's credits, arbiter and router are called
// directly (on the per-hop path an interface call costs more than the work they do) while every
// other policy goes through its extension interface. Nothing else on the path tests which
// fabric it runs on.

// policies are the network's installed policies; nil means none (hooks.go says what each nil
// does). The set methods of hooks.go keep the typed fields in step with the interfaces.
type policies struct {
	fc     LinkFlowControl
	adm    Admitter // fc as an Admitter, if it is one
	marker Marker
	cc     CongestionControl
	sched  Scheduler
	router Router
	// routerTables: router is a tableRouter (no shortest-path lookup on its behalf).
	routerTables bool
	// spray picks among equal-cost next hops per packet rather than per flow (Config.Routing
	// "spray"), resolved once in New.
	spray bool
	// ibfc, ibArb and ibRouter are fc, sched and router when they are InfiniBand's, else nil.
	ibfc     *ibCredits
	ibArb    *ibArbiter
	ibRouter *ibRouter
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
		return hops[int(sim.Mix64(uint64(n.packetHops)^s.salt)%uint64(len(hops)))]
	}
	return hops[int(sim.Mix64(uint64(pkt.Hash)^s.salt)%uint64(len(hops)))]
}

// Each flow-control hook is two functions: a guard small enough to be inlined at the call
// site, so that a fabric without the policy pays one test and no call, and the dispatch proper.

// admit asks the installed Admitter whether switch s takes pkt, arriving through in for egress
// out, into its buffer: -1 admits it, else the drop cause. PFC decides with its headroom;
// InfiniBand's credits never let a sender overrun a buffer and only check that. (Without an
// Admitter the switch's shared buffer decides: Switch.Handle.)
func (n *Network) admit(s *Switch, in, out *Port, pkt *Packet) int {
	if f := n.ibfc; f != nil {
		return f.Admit(s, in, out, pkt)
	}
	return n.adm.Admit(s, in, out, pkt)
}

// arrived tells link-level flow control that pkt entered a switch's buffer through in.
func (n *Network) arrived(in *Port, pkt *Packet) {
	if n.fc != nil {
		n.fcArrived(in, pkt)
	}
}

func (n *Network) fcArrived(in *Port, pkt *Packet) {
	if f := n.ibfc; f != nil {
		f.Arrived(in, pkt)
	} else {
		n.fc.Arrived(in, pkt)
	}
}

// departed tells link-level flow control that pkt, which came in through in, left a switch's
// buffer.
func (n *Network) departed(in *Port, pkt *Packet) {
	if n.fc != nil {
		n.fcDeparted(in, pkt)
	}
}

func (n *Network) fcDeparted(in *Port, pkt *Packet) {
	if f := n.ibfc; f != nil {
		f.Departed(in, pkt)
	} else {
		n.fc.Departed(in, pkt)
	}
}

// hostArrived tells link-level flow control that pkt arrived at a host's NIC through in: an
// InfiniBand HCA places it in memory at once and returns its credits.
func (n *Network) hostArrived(in *Port, pkt *Packet) {
	if f := n.ibfc; f != nil {
		f.HostArrived(in, pkt)
	}
}

// blocked asks link-level flow control whether out may not start pkt now.
func (n *Network) blocked(out *Port, pkt *Packet) bool {
	return n.fc != nil && n.fcBlocked(out, pkt)
}

func (n *Network) fcBlocked(out *Port, pkt *Packet) bool {
	if f := n.ibfc; f != nil {
		return f.Blocked(out, pkt)
	}
	return n.fc.Blocked(out, pkt)
}

// sent tells link-level flow control that out started transmitting pkt.
func (n *Network) sent(out *Port, pkt *Packet) {
	if n.fc != nil {
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

// pick chooses the queue port p, which has packets queued, serves next: the scheduler's
// choice, or strict priority; -1 when no queued packet may start.
func (n *Network) pick(p *Port) int {
	if a := n.ibArb; a != nil {
		return a.Pick(p)
	}
	if n.sched != nil {
		return n.sched.Pick(p)
	}
	for m := p.qmask; m != 0; {
		prio := bits.Len16(m) - 1 // highest class first
		m &^= 1 << prio
		if p.Eligible(prio) {
			return prio
		}
	}
	return -1
}
