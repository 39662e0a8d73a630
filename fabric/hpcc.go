package fabric

import (
	"github.com/fabricsim/fabricsim/result"
	"github.com/fabricsim/fabricsim/transport/cc/hpcc"
	"github.com/fabricsim/fabricsim/units"
)

// In-band network telemetry (`int: true`) and HPCC (`hpcc: true`, [HPCC]). Every data packet
// carries an INT stack (hpcc.StackBytes on the wire, as in HPCC's ns-3); each switch egress
// pushes a hop record as the packet leaves its queue (the time, the port's transmitted bytes,
// the bytes still queued at the port, the link rate: [HPCC-ns3] SwitchNotifyDequeue's
// PushHop); the receiver copies the stack onto the ACK, and the sender's HPCC state machine
// (transport/cc/hpcc) sets the flow's rate from it.
//
// The stacks live in intPool, outside the 64-byte Packet: a data packet or ACK holds its
// stack's reference in Sack (which only NAKs and link-control frames use otherwise). The pool
// frees a stack when its packet goes back to the packet pool.

// intStack is one packet's INT header.
type intStack struct {
	n    uint8
	hops [hpcc.MaxHops]hpcc.Hop
}

// intPool holds the INT stacks of the packets in flight; a reference is index + 1.
type intPool struct {
	stacks []intStack
	free   []int64
}

func (p *intPool) get() int64 {
	if n := len(p.free); n > 0 {
		ref := p.free[n-1]
		p.free = p.free[:n-1]
		p.stacks[ref-1].n = 0
		return ref
	}
	p.stacks = append(p.stacks, intStack{})
	return int64(len(p.stacks))
}

func (p *intPool) put(ref int64) { p.free = append(p.free, ref) }

// carriesINT reports whether pkt's Sack is an INT reference (on an INT fabric: data and ACKs).
func carriesINT(pkt *Packet) bool { return (pkt.Kind == Data || pkt.Kind == Ack) && pkt.Sack != 0 }

// pushINT appends switch egress p's hop record to data packet pkt as it leaves p's queue
// (a stack already full keeps its first MaxHops hops, as ns-3's does not: it wraps; paths here
// have at most five switch hops in every topology fabricsim builds but the largest Clos).
func (n *Network) pushINT(p *Port, pkt *Packet) {
	if pkt.Sack == 0 {
		return
	}
	st := &n.ints.stacks[pkt.Sack-1]
	if int(st.n) >= hpcc.MaxHops {
		return
	}
	var q int64
	for prio := 0; prio < int(p.nprio); prio++ {
		q += p.q[prio].bytes
	}
	st.hops[st.n] = hpcc.Hop{TS: n.sim.Now(), TxBytes: p.TxBytes, QLen: q, Rate: p.Rate}
	st.n++
}

// hpccCC runs an HPCC sender per QP. ACKs reach it through Acked (ackObserver).
type hpccCC struct {
	*roce
	p       hpcc.Params
	t       units.Time
	snd     []hpcc.Sender
	updates int64
}

// ackObserver is a congestion control that reads every ACK (HPCC's INT echo) and bounds each
// flow's bytes in flight: window(f) is the most f may have sent and not had acknowledged.
type ackObserver interface {
	Acked(f *Flow, pkt *Packet)
	window(f *Flow) int64
}

// window is HPCC's variable window, rate x T ([HPCC] §3.2; ns-3 VAR_WIN: the BDP scaled by
// rate / line rate), at least one byte so that a flow always has one packet in flight.
func (h *hpccCC) window(f *Flow) int64 { return max(h.snd[f.id].Window(), 1) }

func newHPCC(r *roce) *hpccCC {
	h := &hpccCC{roce: r, p: r.cfg.HPCCParams, t: r.cfg.HPCCParams.BaseRTT}
	if h.t == 0 {
		h.t = r.n.baseRTT()
	}
	return h
}

func (h *hpccCC) Start(f *Flow) {
	if nf := len(h.n.flows); len(h.snd) < nf {
		h.snd = append(h.snd, make([]hpcc.Sender, nf-len(h.snd))...)
	}
	h.snd[f.id].Init(&h.p, h.n.NICs[f.src].Port.Rate, h.t)
	f.Rate = 0
}

func (h *hpccCC) Sent(f *Flow, pkt *Packet)              {}
func (h *hpccCC) Received(rx *NIC, f *Flow, pkt *Packet) {}
func (h *hpccCC) Notified(f *Flow, pkt *Packet)          {}

// Acked feeds the ACK's INT stack to f's sender and applies a new rate: the gap already
// scheduled for the next packet is stretched or shrunk by the difference a full packet's
// serialization makes at the two rates ([HPCC-ns3] RdmaHw::ChangeRate).
func (h *hpccCC) Acked(f *Flow, pkt *Packet) {
	if pkt.Sack == 0 || f.snd.Done() {
		return
	}
	st := &h.n.ints.stacks[pkt.Sack-1]
	s := &h.snd[f.id]
	nic := h.n.NICs[f.src]
	old := h.n.FlowRate(f.id)
	if !s.OnAck(pkt.Seq, f.snd.NextNew(), st.hops[:st.n]) {
		return
	}
	h.updates++
	rate := s.PaceRate()
	if rate >= nic.Port.Rate {
		f.Rate = 0
		rate = nic.Port.Rate
	} else {
		f.Rate = rate
	}
	if now := h.n.sim.Now(); f.nextSend > now {
		w := units.Size(int64(h.n.cfg.MTU) + int64(h.n.cfg.HeaderBytes+h.n.cfg.L1Overhead) + hpcc.StackBytes)
		f.nextSend += rate.TransmitTime(w) - old.TransmitTime(w)
		if f.nextSend < now {
			f.nextSend = now
		}
		if rate > old {
			nic.Port.kick()
		}
	}
}

func (h *hpccCC) Report(res *result.Run) {
	res.Counters["hpcc_rate_updates"] = float64(h.updates)
}

// baseRTT is the network's longest base round trip from host 0 (a full packet there, one
// back): HPCC's T when hpcc_base_rtt is 0 (ns-3 GLOBAL_T takes the largest pair RTT).
func (n *Network) baseRTT() units.Time {
	far, hops := int32(-1), -1
	for d := 1; d < len(n.g.Hosts); d++ {
		if h := n.routes.Hops(n.g.Hosts[0], d); h > hops {
			far, hops = int32(d), h
		}
	}
	if far < 0 {
		return units.Microsecond
	}
	return 2 * newIdealCache(n).fct(0, far, int64(n.cfg.MTU))
}
