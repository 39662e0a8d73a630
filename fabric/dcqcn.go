package fabric

import (
	"github.com/fabricsim/fabricsim/result"
	"github.com/fabricsim/fabricsim/sim"
	"github.com/fabricsim/fabricsim/transport/cc/dcqcn"
	"github.com/fabricsim/fabricsim/units"
)

// dcqcnCC runs DCQCN's state machines (transport/cc/dcqcn) for every QP: the RP at the sender
// paces Flow.Rate, the NP at the receiver returns CNPs for CE-marked packets (or, with `cnp:
// ack-flag`, the NIC flags the ACK instead). It owns the RP timers' events; the paper model's
// alpha timer is evaluated lazily by the RP. The paper model's RPs are kept by value (rp); the
// other models' behind the dcqcn.Reactor interface (rx), with armed[id] the time of the latest
// timer event scheduled for the flow, so that a superseded event does not schedule another.
type dcqcnCC struct {
	*roce
	p         dcqcn.Params
	model     dcqcn.Model
	paper     bool // model is dcqcn.ModelPaper (tested per packet)
	ackFlag   bool
	rp        []dcqcn.RP
	rx        []dcqcn.Reactor
	armed     []units.Time
	np        []dcqcn.NP
	cnpsSent  int64
	cnpsRcvd  int64
	decreases int64
}

func newDCQCN(r *roce) *dcqcnCC {
	m := r.cfg.DCQCNModel
	if m == "" {
		m = dcqcn.ModelPaper
	}
	return &dcqcnCC{roce: r, p: r.cfg.DCQCNParams, model: m, paper: m == dcqcn.ModelPaper, ackFlag: r.cfg.CNP == CNPAckFlag}
}

func (d *dcqcnCC) grow() {
	if nf := len(d.n.flows); len(d.np) < nf {
		if d.paper {
			d.rp = append(d.rp, make([]dcqcn.RP, nf-len(d.rp))...)
		} else {
			d.rx = append(d.rx, make([]dcqcn.Reactor, nf-len(d.rx))...)
			d.armed = append(d.armed, make([]units.Time, nf-len(d.armed))...)
		}
		d.np = append(d.np, make([]dcqcn.NP, nf-len(d.np))...)
	}
}

// reactor returns flow id's RP (a pointer into rp for the paper model: no allocation).
func (d *dcqcnCC) reactor(id int32) dcqcn.Reactor {
	if d.paper {
		return &d.rp[id]
	}
	return d.rx[id]
}

func (d *dcqcnCC) Start(f *Flow) {
	d.grow()
	line, now := d.n.NICs[f.src].Port.Rate, d.n.sim.Now()
	if d.paper {
		d.rp[f.id].Init(&d.p, line, now)
	} else {
		d.rx[f.id] = dcqcn.NewReactor(d.model, &d.p, line, now)
		d.armed[f.id] = 0
	}
	f.Rate = 0
}

func (d *dcqcnCC) Sent(f *Flow, pkt *Packet) {
	pkt.ECN = ECNECT0 // DCQCN senders mark their packets ECN-capable
	if !d.paper {
		if rp := d.rx[f.id]; !rp.AtLine() {
			if a := rp.OnSent(int64(pkt.Size), d.n.sim.Now()); a.Stage != dcqcn.None {
				d.apply(f, a, false)
			}
		}
		return
	}
	rp := &d.rp[f.id]
	if rp.AtLine() {
		return
	}
	if a := rp.OnSent(int64(pkt.Size), d.n.sim.Now()); a.Stage != dcqcn.None {
		d.apply(f, a, false) // the NIC is building a packet: it asks again when the port frees
	}
}

func (d *dcqcnCC) Received(rx *NIC, f *Flow, pkt *Packet) {
	if pkt.ECN != ECNCE || d.ackFlag { // with ack-flag the NIC flags the ACK (NIC.receiveData)
		return
	}
	d.grow()
	if d.np[f.id].OnPacket(true, d.n.sim.Now(), &d.p) {
		d.cnpsSent++
		rx.SendCNP(f)
	}
}

func (d *dcqcnCC) Notified(f *Flow, pkt *Packet) {
	d.cnpsRcvd++
	rp := d.reactor(f.id)
	before := rp.Cuts()
	d.apply(f, rp.OnCNP(d.n.sim.Now()), true)
	d.decreases += rp.Cuts() - before
}

// apply sets the flow's pacing rate and arms the increase timer. When the rate rises, the wait
// already scheduled at the old rate shrinks in proportion, so that a flow recovering from a very
// low rate is not held back by one packet's long gap.
func (d *dcqcnCC) apply(f *Flow, a dcqcn.Action, kick bool) {
	nic := d.n.NICs[f.src]
	line := nic.Port.Rate
	old := f.Rate
	if old == 0 {
		old = line
	}
	rate := a.Rate
	if rate >= line {
		f.Rate = 0
	} else {
		f.Rate = rate
	}
	now := d.n.sim.Now()
	// ns-3's DCQCN sets the rate without moving the packet already scheduled (rdma-hw.cc).
	if rate > old && f.nextSend > now && d.model != dcqcn.ModelNS3 {
		f.nextSend = now + units.Time(float64(f.nextSend-now)*float64(old)/float64(rate))
		if kick {
			nic.Port.kick()
		}
	}
	if a.ArmTimer > 0 {
		if !d.paper {
			if d.armed[f.id] == a.ArmTimer {
				return // already scheduled
			}
			d.armed[f.id] = a.ArmTimer
		}
		d.n.sim.Schedule(a.ArmTimer, d, 0, f.id, nil)
	}
}

// Handle fires an RP's timer.
func (d *dcqcnCC) Handle(ev *sim.Event) {
	f := d.n.flows[ev.I]
	if f.snd.Done() {
		return
	}
	if !d.paper {
		rp := d.rx[ev.I]
		before := rp.Cuts() // these models cut on their timer, not on the CNP
		d.apply(f, rp.OnTimer(d.n.sim.Now()), true)
		d.decreases += rp.Cuts() - before
		return
	}
	a := d.rp[ev.I].OnTimer(d.n.sim.Now())
	if a.Stage != dcqcn.None || a.ArmTimer > 0 {
		d.apply(f, a, true)
	}
}

func (d *dcqcnCC) Report(res *result.Run) {
	res.Counters["cnps_sent"] = float64(d.cnpsSent)
	res.Counters["cnps_received"] = float64(d.cnpsRcvd)
	res.Counters["dcqcn_rate_decreases"] = float64(d.decreases)
}

// FlowRate returns the pacing rate DCQCN holds for flow id now (the line rate when unpaced).
func (n *Network) FlowRate(id int32) units.Rate {
	f := n.flows[id]
	if f.Rate > 0 {
		return f.Rate
	}
	return n.NICs[f.src].Port.Rate
}
