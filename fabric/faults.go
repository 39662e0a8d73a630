package fabric

import (
	"fmt"
	"sort"
	"strings"

	"github.com/fabricsim/fabricsim/ibsm"
	"github.com/fabricsim/fabricsim/result"
	"github.com/fabricsim/fabricsim/sim"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

// Faults: links that go down and come back, links that flap, switches that fail, links that
// degrade, NICs that storm with PFC pauses (docs/faults.md). A fault plan (Config.Faults) is
// expanded in New into timed actions on links; the fabric then recovers as its control plane
// would:
//
//   - A link that goes down stops carrying frames at once: what is queued at either end and what
//     is on the wire is lost (drop cause link_down), and so is every packet a switch forwards to
//     it until routing has moved away. The reliable transport (transport/rc) recovers the loss
//     by its timeouts once a path exists again.
//   - InfiniBand: the switch at the failed port traps to the subnet manager (trap 128,
//     PortStateChange), which answers with a heavy sweep when sweep_on_trap is on (OpenSM's
//     default); otherwise the change is found by the next periodic sweep (sweep_interval, 10 s
//     in OpenSM). The sweep recomputes the linear forwarding tables (package ibsm) over the
//     surviving links and distributes them: the new tables apply sm_reroute after the sweep
//     began.
//   - RoCE and Ethernet: the routers at the link's ends declare the BFD session down after
//     bfd_multiplier intervals without a control packet (RFC 5880 §6.8.4, Detection Time), then
//     routing reconverges (BGP withdrawals, FIB updates): every switch's ECMP groups shrink to
//     the surviving shortest paths route_convergence later.
//   - A link that comes back up retrains (InfiniBand: the flow-control state of both ends is
//     initialised again, IBA vol. 1 §7.9) and is taken back into routing after the same
//     delays (RoCE: one BFD interval for the session to come up).
//
// The per-packet path pays for this with a flag test Port.Handle already makes (a down port is
// held busy, so Port.kick needs none) and, once a link has failed in the run (Network.faulty),
// a test in Switch.Handle and NIC.Handle.

// FaultKind is what a fault does.
type FaultKind uint8

// Fault kinds.
const (
	FaultLinkDown     FaultKind = iota + 1 // a link goes down (for For, or to the end)
	FaultLinkFlap                          // a link goes down and up Count times, every Period
	FaultSwitchDown                        // every link of a switch goes down
	FaultLinkDegrade                       // a link runs at a lower rate and/or loses frames
	FaultPFCStorm                          // a NIC sends PFC PAUSE without end (RoCE with PFC)
	FaultSlowReceiver                      // a NIC drains what it receives at Rate (slowrx.go)
)

// FaultKinds are the kinds by their scenario names, in the order docs/faults.md lists them.
var FaultKinds = []struct {
	Kind FaultKind
	Name string
}{
	{FaultLinkDown, "link_down"}, {FaultLinkFlap, "link_flap"}, {FaultSwitchDown, "switch_down"},
	{FaultLinkDegrade, "link_degrade"}, {FaultPFCStorm, "pfc_storm"}, {FaultSlowReceiver, "slow_receiver"},
}

func (k FaultKind) String() string {
	for _, e := range FaultKinds {
		if e.Kind == k {
			return e.Name
		}
	}
	return fmt.Sprintf("fault(%d)", uint8(k))
}

// Fault is one fault of a run, resolved to the topology (package scenario names links and nodes
// and resolves them).
type Fault struct {
	Kind FaultKind
	// Link is the link of link_down, link_flap and link_degrade.
	Link topo.LinkID
	// Node is the switch of switch_down, the host of pfc_storm and slow_receiver.
	Node topo.NodeID
	// At is when the fault begins; For how long it lasts (0: to the end of the run). A flap
	// is down for Down of every Period, Count times.
	At, For      units.Time
	Period, Down units.Time
	Count        int
	// Rate and ErrorRate are a degraded link's rate (0: unchanged) and frame loss probability;
	// Rate is also a slow receiver's drain rate.
	Rate      units.Rate
	ErrorRate float64
	// BER is a degraded InfiniBand link's pre-FEC bit error rate (iblink.go): its frames are
	// lost with the probability its RS-FEC leaves uncorrected, or, with LLR, resent by the link
	// at the cost of a link round trip each try.
	BER float64
	LLR bool
}

// FaultRecovery are the control plane's timers that decide how long a failure stalls traffic.
type FaultRecovery struct {
	// SMTraps: the subnet manager sweeps when a switch traps a port state change (OpenSM
	// sweep_on_trap, default TRUE: opensm/osm_subnet.c); false: it finds the change at its next
	// periodic sweep, every SMSweepInterval from time 0 (OpenSM sweep_interval, default 10 s:
	// include/opensm/osm_base.h OSM_DEFAULT_SWEEP_INTERVAL_SECS).
	SMTraps         bool       `yaml:"sm_traps"`
	SMSweepInterval units.Time `yaml:"sm_sweep_interval"`
	// SMReroute is how long a heavy sweep takes from its start to new forwarding tables in
	// every switch: discovery, routing, LFT distribution (est. 100 ms for a fabric of a few
	// thousand ports; it grows with the fabric).
	SMReroute units.Time `yaml:"sm_reroute"`
	// BFDInterval and BFDMultiplier: a BFD session is declared down after BFDMultiplier
	// intervals without a packet (RFC 5880 §6.8.4); FRRouting's bfdd (SONiC's routing stack)
	// defaults to 300 ms and 3 (FRR doc/user/bfd.rst).
	BFDInterval   units.Time `yaml:"bfd_interval"`
	BFDMultiplier int        `yaml:"bfd_multiplier"`
	// RouteConvergence is the time from the BFD verdict to every switch forwarding on the
	// surviving paths: BGP withdrawal propagation and FIB updates (est. 50 ms).
	RouteConvergence units.Time `yaml:"route_convergence"`
	// IBTimeout and IBRetryCnt are the QPs' local ACK timeout exponent and retry count as NCCL
	// sets them (NCCL_IB_TIMEOUT, default 20; NCCL_IB_RETRY_CNT, default 7: NVIDIA NCCL User
	// Guide, "Environment Variables"): a requester that gets no ACK for 4.096 us x 2^IBTimeout
	// retries, and after IBRetryCnt retries the QP goes to the error state (IBA vol. 1
	// §9.7.6.1, C9-140), which fails the NCCL communicator. IBTimeout 0 is IBA's infinite
	// timeout: no limit. Applies to RoCE's RC QPs as to InfiniBand's (NCCL's IB transport).
	IBTimeout  int `yaml:"ib_timeout"`
	IBRetryCnt int `yaml:"ib_retry_cnt"`
}

// RetryLimit is how long a QP may go without an ACK before it exhausts its retries:
// 4.096 us x 2^IBTimeout per try, IBRetryCnt + 1 tries (the first and its retries); 0: no
// limit (IBTimeout 0).
func (r *FaultRecovery) RetryLimit() units.Time {
	if r.IBTimeout <= 0 {
		return 0
	}
	return 4096 * units.Nanosecond << r.IBTimeout * units.Time(r.IBRetryCnt+1)
}

// QPRetryError is a run stopped because a QP went without an ACK for longer than its retry
// limit (FaultRecovery.RetryLimit): the QP is in the error state and the collective (and, in
// NCCL, the job) fails.
type QPRetryError struct {
	Src, Dst int        // hosts
	Since    units.Time // the last ACK progress (within one retransmission timeout)
	At       units.Time // the timeout that exhausted the retries
	Limit    units.Time
	Timeout  int // IBTimeout, IBRetryCnt
	RetryCnt int
}

func (e *QPRetryError) Error() string {
	return fmt.Sprintf("QP host%d->host%d got no ACK from %v to %v, longer than its retry limit %v (ib_timeout %d: 4.096us x 2^%d per try, ib_retry_cnt %d + 1 tries): the QP went to the error state and the collective failed, as NCCL's job would",
		e.Src, e.Dst, e.Since, e.At, e.Limit, e.Timeout, e.Timeout, e.RetryCnt)
}

// retryProgress is a QP's last ACK progress seen at a retransmission timeout.
type retryProgress struct {
	una int64
	at  units.Time
}

// retryExceeded is called at flow f's retransmission timeouts (nic.go): it records the QP's
// progress and returns the QPRetryError once it has gone without an ACK for longer than the
// retry limit. The stall is counted from one RTO before the first timeout that saw no progress
// (the timer was armed then).
func (fs *faultState) retryExceeded(f *Flow, now units.Time) error {
	r := &fs.plan.Recovery
	lim := r.RetryLimit()
	if lim == 0 {
		return nil
	}
	una := f.snd.Unacked()
	p, ok := fs.progress[f.id]
	if !ok || una > p.una {
		if fs.progress == nil {
			fs.progress = map[int32]retryProgress{}
		}
		fs.progress[f.id] = retryProgress{una: una, at: max(0, now-fs.n.cfg.RTO)}
		return nil
	}
	if now-p.at <= lim {
		return nil
	}
	return &QPRetryError{Src: int(f.src), Dst: int(f.dst), Since: p.at, At: now, Limit: lim, Timeout: r.IBTimeout, RetryCnt: r.IBRetryCnt}
}

// DefaultFaultRecovery returns the recovery timers' defaults (see FaultRecovery).
func DefaultFaultRecovery() FaultRecovery {
	return FaultRecovery{
		SMTraps: true, SMSweepInterval: 10 * units.Second, SMReroute: 100 * units.Millisecond,
		BFDInterval: 300 * units.Millisecond, BFDMultiplier: 3, RouteConvergence: 50 * units.Millisecond,
		IBTimeout: 20, IBRetryCnt: 7,
	}
}

// FaultPlan is a run's faults and the recovery timers; the zero value has none.
type FaultPlan struct {
	Faults   []Fault
	Recovery FaultRecovery
	// AfterEndOK skips a fault that would begin after every message is done instead of
	// reporting it (FaultAfterEndError): nccl-tests runs one plan for the runs of every size,
	// and the small ones end before it.
	AfterEndOK bool
}

// RerouteDelay is how long after a link changes state at time at the fabric of kind forwards
// around it (down) or over it again (up): InfiniBand's trap or sweep plus the reroute, RoCE's
// BFD detection plus route convergence.
func (r *FaultRecovery) RerouteDelay(kind Kind, at units.Time, up bool) units.Time {
	if kind == KindInfiniBand {
		if r.SMTraps {
			return r.SMReroute
		}
		next := (at/r.SMSweepInterval + 1) * r.SMSweepInterval
		return next - at + r.SMReroute
	}
	detect := r.BFDInterval * units.Time(r.BFDMultiplier)
	if up {
		detect = r.BFDInterval // the session comes up at its first exchange (RFC 5880 §6.2, est.)
	}
	return detect + r.RouteConvergence
}

// validate checks a plan against the network it will run on.
func (p *FaultPlan) validate(n *Network) error {
	g := n.g
	r := &p.Recovery
	if len(p.Faults) > 0 {
		switch {
		case r.SMSweepInterval <= 0 || r.SMReroute < 0:
			return fmt.Errorf("fault recovery: sm_sweep_interval must be positive and sm_reroute not negative")
		case r.BFDInterval <= 0 || r.BFDMultiplier < 1 || r.RouteConvergence < 0:
			return fmt.Errorf("fault recovery: bfd_interval must be positive, bfd_multiplier at least 1, route_convergence not negative")
		}
	}
	storms := 0
	for i, f := range p.Faults {
		where := fmt.Sprintf("faults[%d] (%s)", i, f.Kind)
		switch f.Kind {
		case FaultLinkDown, FaultLinkFlap, FaultLinkDegrade:
			if f.Link < 0 || int(f.Link) >= len(g.Links) {
				return fmt.Errorf("%s: link %d does not exist (0..%d)", where, f.Link, len(g.Links)-1)
			}
		case FaultSwitchDown:
			if f.Node < 0 || int(f.Node) >= len(g.Nodes) || g.Nodes[f.Node].Kind != topo.Switch {
				return fmt.Errorf("%s: node %d is not a switch", where, f.Node)
			}
		case FaultSlowReceiver:
			if f.Node < 0 || int(f.Node) >= len(g.Nodes) || g.Nodes[f.Node].Kind != topo.Host {
				return fmt.Errorf("%s: node %d is not a host", where, f.Node)
			}
			if f.Rate <= 0 {
				return fmt.Errorf("%s: a slow receiver needs its drain rate", where)
			}
		case FaultPFCStorm:
			if f.Node < 0 || int(f.Node) >= len(g.Nodes) || g.Nodes[f.Node].Kind != topo.Host {
				return fmt.Errorf("%s: node %d is not a host", where, f.Node)
			}
			if n.cfg.Kind != KindRoCE || !n.cfg.RoCE.PFC {
				return fmt.Errorf("%s: a PFC storm needs kind roce with pfc: true", where)
			}
			if storms++; storms > 1 {
				return fmt.Errorf("%s: one pfc_storm per run is modelled", where)
			}
		default:
			return fmt.Errorf("%s: unknown fault kind", where)
		}
		switch {
		case f.At < 0 || f.For < 0:
			return fmt.Errorf("%s: times must not be negative", where)
		case f.Kind == FaultLinkFlap && (f.Period <= 0 || f.Down <= 0 || f.Down >= f.Period || f.Count < 1):
			return fmt.Errorf("%s: a flap needs period > down > 0 and count >= 1", where)
		case f.Kind == FaultLinkDegrade && (f.Rate < 0 || !(f.ErrorRate >= 0 && f.ErrorRate < 1) || f.Rate == 0 && f.ErrorRate == 0 && f.BER == 0):
			return fmt.Errorf("%s: a degraded link needs a lower rate, an error rate in (0,1) or a bit error rate", where)
		case f.BER != 0 && (n.cfg.Kind != KindInfiniBand || !(f.BER > 0 && f.BER < 0.5)):
			return fmt.Errorf("%s: ber is an InfiniBand link's pre-FEC bit error rate in (0, 0.5)", where)
		}
	}
	return nil
}

// Fault action opcodes (faultState.Handle).
const (
	opFaultAction  int32 = iota // ev.I: index in faultState.actions
	opFaultReroute              // routing moves to the links up now
)

// What an action does to a link.
const (
	actDown uint8 = iota
	actUp
	actDegrade
	actRestore
	actCheck // nothing to do here (a PFC storm, which PFC runs): only the run-end check
)

// faultAction is one timed change of one link's state.
type faultAction struct {
	at    units.Time
	fault int32
	op    uint8
	first bool // the fault's first action: it must come before the run ends
	link  topo.LinkID
}

// faultState runs a network's fault plan.
type faultState struct {
	n       *Network
	plan    FaultPlan
	actions []faultAction
	// down counts, per link, the faults holding it down (a link fault and its switch's);
	// downAt is when it last went down (-1: never).
	down   []uint8
	downAt []units.Time
	// Rates and error rates to restore after a degradation, per link.
	saved map[topo.LinkID][2]float64
	// base are the routes and tables of the healthy fabric (the ideal FCTs use them).
	baseRoutes *topo.Routes
	baseTables *ibsm.Tables
	// pending counts fault events scheduled and not yet run: the no-progress watchdog does not
	// judge a run that waits for its control plane.
	pending int

	linkDowns, linkUps, reroutes, wireLost, lostAtDown int64
	// AfterEnd is the index of a fault whose first action came after every message was done
	// (-1: none); Run reports it as an error.
	afterEnd int
	// progress is each QP's last ACK progress seen at a timeout (retryExceeded).
	progress map[int32]retryProgress
}

// installFaults expands the plan into actions and schedules them (New calls it after the
// policies are installed; a PFC storm is handed to PFC before, by prepareStorm).
func (n *Network) installFaults() error {
	p := n.cfg.Faults
	if len(p.Faults) == 0 {
		return nil
	}
	if err := p.validate(n); err != nil {
		return err
	}
	fs := &faultState{n: n, plan: p, down: make([]uint8, len(n.g.Links)), downAt: make([]units.Time, len(n.g.Links)),
		saved: map[topo.LinkID][2]float64{}, baseRoutes: n.routes, afterEnd: -1}
	for i := range fs.downAt {
		fs.downAt[i] = -1
	}
	if n.ibRouter != nil {
		fs.baseTables = n.ibRouter.t
	}
	for i, f := range p.Faults {
		add := func(at units.Time, op uint8, l topo.LinkID, first bool) {
			fs.actions = append(fs.actions, faultAction{at: at, fault: int32(i), op: op, first: first, link: l})
		}
		switch f.Kind {
		case FaultLinkDown:
			add(f.At, actDown, f.Link, true)
			if f.For > 0 {
				add(f.At+f.For, actUp, f.Link, false)
			}
		case FaultLinkFlap:
			for c := 0; c < f.Count; c++ {
				t := f.At + units.Time(c)*f.Period
				add(t, actDown, f.Link, c == 0)
				add(t+f.Down, actUp, f.Link, false)
			}
		case FaultSwitchDown:
			for j, port := range n.g.Nodes[f.Node].Ports {
				add(f.At, actDown, port.Link, j == 0)
				if f.For > 0 {
					add(f.At+f.For, actUp, port.Link, false)
				}
			}
		case FaultLinkDegrade:
			add(f.At, actDegrade, f.Link, true)
			if f.For > 0 {
				add(f.At+f.For, actRestore, f.Link, false)
			}
		case FaultPFCStorm:
			// Run by PFC itself (pfc.go, opPFCStorm); only its start is checked here.
			add(f.At, actCheck, -1, true)
		case FaultSlowReceiver:
			c := n.NICs[n.g.Nodes[f.Node].Host]
			until := units.MaxTime
			if f.For > 0 {
				until = f.At + f.For
			}
			c.rx = &slowRx{n: n, c: c, rate: f.Rate, from: f.At, until: until, buf: rxBufferBytes}
			n.faulty = true // arrivals at NICs look for the slow one (faultState.arrive)
			add(f.At, actCheck, -1, true)
		}
	}
	n.faults = fs
	for i, a := range fs.actions {
		n.sim.Schedule(a.at, fs, opFaultAction, int32(i), nil)
		fs.pending++
	}
	return nil
}

// prepareStorm hands a pfc_storm fault to PFC's storm model (Config.RoCE.Storm*), before New
// installs the RoCE policies.
func (n *Network) prepareStorm() error {
	for i, f := range n.cfg.Faults.Faults {
		if f.Kind != FaultPFCStorm {
			continue
		}
		if n.cfg.RoCE.StormHost >= 0 {
			return fmt.Errorf("faults[%d] (pfc_storm): the fabric already has pfc_storm_host; use one of the two", i)
		}
		if f.Node < 0 || int(f.Node) >= len(n.g.Nodes) || n.g.Nodes[f.Node].Kind != topo.Host {
			return fmt.Errorf("faults[%d] (pfc_storm): node %d is not a host", i, f.Node)
		}
		r := &n.cfg.RoCE
		r.StormHost, r.StormAt, r.StormFor = n.g.Nodes[f.Node].Host, f.At, f.For
	}
	return nil
}

// Handle runs a fault action or a reroute.
func (fs *faultState) Handle(ev *sim.Event) {
	n := fs.n
	fs.pending--
	now := n.sim.Now()
	if ev.Op == opFaultReroute {
		if n.eng.done < len(n.eng.g.Msgs) {
			fs.reroute()
		}
		return
	}
	a := &fs.actions[ev.I]
	if n.eng.done == len(n.eng.g.Msgs) {
		if a.first && fs.afterEnd < 0 && !fs.plan.AfterEndOK {
			fs.afterEnd = int(a.fault)
			n.sim.Stop(&FaultAfterEndError{Fault: int(a.fault), At: a.at, End: n.eng.lastFinish})
		}
		return
	}
	switch a.op {
	case actDown:
		fs.setLink(a.link, true, now)
	case actUp:
		fs.setLink(a.link, false, now)
	case actDegrade:
		fs.degrade(a.link, &fs.plan.Faults[a.fault])
	case actRestore:
		fs.restore(a.link)
	}
}

// FaultAfterEndError reports a fault that begins after the run has ended (every message done).
type FaultAfterEndError struct {
	Fault   int
	At, End units.Time
}

func (e *FaultAfterEndError) Error() string {
	return fmt.Sprintf("faults[%d]: at %v is after the run ended at %v (every message was done): a fault must begin before the last message completes", e.Fault, e.At, e.End)
}

// linkPorts returns the two ports of link l.
func (n *Network) linkPorts(l topo.LinkID) (a, b *Port) {
	L := &n.g.Links[l]
	return n.portOf(L.A, L.APort), n.portOf(L.B, L.BPort)
}

// setLink takes link l down or (when no other fault holds it) up at now, and schedules the
// control plane's answer.
func (fs *faultState) setLink(l topo.LinkID, down bool, now units.Time) {
	n := fs.n
	a, b := n.linkPorts(l)
	if down {
		fs.down[l]++
		if fs.down[l] > 1 {
			return
		}
		fs.linkDowns++
		fs.downAt[l] = now
		n.faulty = true
		for _, p := range []*Port{a, b} {
			p.flags |= portDown
			fs.flush(p)
			if !p.busy {
				p.hold() // (a busy port holds itself when its frame ends: Port.lost)
			}
		}
	} else {
		if fs.down[l] == 0 {
			return
		}
		fs.down[l]--
		if fs.down[l] > 0 {
			return
		}
		fs.linkUps++
		for _, p := range []*Port{a, b} {
			p.flags &^= portDown
			fs.flushCtrl(p)
			if p.flags&portHeld != 0 {
				p.busy = false
				p.flags &^= portHeld
			}
		}
		if f := n.ibfc; f != nil {
			f.relink(a)
			f.relink(b)
		}
		a.kick()
		b.kick()
	}
	n.sim.Schedule(now+fs.plan.Recovery.RerouteDelay(n.cfg.Kind, now, !down), fs, opFaultReroute, 0, nil)
	fs.pending++
}

// flush drops what port p holds: its queues (their buffer space returns, as the PFC
// watchdog's flush does) and its link-control frames.
func (fs *faultState) flush(p *Port) {
	n := fs.n
	for prio := range p.q {
		for p.q[prio].len() > 0 {
			pkt := p.dequeue(prio)
			if p.sw != nil {
				p.sw.release(p, pkt)
			}
			fs.lostAtDown++
			n.drop(pkt, DropLinkDown)
		}
	}
	fs.flushCtrl(p)
}

// flushCtrl discards the link-control frames queued on p (PAUSE frames for a link that went
// down, or that queued while it was down, are stale).
func (fs *faultState) flushCtrl(p *Port) {
	for p.ctrl.len() > 0 {
		fs.n.pool.put(p.ctrl.pop())
	}
	p.flags &^= portCtrl
}

// lostOnWire reports whether pkt, arriving through port in, was on a link that failed while it
// crossed (it left the sender within the link's delay before the failure); such a packet is
// dropped here.
func (fs *faultState) lostOnWire(in *Port, pkt *Packet) bool {
	l := in.Link
	at := fs.downAt[l]
	if at < 0 {
		return false
	}
	n := fs.n
	sender := n.portOf(n.g.Nodes[in.Owner].Ports[in.Index].Peer, in.peerPort)
	if fs.down[l] == 0 && at < n.sim.Now()-sender.delay {
		return false
	}
	fs.wireLost++
	if pkt.Kind == LinkCtrl {
		n.pool.put(pkt)
	} else {
		n.drop(pkt, DropLinkDown)
	}
	return true
}

// arrive takes pkt, arriving at NIC c, when it was lost on the wire or the NIC is a slow
// receiver that queues it (slowrx.go).
func (fs *faultState) arrive(c *NIC, pkt *Packet) bool {
	if fs.lostOnWire(c.Port, pkt) {
		return true
	}
	return c.rx != nil && c.rx.take(pkt)
}

// dropAtDown drops pkt, which switch s routed to port out whose link is down (the forwarding
// tables have not moved yet). Its ingress buffer space was never taken; InfiniBand's credits
// for it go back upstream as if it had passed.
func (fs *faultState) dropAtDown(s *Switch, pkt *Packet) {
	n := fs.n
	if f := n.ibfc; f != nil {
		in := s.Ports[pkt.InPort]
		f.Arrived(in, pkt)
		f.Departed(in, pkt)
	}
	fs.lostAtDown++
	s.Drops++
	n.drop(pkt, DropLinkDown)
}

// survivingGraph is the topology without the links down now: each end of a failed link leads
// back to its own node, so no breadth-first search crosses it and port numbers stay the same.
func (fs *faultState) survivingGraph() *topo.Graph {
	return SurvivingGraph(fs.n.g, func(l topo.LinkID) bool { return fs.down[l] > 0 })
}

// SurvivingGraph is g without the links down says are down: each end of such a link leads back
// to its own node, so no breadth-first search crosses it and port numbers stay the same. The
// packet and flow backends' reroutes compute their routes over it.
func SurvivingGraph(g *topo.Graph, down func(topo.LinkID) bool) *topo.Graph {
	cp := *g
	cp.Nodes = append([]topo.Node(nil), g.Nodes...)
	copied := map[topo.NodeID]bool{}
	cut := func(node topo.NodeID, port int32) {
		if !copied[node] {
			cp.Nodes[node].Ports = append([]topo.Port(nil), g.Nodes[node].Ports...)
			copied[node] = true
		}
		pp := &cp.Nodes[node].Ports[port]
		pp.Peer, pp.PeerPort = node, port
	}
	for l := range g.Links {
		if down(topo.LinkID(l)) {
			L := &g.Links[l]
			cut(L.A, L.APort)
			cut(L.B, L.BPort)
		}
	}
	return &cp
}

// reroute installs routing over the links up now: the subnet manager's new LFTs on
// InfiniBand, the shrunk ECMP groups elsewhere.
func (fs *faultState) reroute() {
	n := fs.n
	fs.reroutes++
	healthy := true
	for _, d := range fs.down {
		healthy = healthy && d == 0
	}
	if r := n.ibRouter; r != nil {
		if healthy {
			r.t = fs.baseTables
			return
		}
		t, err := ibsm.ComputeStored(fs.survivingGraph(), r.t.Engine)
		if err != nil {
			n.sim.Stop(fmt.Errorf("subnet manager sweep at %v after link failures (%s): %w", n.sim.Now(), fs.downList(), err))
			return
		}
		r.t = t
		return
	}
	if healthy {
		n.routes = fs.baseRoutes
		return
	}
	rt, err := topo.ComputeTableRoutes(fs.survivingGraph())
	if err != nil {
		n.sim.Stop(fmt.Errorf("route convergence at %v after link failures (%s): %w", n.sim.Now(), fs.downList(), err))
		return
	}
	n.routes = rt
}

// degrade lowers link l's rate and/or sets its frame loss, both directions.
func (fs *faultState) degrade(l topo.LinkID, f *Fault) {
	n := fs.n
	a, b := n.linkPorts(l)
	if _, ok := fs.saved[l]; !ok {
		fs.saved[l] = [2]float64{float64(a.Rate), a.errRate}
	}
	for _, p := range []*Port{a, b} {
		if f.Rate > 0 {
			p.setRate(f.Rate)
		}
		errRate := f.ErrorRate
		if f.BER > 0 {
			fec := IBFECFor(units.Rate(fs.saved[l][0])) // the lanes' FEC, whatever rate they retrained to
			frame := fec.FrameError(f.BER, int64(n.cfg.MTU)+int64(n.cfg.HeaderBytes))
			if f.LLR {
				// The link resends what its FEC left: no loss, one link round trip per try, in
				// order, so the link's rate drops (LLRRate).
				p.setRate(LLRRate(p.Rate, frame, n.cfg.MTU+units.Size(n.cfg.HeaderBytes), p.delay))
			} else {
				errRate = 1 - (1-errRate)*(1-frame)
			}
		}
		if errRate > 0 {
			if p.rng == nil {
				p.rng = sim.RNG(n.cfg.drawSeed(), fmt.Sprintf("fault/link%d/%s", l, n.g.Nodes[p.Owner].Name))
			}
			p.errCause = DropCorrupt
			p.setErrRate(errRate)
			if ib := n.ibfc; ib != nil {
				ib.startRefresh(p)
			}
		}
	}
}

// startRefresh gives port p, whose link has just become lossy, the periodic flow-control
// packets of lossy links (newIBCredits): a lost credit update cannot stall a VL, and each
// refresh carries FCTBS, which resynchronises the peer's ABR after a lost data packet.
func (f *ibCredits) startRefresh(p *Port) {
	for _, g := range f.refresh {
		if g == p.gidx {
			return
		}
	}
	per := f.n.cfg.IB.FCRefresh
	if per == 0 {
		per = p.Rate.TransmitTime(65536)
	}
	f.refresh = append(f.refresh, p.gidx)
	f.fcPeriod = append(f.fcPeriod, per)
	f.n.sim.After(per, f, opFCRefresh, int32(len(f.refresh)-1), nil)
}

// restore gives link l back its rate and error rate.
func (fs *faultState) restore(l topo.LinkID) {
	s, ok := fs.saved[l]
	if !ok {
		return
	}
	a, b := fs.n.linkPorts(l)
	for _, p := range []*Port{a, b} {
		p.setRate(units.Rate(s[0]))
		p.setErrRate(s[1])
	}
	delete(fs.saved, l)
}

// setRate changes the port's serialization rate (a degraded link).
func (p *Port) setRate(r units.Rate) {
	p.Rate = r
	p.psPerByte, p.lastSer = 0, 0
	if ps := 8 * units.Second; r > 0 && ps%units.Time(r) == 0 {
		p.psPerByte = ps / units.Time(r)
	}
}

// relink initialises port p's transmit credits again when its link comes back up: the peer's
// ABR is set to the blocks p has sent (FCTBS), as the first flow-control packet after link
// training does (IBA vol. 1 §7.9.4), so the credits of packets lost with the link are not lost
// with them; p may send what the peer's buffer holds free.
func (f *ibCredits) relink(p *Port) {
	now := f.n.sim.Now()
	st := f.state(p)
	peer := st.peer
	f.sync(st, now)
	for vl := 0; vl < f.vls; vl++ {
		peer.v[vl].abr = st.v[vl].fctbs
		st.v[vl].limit = peer.fccl(uint8(vl))
		if st.stalls&(1<<uint(vl)) != 0 && st.v[vl].limit-st.v[vl].fctbs >= st.v[vl].stallNeed {
			f.endStall(st, vl, now)
		}
	}
}

// downList names the links down now.
func (fs *faultState) downList() string {
	var s []string
	for l, d := range fs.down {
		if d > 0 {
			s = append(s, LinkName(fs.n.g, topo.LinkID(l)))
		}
	}
	sort.Strings(s)
	return strings.Join(s, ", ")
}

// LinkName is how scenarios and messages name a link: its two nodes, "leaf0-spine1", with
// "#k" for the k-th of parallel links between the same two nodes (k from 1).
func LinkName(g *topo.Graph, l topo.LinkID) string {
	L := &g.Links[l]
	name := g.Nodes[L.A].Name + "-" + g.Nodes[L.B].Name
	k := 0
	for _, p := range g.Nodes[L.A].Ports {
		if p.Peer == L.B {
			k++
			if p.Link == l {
				break
			}
		}
	}
	if k > 1 {
		name += fmt.Sprintf("#%d", k)
	}
	return name
}

// waiting reports whether the fault plan still has events to run (the no-progress watchdog
// waits for them), and isolating whether a link is down (so that traffic that cannot move is
// judged even with no packet in the network).
func (fs *faultState) waiting() bool { return fs != nil && fs.pending > 0 }

func (fs *faultState) isolating() bool {
	if fs == nil {
		return false
	}
	for _, d := range fs.down {
		if d > 0 {
			return true
		}
	}
	return false
}

// Report adds the fault counters.
func (fs *faultState) Report(res *result.Run) {
	res.Counters["fault_link_downs"] = float64(fs.linkDowns)
	res.Counters["fault_link_ups"] = float64(fs.linkUps)
	res.Counters["fault_reroutes"] = float64(fs.reroutes)
	res.Counters["fault_lost_on_wire_packets"] = float64(fs.wireLost)
	res.Counters["fault_lost_at_down_port_packets"] = float64(fs.lostAtDown)
	fs.reportStorm(res)
	var most, pauses int64
	for _, c := range fs.n.NICs {
		if c.rx != nil {
			most, pauses = max(most, c.rx.maxBytes), pauses+c.rx.pauses
		}
	}
	if most > 0 || pauses > 0 {
		res.Counters["fault_slow_receiver_max_buffer_bytes"] = float64(most)
		res.Counters["fault_slow_receiver_pauses"] = float64(pauses)
	}
}

// reportStorm counts a PFC storm's victims: the ports and priorities, other than the switch
// port facing the storming NIC, that received PAUSE (the storm spread to them), and how long
// they were paused in total.
func (fs *faultState) reportStorm(res *result.Run) {
	n := fs.n
	pf, ok := n.fc.(*pfc)
	if !ok || pf.cfg.StormHost < 0 {
		return
	}
	nic := n.NICs[pf.cfg.StormHost].Port
	facing := n.portOf(n.g.Nodes[nic.Owner].Ports[0].Peer, nic.peerPort).gidx
	now := n.sim.Now()
	var victims int64
	var paused units.Time
	for idx, rcvd := range pf.received {
		g := int32(idx / 8)
		if g == facing || rcvd == 0 {
			continue
		}
		victims++
		paused += pf.pausedTime[idx]
		if n.port(g).Paused&(1<<(idx&7)) != 0 {
			paused += now - pf.pausedSince[idx]
		}
	}
	res.Counters["fault_pfc_storm_victim_ports"] = float64(victims)
	res.Counters["fault_pfc_storm_victim_paused_ns"] = paused.Nanoseconds()
}
