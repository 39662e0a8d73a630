package flow

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/ibsm"
	"github.com/fabricsim/fabricsim/result"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

// Faults on the flow backend (docs/faults.md, "On the flow backend"): the packet backend's fault
// plan (fabric.FaultPlan) in the fluid limit, with the same control-plane timers.
//
//   - A link that goes down carries nothing: its two channels' rates drop to 0, the bytes queued
//     at them are lost, and every byte a flow sends into them (its NIC's link or the next hop)
//     until routing moves is lost too, as the packet backend's switches drop what they still
//     forward to a down port. The transport recovers by its timeout: go-back-N resends from the
//     first byte the receiver lacks (everything undelivered, the in-flight bytes included) at
//     the retransmission timer's ticks, every RTO from the loss (the loss model, loss.go).
//   - The reroute comes when the packet backend's does (fabric.FaultRecovery.RerouteDelay:
//     InfiniBand's trap or sweep plus sm_reroute; RoCE's BFD detection plus route convergence):
//     the subnet manager's tables (ibsm.ComputeStored) or the ECMP groups (topo's table routes)
//     over the links up then, and every flow in flight takes the path the packet backend's
//     packets would take now, hashed with the same entropy and salts over the shrunk groups.
//     A flow that moves takes its queued bytes back to its sender (they are sent again along the
//     new path: a few microseconds of queue, where the packet backend's packets on the old path
//     drain), so bytes stay conserved.
//   - A link that comes back carries again at once; routing takes it back after the up delay.
//   - A degraded link runs at its lower rate and/or loses bytes with its error rate (the loss
//     model's per-link probability); a slow receiver's downlink runs at its drain rate, so its
//     queue builds at the switch and PFC or credits push back as the packet backend's NIC
//     buffer does (lossless fabrics only: on a lossy one the NIC's buffer overflows and
//     go-back-N loops, which the fluid model does not reproduce).
//
// The PFC storm is left to the packet backend (FaultsUnsupported): its watchdog flushes a
// lossless queue, which needs loss recovery on a class the fluid model treats as lossless,
// and the storm's spread is a matter of pause frames and XOFF crossings per port.

// Fault event kinds (engine.handle).
const (
	evFault   = iota + 2 // a fault action: ev.id indexes faultState.actions
	evReroute            // routing moves to the links up now
)

// What an action does.
const (
	actDown uint8 = iota
	actUp
	actDegrade
	actRestore
	actSlow    // a slow receiver's downlink to its drain rate
	actNoSlow  // and back
	actNothing // no state change (only the run-end check)
)

type faultAction struct {
	at    units.Time
	fault int32
	op    uint8
	first bool
	link  topo.LinkID
	done  bool
}

// faultState runs a flow-level run's fault plan.
type faultState struct {
	e       *engine
	plan    fabric.FaultPlan
	actions []faultAction
	// down counts, per link, the faults holding it down; chDown says, per channel, that its
	// link is down; upRate is the rate a channel runs at when up (bytes/s: its link's, or a
	// degraded one's); baseLoss its loss probability before any degradation.
	down     []uint8
	downs    int // links down now
	chDown   []bool
	upRate   []float64
	baseLoss map[int32]float64
	// baseIB and baseNH are the healthy fabric's routing (restored when every link is up, and
	// for the ideal FCTs).
	baseIB  *ibsm.Tables
	baseNH  NextHopper
	pending int

	linkDowns, linkUps, reroutes, moved int64
	lostBytes                           float64
}

// FaultsUnsupported returns why the flow backend cannot run cfg's faults (nil when it can): a
// PFC storm, and a slow receiver on a fabric without link-level flow control.
func FaultsUnsupported(cfg *fabric.Config) error {
	for i, f := range cfg.Faults.Faults {
		switch {
		case f.Kind == fabric.FaultPFCStorm:
			return fmt.Errorf("faults[%d] pfc_storm: the flow backend does not model PFC storms and the watchdog; run it on the packet backend", i)
		case f.Kind == fabric.FaultSlowReceiver && !(cfg.Kind == fabric.KindInfiniBand || cfg.Kind == fabric.KindRoCE && cfg.RoCE.PFC):
			return fmt.Errorf("faults[%d] slow_receiver on a fabric without PFC or credits: the flow backend does not model the NIC buffer's overflow; run it on the packet backend", i)
		}
	}
	return nil
}

