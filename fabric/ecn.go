package fabric

import (
	"fmt"
	"math/rand/v2"

	"github.com/fabricsim/fabricsim/result"
	"github.com/fabricsim/fabricsim/sim"
	"github.com/fabricsim/fabricsim/units"
)

// ecnRED marks ECN-capable data packets CE as they join an egress queue (or, with ecn_mark:
// dequeue, as they leave it), with RED's probability
// on the queue's bytes: 0 up to Kmin, rising linearly to Pmax at Kmax, 1 above Kmax ([DCQCN]'s
// congestion point). Thresholds are per port so that rate-scaled defaults work on
// mixed-rate fabrics.
type ecnRED struct {
	*roce
	port []ecnPort // per global port
	// rngs holds each switch's random stream for RED, made at its first draw: one stream per
	// node, so that a node's draws do not depend on how other nodes' events interleave (the
	// parallel engine runs nodes in partitions: parallel.go).
	rngs  []*rand.Rand
	total int64
}

// ecnPort is one port's RED thresholds and mark count: what a packet joining (or leaving) its
// queue reads, in half a cache line.
type ecnPort struct {
	kmin, kmax int64
	pmax       float64
	marks      int64
}

func newECN(r *roce) *ecnRED {
	c := r.cfg
	e := &ecnRED{roce: r, port: make([]ecnPort, len(r.n.ports)), rngs: make([]*rand.Rand, len(r.n.g.Nodes))}
	for g := range r.n.ports {
		st := &e.port[g]
		st.kmin, st.kmax, st.pmax = c.ECNThresholds(r.n.ports[g].Rate)
	}
	return e
}

// ECNThresholds are the RED thresholds of a port of the given rate: Kmin, Kmax and Pmax as
// written, or from ECNMap (the nearest rate's entry scaled by the port's rate), or when neither
// is given ECNDefaults for the rate.
func (c *RoCEConfig) ECNThresholds(rate units.Rate) (kmin, kmax int64, pmax float64) {
	switch {
	case c.Kmin > 0 || c.Kmax > 0:
		return int64(c.Kmin), int64(c.Kmax), c.Pmax
	case len(c.ECNMap) > 0:
		best := c.ECNMap[0]
		for _, t := range c.ECNMap {
			if absRate(t.Rate-rate) < absRate(best.Rate-rate) {
				best = t
			}
		}
		scale := float64(rate) / float64(best.Rate)
		return int64(float64(best.Kmin) * scale), int64(float64(best.Kmax) * scale), best.Pmax
	}
	kmin, kmax = ECNDefaults(rate)
	return kmin, kmax, c.Pmax
}

// ECNDefaults are HPCC's ns-3 thresholds for a link rate: Kmin 100 KB and Kmax 400 KB per
// 25 Gb/s ([HPCC]).
func ECNDefaults(rate units.Rate) (kmin, kmax int64) {
	s := float64(rate) / float64(25*units.Gbps)
	return int64(100e3 * s), int64(400e3 * s)
}

// Enqueue marks pkt by the bytes queued ahead of it as it joins out's queue (ecn_mark: enqueue).
func (e *ecnRED) Enqueue(out *Port, pkt *Packet) {
	if pkt.Kind != Data || pkt.ECN == ECNNotECT {
		return
	}
	e.mark(out, pkt)
}

// Dequeue marks pkt by the bytes it leaves queued behind it as it starts transmitting on out
// (ecn_mark: dequeue): HPCC's ns-3 switch tests its egress bytes after removing the packet
// (SwitchNode::SwitchNotifyDequeue, SwitchMmu::ShouldSendCN, [HPCC-ns3]).
func (e *ecnRED) Dequeue(out *Port, pkt *Packet) {
	if pkt.Kind != Data || pkt.ECN == ECNNotECT {
		return
	}
	e.mark(out, pkt)
}

// mark applies RED to pkt on the bytes now in its queue at out.
func (e *ecnRED) mark(out *Port, pkt *Packet) {
	st := &e.port[out.gidx]
	q := out.q[pkt.Prio].bytes
	if q <= st.kmin {
		return
	}
	if q < st.kmax {
		p := st.pmax * float64(q-st.kmin) / float64(st.kmax-st.kmin)
		rng := e.rngs[out.Owner]
		if rng == nil {
			rng = sim.RNG(e.n.cfg.drawSeed(), fmt.Sprintf("ecn/%d", out.Owner))
			e.rngs[out.Owner] = rng
		}
		if rng.Float64() >= p {
			return
		}
	}
	pkt.ECN = ECNCE
	st.marks++
	e.total++
	if b := e.n.bins; b != nil {
		b.mark(e.n.sim.Now())
	}
}

func (e *ecnRED) Report(res *result.Run) {
	res.Counters["ecn_marks"] = float64(e.total)
}

// ECNMarks returns the CE marks made at each port that marked any, by port name.
func (n *Network) ECNMarks() map[string]int64 {
	e := n.ecnMarker()
	if e == nil {
		return nil
	}
	out := map[string]int64{}
	for g := range e.port {
		if m := e.port[g].marks; m > 0 {
			out[e.portName(int32(g))] = m
		}
	}
	return out
}

// ecnMarker returns the installed RED marker, at enqueue or at dequeue; nil if none.
func (n *Network) ecnMarker() *ecnRED {
	if e, ok := n.marker.(*ecnRED); ok {
		return e
	}
	e, _ := n.deqMarker.(*ecnRED)
	return e
}

func absRate(r units.Rate) units.Rate {
	if r < 0 {
		return -r
	}
	return r
}
