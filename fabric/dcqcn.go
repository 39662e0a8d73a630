package fabric

import (
	"github.com/fabricsim/fabricsim/result"
	"github.com/fabricsim/fabricsim/sim"
	"github.com/fabricsim/fabricsim/transport/cc/dcqcn"
	"github.com/fabricsim/fabricsim/units"
)

// dcqcnCC runs DCQCN's state machines (transport/cc/dcqcn) for every QP: the RP at the sender
// paces Flow.Rate, the NP at the receiver returns CNPs for CE-marked packets. It owns the
// increase timers' events; the alpha timer is evaluated lazily by the RP.
type dcqcnCC struct {
	*roce
	p         dcqcn.Params
	rp        []dcqcn.RP
	np        []dcqcn.NP
	cnpsSent  int64
	cnpsRcvd  int64
	decreases int64
}

func newDCQCN(r *roce) *dcqcnCC { return &dcqcnCC{roce: r, p: r.cfg.DCQCNParams} }

func (d *dcqcnCC) grow() {
	if nf := len(d.n.flows); len(d.rp) < nf {
		d.rp = append(d.rp, make([]dcqcn.RP, nf-len(d.rp))...)
		d.np = append(d.np, make([]dcqcn.NP, nf-len(d.np))...)
	}
}

func (d *dcqcnCC) Start(f *Flow) {
	d.grow()
	d.rp[f.id].Init(&d.p, d.n.NICs[f.src].Port.Rate, d.n.sim.Now())
	f.Rate = 0
}

func (d *dcqcnCC) Sent(f *Flow, pkt *Packet) {
	pkt.ECN = ECNECT0 // DCQCN senders mark their packets ECN-capable
	rp := &d.rp[f.id]
	if rp.AtLine() {
		return
	}
	if a := rp.OnSent(int64(pkt.Size), d.n.sim.Now()); a.Stage != dcqcn.None {
		d.apply(f, a, false) // the NIC is building a packet: it asks again when the port frees
	}
}

func (d *dcqcnCC) Received(rx *NIC, f *Flow, pkt *Packet) {
	if pkt.ECN != ECNCE {
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
	rp := &d.rp[f.id]
	before := rp.Decreases
	d.apply(f, rp.OnCNP(d.n.sim.Now()), true)
	d.decreases += rp.Decreases - before
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
	if rate > old && f.nextSend > now {
		f.nextSend = now + units.Time(float64(f.nextSend-now)*float64(old)/float64(rate))
		if kick {
			nic.Port.kick()
		}
	}
	if a.ArmTimer > 0 {
		d.n.sim.Schedule(a.ArmTimer, d, 0, f.id, nil)
	}
}

// Handle fires an RP's increase timer.
func (d *dcqcnCC) Handle(ev *sim.Event) {
	f := d.n.flows[ev.I]
	if f.snd.Done() {
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
