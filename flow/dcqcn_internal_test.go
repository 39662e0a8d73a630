package flow

import (
	"cmp"
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestDeliveredMarksConserved: the marks filed under a flow's bytes (markQueue.file, in any order
// of their ranges and hops, overlapping as a later hop's do) all come out of markQueue.delivered once the
// bytes are delivered, whatever the steps' deliveries: the sum of the logs handed out equals
// the sum filed (conservation), each within the bytes delivered that step and none before its
// batch's bytes start to arrive.
func TestDeliveredMarksConserved(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		var s markQueue
		var filed float64
		type rec struct{ start, end float64 }
		var recs []rec
		for range 1 + rng.IntN(30) {
			end := rng.Float64() * 1e6
			amt := min(end, 1+rng.Float64()*5e4)
			lk := -rng.Float64() * 3
			s.file(int32(rng.IntN(4)), markBatch{start: end - amt, end: end, logKeep: lk})
			filed += lk
			recs = append(recs, rec{end - amt, end})
		}
		if recs := s.records(); !slices.IsSortedFunc(recs, func(a, b markBatch) int { return cmp.Compare(a.end, b.end) }) {
			t.Fatalf("trial %d: records out of order: %v", trial, recs)
		}
		var got float64
		d0 := 0.0
		for d0 < 1e6 {
			d1 := min(1e6, d0+rng.Float64()*1e5)
			s.delivered(d0, d1, 1e-6, func(lk, from, to float64) {
				if from < d0-1e-6 || to > d1+1e-6 || to < from {
					t.Fatalf("trial %d: marks on bytes (%g, %g] handed out when (%g, %g] were delivered", trial, from, to, d0, d1)
				}
				got += lk
			})
			d0 = d1
		}
		if s.len() != 0 {
			t.Fatalf("trial %d: %d records left after every byte was delivered", trial, s.len())
		}
		if math.Abs(got-filed) > 1e-9*math.Abs(filed) {
			t.Fatalf("trial %d: handed out %g of the filed %g", trial, got, filed)
		}
	}
}

// plainMarks is the plain form of a flow's marks under way (file: one list, a linear scan from
// the end and an insert; delivered: the records done with dropped from the slice's front), which
// markQueue (a list per hop, merged when read; each a window over a buffer) must match exactly
// (TestMarksMatchPlain).
type plainMarks struct{ batches []markBatch }

func (s *plainMarks) file(b markBatch) {
	i := len(s.batches)
	for i > 0 && s.batches[i-1].end > b.end {
		i--
	}
	s.batches = append(s.batches, markBatch{})
	copy(s.batches[i+1:], s.batches[i:])
	s.batches[i] = b
}

func (s *plainMarks) delivered(d0, d1, eps float64, emit func(lk, from, to float64)) {
	n := 0
	for ; n < len(s.batches); n++ {
		b := &s.batches[n]
		st := max(b.start, d0)
		done := b.end <= d1+eps
		if !done && st >= d1-eps {
			break
		}
		hi, lk := min(b.end, d1), b.logKeep
		if !done && !math.IsInf(lk, -1) {
			lk = b.logKeep * (hi - st) / (b.end - st)
			b.logKeep -= lk
		}
		if lk < 0 {
			emit(lk, st, hi)
		}
		if !done {
			b.start = hi
			break
		}
	}
	s.batches = s.batches[n:]
}

// records is the queue's records in the order delivered reads them.
func (m *markQueue) records() []markBatch {
	var out []markBatch
	m.each(func(b *markBatch) bool {
		out = append(out, *b)
		return true
	})
	return out
}

// TestMarksMatchPlain: a flow's marks under way (markQueue) hand out the same marks, bit for bit
// and in the same order, as the plain form, with filing and delivery interleaved as a run does
// (each hop's records in the order of their bytes, a later hop's behind an earlier hop's, ties
// included), and hold the same records in the same order. In every other trial the records are
// filed under a hop drawn at random instead of their own, so that a hop's list also gets ends
// below its last (as rounding may give), and equal ends meet in lists of other hops.
func TestMarksMatchPlain(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	type out struct{ lk, from, to float64 }
	for trial := range 300 {
		var s markQueue
		var p plainMarks
		hops := 1 + rng.IntN(4)
		at := make([]float64, hops) // bytes that have joined each hop's queue
		deliv := 0.0
		for step := range 200 {
			for h := range hops {
				if rng.IntN(3) == 0 {
					continue
				}
				amt := float64(rng.IntN(4)) * 1000 // whole kilobytes: equal ends happen
				if h > 0 {
					amt = min(amt, at[h-1]-at[h])
				}
				at[h] += amt
				b := markBatch{start: at[h] - amt, end: at[h], logKeep: -rng.Float64()}
				if rng.IntN(10) == 0 {
					b.logKeep = math.Inf(-1)
				}
				hop := int32(h)
				if trial%2 == 1 {
					hop = int32(rng.IntN(hops))
				}
				s.file(hop, b)
				p.file(b)
			}
			d1 := deliv + rng.Float64()*(at[hops-1]-deliv)
			if step == 199 {
				d1 = at[hops-1]
			}
			var got, want []out
			s.delivered(deliv, d1, 1e-6, func(lk, from, to float64) { got = append(got, out{lk, from, to}) })
			p.delivered(deliv, d1, 1e-6, func(lk, from, to float64) { want = append(want, out{lk, from, to}) })
			deliv = d1
			if len(got) != len(want) {
				t.Fatalf("trial %d step %d: %d marks handed out, the plain form %d", trial, step, len(got), len(want))
			}
			for i := range got {
				if math.Float64bits(got[i].lk) != math.Float64bits(want[i].lk) || got[i].from != want[i].from || got[i].to != want[i].to {
					t.Fatalf("trial %d step %d: mark %d is %v, the plain form's %v", trial, step, i, got[i], want[i])
				}
			}
			recs := s.records()
			if len(recs) != len(p.batches) {
				t.Fatalf("trial %d step %d: %d records left, the plain form %d", trial, step, len(recs), len(p.batches))
			}
			for i, r := range recs {
				if q := p.batches[i]; r.start != q.start || r.end != q.end || math.Float64bits(r.logKeep) != math.Float64bits(q.logKeep) {
					t.Fatalf("trial %d step %d: record %d is %v, the plain form's %v", trial, step, i, r, q)
				}
			}
		}
	}
}

// TestPacedArrivalsMatchPlain holds pacedArrivals' skip (nothing done before the first step in
// which one of a flow's paced packets leaves its queue) to the plain version (Options.plainPaced:
// every packet looked at every step): the DCQCN permutation of TestHotPathUnchanged, whose
// paced packets wait behind deep queues (4.2 M looks at a waiting packet a run before the skip,
// 6,611 arrivals), gives the same result JSON both ways.
func TestPacedArrivalsMatchPlain(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the k = 8 DCQCN permutation twice")
	}
	var out [2][]byte
	for i, plain := range []bool{false, true} {
		g, r, cfg, mg := permutationDCQCN(t)
		res, err := Run(g, r, cfg, mg, Options{plainPaced: plain})
		if err != nil {
			t.Fatal(err)
		}
		res.WallSeconds = 0
		if out[i], err = json.Marshal(res); err != nil {
			t.Fatal(err)
		}
	}
	if string(out[0]) != string(out[1]) {
		t.Errorf("the result differs from the plain pacedArrivals' (%d against %d bytes)", len(out[0]), len(out[1]))
	}
}
