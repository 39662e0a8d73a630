package fabric

import (
	"github.com/fabricsim/fabricsim/result"
	"github.com/fabricsim/fabricsim/sim"
	"github.com/fabricsim/fabricsim/transport/cc/nscc"
	"github.com/fabricsim/fabricsim/units"
	"github.com/fabricsim/fabricsim/yamlstrict"
)

// Ultra Ethernet Transport on a RoCE-kind fabric (`transport: uet`; UET 1.0 [UEC-1.0],
// [UE-design]). Three parts of UET are modelled:
//
//   - packet spraying by entropy: the sender gives every data packet a fresh entropy value (the
//     EV of UET's PDS header, which switches hash in place of the flow's 5-tuple), so ECMP
//     switches spread one flow's packets over every equal-cost path (oblivious spraying);
//   - reliable unordered delivery (PDS RUD): the receiver places packets in any order and
//     acknowledges every one with a SACK; the sender resends only what it declares lost: a
//     packet with uet_ooo_threshold SACKed packets above it, or on a timeout (transport/rc's RUD);
//   - NSCC, the sender's window from ECN echoes and round-trip delay (transport/cc/nscc),
//     unless `uet_cc: none`.
//
// The sender keeps each packet's send time in a ring (indexed by packet number) instead of
// stamping packets: the ACK names the packet it acknowledges (its Sack word carries the
// offset), and the sender looks the time up, as UEC's htsim does (UecSrc::_tx_bitmap). A packet
// sent twice gives no RTT sample (which copy an ACK answers is unknown).

// uetCC runs UET's senders: entropy per packet and NSCC's window.
type uetCC struct {
	*roce
	nscc    bool
	recycle bool // uet_load_balance: reps
	gains   nscc.Gains
	snd     []nscc.Sender
	sent    [][]units.Time // per flow, send time + 1 by packet number mod len; -1 after a resend
	evs     [][]uint32     // per flow with REPS, the entropy value each packet was last sent with
	reps    []repsCache    // per flow with REPS, the entropy values to recycle
	got     []int64        // the received bytes each flow's sender last saw
	una     []int64        // the cumulative acknowledgement below which its ring is clear
	ev      uint64         // entropy counter
	retx    int64
}

func newUET(r *roce) *uetCC {
	u := &uetCC{roce: r, nscc: r.cfg.UETCC != UETNoCC, recycle: r.cfg.UETLoadBalance == UETREPS}
	rate := r.n.NICs[0].Port.Rate
	u.gains = nscc.NewGains(rate, r.n.baseRTT(), r.cfg.NSCCParams.TargetDelay, int64(r.n.cfg.MTU))
	return u
}

// uetTransport sets RUD's in-flight cap (NSCC's maxwnd, 1.5 BDP: [UEC-htsim] initNscc) and its
// reordering tolerance: uet_ooo_threshold, or the cap in packets but at least 5 (the loss
// threshold of [UEC-htsim] UecSrc::runSleek, min(1.5 cwnd, maxwnd) but >= min_retx_config 5).
func (n *Network) uetTransport() {
	if n.rc.Cap == 0 {
		n.rc.Cap = n.irnCap() * 3 / 2
	}
	n.rc.OOOThreshold = int64(n.cfg.RoCE.UETOOOThreshold)
	if n.rc.OOOThreshold == 0 {
		n.rc.OOOThreshold = max((n.rc.Cap+n.rc.MTU-1)/n.rc.MTU, 5)
	}
}

// Start gives f an NSCC sender at its NIC's rate over the network's base RTT and a send-time
// ring as wide as the transport's SACK window (or the flow's packets, if fewer).
func (u *uetCC) Start(f *Flow) {
	if nf := len(u.n.flows); len(u.snd) < nf {
		u.snd = append(u.snd, make([]nscc.Sender, nf-len(u.snd))...)
		u.sent = append(u.sent, make([][]units.Time, nf-len(u.sent))...)
		u.got = append(u.got, make([]int64, nf-len(u.got))...)
		u.una = append(u.una, make([]int64, nf-len(u.una))...)
		if u.recycle {
			u.evs = append(u.evs, make([][]uint32, nf-len(u.evs))...)
			u.reps = append(u.reps, make([]repsCache, nf-len(u.reps))...)
		}
	}
	mtu := u.n.rc.MTU
	pkts := (f.snd.Size() + mtu - 1) / mtu
	w := int64(1)
	for w < min(pkts, u.n.rc.Window()) {
		w *= 2
	}
	u.sent[f.id] = make([]units.Time, w)
	if u.recycle {
		u.evs[f.id] = make([]uint32, w)
		u.reps[f.id] = repsCache{}
	}
	u.got[f.id], u.una[f.id] = 0, 0
	u.snd[f.id].Init(&u.gains, u.n.NICs[f.src].Port.Rate, u.n.baseRTT())
	f.Rate = 0
}

