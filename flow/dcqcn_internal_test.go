package flow

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestDeliveredMarksConserved: the marks filed under a flow's bytes (ccFlow.file, in any order
// of their ranges, overlapping as a later hop's do) all come out of ccFlow.delivered once the
// bytes are delivered, whatever the steps' deliveries: the sum of the logs handed out equals
// the sum filed (conservation), each within the bytes delivered that step and none before its
// batch's bytes start to arrive.
func TestDeliveredMarksConserved(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		var s ccFlow
		var filed float64
		type rec struct{ start, end float64 }
		var recs []rec
		for range 1 + rng.IntN(30) {
			end := rng.Float64() * 1e6
			amt := min(end, 1+rng.Float64()*5e4)
			lk := -rng.Float64() * 3
			s.file(markBatch{start: end - amt, end: end, logKeep: lk})
			filed += lk
			recs = append(recs, rec{end - amt, end})
		}
		for i := 1; i < len(s.batches); i++ {
			if s.batches[i].end < s.batches[i-1].end {
				t.Fatalf("trial %d: batches out of order: %v", trial, s.batches)
			}
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
		if len(s.batches) != 0 {
			t.Fatalf("trial %d: %d batches left after every byte was delivered", trial, len(s.batches))
		}
		if math.Abs(got-filed) > 1e-9*math.Abs(filed) {
			t.Fatalf("trial %d: handed out %g of the filed %g", trial, got, filed)
		}
	}
}