// faultsNeedLoss reports whether the plan loses bytes (a link down, or one with errors), so
// that the engine keeps the loss model even on a lossless fabric.
func faultsNeedLoss(p *fabric.FaultPlan) bool {
	for _, f := range p.Faults {
		if f.Kind != fabric.FaultSlowReceiver && (f.Kind != fabric.FaultLinkDegrade || f.ErrorRate > 0 || f.BER > 0 && !f.LLR) {
			return true
		}
	}
	return false
}

// installFaults checks the plan and schedules its actions (newEngine calls it).
func (e *engine) installFaults() error {
	p := e.cfg.Faults
	if len(p.Faults) == 0 {
		return nil
	}
	if err := FaultsUnsupported(&e.cfg); err != nil {
		return err
	}
	r := &p.Recovery
	if r.SMSweepInterval <= 0 || r.SMReroute < 0 || r.BFDInterval <= 0 || r.BFDMultiplier < 1 || r.RouteConvergence < 0 {
		return fmt.Errorf("fault recovery: sm_sweep_interval and bfd_interval must be positive, bfd_multiplier at least 1, sm_reroute and route_convergence not negative")
	}
	g := e.g
	nch := int(e.net.chanBase[len(g.Nodes)])
	fs := &faultState{e: e, plan: p, down: make([]uint8, len(g.Links)), chDown: make([]bool, nch), upRate: make([]float64, nch),
		baseLoss: map[int32]float64{}, baseIB: e.rt.ib, baseNH: e.rt.nh}
	for ch := range fs.upRate {
		fs.upRate[ch] = e.net.res[ch].rate
	}
	for i, f := range p.Faults {
		where := fmt.Sprintf("faults[%d] (%s)", i, f.Kind)
		add := func(at units.Time, op uint8, l topo.LinkID, first bool) {
			fs.actions = append(fs.actions, faultAction{at: at, fault: int32(i), op: op, first: first, link: l})
		}
		if f.At < 0 || f.For < 0 {
			return fmt.Errorf("%s: times must not be negative", where)
		}
		switch f.Kind {
		case fabric.FaultLinkDown, fabric.FaultLinkFlap, fabric.FaultLinkDegrade:
			if f.Link < 0 || int(f.Link) >= len(g.Links) {
				return fmt.Errorf("%s: link %d does not exist (0..%d)", where, f.Link, len(g.Links)-1)
			}
		case fabric.FaultSwitchDown:
			if f.Node < 0 || int(f.Node) >= len(g.Nodes) || g.Nodes[f.Node].Kind != topo.Switch {
				return fmt.Errorf("%s: node %d is not a switch", where, f.Node)
			}
		case fabric.FaultSlowReceiver:
			if f.Node < 0 || int(f.Node) >= len(g.Nodes) || g.Nodes[f.Node].Kind != topo.Host || f.Rate <= 0 {
				return fmt.Errorf("%s: node %d is not a host, or no drain rate", where, f.Node)
			}
		default:
			return fmt.Errorf("%s: not modelled by the flow backend", where)
		}
		switch f.Kind {
		case fabric.FaultLinkDown:
			add(f.At, actDown, f.Link, true)
			if f.For > 0 {
				add(f.At+f.For, actUp, f.Link, false)
			}
		case fabric.FaultLinkFlap:
			if f.Period <= 0 || f.Down <= 0 || f.Down >= f.Period || f.Count < 1 {
				return fmt.Errorf("%s: a flap needs period > down > 0 and count >= 1", where)
			}
			for c := 0; c < f.Count; c++ {
				t := f.At + units.Time(c)*f.Period
				add(t, actDown, f.Link, c == 0)
				add(t+f.Down, actUp, f.Link, false)
			}
		case fabric.FaultSwitchDown:
			for j, port := range g.Nodes[f.Node].Ports {
				add(f.At, actDown, port.Link, j == 0)
				if f.For > 0 {
					add(f.At+f.For, actUp, port.Link, false)
				}
			}
		case fabric.FaultLinkDegrade:
			if f.Rate < 0 || !(f.ErrorRate >= 0 && f.ErrorRate < 1) || f.Rate == 0 && f.ErrorRate == 0 && f.BER == 0 {
				return fmt.Errorf("%s: a degraded link needs a lower rate or an error rate in (0,1)", where)
			}
			add(f.At, actDegrade, f.Link, true)
			if f.For > 0 {
				add(f.At+f.For, actRestore, f.Link, false)
			}
		case fabric.FaultSlowReceiver:
			add(f.At, actSlow, g.Nodes[f.Node].Ports[0].Link, true)
			if f.For > 0 {
				add(f.At+f.For, actNoSlow, g.Nodes[f.Node].Ports[0].Link, false)
			}
		}
	}
	e.faults = fs
	for i, a := range fs.actions {
		e.push(a.at, evFault, int32(i))
		fs.pending++
	}
	return nil
}

