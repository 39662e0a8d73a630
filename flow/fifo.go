package flow

import (
	"math"
	"slices"
)

// fifo is one egress queue (a resource and class) in the fluid limit, first in first out: the
// bytes that arrived in one step form a segment (each flow's share of it), and the link serves
// segments in order, the head one in its bytes' arrival order within their step (serveWindows;
// with Options.ProportionalFIFO in proportion to its flows' amounts, with Options.AgeOrder its
// oldest bytes first: serveOldest). A flow that joins a long queue waits behind what was
// there; a flow that stops arriving leaves with its last segment, one queueing delay later.
//
// Its layout is part of a congested step's speed (BenchmarkPipelineClass; TestHotLayout): what
// push and RED marking read for every entry that joins (segs, ents, bytes, markP) is the first 64
// bytes, and the struct is 128 bytes, so that a queue is two aligned cache lines rather than
// three where 104 bytes straddle them.
type fifo struct {
	segs  []segment
	ents  []qent
	bytes float64
	// markP is RED's marking probability at depth left, markLog log(1 - markP): computed once
	// per queue and step (setLeft) instead of once per flow arriving.
	markP, markLog float64
	step           int64 // the step the tail segment was opened in
	sh             int   // first live segment
	eh             int   // first live entry
	// left is what the queue held after its last service (what a packet arriving in the next
	// step finds, ECN marking).
	left float64
	// age is, with Options.AgeOrder, each entry's age: the step its bytes left their NIC
	// (parallel to ents; nil without the option). It takes the 24 bytes that padded the struct.
	age []int32
}

// window is the part of its step, [t0, t1] in fractions of the step, over which an entry's
// remaining bytes reached the queue, spread evenly (arrival order, the default; qent.w).
type window struct{ t0, t1 float64 }

// setLeft records what the queue holds after its link has sent, and the marking probability
// of ecn at that depth; emptyUnmarked says that ecn gives 0 for an empty queue (network), which
// is then not read.
func (q *fifo) setLeft(ecn *ecnThresholds, emptyUnmarked bool) {
	q.left = q.bytes
	if q.left <= 0 && emptyUnmarked {
		q.markP = 0 // (ecn.prob's 0 at or below Kmin)
		return
	}
	q.markP = ecn.prob(q.left)
	if q.markP > 0 && q.markP < 1 {
		q.markLog = math.Log1p(-q.markP)
	}
}

// segment is what arrived in one step: entries ents[from:to], rem bytes of them left.
type segment struct {
	from, to int
	rem      float64
}

// qent is one flow's bytes in a segment: the flow's (path slot) and the slot's generation, so
// that an entry of a flow that has ended is recognized after its slot was reused; in arrival
// order (the default), w is the window its bytes arrived in (pushWin; zero otherwise).
//
// The window is part of the entry, not of an array parallel to the entries (as it was, one per
// queue, engine.wins): a congested step's hand-off is bound by memory (BenchmarkPipelineClass),
// and the parallel array cost, for every entry pushed and served, a line of its own and the
// line of the queue's slice header besides the entry's (TestHotPathUnchanged: the same results).
type qent struct {
	slot int32
	gen  uint32
	amt  float64
	w    window
}

// push appends amt bytes of path slot at generation gen, arriving in step over window w of it
// (arrival order; zero otherwise).
func (q *fifo) push(slot int32, gen uint32, amt float64, step int64, w window) {
	if n := len(q.segs); n == q.sh || q.step != step {
		// compact, called only where it has work: with nothing consumed (sh zero, and eh where
		// segments remain) and no age it does nothing, and with no segment left it only empties
		// the entries (a segment is opened 2.09 M times in BenchmarkPipelineClass's 2,048-GPU
		// class; the calls were 60 M instructions).
		switch {
		case q.sh > 0 || q.eh > 0 && n > 0 || q.age != nil:
			q.compact()
		case n == 0:
			q.ents, q.eh = q.ents[:0], 0
		}
		q.segs = append(q.segs, segment{from: len(q.ents), to: len(q.ents)})
		q.step = step
	}
	s := &q.segs[len(q.segs)-1]
	q.ents = append(q.ents, qent{slot: slot, gen: gen, amt: amt, w: w})
	s.to = len(q.ents)
	s.rem += amt
	q.bytes += amt
}

