package fabric

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

// blockRecorder is a LinkFlowControl that blocks the VLs in its mask and records every query.
type blockRecorder struct {
	block uint16
	asked []uint8
}

func (b *blockRecorder) Arrived(*Port, *Packet)  {}
func (b *blockRecorder) Departed(*Port, *Packet) {}
func (b *blockRecorder) Sent(*Port, *Packet)     {}
func (b *blockRecorder) Control(*Port, *Packet)  {}
func (b *blockRecorder) Blocked(_ *Port, pkt *Packet) bool {
	b.asked = append(b.asked, pkt.Prio)
	return b.block&(1<<pkt.Prio) != 0
}

// TestWRRMatchesScan checks the mask-driven VL arbitration against the entry-by-entry scan on
// random tables (up to 64 entries, zero weights included), queue contents, pauses, credit
// blocks and arbitration states: the same VL chosen, the same state left (entry and weight
// left) and the same flow-control queries in the same order.
func TestWRRMatchesScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := 0; trial < 20000; trial++ {
		vls := 1 + rng.IntN(15)
		tab := make([]VLWeight, 1+rng.IntN(64))
		for i := range tab {
			tab[i] = VLWeight{VL: uint8(rng.IntN(vls)), Weight: uint8(rng.IntN(4) * rng.IntN(80))}
		}
		fc := &blockRecorder{block: uint16(rng.Uint32())}
		n := &Network{policies: policies{fc: fc}}
		p := &Port{net: n, nprio: uint8(vls), Paused: uint8(rng.Uint32() & rng.Uint32())}
		for vl := 0; vl < vls; vl++ {
			if rng.IntN(3) == 0 {
				p.enqueue(&Packet{Prio: uint8(vl), Size: int32(64 + rng.IntN(4200))})
			}
		}
		idx0 := rng.IntN(len(tab))
		left0 := int64(rng.IntN(5000)) - 200

		idxA, leftA := idx0, left0
		gotA := wrr(p, &ibCheck{}, tab, entriesByVL(tab), &idxA, &leftA)
		askedA := slices.Clone(fc.asked)
		fc.asked = fc.asked[:0]
		idxB, leftB := idx0, left0
		gotB := wrrScan(p, tab, &idxB, &leftB)
		if gotA != gotB || idxA != idxB || leftA != leftB || !slices.Equal(askedA, fc.asked) {
			t.Fatalf("trial %d: wrr = VL %d (entry %d, left %d, asked %v); scan = VL %d (entry %d, left %d, asked %v)",
				trial, gotA, idxA, leftA, askedA, gotB, idxB, leftB, fc.asked)
		}
	}
}

// TestWRR1MatchesWRR checks Pick's one-VL path (wrr1: one VL queued and not paused, its head
// packet free to start) against wrr on random tables (up to 64 entries, zero weights included),
// VLs, packet sizes and arbitration states: the same entry and weight left, wherever some
// entry serves the VL (elsewhere Pick calls wrr).
func TestWRR1MatchesWRR(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	tried := 0
	for trial := 0; trial < 20000; trial++ {
		vls := 1 + rng.IntN(15)
		tab := make([]VLWeight, 1+rng.IntN(64))
		for i := range tab {
			tab[i] = VLWeight{VL: uint8(rng.IntN(vls)), Weight: uint8(rng.IntN(4) * rng.IntN(80))}
		}
		at := entriesByVL(tab)
		vl := rng.IntN(vls)
		if at[vl] == 0 {
			continue
		}
		tried++
		n := &Network{policies: policies{fc: &blockRecorder{}}}
		p := &Port{net: n, nprio: uint8(vls)}
		size := int32(64 + rng.IntN(4200))
		p.enqueue(&Packet{Prio: uint8(vl), Size: size})
		idx0 := rng.IntN(len(tab))
		left0 := int64(rng.IntN(5000)) - 200

		idxA, leftA := wrr1(tab, at[vl], idx0, left0)
		leftA -= int64(size)
		idxB, leftB := idx0, left0
		if got := wrr(p, &ibCheck{}, tab, at, &idxB, &leftB); got != vl || idxA != idxB || leftA != leftB {
			t.Fatalf("trial %d: wrr1 = entry %d, left %d; wrr = VL %d (want %d), entry %d, left %d", trial, idxA, leftA, got, vl, idxB, leftB)
		}
	}
	if tried < 10000 {
		t.Fatalf("only %d of 20000 trials had an entry serving the VL", tried)
	}
}