// handleFault runs a fault event at e.now.
func (e *engine) handleFault(ev event) error {
	fs := e.faults
	fs.pending--
	if ev.kind == evReroute {
		if e.done < e.toRun {
			return fs.reroute()
		}
		return nil
	}
	a := &fs.actions[ev.id]
	a.done = true
	f := &fs.plan.Faults[a.fault]
	switch a.op {
	case actDown:
		fs.setLink(a.link, true)
	case actUp:
		fs.setLink(a.link, false)
	case actDegrade:
		fs.degrade(a.link, f)
	case actRestore:
		fs.restore(a.link)
	case actSlow:
		fs.slow(a.link, f.Node, float64(f.Rate)/8)
	case actNoSlow:
		fs.slow(a.link, f.Node, 0)
	}
	e.stationary = false
	return nil
}

// afterEnd returns the fault whose first action never ran because every message was done
// before it (the packet backend's FaultAfterEndError), unless the plan allows it.
func (fs *faultState) afterEnd(end units.Time) error {
	if fs == nil || fs.plan.AfterEndOK {
		return nil
	}
	for _, a := range fs.actions {
		if a.first && !a.done {
			return &fabric.FaultAfterEndError{Fault: int(a.fault), At: a.at, End: end}
		}
	}
	return nil
}

// linkChans returns link l's two channels (A to B, B to A).
func (fs *faultState) linkChans(l topo.LinkID) [2]int32 {
	L := &fs.e.g.Links[l]
	return [2]int32{fs.e.net.channel(L.A, L.APort), fs.e.net.channel(L.B, L.BPort)}
}

// setRate gives channel ch the rate x (bytes/s), and every bundle pooling it the difference;
// the flows crossing them are heated (their shares change).
func (fs *faultState) setRate(ch int32, x float64) {
	e := fs.e
	res := &e.net.res[ch]
	d := x - res.rate
	if d == 0 {
		return
	}
	res.rate = x
	res.credWin = 0 // the credit loop is timed again
	e.heatMembers(ch)
	for b := int32(len(fs.chDown)); int(b) < len(e.net.res); b++ {
		br := &e.net.res[b]
		for _, c := range br.chans {
			if c == ch {
				br.rate = max(0, br.rate+d)
				e.heatMembers(b)
			}
		}
	}
}