// pushMerged is push, except that bytes of a slot (and generation) that already has an entry in
// the tail segment join that entry instead of opening another one; *last is the slot's entry
// index in this queue as pushMerged last left it (checked before use: compaction moves entries).
// A queue served in part hands on each flow's bytes from two segments in one step (the rest of
// the head one, part of the next), so a flow's arrivals at the next queue come in pieces; kept
// apart, the pieces are entries of one segment that the next queue serves in the same
// proportion (the same bytes leave at the same times) but hands on one by one, and their number
// grows hop by hop (the 2,048-GPU pipeline class: 8.2 M entries handed on for 4.2 M hops of
// hot flows stepped). Merged, a flow has at most one entry per segment.
func (q *fifo) pushMerged(slot int32, gen uint32, amt float64, step int64, last *int32) {
	if i := q.tailEntry(slot, gen, step, *last); i >= 0 {
		q.join(i, amt)
		return
	}
	q.push(slot, gen, amt, step, window{})
	*last = int32(len(q.ents) - 1)
}

// tailEntry is last if it is still the entry of slot (and generation) in the tail segment of
// step, else -1.
func (q *fifo) tailEntry(slot int32, gen uint32, step int64, last int32) int {
	if n := len(q.segs); n > q.sh && q.step == step {
		if i := int(last); i >= q.segs[n-1].from && i < len(q.ents) {
			if x := &q.ents[i]; x.slot == slot && x.gen == gen {
				return i
			}
		}
	}
	return -1
}

// join adds amt to entry i of the tail segment.
func (q *fifo) join(i int, amt float64) {
	q.ents[i].amt += amt
	q.segs[len(q.segs)-1].rem += amt
	q.bytes += amt
}

// pushAge is push (merged as pushMerged where last is not nil) for Options.AgeOrder: the entry
// remembers age, the step its bytes left their NIC, and joins only an entry of the same age.
func (q *fifo) pushAge(slot int32, gen uint32, amt float64, step int64, age int32, last *int32) {
	if q.age == nil {
		q.age = make([]int32, len(q.ents), cap(q.ents))
	}
	if last != nil {
		if i := q.tailEntry(slot, gen, step, *last); i >= 0 && q.age[i] == age {
			q.join(i, amt)
			return
		}
	}
	q.push(slot, gen, amt, step, window{})
	q.age = append(q.age[:len(q.ents)-1], age)
	if last != nil {
		*last = int32(len(q.ents) - 1)
	}
}

// pushWin is push (merged as pushMerged where last is not nil, when the windows meet) for
// arrival order (the default): the entry remembers the window [w0, w1] of the step its bytes
// arrived in.
func (q *fifo) pushWin(slot int32, gen uint32, amt float64, step int64, w0, w1 float64, last *int32) {
	if last != nil {
		if i := q.tailEntry(slot, gen, step, *last); i >= 0 {
			if w := &q.ents[i].w; w0 <= w.t1+1e-9 && w1 >= w.t0-1e-9 {
				w.t0, w.t1 = min(w.t0, w0), max(w.t1, w1)
				q.join(i, amt)
				return
			}
		}
	}
	q.push(slot, gen, amt, step, window{w0, w1})
	if last != nil {
		*last = int32(len(q.ents) - 1)
	}
}

