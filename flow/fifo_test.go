package flow

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// windowEdges draws n window edges as serveWin sees them: fractions of the step, some of them
// equal (entries that arrived over the same part of the step), and, to hold the order where
// floats are not plain numbers, zeros of both signs and NaNs.
func windowEdges(r *rand.Rand, n int, odd bool) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		switch v := r.IntN(10); {
		case v < 2 && i > 0:
			xs[i] = xs[r.IntN(i)]
		case v == 2:
			xs[i] = 1
		case v == 3 && odd:
			xs[i] = []float64{0, math.Copysign(0, -1), math.NaN()}[r.IntN(3)]
		default:
			xs[i] = float64(r.IntN(64)) / 64
		}
	}
	return xs
}

// TestSortShortMatchesSort: sortShort leaves up to 12 values in the order slices.Sort does, bit
// for bit (its zeros' signs and NaNs too).
func TestSortShortMatchesSort(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 20000 {
		xs := windowEdges(r, 1+trial%12, trial%3 == 0)
		want := slices.Clone(xs)
		slices.Sort(want)
		got := slices.Clone(xs)
		sortShort(got)
		for i := range got {
			if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
				t.Fatalf("sortShort(%v) = %v, slices.Sort: %v", xs, got, want)
			}
		}
	}
}

// TestEdgeMatchesBinarySearch: edge finds the place slices.BinarySearch finds, for every value of
// a sorted, compacted slice (what serveWin searches), from 0 and from the place of any value below
// it.
func TestEdgeMatchesBinarySearch(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := range 20000 {
		xs := windowEdges(r, 1+trial%16, trial%3 == 0)
		slices.Sort(xs)
		xs = slices.Compact(xs)
		for _, x := range xs {
			want, _ := slices.BinarySearch(xs, x)
			if got := edge(xs, 0, x); got != want {
				t.Fatalf("edge(%v, 0, %v) = %d, slices.BinarySearch: %d", xs, x, got, want)
			}
			for _, y := range xs {
				if y < x {
					if got := edge(xs, edge(xs, 0, y), x); got != want {
						t.Fatalf("edge(%v, place of %v, %v) = %d, slices.BinarySearch: %d", xs, y, x, got, want)
					}
				}
			}
		}
	}
}

// TestSetLeftEmptyMatchesPlain: fifo.setLeft's shortcut for a queue its link emptied (the
// thresholds not read where no resource's ECN marks an empty queue, network.emptyUnmarked) gives
// the marking probability and its log that reading them gives, for thresholds with Kmin at 0
// and above, marking on and off, and an empty queue's depths (0, -0, rounding residues below);
// and marksEmpty, which keeps the shortcut off, holds for every Kmin below 0 (or NaN) where an
// empty queue would be marked.
func TestSetLeftEmptyMatchesPlain(t *testing.T) {
	for _, th := range []ecnThresholds{{0, 0, 0}, {0, 1e5, 0.2}, {150e3, 1500e3, 0.2}, {150e3, 1500e3, 1}, {0, 0, 1}, {-1, 1e5, 0.2}, {math.NaN(), 1e5, 0.2}, {-1, 1e5, 0}} {
		for _, depth := range []float64{0, math.Copysign(0, -1), -1e-9, -1, 5e4} {
			for _, before := range []float64{0, 0.1, 1} { // the last step's probability
				plain := fifo{bytes: depth, markP: before, markLog: math.Log1p(-min(before, 0.5))}
				fast := plain
				plain.setLeft(&th, false)
				fast.setLeft(&th, !th.marksEmpty())
				if math.Float64bits(plain.markP) != math.Float64bits(fast.markP) || math.Float64bits(plain.markLog) != math.Float64bits(fast.markLog) || plain.left != fast.left {
					t.Errorf("thresholds %v, depth %g: markP %g, log %g with the shortcut; %g, %g read", th, depth, fast.markP, fast.markLog, plain.markP, plain.markLog)
				}
			}
		}
		if th.prob(0) > 0 && !th.marksEmpty() {
			t.Errorf("thresholds %v mark an empty queue (p %g), but marksEmpty says not", th, th.prob(0))
		}
	}
}