// Sent gives the packet a fresh entropy value and ECN capability, and records its send time
// (a resend voids the sample and takes its bytes off the window).
func (u *uetCC) Sent(f *Flow, pkt *Packet) {
	ring := u.sent[f.id]
	i := pkt.Seq / u.n.rc.MTU & int64(len(ring)-1)
	if ev, ok := u.recycled(f); ok {
		pkt.Hash = ev
	} else {
		u.ev++
		pkt.Hash = uint32(sim.Mix64(uint64(f.hash)<<32 ^ u.ev))
	}
	if u.recycle {
		u.evs[f.id][i] = pkt.Hash
	}
	pkt.ECN = ECNECT0
	if ring[i] != 0 {
		ring[i] = -1
		u.retx++
		if u.nscc {
			u.snd[f.id].OnRetransmit(int64(pkt.Payload))
		}
		return
	}
	ring[i] = u.n.sim.Now() + 1
}

func (u *uetCC) Received(rx *NIC, f *Flow, pkt *Packet) {}
func (u *uetCC) Notified(f *Flow, pkt *Packet)          {}

// window is NSCC's window, or (uet_cc: none) no bound beyond the transport's cap.
func (u *uetCC) window(f *Flow) int64 {
	if !u.nscc {
		return 1 << 62
	}
	return u.snd[f.id].Window()
}

// Acked feeds an ACK to f's sender: the bytes it newly reports received, the CE echo, and the
// round trip of the packet it names.
func (u *uetCC) Acked(f *Flow, pkt *Packet) {
	id := f.id
	ring := u.sent[id]
	if ring == nil {
		return
	}
	p := &u.n.rc
	mtu := p.MTU
	if f.snd.Done() {
		u.sent[id] = nil
		if u.recycle {
			u.evs[id] = nil
		}
		return
	}
	now := u.n.sim.Now()
	mask := int64(len(ring) - 1)
	var rtt units.Time
	slot := pkt.Sack / mtu & mask
	if t := ring[slot]; t > 0 {
		rtt = now - (t - 1)
	}
	if u.recycle && ring[slot] != 0 && pkt.ECN != ECNCE {
		u.reps[id].add(u.evs[id][slot]) // the path it took was not congested: use it again
	}
	// Clear the ring below the cumulative acknowledgement: those slots come round again.
	una := f.snd.Unacked()
	for i := u.una[id] / mtu; i < una/mtu && i < u.una[id]/mtu+int64(len(ring)); i++ {
		ring[i&mask] = 0
	}
	u.una[id] = max(u.una[id], una)
	got := f.snd.Received(p)
	newly := max(got-u.got[id], 0)
	u.got[id] = max(u.got[id], got)
	if u.nscc {
		u.snd[id].OnAck(nscc.Ack{CE: pkt.ECN == ECNCE, RTT: rtt, Newly: newly, InFlight: f.snd.InFlight(p)}, now)
	}
}

func (u *uetCC) Report(res *result.Run) {
	var dec, qa int64
	for i := range u.snd {
		dec += u.snd[i].Decreases
		qa += u.snd[i].QuickAdapts
	}
	res.Counters["uet_retransmitted_packets"] = float64(u.retx)
	if u.nscc {
		res.Counters["nscc_window_decreases"] = float64(dec)
		res.Counters["nscc_quick_adapts"] = float64(qa)
	}
}

// recycled takes the oldest cached entropy value of f (REPS), if any.
func (u *uetCC) recycled(f *Flow) (uint32, bool) {
	if !u.recycle {
		return 0, false
	}
	return u.reps[f.id].take()
}

// repsSize is REPS's cache of entropy values per connection ([UEC-htsim] buffer_reps.cpp
// repsBufferSize 8).
const repsSize = 8

// repsCache holds the entropy values of the latest packets acknowledged without CE, oldest
// first; a full cache drops its oldest.
type repsCache struct {
	ev      [repsSize]uint32
	head, n uint8
}

func (c *repsCache) add(ev uint32) {
	c.ev[(int(c.head)+int(c.n))%repsSize] = ev
	if c.n < repsSize {
		c.n++
	} else {
		c.head = (c.head + 1) % repsSize
	}
}

func (c *repsCache) take() (uint32, bool) {
	if c.n == 0 {
		return 0, false
	}
	ev := c.ev[c.head]
	c.head = (c.head + 1) % repsSize
	c.n--
	return ev, true
}

// validateUET checks transport: uet against the other RoCE settings, naming the key.
func (c *Config) validateUET() error {
	r := &c.RoCE
	e := yamlstrict.Errorf
	switch {
	case r.UETCC != "" && !validMode(r.UETCC, UETCCs):
		return e("uet_cc", "%q is not a UET congestion control (valid: %s)", r.UETCC, modeList(UETCCs))
	case r.UETLoadBalance != "" && !validMode(r.UETLoadBalance, UETLoadBalances):
		return e("uet_load_balance", "%q is not a UET load balancing (valid: %s)", r.UETLoadBalance, modeList(UETLoadBalances))
	case r.UETOOOThreshold < 0:
		return e("uet_ooo_threshold", "%d is negative (0 = 1.5 BDP in packets, at least 5)", r.UETOOOThreshold)
	case c.Transport != TransportUET:
		return nil
	case r.DCQCN:
		return e("transport", "uet runs its own congestion control (uet_cc: nscc or none): set dcqcn: false")
	case r.HPCC || r.DCTCP || r.Swift:
		return e("transport", "uet runs its own congestion control (uet_cc: nscc or none): set hpcc, dctcp and swift false")
	case r.INT:
		return e("transport", "uet's ACKs carry the SACK where INT would go: set int: false")
	}
	return r.NSCCParams.Validate()
}
