package fabric

import (
	"math/bits"

	"github.com/fabricsim/fabricsim/sim"
)

// Prefetching (sim.Prefetcher): just before a bucket of events runs, the kernel asks each
// event's handler to read what the event will touch. Nothing here may change state, but for
// Packet.route, the switch's own route lookup kept for its Handle.

// prefetch is the kernel's reading ahead for a fabric's events (sim.Sim.SetPrefetcher): a test
// of the handler's concrete type (one comparison each, most frequent first) in place of the
// kernel's assertion to sim.Prefetcher, which probes the runtime's type cache for every event.
// (A type switch over more types was dearer than the assertion: it searches the type hashes.)
// Handlers not listed fall back on the assertion; TestPrefetchDispatch checks that the type
// listed as reading nothing does not implement sim.Prefetcher.
func prefetch(ev *sim.Event) uintptr {
	if h, ok := ev.H.(*Port); ok {
		return h.Prefetch(ev)
	}
	if h, ok := ev.H.(*Switch); ok {
		return h.Prefetch(ev)
	}
	if h, ok := ev.H.(*ibCredits); ok {
		return h.Prefetch(ev)
	}
	if _, ok := ev.H.(*NIC); ok {
		return 0
	}
	if pf, ok := ev.H.(sim.Prefetcher); ok {
		return pf.Prefetch(ev)
	}
	return 0
}

// prefetchIB is prefetch on an InfiniBand network (installInfiniBand sets it), with the reading
// of ports and switches written out here rather than called. A port's transmit-done event
// reads as Port.Prefetch (without RoCE's branch). An arrival at a switch reads the packet's LFT
// entry (kept for Switch.Handle: ibRouter.memo), the ingress VL's receive buffer that takes its
// blocks, the egress port's credit and arbitration state and the queue it joins; the entry
// comes from the router's row of the table, where Switch.Prefetch asserts the router to
// tableRouter (a probe of the runtime's type cache for every arrival) and calls Tables.Port.
// Kept apart from Port.Prefetch and Switch.Prefetch so that the other fabrics' code stays as
// it was. A network whose router or credits are not InfiniBand's (tests replace them) reads
// as prefetch does. TestIBRouteRowsMatchPort compares runs with prefetch and with prefetchIB.
func prefetchIB(ev *sim.Event) uintptr {
	pkt := (*Packet)(ev.P)
	if p, ok := ev.H.(*Port); ok {
		// Port.Prefetch without RoCE's branch, here rather than called.
		if ev.Op != opTxDone {
			return 0
		}
		sum := uintptr(p.TxPackets)
		if f := p.net.ibfc; f != nil && p.sw != nil && pkt != nil && pkt.Kind != LinkCtrl {
			in := p.sw.Ports[pkt.InPort]
			st := in.ibc // f.ports[in.gidx] (Port.ibc)
			sum += uintptr(st.v[min(int(pkt.InVL), IBMaxVLs-1)].used)
			if !st.deferFC {
				sum += uintptr(st.peer.arrN)
			}
			own := p.ibc // in the line of TxPackets
			sum += uintptr(own.arrAt) + uintptr(own.arb.hiIdx)
		}
		if m := p.qmask; m != 0 {
			if h := p.q[bits.Len16(m)-1].head; h != nil {
				return sum + uintptr(h.Size)
			}
		}
		return sum
	}
	s, ok := ev.H.(*Switch)
	if !ok {
		if f, ok := ev.H.(*ibCredits); ok {
			return f.Prefetch(ev)
		}
		if _, ok := ev.H.(*NIC); ok {
			return 0
		}
		if pf, ok := ev.H.(sim.Prefetcher); ok {
			return pf.Prefetch(ev)
		}
		return 0
	}
	if pkt == nil || pkt.Kind == LinkCtrl {
		return 0
	}
	n := s.net
	r, f := n.ibRouter, n.ibfc
	if r == nil || f == nil {
		return s.Prefetch(ev)
	}
	var out int32 // ibRouter.predict, inlined (lft with its fallback is above the inliner's budget)
	if row := r.rowOf(s.Node); row != nil {
		out = int32(row[pkt.Dst])
	} else {
		out = r.port(s.Node, pkt.Dst)
	}
	if out < 0 {
		return 0
	}
	r.memo(pkt, out)
	port := s.Ports[out]
	vl := int(port.VLOf(pkt.SL))
	sum := uintptr(f.ports[s.base+ev.I].v[min(int(pkt.Prio), IBMaxVLs-1)].used)
	sum += uintptr(s.Ports[ev.I].gidx) // the ingress port, through which the credit state is found
	st := &f.ports[s.base+out]
	sum += uintptr(st.v[min(vl, IBMaxVLs-1)].limit) + uintptr(st.arrAt) + uintptr(st.arb.hiIdx)
	if vl >= int(port.nprio) {
		return sum
	}
	return sum + uintptr(port.q[vl].size)
}

