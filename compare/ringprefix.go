package compare

import (
	"fmt"
	"math"

	"github.com/fabricsim/fabricsim/collective"
	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/training"
	"github.com/fabricsim/fabricsim/units"
)

// Ring prefixes: the flow backend runs the first steps of a long flat ring and extrapolates the
// rest (docs/flow.md, "Ring prefixes").
//
// A flat ring all-reduce, reduce-scatter or all-gather over n ranks is 2(n-1) or n-1 steps; in
// every step position p sends one block to position p+1 once the block of the step before has
// arrived from p-1, over the same connection and so the same path, and every block of a pass has
// the same size (to a byte). The flow backend runs the first prefixSteps steps of each pass
// (message for message the whole ring's first messages) and plays the rest with the ring's
// recurrence as a line of queues: position p delivers step s at
//
//	finish(s, p) = max(finish(s-1, p-1) + transit(p), finish(s-1, p) + interval(p))
//
// transit(p) the least time the prefix took from a block's arrival to its delivery at p+1 (a
// block not waiting behind p's earlier ones), interval(p) the mean time between p's deliveries
// over the prefix's second half: its path's service time where p is backlogged (a link its flows
// share with another ring's), the ring's period elsewhere. Where every step puts the same flows
// on the same links this is the whole ring's completion (uncongested rings exactly, as a ring
// of latency-bound steps is); where collisions come and go as the positions drift, it carries the
// prefix's on (TestRingPrefixMatchesWholeRing measures it). At 16,384 GPUs a DP ring of 256 ranks
// is 255 steps: the prefix is 16 of them, a sixteenth of the messages.

// prefixSteps is the steps of each ring pass the flow backend runs; rings of more than
// 2 x prefixSteps steps are cut to it (fewer would save less than half).
const prefixSteps = 16

// ringPrefix is the compiled prefix of one ring collective and what its extrapolation needs.
type ringPrefix struct {
	steps  int             // the whole ring's steps per pass
	k      int             // the steps compiled
	n      int             // positions
	passes [][]msggraph.ID // per pass (channel, loop): ids[s*n+p], position p's message of step s
}

// prefixRing reports whether network op o is a flat ring the flow backend may run as a prefix
// (ring all-reduce, reduce-scatter or all-gather whose passes have more than 2 x prefixSteps
// steps, reduction free), and its collective.
func (s *Scenario) prefixRing(o *training.Op) (collective.Spec, bool) {
	if o.Kind != training.AllReduce && o.Kind != training.ReduceScatter && o.Kind != training.AllGather {
		return collective.Spec{}, false
	}
	sp := s.collSpec(o)
	if sp.Algo != collective.Default && sp.Algo != collective.Ring || sp.ReduceBandwidth != 0 || sp.Bytes <= 0 {
		return sp, false
	}
	return sp, ringSteps(sp.Op, len(sp.Ranks)) > 2*prefixSteps
}

// ringSteps is the steps of one pass of a ring collective over n ranks.
func ringSteps(op collective.Op, n int) int {
	if op == collective.AllReduce {
		return 2 * (n - 1)
	}
	return n - 1
}

// compileRingPrefix appends the first k steps of every pass of ring op o to g (as collective's
// ring compiles them: the same sources, destinations, sizes, connections, dependencies and
// tags), lowered to the cluster as compileOp lowers them. k <= 0 compiles every step.
func (s *Scenario) compileRingPrefix(g *msggraph.Graph, o *training.Op, tag string, k int) (*ringPrefix, error) {
	sp, ok := s.prefixRing(o)
	if !ok && k > 0 {
		return nil, fmt.Errorf("%s: not a ring the flow backend runs as a prefix", tag)
	}
	n := len(sp.Ranks)
	steps := ringSteps(sp.Op, n)
	if k <= 0 || k > steps {
		k = steps
	}
	rp := &ringPrefix{steps: steps, k: k, n: n}
	from := len(g.Msgs)
	channels := max(1, sp.Channels)
	for ch, d := range collective.Split(int64(sp.Bytes), channels) {
		for loop, l := range ringLoops(d, int64(sp.ChunkBytes)*int64(n)) {
			blocks := collective.Split(l, n)
			ids := make([]msggraph.ID, k*n)
			for st := 0; st < k; st++ {
				for p := 0; p < n; p++ {
					var deps []msggraph.ID
					if st > 0 {
						deps = []msggraph.ID{ids[(st-1)*n+(p-1+n)%n]}
					}
					blk := ringBlock(sp.Op, n, p, st)
					ids[st*n+p] = g.Add(msggraph.Message{Src: sp.Ranks[p], Dst: sp.Ranks[(p+1)%n], Bytes: units.Size(blocks[blk]),
						Deps: deps, Conn: int32(ch + 1), Tag: fmt.Sprintf("%s/ring/c%d/k%d/s%d/b%d", tag, ch, loop, st, blk)})
				}
			}
			rp.passes = append(rp.passes, ids)
		}
	}
	s.lowerToCluster(g, from)
	s.setClass(g, from, o)
	return rp, nil
}

// ringBlock is the block position p sends at step st (collective's schedules: reduce-scatter
// sends block p-1-st, all-gather p-st, all-reduce the one then the other).
func ringBlock(op collective.Op, n, p, st int) int {
	mod := func(a int) int { return ((a % n) + n) % n }
	switch {
	case op == collective.AllGather:
		return mod(p - st)
	case op == collective.AllReduce && st >= n-1:
		return mod(p - (st - (n - 1)))
	}
	return mod(p - 1 - st)
}

// ringLoops cuts d bytes into passes of at most unit bytes (one pass without a unit).
func ringLoops(d, unit int64) []int64 {
	if unit <= 0 || d <= unit {
		return []int64{d}
	}
	out := make([]int64, 0, (d+unit-1)/unit)
	for ; d > 0; d -= unit {
		out = append(out, min(unit, d))
	}
	return out
}

// duration is the whole ring's completion from the prefix run's completion times: each pass's
// positions carried on from the prefix's last step with their measured step cost, the latest
// last step of any pass.
func (rp *ringPrefix) duration(finish func(msggraph.ID) units.Time, _ [2]int, _ func(msggraph.ID) units.Time) units.Time {
	n, k := rp.n, rp.k
	var end float64
	f := make([]float64, n)
	next := make([]float64, n)
	transit := make([]float64, n)
	interval := make([]float64, n)
	w0 := max(1, k/2)
	for _, ids := range rp.passes {
		fin := func(st, p int) float64 { return float64(finish(ids[st*n+(p+n)%n])) }
		for p := 0; p < n; p++ {
			// transit: the least time from ready to delivered (a message not waiting behind
			// its position's earlier ones); interval: the mean time between the position's
			// deliveries in the second half (its link's service time where it is backlogged,
			// the ring's period elsewhere).
			lo := math.Inf(1)
			for st := 1; st < k; st++ {
				lo = min(lo, fin(st, p)-fin(st-1, p-1))
			}
			transit[p] = lo
			interval[p] = (fin(k-1, p) - fin(w0-1, p)) / float64(k-w0)
			f[p] = fin(k-1, p)
		}
		for st := k; st < rp.steps; st++ {
			for p := 0; p < n; p++ {
				next[p] = max(f[(p-1+n)%n]+transit[p], f[p]+interval[p])
			}
			f, next = next, f
		}
		for _, x := range f {
			end = max(end, x)
		}
	}
	return units.Time(end + 0.5)
}

// scale is the factor from the prefix's counts (pauses, marks) to the whole ring's.
func (rp *ringPrefix) scale() float64 { return float64(rp.steps) / float64(rp.k) }
