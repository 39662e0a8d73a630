package fabric

import (
	"math/rand/v2"
	"slices"
	"testing"
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
		gotA := wrr(p, tab, entriesByVL(tab), &idxA, &leftA)
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