// compact drops consumed segments and entries once they are most of the slices.
func (q *fifo) compact() {
	if q.sh > 0 && q.sh >= len(q.segs)/2 {
		n := copy(q.segs, q.segs[q.sh:])
		q.segs = q.segs[:n]
		q.sh = 0
	}
	if q.eh > 0 && q.eh >= len(q.ents)/2 {
		n := copy(q.ents, q.ents[q.eh:])
		q.ents = q.ents[:n]
		if q.age != nil {
			copy(q.age, q.age[q.eh:])
		}
		for i := range q.segs {
			q.segs[i].from -= q.eh
			q.segs[i].to -= q.eh
		}
		q.eh = 0
	}
	if len(q.segs) == 0 {
		q.ents = q.ents[:0]
		q.eh = 0
	}
	if q.age != nil {
		q.age = q.age[:len(q.ents)]
	}
}

// serve takes up to limit bytes from the head, handing every entry's bytes to e.take at a; it
// returns the bytes served.
func (q *fifo) serve(limit float64, e *engine, a *serveAt) float64 {
	var served float64
	if e.subStep {
		return q.serveWindows(limit, e, a)
	}
	for q.sh < len(q.segs) && limit > 0 {
		s := &q.segs[q.sh]
		if s.rem <= limit*(1+1e-12) {
			for i := max(s.from, q.eh); i < s.to; i++ {
				if x := &q.ents[i]; x.amt > 0 {
					if q.age != nil {
						e.age = q.age[i]
					}
					e.take(a, x.slot, x.gen, x.amt)
					x.amt = 0
				}
			}
			limit -= s.rem
			served += s.rem
			q.popSeg(s)
			continue
		}
		if q.age != nil {
			q.serveOldest(s, limit, e, a)
		} else {
			q.serveShare(s, limit/s.rem, e, a)
		}
		s.rem -= limit
		q.bytes -= limit
		served += limit
		limit = 0
	}
	if q.sh == len(q.segs) {
		q.segs, q.ents, q.sh, q.eh, q.bytes = q.segs[:0], q.ents[:0], 0, 0, 0
		if q.age != nil {
			q.age = q.age[:0]
		}
	}
	return served
}

// serveShare sends the fraction phi of every entry of the partly sent segment s.
func (q *fifo) serveShare(s *segment, phi float64, e *engine, a *serveAt) {
	for i := max(s.from, q.eh); i < s.to; i++ {
		if x := &q.ents[i]; x.amt > 0 {
			y := x.amt * phi
			x.amt -= y
			e.take(a, x.slot, x.gen, y)
		}
	}
}

// serveOldest sends limit bytes of the partly sent segment s oldest first (Options.AgeOrder):
// the entries whose bytes left their NIC in the earliest step whole, in proportion among the
// entries of the step that the limit reaches.
func (q *fifo) serveOldest(s *segment, limit float64, e *engine, a *serveAt) {
	from := max(s.from, q.eh)
	for limit > 0 {
		oldest, sum := int32(math.MaxInt32), 0.0
		for i := from; i < s.to; i++ {
			if x := &q.ents[i]; x.amt > 0 {
				if g := q.age[i]; g < oldest {
					oldest, sum = g, x.amt
				} else if g == oldest {
					sum += x.amt
				}
			}
		}
		if sum <= 0 {
			return
		}
		phi := min(1, limit/sum)
		for i := from; i < s.to; i++ {
			if x := &q.ents[i]; x.amt > 0 && q.age[i] == oldest {
				y := x.amt
				if phi < 1 {
					y *= phi
				}
				x.amt -= y
				e.age = oldest
				e.take(a, x.slot, x.gen, y)
			}
		}
		limit -= min(sum, limit)
	}
}

// drop removes the bytes of a path slot (a flow retired with a floating-point residue).
func (q *fifo) drop(slot int32, gen uint32) {
	for k := q.sh; k < len(q.segs); k++ {
		s := &q.segs[k]
		for i := max(s.from, q.eh); i < s.to; i++ {
			if e := &q.ents[i]; e.slot == slot && e.gen == gen && e.amt > 0 {
				s.rem -= e.amt
				q.bytes -= e.amt
				e.amt = 0
			}
		}
	}
}

