package flow

import (
	"math"
	"testing"

	"github.com/fabricsim/fabricsim/fabric"
)

// TestClassSched: the fluid split of one egress among classes, against the schedulers' shares
// worked by hand. Budget 1; every class can send 1 unless given less.
func TestClassSched(t *testing.T) {
	roce := func(strict fabric.PrioritySet, w map[uint8]int) *fabric.Config {
		c := fabric.DefaultRoCE()
		c.RoCE.Strict = strict
		c.RoCE.Weights = [8]int{}
		for p, x := range w {
			c.RoCE.Weights[p] = x
		}
		return &c
	}
	ib := func(high, low []fabric.VLWeight, limit int) *fabric.Config {
		c, err := fabric.DefaultInfiniBand("ndr")
		if err != nil {
			t.Fatal(err)
		}
		c.IB.ArbHigh, c.IB.ArbLow, c.IB.HighLimit = high, low, limit
		return &c
	}
	for _, c := range []struct {
		name    string
		cfg     *fabric.Config
		classes []uint8   // priority or VL of each class index
		demand  []float64 // per class index
		want    []float64
	}{
		// Equal DWRR weights: half each.
		{"roce equal", roce(0, nil), []uint8{1, 3}, []float64{1, 1}, []float64{0.5, 0.5}},
		// Weights 1:3 on priorities 1 and 3: a quarter and three quarters.
		{"roce dwrr 1:3", roce(0, map[uint8]int{1: 1, 3: 3}), []uint8{1, 3}, []float64{1, 1}, []float64{0.25, 0.75}},
		// Max-min: priority 1 needs 0.1 of its 0.25, priority 3 takes the rest.
		{"roce dwrr, one short", roce(0, map[uint8]int{1: 1, 3: 3}), []uint8{1, 3}, []float64{0.1, 1}, []float64{0.1, 0.9}},
		// Priority 1 strict takes everything it can; 0.3 leaves 0.7 to priority 3.
		{"roce strict", roce(1<<1, nil), []uint8{1, 3}, []float64{0.3, 1}, []float64{0.3, 0.7}},
		{"roce strict saturating", roce(1<<1, nil), []uint8{3, 1}, []float64{1, 1}, []float64{0, 1}},
		// Two strict classes: the higher first.
		{"roce two strict", roce(1<<1|1<<6, nil), []uint8{1, 6, 3}, []float64{1, 0.4, 1}, []float64{0.6, 0.4, 0}},
		// InfiniBand: VL 0 and VL 1 in the low table, weights 64 and 192: a quarter and three quarters.
		{"ib low 1:3", ib(nil, []fabric.VLWeight{{VL: 0, Weight: 64}, {VL: 1, Weight: 192}}, 0), []uint8{0, 1}, []float64{1, 1}, []float64{0.25, 0.75}},
		// VL 1 high without a limit: all of it.
		{"ib high unlimited", ib([]fabric.VLWeight{{VL: 1, Weight: 255}}, []fabric.VLWeight{{VL: 0, Weight: 64}}, 255), []uint8{0, 1}, []float64{1, 1}, []float64{0, 1}},
		// High limit 0: one high packet, then one low: half each.
		{"ib high limit 0", ib([]fabric.VLWeight{{VL: 1, Weight: 255}}, []fabric.VLWeight{{VL: 0, Weight: 64}}, 0), []uint8{0, 1}, []float64{1, 1}, []float64{0.5, 0.5}},
		// High limit 1 (4 KiB) with a 4 KiB MTU: also half.
		{"ib high limit 1", ib([]fabric.VLWeight{{VL: 1, Weight: 255}}, []fabric.VLWeight{{VL: 0, Weight: 64}}, 1), []uint8{0, 1}, []float64{1, 1}, []float64{0.5, 0.5}},
		// High limit 7: 28 KiB per 4 KiB low packet, 7/8 of the link.
		{"ib high limit 7", ib([]fabric.VLWeight{{VL: 1, Weight: 255}}, []fabric.VLWeight{{VL: 0, Weight: 64}}, 7), []uint8{0, 1}, []float64{1, 1}, []float64{0.125, 0.875}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.cfg.Kind == fabric.KindInfiniBand {
				c.cfg.MTU = 4096
			}
			s := newClassSched(c.cfg, c.classes)
			var d []fill
			for i, x := range c.demand {
				d = append(d, fill{d: x, i: int32(i)})
			}
			s.share(1, d, nil)
			for _, x := range d {
				if math.Abs(x.d-c.want[x.i]) > 1e-12 {
					t.Errorf("class %d (prio/VL %d): %g, want %g", x.i, c.classes[x.i], x.d, c.want[x.i])
				}
			}
		})
	}
}
