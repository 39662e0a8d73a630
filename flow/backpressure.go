package flow

import (
	"fmt"
	"math"
	"slices"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

// Back-pressure kinds.
const (
	bpNone    = iota // no link-level flow control: queues are bounded by the buffer alone
	bpPFC            // RoCE PFC per ingress port and lossless priority (fabric/pfc.go)
	bpCredits        // InfiniBand credits per link and VL (fabric/ibcredit.go)
)

// backpressure is link-level flow control in the fluid limit. Both PFC and InfiniBand credits
// bound the bytes a switch holds that came in through one link and class (its ingress counter):
// PFC pauses the upstream port while the counter is at XOFF (alpha x the free shared buffer with
// the dynamic threshold), credits stop it while the receive buffer of the VL is full. In the
// fluid limit a paused-and-resumed link sends, over a step, what keeps the counter at its bound:
// the bound minus the counter plus what drained from it in the last step (the allowance). That
// throttles every flow of the link and class, including flows whose own next hop is idle: the
// victims of congestion spreading (Guo et al., SIGCOMM'16) and of head-of-line blocking on a VL.
// Where the allowance is below what the link could send, the link counts as paused (PFC) or
// credit-stalled (InfiniBand) for the missing fraction of the step.
type backpressure struct {
	e    *engine
	kind int
	// lossless says, per class, whether flow control applies.
	lossless []bool
	// Per resource and class.
	binding []bool
	// pauseFrames and resumes are PFC's XOFF (refreshes included) and XON frames, counted by
	// countPauses from the paused time (pfcframes.go).
	pauseFrames []int64
	resumes     []int64
	pc          []pauseCounter
	saw         []float64 // per resource: pfcSaw's amplitude, 0 until computed
	stalled     []float64 // seconds paused (PFC) or stalled for credits (InfiniBand)
	// refresh is the time after which a held PAUSE is resent (fabric: half the pause time).
	alpha, xoff float64
	vlBuf       float64
	// minRate is, per node, its slowest port: a packet's serialization on the downstream
	// switch's egress is part of the credit round trip (credits return when it has left).
	minRate []units.Rate
	maxOver float64 // largest ingress counter above its bound (PFC headroom used)
	tau     float64 // the last step's length, seconds
	// anyBinding is whether any throttle bound in the last update (creditstep.go).
	anyBinding bool
	// plain: update walks the active resources in serve's order and countPauses reads PAUSE's
	// refresh interval from the resource every time (Options.plainUpdate); rev is its scratch.
	plain bool
	rev   [][]int32
	// refresh is, per resource, refreshEvery's interval, 0 until computed (refreshAt).
	refresh []float64
}

func newBackpressure(e *engine) *backpressure {
	b := &backpressure{e: e, lossless: make([]bool, e.nc)}
	cfg := &e.cfg
	switch {
	case cfg.Kind == fabric.KindRoCE && cfg.RoCE.PFC:
		b.kind = bpPFC
		for i, c := range e.classes {
			b.lossless[i] = cfg.RoCE.Lossless&(1<<c) != 0
		}
		if cfg.RoCE.PFCThreshold == fabric.PFCDynamic {
			b.alpha = cfg.RoCE.PFCAlpha
		} else {
			b.xoff = float64(cfg.RoCE.XOFF)
		}
	case cfg.Kind == fabric.KindInfiniBand:
		b.kind = bpCredits
		for i := range b.lossless {
			b.lossless[i] = true
		}
		b.vlBuf = float64(int64(cfg.IB.VLBuffer) / fabric.IBBlock * fabric.IBBlock)
		g := e.net.g
		b.minRate = make([]units.Rate, len(g.Nodes))
		for i := range g.Nodes {
			for p := range g.Nodes[i].Ports {
				if r := g.PortLink(topo.NodeID(i), p).Rate; b.minRate[i] == 0 || r < b.minRate[i] {
					b.minRate[i] = r
				}
			}
		}
	}
	return b
}

// grow extends the per-resource state to n resources.
func (b *backpressure) grow(n int) {
	if k := n - len(b.binding); k > 0 {
		b.binding = append(b.binding, make([]bool, k)...)
		b.pauseFrames = append(b.pauseFrames, make([]int64, k)...)
		b.resumes = append(b.resumes, make([]int64, k)...)
		if b.kind == bpPFC {
			b.pc = append(b.pc, make([]pauseCounter, k)...)
		}
		b.stalled = append(b.stalled, make([]float64, k)...)
	}
}

// growState sizes the per resource and class arrays after bundles were created.
func (e *engine) growState() {
	n := len(e.net.res) * e.nc
	if k := n - len(e.rc); k > 0 {
		from := len(e.rc)
		e.rc = append(e.rc, make([]classState, k)...)
		for i := from; i < n; i++ {
			e.rc[i].allow = math.Inf(1)
		}
		for r := len(e.resTo); r < len(e.net.res); r++ {
			e.resTo = append(e.resTo, e.net.res[r].to)
		}
		e.quietN = append(e.quietN, make([]int32, len(e.net.res)-len(e.quietN))...)
		e.queues = append(e.queues, make([]fifo, k)...)
	}
	if e.fc != nil {
		e.fc.grow(n)
	}
}

// bound is the most a switch may hold from resource r on a lossless class before it pushes back:
// PFC's XOFF (alpha x the free shared pool, or the static XOFF) or the VL receive buffer; a
// bundle pools its links' bounds.
func (b *backpressure) bound(r int32) float64 {
	res := &b.e.net.res[r]
	switch b.kind {
	case bpCredits:
		return b.vlBuf * float64(res.links)
	case bpPFC:
		if b.alpha == 0 {
			return b.xoff * float64(res.links)
		}
		if res.to >= 0 {
			s := &b.e.net.bufs[res.to]
			return float64(res.links) * b.alpha * max(0, s.shared-s.used)
		}
		var x float64
		for _, t := range res.toSwitches {
			s := &b.e.net.bufs[t]
			x += b.alpha * max(0, s.shared-s.used)
		}
		return x
	}
	return math.Inf(1)
}

// window is the rate (bytes/s) the credit loop allows one class of resource r when nothing
// downstream is congested: a VL's at most 2048 outstanding 64-byte blocks (IBA vol. 1 §7.9) per
// credit round trip, as fabric/ibcredit.go times it: the packet's serialization on the link,
// its propagation and the receiving switch's latency, its serialization on that switch's egress
// (the credits return when it has left; an HCA returns them on arrival), the flow-control
// frame's serialization, and its propagation and the sending switch's latency on the way back.
// A link whose rate times that round trip exceeds the window is credit-limited (an 800 Gb/s
// link with 500 ns cables and 140 ns switches runs at about 93 %).
func (b *backpressure) window(r, c int32) float64 {
	n := b.e.net
	res := &n.res[r]
	if res.credWin > 0 {
		return res.credWin
	}
	if b.kind != bpCredits || res.pair {
		res.credWin = math.Inf(1)
		return res.credWin
	}
	w := min(b.vlBuf, fabric.IBMaxCreditWindow*fabric.IBBlock)
	ser := func(rate units.Rate, bytes float64) units.Time {
		return units.Time(bytes / (float64(rate) / 8) * float64(units.Second))
	}
	rtt := ser(res.linkRate, b.e.ideal.maxWire) + res.delay
	if !res.toHost {
		to := res.to
		if to < 0 {
			to = res.toSwitches[0]
		}
		rtt += ser(b.minRate[to], b.e.ideal.maxWire)
	}
	rtt += ser(res.linkRate, fabric.IBFCPacketBytes) + n.res[n.reverse(res.first)].delay
	res.credWin = math.Inf(1)
	if rtt > 0 {
		res.credWin = w * float64(res.links) / rtt.Seconds()
	}
	return res.credWin
}

// capacity is what resource r can carry: its rate, or less where the credit loop limits it.
func (e *engine) capacity(r int32) float64 {
	res := &e.net.res[r]
	if res.credWin == 0 {
		e.fc.window(r, 0) // computes res.credWin
	}
	return min(res.rate, res.credWin)
}

// refreshEvery is how often a held PAUSE is resent: half the pause time of PauseQuanta at the
// link's rate, or PauseRefresh (fabric/pfc.go).
func (b *backpressure) refreshEvery(r int32) float64 {
	c := &b.e.cfg.RoCE
	if c.PauseRefresh > 0 {
		return c.PauseRefresh.Seconds()
	}
	res := &b.e.net.res[r]
	return res.linkRate.TransmitTime(units.Size(int64(c.PauseQuanta)*64)).Seconds() / 2
}

// refreshAt is refreshEvery(r), computed once per resource (a link's rate and PauseQuanta do not
// change): countPauses reads it every step a pause is open, and refreshEvery reads the
// resource's second cache line, which nothing else in a step reads.
func (b *backpressure) refreshAt(r int32) float64 {
	if b.plain {
		return b.refreshEvery(r)
	}
	if int(r) < len(b.refresh) && b.refresh[r] > 0 {
		return b.refresh[r]
	}
	x := b.refreshEvery(r)
	if n := len(b.e.net.res); len(b.refresh) < n {
		b.refresh = append(b.refresh, make([]float64, n-len(b.refresh))...)
	}
	b.refresh[r] = x
	return x
}

// update sets every resource's allowance for the next step from its ingress counter, and counts
// pauses (countPauses: the frames of the step just taken), stalls and headroom use. It reports
// whether any throttle started or stopped.
//
// It walks the active resources in the reverse of the order serve just did (the last rank's
// last resource first): the resources serve touched last are still in the cache, where walking
// in serve's order met first those the rest of the step had evicted (docs/flow.md, "Fewer lines
// a congested step reads"). Each resource and class's update reads and writes only its own
// state; what it adds up over them is a maximum (maxOver) and two flags, so the order does not
// change a result (Options.plainUpdate walks serve's order; TestUpdateMatchesPlain). PAUSE's
// refresh interval is kept per resource (refreshAt).
func (b *backpressure) update(tau float64) bool {
	e := b.e
	nc := e.nc
	b.tau = tau
	changed := false
	b.anyBinding = false
	acts := e.act
	if b.plain {
		acts = b.reversed(acts) // walked backwards below: serve's order
	}
	for k := len(acts) - 1; k >= 0; k-- {
		act := acts[k]
		for j := len(act) - 1; j >= 0; j-- {
			r := act[j]
			res := &e.net.res[r]
			for c := 0; c < nc; c++ {
				idx := int(r)*nc + c
				drained := e.rc[idx].drain
				e.rc[idx].lastDrain, e.rc[idx].drain = drained, 0
				if b.kind == bpNone || res.toHost || res.pair || !b.lossless[c] {
					continue
				}
				bound := b.bound(r)
				ing := e.rc[idx].ing
				if b.kind == bpPFC && (b.stalled[idx] != b.pc[idx].counted || b.pc[idx].open()) {
					b.countPauses(idx, r, drained/tau, ing, bound)
				}
				b.maxOver = max(b.maxOver, ing-bound)
				a := max(0, bound-ing+drained)
				e.rc[idx].allow = a
				full := res.rate * tau
				bind := a < full*(1-1e-9)
				if bind {
					b.stalled[idx] += tau * (1 - a/full)
					b.anyBinding = true
				}
				if bind != b.binding[idx] {
					changed = true
					b.binding[idx] = bind
				}
			}
		}
	}
	return changed
}

// reversed is the active lists reversed, ranks and resources (Options.plainUpdate), in scratch.
func (b *backpressure) reversed(acts [][]int32) [][]int32 {
	b.rev = b.rev[:0]
	for k := len(acts) - 1; k >= 0; k-- {
		b.rev = append(b.rev, slices.Clone(acts[k]))
		slices.Reverse(b.rev[len(b.rev)-1])
	}
	return b.rev
}

// jump accounts a stationary stretch of T seconds: binding throttles stay paused (or stalled) for
// the same fraction as in the last step (the next update counts PFC's frames for it).
func (b *backpressure) jump(T float64) {
	if b.kind == bpNone {
		return
	}
	e := b.e
	nc := e.nc
	for rank := range e.act {
		for _, r := range e.act[rank] {
			res := &e.net.res[r]
			for c := 0; c < nc; c++ {
				idx := int(r)*nc + c
				if !b.binding[idx] {
					continue
				}
				b.stalled[idx] += T * max(0, 1-e.rc[idx].allow/(res.rate*b.tau))
			}
		}
	}
}

// explainStall names the throttled links when nothing moves.
func (b *backpressure) explainStall() string {
	e := b.e
	n := 0
	first := ""
	for r := range e.net.res {
		for c := 0; c < e.nc; c++ {
			if idx := r*e.nc + c; idx < len(b.binding) && b.binding[idx] && e.rc[idx].allow == 0 {
				if n == 0 {
					first = e.net.name(int32(r))
				}
				n++
			}
		}
	}
	if n == 0 {
		return ""
	}
	what := "paused by PFC"
	if b.kind == bpCredits {
		what = "without credits"
	}
	return fmt.Sprintf("; %d links %s, e.g. %s (a cyclic buffer dependency?)", n, what, first)
}

// throttled reports whether any class of resource r is held back by the next hop.
func (b *backpressure) throttled(r int32) bool {
	nc := b.e.nc
	for c := 0; c < nc; c++ {
		if b.binding[int(r)*nc+c] {
			return true
		}
	}
	return false
}