// serveWindows is serve in arrival order (the default): each segment in arrival order
// (serveWin), the link's bytes timed at its rate, or spread over the step where credits or PFC
// allow less.
func (q *fifo) serveWindows(limit float64, e *engine, a *serveAt) float64 {
	rate := a.rate
	if limit < rate*a.tau {
		rate = limit / a.tau
	}
	var served float64
	for q.sh < len(q.segs) && limit > 0 {
		s := &q.segs[q.sh]
		start := (a.before + served) / rate
		if s.rem <= limit*(1+1e-12) {
			q.serveWhole(s, start, start+s.rem/rate, e, a)
			limit -= s.rem
			served += s.rem
			q.popSeg(s)
			continue
		}
		if y, whole := q.serveWin(s, limit, start, rate, e, a); !whole {
			s.rem -= y
			q.bytes -= y
			served += y
			break
		}
		// Rounding left the segment no more than limit after all.
		served += s.rem
		q.popSeg(s)
		break
	}
	if q.sh == len(q.segs) {
		q.segs, q.ents, q.sh, q.eh, q.bytes = q.segs[:0], q.ents[:0], 0, 0, 0
	}
	return served
}

// popSeg drops the head segment s, its bytes all sent.
func (q *fifo) popSeg(s *segment) {
	q.bytes -= s.rem
	q.eh = s.to
	q.sh++
}

// serveWhole sends the whole segment s, which leaves the link from start to end seconds into
// the step: each entry's window maps onto that span linearly (exact where the segment's bytes
// arrived evenly over its span; serveWin's exact map costs a sort per segment, and a congested
// step serves many whole segments).
func (q *fifo) serveWhole(s *segment, start, end float64, e *engine, a *serveAt) {
	from := max(s.from, q.eh)
	lo, hi := math.Inf(1), math.Inf(-1)
	for i := from; i < s.to; i++ {
		if x := &q.ents[i]; x.amt > 0 {
			lo, hi = min(lo, x.w.t0), max(hi, x.w.t1)
		}
	}
	k := 0.0
	if hi > lo {
		k = (end - start) / (hi - lo)
	}
	for i := from; i < s.to; i++ {
		if x := &q.ents[i]; x.amt > 0 {
			w := x.w
			e.w0 = min(1, (start+(w.t0-lo)*k)/a.tau)
			e.w1 = min(1, (start+(w.t1-lo)*k)/a.tau)
			if hi <= lo {
				e.w1 = min(1, end/a.tau)
			}
			e.take(a, x.slot, x.gen, x.amt)
			x.amt = 0
		}
	}
}

