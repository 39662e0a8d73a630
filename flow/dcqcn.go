package flow

import (
	"math"

	"github.com/fabricsim/fabricsim/sim"
	"github.com/fabricsim/fabricsim/transport/cc/dcqcn"
	"github.com/fabricsim/fabricsim/units"
)

// dcqcnModel runs DCQCN's own state machines (package transport/cc/dcqcn, the ones the packet
// backend runs) for every flow, fed by the fluid network instead of packets:
//   - the reaction point's byte counter counts the frame bytes the flow injected in each step,
//     its increase timer fires at its exact time, and the flow's rate is the RP's current rate;
//   - a step's packets at a queue above Kmin are ECN-marked with RED's probability, so a flow
//     that sent k packets through a queue marking with p carries a mark with probability
//     1 - (1-p)^k, drawn from the flow's own random stream;
//   - the notification point turns a mark, when it reaches the receiver, into a CNP at most once
//     per CNP interval, and the CNP cuts the sender's rate when it arrives a path latency later.
//
// This is the DCQCN fluid model of Zhu et al. (SIGCOMM'15 §5) with its expectations replaced by
// the state machines themselves, so the rate cuts, recovery, hyper increase, the alpha EWMA and
// the feedback delay behave as they do packet by packet, and flows of different round-trip
// times get their different shares.
type dcqcnModel struct {
	e         *engine
	p         dcqcn.Params
	st        []ccFlow
	frame     float64 // frame bytes (what the NIC's byte counter counts) per wire byte
	cnpWire   float64
	cnpsSent  int64
	cnpsRcvd  int64
	decreases int64
}

// ccFlow is one flow's DCQCN state.
type ccFlow struct {
	rp   dcqcn.RP
	np   dcqcn.NP
	cnps []units.Time // CNPs on their way to the sender, by arrival
	on   bool
}

func newDCQCN(e *engine) *dcqcnModel {
	c := &e.cfg
	full := float64(int(c.MTU) + c.HeaderBytes)
	return &dcqcnModel{e: e, p: c.RoCE.DCQCNParams, frame: full / (full + float64(c.L1Overhead)),
		cnpWire: float64(max(c.CNPBytes, c.MinFrame) + c.L1Overhead)}
}

func (d *dcqcnModel) start(fid int32, t units.Time) {
	for int(fid) >= len(d.st) {
		d.st = append(d.st, ccFlow{})
	}
	s := &d.st[fid]
	cnps := s.cnps[:0]
	*s = ccFlow{on: true, cnps: cnps}
	f := &d.e.flows[fid]
	line := units.Rate(d.e.hostSt[f.src].rate * 8)
	s.rp.Init(&d.p, line, t)
}

func (d *dcqcnModel) end(fid int32) { d.st[fid].on = false }

// rate is the flow's DCQCN rate in wire bytes per second.
func (d *dcqcnModel) rate(fid int32) float64 { return d.st[fid].rp.RC / 8 }

// afterStep feeds the step that ended at tEnd to every flow's RP and NP. It reports whether any
// flow is away from line rate or has CNPs under way (the network is then not stationary).
func (d *dcqcnModel) afterStep(tEnd units.Time, tau float64) bool {
	e := d.e
	busy := false
	for fid := range d.st {
		s := &d.st[fid]
		if !s.on {
			continue
		}
		f := &e.flows[fid]
		rp := &s.rp
		// CNPs that arrived during the step.
		k := 0
		for ; k < len(s.cnps) && s.cnps[k] <= tEnd; k++ {
			d.cnpsRcvd++
			before := rp.Decreases
			rp.OnCNP(s.cnps[k])
			d.decreases += rp.Decreases - before
		}
		s.cnps = append(s.cnps[:0], s.cnps[k:]...)
		for rp.TimerAt != 0 && rp.TimerAt <= tEnd {
			rp.OnTimer(rp.TimerAt)
		}
		if f.inj > 0 {
			for a := rp.OnSent(int64(f.inj*d.frame+0.5), tEnd); a.Stage != dcqcn.None; a = rp.OnSent(0, tEnd) {
			}
		}
		if f.noMark < 0 && d.marked(f) {
			// The marked packet reaches the receiver after the queues ahead of it and the path's
			// latency; the CNP returns over the path's latency on a strict-priority class.
			at := tEnd + e.queueDelay(int32(fid)) + f.lat
			if s.np.OnPacket(true, at, &d.p) {
				d.cnpsSent++
				s.cnps = append(s.cnps, at+f.lat)
				// The CNP goes back along the ACKs' path (same hash).
				for _, r := range e.path[f.ackOff : f.ackOff+f.ackHops] {
					e.net.res[r].txBytes += d.cnpWire
				}
			}
		}
		if !rp.AtLine() || len(s.cnps) > 0 {
			busy = true
		}
	}
	return busy
}

// marked draws whether any of the step's packets of f was marked.
func (d *dcqcnModel) marked(f *flowState) bool {
	f.rng += 0x9e3779b97f4a7c15
	u := float64(sim.Mix64(f.rng)>>11) / (1 << 53)
	return u >= math.Exp(f.noMark)
}

// queueDelay is the time flow fid's bytes wait in the queues of its path now.
func (e *engine) queueDelay(fid int32) units.Time {
	f := &e.flows[fid]
	var s float64
	for _, r := range e.path[f.off+1 : f.off+f.hops] {
		res := &e.net.res[r]
		s += res.q / res.rate
	}
	return units.Time(s * float64(units.Second))
}