// setLink takes link l down or (when no other fault holds it) up at e.now, and schedules the
// control plane's answer.
func (fs *faultState) setLink(l topo.LinkID, down bool) {
	e := fs.e
	if down {
		fs.down[l]++
		if fs.down[l] > 1 {
			return
		}
		fs.linkDowns++
		fs.downs++
		for _, ch := range fs.linkChans(l) {
			fs.chDown[ch] = true
			fs.setRate(ch, 0)
			fs.flush(ch)
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
		fs.downs--
		for _, ch := range fs.linkChans(l) {
			fs.chDown[ch] = false
			fs.setRate(ch, fs.upRate[ch])
		}
	}
	e.push(e.now+fs.plan.Recovery.RerouteDelay(e.cfg.Kind, e.now, !down), evReroute, 0)
	fs.pending++
}

// flush loses the bytes queued at channel ch, whose link went down (both ends drop what they
// hold).
func (fs *faultState) flush(ch int32) {
	e := fs.e
	for _, m := range e.net.res[ch].members {
		f := &e.flows[m.f]
		slot := f.off + m.h
		b := e.owner[slot].back
		if m.h == 0 || b == 0 {
			continue
		}
		e.addIng(e.ingRes(slot), f.cls, -b)
		e.queue(ch, f.cls).drop(slot, e.owner[slot].gen)
		e.owner[slot].back = 0
		fs.lose(m.f, m.h, b)
	}
	e.net.res[ch].q = 0
}

// cut returns what is left of s bytes of flow fid leaving resource r (its hop h) when r's link
// or the next hop's is down: nothing (they are counted lost and the transport's recovery
// begins). A bundle (adaptive routing, spraying) with some of its links down loses their share:
// the switch's per-packet choice still sends there (a down port's queue is empty, the least
// loaded) until the routing moves.
func (fs *faultState) cut(r int32, fid, h int32, s float64) float64 {
	if fs.downs == 0 {
		return s
	}
	f := &fs.e.flows[fid]
	frac := fs.downShare(r)
	if h+1 < f.hops {
		frac = max(frac, fs.downShare(fs.e.path[f.off+h+1]))
	}
	if frac == 0 {
		return s
	}
	lost := s * frac
	fs.lose(fid, h+1, lost)
	return s - lost
}

// downShare is the share of resource r's links that are down (0 or 1 for a channel).
func (fs *faultState) downShare(r int32) float64 {
	if int(r) < len(fs.chDown) {
		if fs.chDown[r] {
			return 1
		}
		return 0
	}
	chans := fs.e.net.res[r].chans
	if len(chans) == 0 {
		return 0 // a pair constraint: its links' bundles count their faults
	}
	k := 0
	for _, c := range chans {
		if fs.chDown[c] {
			k++
		}
	}
	return float64(k) / float64(len(chans))
}

// crossesDown reports whether flow f's path crosses a link that is down.
func (fs *faultState) crossesDown(f *flowState) bool {
	if fs.downs == 0 {
		return false
	}
	for _, r := range fs.e.path[f.off : f.off+f.hops] {
		if fs.downShare(r) > 0 {
			return true
		}
	}
	return false
}

// lose records bytes of flow fid lost at hop h (everything from there on is behind the loss)
// and starts its recovery: nothing reaches the receiver to show the gap, so the retransmission
// timer finds it, RTO after the last progress; while the path stays cut, every RTO after the
// last timeout (the packet backend's timer restarts at each).
func (fs *faultState) lose(fid, h int32, bytes float64) {
	e := fs.e
	l := e.loss
	f := &e.flows[fid]
	s := l.state(fid)
	fs.lostBytes += bytes
	wasTimeout := s.hadLoss && s.timeout
	s.hadLoss = true
	if s.pending {
		if l.irn {
			s.lost += bytes
		}
		return
	}
	ahead := f.deliv
	for k := max(h, 1); k < f.hops; k++ {
		ahead += e.owner[f.off+k].back
	}
	rto := l.rto
	if l.irn && (f.total-f.rem)-f.deliv > float64(e.cfg.IRNLowThreshold)*float64(e.cfg.MTU) {
		rto = e.cfg.IRNRTOHigh
	}
	base := e.now
	if wasTimeout && s.rewindAt <= e.now && e.now-s.rewindAt < rto {
		base = s.rewindAt // the timer restarted at the last timeout
	}
	s.pending, s.timeout = true, true
	s.good, s.injAt, s.lost = ahead, f.total-f.rem, bytes
	s.rewindAt = base + rto
	e.stationary = false
}

// degrade sets link l's rate (0: unchanged) and error rate, both directions.
func (fs *faultState) degrade(l topo.LinkID, f *fabric.Fault) {
	e := fs.e
	rate := f.Rate
	for _, ch := range fs.linkChans(l) {
		errRate := f.ErrorRate
		if rate > 0 {
			fs.upRate[ch] = float64(rate) / 8
		}
		if f.BER > 0 {
			// What the link's RS-FEC leaves uncorrected is lost, or with LLR resent by the link
			// in order at a lower rate (fabric/iblink.go, as the packet backend applies it).
			fec := fabric.IBFECFor(e.g.Links[l].Rate)
			bytes := e.cfg.MTU + units.Size(e.cfg.HeaderBytes)
			frame := fec.FrameError(f.BER, int64(bytes))
			if f.LLR {
				fs.upRate[ch] = float64(fabric.LLRRate(units.Rate(fs.upRate[ch]*8), frame, bytes, e.net.res[ch].delay)) / 8
			} else {
				errRate = 1 - (1-errRate)*(1-frame)
			}
		}
		if !fs.chDown[ch] {
			fs.setRate(ch, fs.upRate[ch])
		}
		if errRate > 0 && e.loss != nil {
			if _, ok := fs.baseLoss[ch]; !ok {
				fs.baseLoss[ch] = e.loss.linkLoss[ch]
			}
			e.loss.linkLoss[ch] = 1 - (1-fs.baseLoss[ch])*(1-errRate)
			e.loss.random = true
			e.heatMembers(ch)
		}
	}
}

// restore gives link l back its rate and loss.
func (fs *faultState) restore(l topo.LinkID) {
	e := fs.e
	for _, ch := range fs.linkChans(l) {
		fs.upRate[ch] = float64(e.g.Links[l].Rate) / 8
		if !fs.chDown[ch] {
			fs.setRate(ch, fs.upRate[ch])
		}
		if b, ok := fs.baseLoss[ch]; ok {
			e.loss.linkLoss[ch] = b
			delete(fs.baseLoss, ch)
		}
	}
}

// slow sets the downlink into host node to rate x (bytes/s; 0: its link's rate again).
func (fs *faultState) slow(l topo.LinkID, host topo.NodeID, x float64) {
	e := fs.e
	var ch int32 = -1
	for _, c := range fs.linkChans(l) {
		if e.net.res[c].to == host {
			ch = c
		}
	}
	if x == 0 {
		x = float64(e.g.Links[l].Rate) / 8
	}
	fs.upRate[ch] = x
	if !fs.chDown[ch] {
		fs.setRate(ch, x)
	}
}

// reroute installs routing over the links up now and moves every flow in flight whose path
// changes.
func (fs *faultState) reroute() error {
	e := fs.e
	fs.reroutes++
	healthy := true
	for _, d := range fs.down {
		healthy = healthy && d == 0
	}
	rt := e.rt
	switch {
	case healthy:
		rt.ib, rt.nh = fs.baseIB, fs.baseNH
	case e.cfg.Kind == fabric.KindInfiniBand:
		t, err := ibsm.ComputeStored(fs.surviving(), e.cfg.IB.Routing)
		if err != nil {
			return fmt.Errorf("subnet manager sweep at %v after link failures (%s): %w", e.now, fs.downList(), err)
		}
		rt.ib = t
	default:
		r, err := topo.ComputeTableRoutes(fs.surviving())
		if err != nil {
			return fmt.Errorf("route convergence at %v after link failures (%s): %w", e.now, fs.downList(), err)
		}
		rt.nh = r
	}
	clear(e.pathCache)
	e.lastDeliv = max(e.lastDeliv, e.now) // the no-progress check judges from the new routes on
	var p []int32
	for fid := range e.flows {
		f := &e.flows[fid]
		if f.done {
			continue
		}
		m := &e.mg.Msgs[f.msg]
		hash := qpHash(e.cfg.Seed, f.msg, m, f.qp)
		var err error
		if p, err = rt.path(m.Src, m.Dst, hash, f.qp, p[:0]); err != nil {
			continue // no path (a host cut off): the flow stays cut, and the run reports it
		}
		hops := int32(len(p))
		if p, err = rt.ackPath(m.Dst, m.Src, hash, f.qp, p); err != nil {
			continue
		}
		if hops == f.hops && slices.Equal(p, e.path[f.off:f.off+f.hops+f.ackHops]) {
			continue
		}
		fs.move(int32(fid), p, hops)
	}
	e.stationary = false
	return nil
}

// move puts flow fid on path p (data hops, then its ACK path). Its bytes queued on the old path
// go back to its sender, to be sent again on the new one; a flow recovering from a loss keeps
// what the receiver has (go-back-N resends the rest at its timeout).
func (fs *faultState) move(fid int32, p []int32, hops int32) {
	e := fs.e
	e.heatFlow(fid)
	f := &e.flows[fid]
	if f.done {
		return
	}
	fs.moved++
	var q float64
	for h := int32(1); h < f.hops; h++ {
		slot := f.off + h
		if b := e.owner[slot].back; b != 0 {
			e.addIng(e.ingRes(slot), f.cls, -b)
			e.queue(e.path[slot], f.cls).drop(slot, e.owner[slot].gen)
			e.owner[slot].back = 0
			q += b
		}
	}
	for h, r := range e.path[f.off : f.off+f.hops] {
		e.leave(r, fid, int32(h), f.off)
	}
	e.freeSlots[f.hops+f.ackHops] = append(e.freeSlots[f.hops+f.ackHops], f.off)
	f.rem += q
	e.stats.injected -= q
	if e.loss != nil {
		// Nothing of the flow is in the network any more: nothing to discard, and the receiver
		// holds in order only what it has.
		s := e.loss.state(fid)
		s.waste = 0
		if s.pending {
			s.good = min(s.good, f.deliv)
		}
	}
	n := int32(len(p))
	off := e.alloc(n)
	copy(e.path[off:off+n], p)
	for h := int32(0); h < hops; h++ {
		e.owner[off+h].flow, e.owner[off+h].hop, e.owner[off+h].res = fid, h, p[h]
	}
	f = &e.flows[fid]
	f.off, f.hops, f.ackOff, f.ackHops = off, hops, off+hops, n-hops
	if len(e.rc) < len(e.net.res)*e.nc {
		e.growState() // the path created a bundle
	}
	m := &e.mg.Msgs[f.msg]
	_, per := e.qpSplit(m)
	payload := min(per, int64(m.Bytes)-int64(f.qp)*per)
	f.lat = e.latency(e.path[off:off+hops], payload)
	for h := int32(0); h < hops; h++ {
		e.join(e.path[off+h], fid, h, off)
	}
	if f.hidx < 0 && f.rem > 0 && !(e.loss != nil && e.loss.state(fid).pending) {
		e.rehost(fid)
	}
	e.stationary = false
}

// surviving is the topology without the links down now.
func (fs *faultState) surviving() *topo.Graph {
	return fabric.SurvivingGraph(fs.e.g, func(l topo.LinkID) bool { return fs.down[l] > 0 })
}

// waiting reports whether the plan still has events to run: the no-progress check does not
// judge a run that waits for its control plane.
func (fs *faultState) waiting() bool { return fs != nil && fs.pending > 0 }

// downList names the links down now.
func (fs *faultState) downList() string {
	var s []string
	for l, d := range fs.down {
		if d > 0 {
			s = append(s, fabric.LinkName(fs.e.g, topo.LinkID(l)))
		}
	}
	sort.Strings(s)
	return strings.Join(s, ", ")
}

// stallNote adds the links down to a no-progress error.
func (fs *faultState) stallNote() string {
	if fs == nil {
		return ""
	}
	if d := fs.downList(); d != "" {
		return "; links down: " + d
	}
	return ""
}

// restoreRouting gives the router the healthy fabric's routing back (the ideal FCTs are
// computed on it, as the packet backend's are).
func (fs *faultState) restoreRouting() {
	if fs != nil {
		fs.e.rt.ib, fs.e.rt.nh = fs.baseIB, fs.baseNH
	}
}

// report adds the fault counters (the packet backend's names where the meaning is the same).
func (fs *faultState) report(res *result.Run) {
	if fs == nil {
		return
	}
	e := fs.e
	c := res.Counters
	c["fault_link_downs"] = float64(fs.linkDowns)
	c["fault_link_ups"] = float64(fs.linkUps)
	c["fault_reroutes"] = float64(fs.reroutes)
	c["fault_flows_moved"] = float64(fs.moved)
	lost := int64(math.Round(fs.lostBytes / e.ideal.maxWire))
	c["fault_lost_at_down_port_packets"] = float64(lost)
	if lost > 0 {
		res.DropsByCause["link_down"] = lost
		res.Drops += lost
	}
}
