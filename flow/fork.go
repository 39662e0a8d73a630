package flow

import (
	"errors"
	"math"
	"slices"
	"sync/atomic"
	"time"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/result"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

// Forking a run at two sizes (docs/flow.md, "Forking the two sizes' runs"). A compare runs a
// congested class of scaled-down sends twice, with every send at 8 MiB and at 16 MiB: the same
// messages, routes, seeds and options, other sizes. The two runs take the same steps until the
// first moment something reads a size and the two would read it differently: a flow of the
// smaller run that runs out of bytes, or whose bytes a step's arithmetic reads (inject's demand
// min(rem, rate x step), a jump's or a quiet flow's projected end, the tolerance eps(total)).
// RunForked runs the larger graph and keeps, beside it, the smaller run's own figures for every
// flow whose size differs (twin: its bytes left, decremented by the same amounts in the same
// order, so bit for bit what the smaller run holds; its quiet end); before every step it checks
// that the step cannot read them differently, and at the first boundary where it could, it
// copies the engine (engine.clone), gives the copy the smaller sizes, and runs both on. The
// smaller run's result is then the plain one's, byte for byte (TestForkMatchesPlain); what it
// saves is the smaller run's steps before the fork.

// forkMargin is the bytes a differing flow must keep beyond what it could send in the next step
// at its NIC's line rate (twice over) for the step to be shared: far above eps(total) of any
// size and the rounding of the bytes' arithmetic.
const forkMargin = 64 * 1024

// errFork is run's return at the boundary where the twin runs would part (twin.forkNow).
var errFork = errors.New("flow: the twin runs part here")

// twin is the smaller run's state where it differs from the larger one's: per flow of the larger
// run (index its flow id), whether the flow's size differs, and if so the smaller run's wire
// bytes, path latency (the first packet's: the larger run's, but where the smaller QP is a
// single short packet), bytes left to inject and projected quiet end.
type twin struct {
	small *msggraph.Graph
	diff  []bool
	total []float64
	lat   []units.Time
	lo    []float64
	end   []units.Time
	live  []int32 // the differing flows started
	// minLo is the smallest wire bytes of a differing flow of the smaller run, rmax the fastest
	// NIC's rate (bytes a second): a flow that starts within a step sends at most that.
	minLo, rmax float64
	// ordBig and ordSmall are order's scratch.
	ordBig, ordSmall []fill
	// spoiled: a step read a differing figure and the two runs' decisions parted within it (the
	// DCQCN marks' tolerance, a latency that differs): no fork; the smaller run runs plain.
	spoiled bool
	// next is the twin of another graph run beside the same one (Sizes: several sizes forked
	// from one run), nil for the last; idx is its graph's index in the Sizes.
	next *twin
	idx  int
}

// A twin's graph may also be the larger one (Sizes: a compare's pair at 16 and 8 MiB run with
// the 32 MiB run beside it): its figures are then the ones that run out later, and what could
// part the runs is the run's own flows nearing their end. The checks read both: forkNow1 the
// fewer bytes left of the two and the earlier quiet end, order1 the twin's own demands, and
// minLo the least of both graphs' differing QPs. Where the twin is the smaller one, these are
// its own figures, as before.

// newTwin is the twin of engine e's run (set up on the larger graph) for the smaller graph.
func newTwin(e *engine, small *msggraph.Graph) *twin {
	t := &twin{small: small, minLo: math.Inf(1)}
	for i := range small.Msgs {
		m, big := &small.Msgs[i], &e.mg.Msgs[i]
		if m.Bytes == big.Bytes {
			continue
		}
		for _, x := range []*msggraph.Message{m, big} {
			nq, per := e.qpSplit(x)
			t.minLo = min(t.minLo, e.wireBytes(int64(x.Bytes)-(nq-1)*per)) // the last QP's share is the least
		}
	}
	for h := range e.hostSt {
		t.rmax = max(t.rmax, e.hostSt[h].rate)
	}
	return t
}

// The engine's hooks (engine.twin) call the chain: every twin of it sees the run's step.

func (t *twin) start(e *engine, fid int32) {
	for ; t != nil; t = t.next {
		t.start1(e, fid)
	}
}

func (t *twin) sub(fid int32, x float64) {
	for ; t != nil; t = t.next {
		t.sub1(fid, x)
	}
}

func (t *twin) setEnd(now units.Time, fid int32, rate float64, filed bool) {
	for ; t != nil; t = t.next {
		t.setEnd1(now, fid, rate, filed)
	}
}

func (t *twin) ended(fid int32) {
	for ; t != nil; t = t.next {
		t.ended1(fid)
	}
}

func (t *twin) marks(fid int32, s *ccFlow, d0, d1, eps float64) {
	for ; t != nil; t = t.next {
		t.marks1(fid, s, d0, d1, eps)
	}
}

func (t *twin) order(hs *hostState, d []fill, c float64) {
	for ; t != nil; t = t.next {
		t.order1(hs, d, c)
	}
}

// forkNow reports whether some twin of the chain could part from the run in the step
// about to be taken (forkNow1).
func (t *twin) forkNow(e *engine) bool {
	for ; t != nil; t = t.next {
		if t.forkNow1(e) {
			return true
		}
	}
	return false
}

// grow makes room for flow id fid.
func (t *twin) grow(fid int32) {
	for int(fid) >= len(t.diff) {
		t.diff = append(t.diff, false)
		t.total = append(t.total, 0)
		t.lat = append(t.lat, 0)
		t.lo = append(t.lo, 0)
		t.end = append(t.end, -1)
	}
}

// start1 records flow fid of the larger run, just started (startFlow): the smaller run's QP of the
// same message carries the smaller message's share.
func (t *twin) start1(e *engine, fid int32) {
	t.grow(fid)
	f := &e.flows[fid]
	m := &t.small.Msgs[f.msg]
	nq, per := e.qpSplit(m)
	payload := min(per, int64(m.Bytes)-int64(f.qp)*per)
	big := &e.mg.Msgs[f.msg]
	if m.Bytes == big.Bytes {
		t.diff[fid] = false
		return
	}
	if bq, _ := e.qpSplit(big); bq != nq || payload <= 0 {
		t.spoiled = true // paired graphs never do this (pairs): the QPs differ
		return
	}
	w := e.wireBytes(payload)
	lat := e.latency(e.path[f.off:f.off+f.hops], payload)
	if lat != f.lat && e.cc != nil {
		// The path latency is the first packet's (engine.latency), the same at both sizes unless
		// the smaller QP is a single packet shorter than an MTU; congestion control times its
		// notifications with it from the first step (DCQCN's CNPs, IB CC's BECNs): the runs
		// would part at once.
		t.spoiled = true
		return
	}
	t.diff[fid], t.total[fid], t.lat[fid], t.lo[fid], t.end[fid] = true, w, lat, w, -1
	t.live = append(t.live, fid)
}

// sub1 takes x bytes off flow fid's bytes left, as the larger run just did.
func (t *twin) sub1(fid int32, x float64) {
	if int(fid) < len(t.diff) && t.diff[fid] {
		t.lo[fid] -= x
	}
}

// setEnd1 is engine.setEnd for the smaller run; filed is whether the larger run filed its end
// (not where it falls beyond the clock's range: then an end filed before stays, in both).
func (t *twin) setEnd1(now units.Time, fid int32, rate float64, filed bool) {
	if int(fid) >= len(t.diff) || !t.diff[fid] {
		return
	}
	d := math.Ceil(t.lo[fid] / rate * float64(units.Second))
	if (d < float64(units.MaxTime-now)) != filed {
		t.spoiled = true // one run files an end the other does not
		return
	}
	if filed {
		t.end[fid] = now + max(units.Time(d), 1)
	}
}

// ended1 notes that flow fid ran out of bytes in the larger run: a differing flow would have in
// the smaller run first.
func (t *twin) ended1(fid int32) {
	if int(fid) < len(t.diff) && t.diff[fid] {
		t.spoiled = true
	}
}

// marks1 checks DCQCN's delivery of flow fid's marks (markQueue.delivered over (d0, d1] with the
// tolerance eps(total), which reads the size): every batch's decisions must be the same with
// the smaller run's tolerance.
func (t *twin) marks1(fid int32, s *ccFlow, d0, d1, eps float64) {
	if int(fid) >= len(t.diff) || !t.diff[fid] || d1 <= d0 {
		return
	}
	epsS := 1e-9*t.total[fid] + 1e-6
	s.marks.each(func(b *markBatch) bool {
		st := max(b.start, d0)
		done, doneS := b.end <= d1+eps, b.end <= d1+epsS
		stop, stopS := !done && st >= d1-eps, !doneS && st >= d1-epsS
		if done != doneS || stop != stopS {
			t.spoiled = true
			return false
		}
		return done
	})
}

// forkNow1 reports whether the twin runs could part in the step about to be taken from e.now
// (engine.run's top): a differing flow that could send all but forkMargin of its bytes in it at
// its NIC's line rate (or its rate, or its congestion control's, whichever is higher; twice
// over), a quiet one whose smaller end falls in it, a differing flow that could start in it
// with too few bytes. Then inject's demands min(rem, rate x step) are the same in both runs
// where there is congestion control; without it they are the bytes left, and order checks the
// order they are shared in.
func (t *twin) forkNow1(e *engine) bool {
	if t.spoiled {
		return true
	}
	T := e.now
	tNext := e.nextEvent()
	var tEnd units.Time
	switch {
	case len(e.hot) == 0:
		tEnd = tNext
	case e.stationary:
		tEnd = min(tNext, e.jumpLimit())
	default:
		tEnd = T + e.cur
		// Flows that start within the step send for the rest of it, or from the step before
		// where they catch up.
		if tNext <= tEnd && t.minLo-4*t.rmax*(tEnd-T).Seconds() <= forkMargin {
			return true
		}
	}
	if e.opt.Until > 0 {
		tEnd = min(tEnd, e.opt.Until)
	}
	if tEnd == units.MaxTime {
		return true
	}
	for _, fid := range t.live {
		f := &e.flows[fid]
		hs := &e.hostSt[f.src]
		r := max(hs.rate, f.rate)
		if e.cc != nil {
			if c := e.cc.rate(fid); !math.IsInf(c, 1) {
				r = max(r, c)
			}
		}
		lo := min(t.lo[fid], f.rem) // the twin's bytes left, or the run's where the twin is larger
		if f.hot {
			if lo-2*r*(tEnd-min(T, f.from)).Seconds() <= forkMargin {
				return true
			}
			continue
		}
		if end := t.end[fid]; end >= 0 && end <= tEnd || e.ends.has(fid) && e.ends.timeOf(fid) <= tEnd ||
			lo-f.rate*(tEnd-f.t0).Seconds()-2*r*(tEnd-T).Seconds() <= forkMargin {
			return true
		}
	}
	return false
}

// order1 checks the demands d of host hs's flows before inject shares them (waterFill, without
// congestion control: a demand is the flow's bytes left): the smaller run's demands must sort
// into the same order (waterFill hands out its shares in it, and inject forwards the flows'
// bytes in it), and a differing flow's demand exceed the NIC's capacity c in both (then the
// shares are the same: forkNow's margin makes it so). Else the runs have parted within the step:
// spoiled.
func (t *twin) order1(hs *hostState, d []fill, c float64) {
	if len(d) < 2 || t.spoiled {
		return
	}
	t.ordBig, t.ordSmall = append(t.ordBig[:0], d...), append(t.ordSmall[:0], d...)
	differs := false
	for k := range t.ordSmall {
		x := &t.ordSmall[k]
		if fid := hs.flows[x.i]; int(fid) < len(t.diff) && t.diff[fid] {
			differs = true
			if x.d <= c { // the run's own demand (where the twin is the larger one)
				t.spoiled = true
				return
			}
			x.d = t.lo[fid] // without congestion control (or loss) a demand is the bytes left
			if x.d <= c {
				t.spoiled = true
				return
			}
		}
	}
	if !differs {
		return
	}
	byDemand := func(a, b fill) int {
		switch {
		case a.d < b.d:
			return -1
		case a.d > b.d:
			return 1
		}
		return int(a.i - b.i)
	}
	slices.SortFunc(t.ordBig, byDemand)
	slices.SortFunc(t.ordSmall, byDemand)
	for k := range t.ordBig {
		if t.ordBig[k].i != t.ordSmall[k].i {
			t.spoiled = true
			return
		}
	}
}

// toSmall makes engine c (a copy of the larger run at the boundary where the twin runs part) the
// smaller run: its message graph, and every differing flow's wire bytes, bytes left, path latency
// (the same: twin.start) and projected quiet end.
func (t *twin) toSmall(c *engine) {
	c.mg = t.small
	for _, fid := range t.live {
		f := &c.flows[fid]
		f.total, f.rem, f.lat = t.total[fid], t.lo[fid], t.lat[fid]
		if c.ends.has(fid) {
			c.ends.set(fid, t.end[fid], c.ends.seqOf(fid))
		}
	}
}

// pairs reports whether message graphs big and small are the same but for the sizes of messages
// (every message's ends, start, delay, dependencies, priority and connection the same; a size
// zero in both or in neither, and striped over as many QPs).
func pairs(e *engine, big, small *msggraph.Graph) bool {
	if len(big.Msgs) != len(small.Msgs) || big.Endpoints != small.Endpoints {
		return false
	}
	for i := range big.Msgs {
		a, b := &big.Msgs[i], &small.Msgs[i]
		if a.Src != b.Src || a.Dst != b.Dst || a.Start != b.Start || a.Delay != b.Delay || a.Prio != b.Prio || a.Conn != b.Conn ||
			(a.Bytes == 0) != (b.Bytes == 0) || !slices.Equal(a.Deps, b.Deps) {
			return false
		}
		if na, _ := e.qpSplit(a); a.Bytes != b.Bytes {
			if nb, _ := e.qpSplit(b); na != nb {
				return false
			}
		}
	}
	return true
}

// RunForked runs message graphs big and small, which differ only in the sizes of some messages
// (a compare's class at two sizes of its scaled sends), and returns both results, each the one
// Run gives it byte for byte: the larger run is run, and the smaller one is forked from it at the
// last step boundary the two share (see above), or run plain where they share none (a lossy
// fabric, faults, per-flow adaptive routing, several traffic classes without congestion control
// (classFill), Options.JoinIntervals, graphs that do not pair up, a reduction the two sizes do
// not share, congestion control with a path latency that differs with the size: twin.start).
func RunForked(g *topo.Graph, nh NextHopper, cfg fabric.Config, big, small *msggraph.Graph, opt Options) (bigRes, smallRes *result.Run, err error) {
	bigRes, smallRes, _, err = runForked(g, nh, cfg, big, small, opt)
	return bigRes, smallRes, err
}

// runForked is RunForked, also returning the steps (and jumps) the two runs shared: -1 where the
// smaller one ran plain.
func runForked(g *topo.Graph, nh NextHopper, cfg fabric.Config, big, small *msggraph.Graph, opt Options) (bigRes, smallRes *result.Run, shared int64, err error) {
	s, err := StartSizes(g, nh, cfg, []*msggraph.Graph{big, small}, opt)
	if err != nil {
		return nil, nil, -1, err
	}
	if bigRes, err = s.Result(0); err != nil {
		return bigRes, nil, s.shared[1], err
	}
	smallRes, err = s.Result(1)
	return bigRes, smallRes, s.shared[1], err
}

// Sizes is one message graph's runs at several sizes (a compare's class with its scaled sends
// at 16, 8 and 32 MiB), the others forked from the first one's run (StartSizes), each run to its
// end when its result is asked for (Result): a run never asked for costs only its steps before
// it forked. The compare asks for the 32 MiB one where its pair of 8 and 16 MiB is doubled
// (docs/flow.md, "The doubled pair's larger run forked").
type Sizes struct {
	g   *topo.Graph
	nh  NextHopper
	cfg fabric.Config
	opt Options
	gs  []*msggraph.Graph
	// eng[i] is graph i's engine at a step boundary (the first one's where the last twin forked
	// or spoiled, a fork's where it forked), nil where graph i runs plain (or ran).
	eng    []*engine
	shared []int64 // steps (and jumps) graph i's run took from the first one's; -1: none
	res    []*result.Run
	err    []error
	done   []bool
	wall   time.Time
}

// StartSizes runs gs[0] with a twin for each of gs[1:] (which differ from it only in the sizes
// of some messages, smaller or larger: pairs) until every twin has forked or spoiled (or the run
// ended), and copies the engine for each at the boundary where it parts (RunForked's rule, twin
// by twin). No run is finished: Result runs graph i to its end.
func StartSizes(g *topo.Graph, nh NextHopper, cfg fabric.Config, gs []*msggraph.Graph, opt Options) (*Sizes, error) {
	if len(gs) == 0 {
		return nil, errors.New("flow: no graph to run")
	}
	wall := time.Now()
	e, nh, err := setup(g, nh, cfg, gs[0], opt)
	if err != nil {
		return nil, err
	}
	n := len(gs)
	s := &Sizes{g: g, nh: nh, cfg: cfg, opt: opt, gs: gs, eng: make([]*engine, n), shared: make([]int64, n),
		res: make([]*result.Run, n), err: make([]error, n), done: make([]bool, n), wall: wall}
	s.eng[0] = e
	for i := range s.shared {
		s.shared[i] = -1
	}
	if e.loss != nil || e.faults != nil || e.ar != nil || e.cc == nil && e.nc > 1 || opt.JoinIntervals || opt.StopOnControl {
		return s, nil
	}
	var pending []int // the graphs whose twin has not forked or spoiled yet
	for i := 1; i < n; i++ {
		if pairs(e, gs[0], gs[i]) {
			pending = append(pending, i)
		}
	}
	attach := func() {
		e.twin = nil
		for k := len(pending) - 1; k >= 0; k-- {
			t := newTwin(e, gs[pending[k]])
			t.idx, t.next = pending[k], e.twin
			e.twin = t
		}
	}
	attach()
	for e.twin != nil {
		err = e.run()
		if errors.Is(err, errReductionBroken) {
			// The plain run, as runToEnd makes it, with fresh twins for the graphs not forked yet.
			if e, err = newEngine(g, nh, cfg, gs[0], opt); err != nil {
				return nil, err
			}
			e.initGraph()
			s.eng[0] = e
			attach()
			continue
		}
		if !errors.Is(err, errFork) {
			break // the larger run ended (its twins run plain), or failed
		}
		err = nil
		chain := e.twin
		e.twin = nil // not copied with the engine
		var keep []*twin
		for t := chain; t != nil; t = t.next {
			if !t.forkNow1(e) {
				keep = append(keep, t)
				continue
			}
			if !t.spoiled && sameReduction(e, g, nh, cfg, t.small, opt) {
				c, _ := e.clone()
				t.toSmall(c)
				s.eng[t.idx] = c
				s.shared[t.idx] = e.steps + e.jumps
				forkedRuns.Add(1)
				forkedSteps.Add(s.shared[t.idx])
			}
			pending = slices.DeleteFunc(pending, func(i int) bool { return i == t.idx })
		}
		for k := len(keep) - 1; k >= 0; k-- {
			keep[k].next = e.twin
			e.twin = keep[k]
		}
	}
	e.twin = nil
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Result is graph i's run to its end (StartSizes), each the one Run gives it byte for byte: the
// first graph's run goes on from where the forks left it, a forked one from its fork, one that
// did not fork runs plain. Asked again, it is the same result.
func (s *Sizes) Result(i int) (*result.Run, error) {
	if s.done[i] {
		return s.res[i], s.err[i]
	}
	s.done[i] = true
	if e := s.eng[i]; e != nil {
		s.eng[i] = nil
		wall := s.wall
		if i > 0 {
			wall = time.Now()
		}
		s.res[i], _, s.err[i] = e.runToEnd(s.g, s.nh, s.cfg, s.gs[i], s.opt, wall)
	} else {
		s.res[i], s.err[i] = Run(s.g, s.nh, s.cfg, s.gs[i], s.opt)
	}
	return s.res[i], s.err[i]
}

// Shared is the steps (and jumps) graph i's run took from the first one's before it forked: -1
// where it runs plain (and 0 for the first).
func (s *Sizes) Shared(i int) int64 {
	if i == 0 {
		return 0
	}
	return s.shared[i]
}

// forkedRuns and forkedSteps count the smaller runs forked (RunForked) and the steps (and
// jumps) they took from the larger ones, over the process (ForkCounts).
var forkedRuns, forkedSteps atomic.Int64

// ForkCounts is the number of smaller runs RunForked has forked from larger ones in this
// process, and the steps they shared with them (a diagnostic: compare's tests and measurements).
func ForkCounts() (runs, steps int64) { return forkedRuns.Load(), forkedSteps.Load() }

// sameReduction reports whether the smaller graph's run would hold the same symmetry reduction
// as e (set up on the larger graph): none in either, or the same classes of copies.
func sameReduction(e *engine, g *topo.Graph, nh NextHopper, cfg fabric.Config, small *msggraph.Graph, opt Options) bool {
	if e.red == nil {
		return true // a plain run: the smaller one's result is its plain run's (Run) whether reduced or not
	}
	s, err := newEngine(g, nh, cfg, small, opt)
	if err != nil {
		return false
	}
	r, err := s.reduce()
	if err != nil {
		return false
	}
	a := e.red
	if r == nil {
		return false
	}
	return slices.Equal(a.repOf, r.repOf) && slices.Equal(a.mult, r.mult) && slices.Equal(a.pairs, r.pairs) && slices.Equal(a.coupled, r.coupled) && a.copies == r.copies
}

// has reports whether flow fid has a projected end filed.
func (q *endHeap) has(fid int32) bool { return int(fid) < len(q.pos) && q.pos[fid] >= 0 }

// timeOf is flow fid's projected end (has).
func (q *endHeap) timeOf(fid int32) units.Time { return q.h[q.pos[fid]].t }

// seqOf is the sequence number of flow fid's end (has).
func (q *endHeap) seqOf(fid int32) uint64 { return q.h[q.pos[fid]].seq }