// TestIBCheckMatchesBlocked runs InfiniBand fabrics with the arbitration's credit check
// (ibCheck: the port's credit state synchronized once per pick, Sent without a second sync)
// and with the plain path (Blocked for every VL tried, Sent synchronizing again): the same run,
// the same frames and busy time per port. The cases stall on credits (small VL buffers, an
// incast on four SLs), one with a high-priority table and VL_HIGH_LIMIT (the low table's
// Eligible queries), one with adaptive routing.
func TestIBCheckMatchesBlocked(t *testing.T) {
	g := fatTreeK(t, 4, 100*units.Gbps, units.Microsecond)
	base := ibConfig(t, "edr")
	base.IB.VLBuffer = 8 * units.KiB
	high := base
	high.IB.ArbHigh = []VLWeight{{VL: 1, Weight: 2}, {VL: 3, Weight: 1}}
	high.IB.HighLimit = 1
	ar := base
	ar.IB.Adaptive = true
	for _, c := range []struct {
		name string
		cfg  Config
	}{{"small buffers", base}, {"high table", high}, {"adaptive", ar}} {
		out := func(plain bool) (string, []int64, float64) {
			return ibCreditRun(t, g, c.cfg, func(n *Network) { n.ibfc.plain = plain })
		}
		a, atx, stall := out(false)
		b, btx, _ := out(true)
		if stall == 0 {
			t.Errorf("%s: no credit stall: the case does not exercise the stall path", c.name)
		}
		if a != b {
			t.Errorf("%s: the run differs with the arbitration's credit check:\n%s\n%s", c.name, a, b)
		}
		if !slices.Equal(atx, btx) {
			t.Errorf("%s: frames or busy time per port differ with the arbitration's credit check", c.name)
		}
	}
}

// ibCreditRun runs the credit-path tests' traffic (a 2 MB permutation and an 8-to-1 incast of
// 1 MB on SLs 0-3) on g with cfg, after set has chosen the path under test, and returns what the
// plain and the shortened paths must agree on: the messages, events, packet-hops and counters;
// each port's frames and busy time; the credit stall time (so that a case can check that it
// stalls at all).
func ibCreditRun(t *testing.T, g *topo.Graph, cfg Config, set func(*Network)) (string, []int64, float64) {
	n := newNet(t, g, cfg)
	set(n)
	mg := permutationGraph(len(g.Hosts), 2*units.MB, 3)
	for i := 0; i < 8; i++ {
		mg.Add(msggraph.Message{Src: int32(i + 1), Dst: 0, Bytes: units.MB, Prio: uint8(i % 4)})
	}
	run(t, n, mg)
	res := n.lastRun
	var tx []int64
	for p := range n.ports {
		tx = append(tx, n.ports[p].TxPackets, int64(n.ports[p].BusyTime))
	}
	return fmt.Sprint(res.Messages, res.Events, res.PacketHops, res.Counters), tx, res.Counters["ib_credit_stall_ns"]
}

// TestIBPortStateMatchesIndex checks the seam of Port.ibc: on an InfiniBand fabric, before and
// after a run, every port's credit state found through the port is the one its index finds
// (ibCredits.ports[gidx], as ibCredits.state found it before the pointer), and belongs to that
// port; on an Ethernet fabric no port has one.
func TestIBPortStateMatchesIndex(t *testing.T) {
	g := fatTreeK(t, 4, 100*units.Gbps, units.Microsecond)
	cfg := ibConfig(t, "edr")
	cfg.IB.Adaptive = true
	n := newNet(t, g, cfg)
	check := func(when string) {
		if len(n.ibfc.ports) != len(n.ports) {
			t.Fatalf("%s: %d credit states for %d ports", when, len(n.ibfc.ports), len(n.ports))
		}
		for i := range n.ports {
			p := &n.ports[i]
			if want := &n.ibfc.ports[p.gidx]; p.ibc != want || n.ibfc.state(p) != want || p.ibc.port != p {
				t.Fatalf("%s: port %d (gidx %d): ibc %p, ports[gidx] %p", when, i, p.gidx, p.ibc, want)
			}
		}
	}
	check("before the run")
	run(t, n, permutationGraph(len(g.Hosts), 256*units.KiB, 3))
	check("after the run")

	e := newNet(t, g, DefaultEthernet())
	for i := range e.ports {
		if e.ports[i].ibc != nil {
			t.Fatalf("Ethernet port %d has InfiniBand credit state", i)
		}
	}
}