// serveWin sends up to limit bytes of segment s in the order they arrived within their step:
// A(x), the segment's bytes that arrived before x (each entry's spread evenly over its window),
// is served up to the x where it reaches limit; an entry whose window ends before x leaves
// whole, and its bytes leave the link from start + A(t0)/rate to start + A(t1)/rate seconds
// into the step (e.w0, e.w1). It returns the bytes sent, and whether that was the whole segment.
//
// The edges are sorted in place where they are few (sortShort), each entry's found among them
// once (edge, a scan where they are few) and A read at those places again when the entry is
// sent; e.plainWin sorts them with slices.Sort and finds every place by slices.BinarySearch each
// time, the plain version (TestServeWinMatchesPlain). Both give the same order and places, and
// so the same numbers added in the same order (docs/flow.md, "serveWin's sort and searches").
func (q *fifo) serveWin(s *segment, limit, start, rate float64, e *engine, a *serveAt) (float64, bool) {
	ents := q.ents[max(s.from, q.eh):s.to]
	xs := e.winX[:0]
	for i := range ents {
		if x := &ents[i]; x.amt > 0 {
			w := &x.w
			if w.t1 < w.t0+1e-9 {
				w.t1 = w.t0 + 1e-9
			}
			xs = append(xs, w.t0, w.t1)
		}
	}
	if len(xs) == 0 {
		return 0, true
	}
	// Each entry's edges' places in xs, two per entry that holds bytes, in entry order (t1's
	// found from t0's on: below t0 every value is below t1 too).
	ks := slices.Grow(e.winK[:0], len(xs))
	if len(xs) <= 12 && !e.plainWin {
		sortShort(xs)
	} else {
		slices.Sort(xs)
	}
	xs = slices.Compact(xs)
	d := slices.Grow(e.winD[:0], len(xs))[:len(xs)]
	clear(d)
	for i := range ents {
		if x := &ents[i]; x.amt > 0 {
			w := x.w
			var k0, k1 int
			if e.plainWin || len(xs) > 16 {
				k0, _ = slices.BinarySearch(xs, w.t0)
				k1, _ = slices.BinarySearch(xs, w.t1)
			} else {
				k0 = edge(xs, 0, w.t0)
				if w.t0 < w.t1 {
					k1 = edge(xs, k0, w.t1)
				} else {
					k1 = edge(xs, 0, w.t1)
				}
			}
			ks = append(ks, int32(k0), int32(k1))
			r := x.amt / (w.t1 - w.t0)
			d[k0] += r
			d[k1] -= r
		}
	}
	// A at the breakpoints (in d's place) and the frontier tau where it reaches limit.
	var dens, acc float64
	tau := math.Inf(1)
	prev := xs[0]
	for k, x := range xs {
		acc += dens * (x - prev)
		if acc >= limit && math.IsInf(tau, 1) && dens > 0 {
			tau = x - (acc-limit)/dens
		}
		dens += d[k]
		d[k] = acc
		prev = x
	}
	// A(x) at x = xs[k], limit from tau on.
	A := func(x float64, k int32) float64 {
		if x >= tau {
			return limit
		}
		if e.plainWin {
			k, _ := slices.BinarySearch(xs, x)
			return d[k]
		}
		return d[k]
	}
	var sent float64
	j := 0 // the entry's place in ks
	for i := range ents {
		x := &ents[i]
		if x.amt <= 0 {
			continue
		}
		k0, k1 := ks[j], ks[j+1]
		j += 2
		w := &x.w
		if w.t0 >= tau {
			continue
		}
		y := x.amt
		hi := w.t1
		if tau < w.t1 {
			hi = tau // (A(hi) is limit: k1 unread)
			y = x.amt * (tau - w.t0) / (w.t1 - w.t0)
		}
		e.w0 = min(1, (start+A(w.t0, k0)/rate)/a.tau)
		e.w1 = min(1, (start+A(hi, k1)/rate)/a.tau)
		x.amt -= y
		if hi == w.t1 {
			x.amt = 0
		}
		w.t0 = hi
		sent += y
		e.take(a, x.slot, x.gen, y)
	}
	// The scratch kept for the next segment where it grew.
	if cap(xs) > cap(e.winX) {
		e.winX = xs
	}
	if cap(d) > cap(e.winD) {
		e.winD = d
	}
	if cap(ks) > cap(e.winK) {
		e.winK = ks
	}
	return sent, math.IsInf(tau, 1)
}

// edge is the place of x in the sorted xs at or after from: the first index whose value is not
// less than x (as cmp.Less orders floats: NaN first), the index slices.BinarySearch(xs, x)
// returns where every value before from is less than x. A scan: a partly sent segment has 2.9
// entries on average in BenchmarkPipelineClass's 2,048-GPU class, and the searches were a third
// of serveWin's instructions (serveWin scans long ones by binary search).
func edge(xs []float64, from int, x float64) int {
	k := from
	for k < len(xs) && (xs[k] < x || xs[k] != xs[k] && x == x) {
		k++
	}
	return k
}

// sortShort sorts xs, at most 12 values, as slices.Sort does: by insertion, the way it sorts up
// to 12 values (pdqsort's insertion sort, cmp.Less's order), written out without its calls.
func sortShort(xs []float64) {
	for i := 1; i < len(xs); i++ {
		for j := i; j > 0 && (xs[j] < xs[j-1] || xs[j] != xs[j] && xs[j-1] == xs[j-1]); j-- {
			xs[j], xs[j-1] = xs[j-1], xs[j]
		}
	}
}