// Prefetch reads the routing table entry of an arriving packet and, when the route is a pure
// function of the packet or predictable (a subnet manager's LFT), the tail of the egress queue
// it will join.
func (s *Switch) Prefetch(ev *sim.Event) uintptr {
	pkt := (*Packet)(ev.P)
	if pkt == nil || pkt.Kind == LinkCtrl {
		return 0
	}
	n := s.net
	var sum uintptr
	if f := n.pfc; f != nil {
		// RoCE: admission reads, for a lossless class, the ingress state (the shared pool is in
		// the switch's first line, which s.net and s.base have read: Switch.pool).
		if f.isLossless(pkt.Prio) {
			sum = uintptr(f.state(s.base+ev.I, pkt.Prio).ing)
		}
	}
	var out int32
	if n.routerTables {
		if out = n.router.(tableRouter).predict(s, pkt); out < 0 {
			return 0
		}
	} else {
		hops := n.routes.NextHops(s.Node, int(pkt.Dst))
		if n.router != nil || len(hops) == 0 || n.spray {
			return sum + uintptr(len(hops))
		}
		out = hops[0]
		if len(hops) > 1 {
			out = hops[int(sim.Mix64(uint64(pkt.Hash)^s.salt)%uint64(len(hops)))]
		}
		// The route Network.route will find: kept for Switch.Handle, unless faults may change
		// the routes before the event runs (TestRouteMemoMatchesLookup).
		if n.faults == nil && !n.noRouteMemo && out < 1<<16-1 {
			pkt.route = uint16(out + 1)
		}
	}
	port := s.Ports[out]
	vl := int(pkt.Prio)
	if f := n.ibfc; f != nil {
		// InfiniBand: the router sets the VL from the egress port's table; the ingress VL's
		// receive buffer takes the packet's blocks, the egress VL's credits are checked.
		vl = int(port.VLOf(pkt.SL))
		base := s.base
		sum += uintptr(f.ports[base+ev.I].v[min(int(pkt.Prio), IBMaxVLs-1)].used)
		sum += uintptr(s.Ports[ev.I].gidx) // the ingress port, through which the credit state is found
		st := &f.ports[base+out]
		sum += uintptr(st.v[min(vl, IBMaxVLs-1)].limit) + uintptr(st.arrAt) + uintptr(st.arb.hiIdx)
	}
	if vl >= int(port.nprio) {
		return sum
	}
	// The queue's line, not the tail packet: enqueueing writes only its link (a store, which
	// does not wait for the line).
	return sum + uintptr(port.q[vl].size)
}

// Prefetch reads the packet that will go next when the transmission in ev ends: the head of
// the highest non-empty queue.
func (p *Port) Prefetch(ev *sim.Event) uintptr {
	if ev.Op != opTxDone {
		return 0
	}
	// The second line: the peer the packet goes to, the counters the next packet adds to.
	sum := uintptr(p.TxPackets)
	if f := p.net.ibfc; f != nil && p.sw != nil {
		// InfiniBand: the departing packet frees blocks of its ingress VL, whose credit update
		// goes back to the upstream port's state.
		if pkt := (*Packet)(ev.P); pkt != nil && pkt.Kind != LinkCtrl {
			in := p.sw.Ports[pkt.InPort] // its first line: the update is queued there
			st := &f.ports[in.gidx]
			sum += uintptr(st.v[min(int(pkt.InVL), IBMaxVLs-1)].used)
			if !st.deferFC { // (a deferred update goes to the partition's outbox)
				sum += uintptr(st.peer.arrN)
			}
			// This port's own state: the arbiter and credits choose what it sends next.
			own := &f.ports[p.gidx]
			sum += uintptr(own.arrAt) + uintptr(own.arb.hiIdx)
		}
	} else if f := p.net.pfc; f != nil && p.sw != nil {
		// RoCE: the departing packet's bytes leave its ingress port-priority's count.
		if pkt := (*Packet)(ev.P); pkt != nil && pkt.Kind != LinkCtrl && f.isLossless(pkt.Prio) {
			sum += uintptr(f.state(p.sw.base+pkt.InPort, pkt.Prio).ing)
		}
	}
	if m := p.qmask; m != 0 {
		if h := p.q[bits.Len16(m)-1].head; h != nil {
			return sum + uintptr(h.Size)
		}
	}
	return sum
}

// Prefetch reads, for a port woken by arriving credits, the update it will apply and the packet
// at the head of its highest non-empty queue, whose size decides whether it may start.
func (f *ibCredits) Prefetch(ev *sim.Event) uintptr {
	if ev.Op != opCreditsWake {
		return 0
	}
	st := &f.ports[ev.I]
	sum := uintptr(st.wakeAt)
	if st.arrN > 0 {
		sum += uintptr(st.arr[st.arrHead].lv)
	}
	if p := st.port; p.qmask != 0 {
		if h := p.q[bits.Len16(p.qmask)-1].head; h != nil {
			sum += uintptr(h.Size)
		}
	}
	return sum
}
