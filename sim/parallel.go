package sim

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/fabricsim/fabricsim/units"
)

// Group runs one simulation as partitions that execute in parallel: conservative, synchronous
// windows (the lookahead barrier of YAWNS: Nicol, "The cost of conservative synchronization in
// parallel discrete event simulations", JACM 40(2), 1993). Every entity (SetEntities) belongs to
// one partition, or to the main Sim (global entities: a run's watchdog). A window starts at the
// earliest pending event T anywhere and runs, in every partition at once, the events up to
// T+lookahead-1; an event one partition schedules for another's entity must lie at least the
// lookahead ahead of the event scheduling it (a packet crossing a link that the partitioning
// cuts: its propagation delay), so it lies beyond the window and is handed over at the barrier.
// The main Sim's events run alone between windows: a window ends early at the next one, which
// then runs after every partition event of its time (global entities take the highest numbers,
// so in the entity order they are last among equal times).
//
// The result is the sequential run's, event for event: each partition executes its entities'
// events in (time, ordering word) order, the word does not depend on the interleaving
// (SetEntities), and no event reaches a partition later than its time. Which events a
// partition gets, and in what order it receives them, changes only which slab slots they take.
type Group struct {
	main      *Sim
	parts     []*partition
	partOf    []int32 // entity -> partition; -1: the main Sim
	lookahead Time
	// Windows counts the windows run; HandedOver the events sent from one partition to another;
	// CriticalEvents sums, over the windows, the events of the busiest partition: the run's
	// events over it bound the speedup the partitioning allows (its load balance), whatever the
	// machine.
	Windows        uint64
	HandedOver     uint64
	CriticalEvents uint64
	// BeforeMain, when set, is called before the main Sim's events of a window run, and
	// AfterWindow after every window (with the partitions idle): the owner merges the
	// partitions' counters for global events or progress.
	BeforeMain  func()
	AfterWindow func()
	// Exchange, when set, is called after every window for each partition (its index, the
	// window's last instant and its parity, Sim.Parity), on the partition's worker, all
	// partitions at once, before the partition runs another event: the owner hands partition i
	// what the others wrote for it during the window without events (state that takes effect
	// at least the lookahead later), and may schedule events on partition i's Sim from then on
	// (ScheduleAs). A call may read what any partition wrote for i in the window of that
	// parity and write only partition i's state.
	//
	// ExchangeFrom, when set, is called after every window with its parity (the partitions
	// idle) and returns a time before which the Exchange of that window schedules no event
	// (units.MaxTime: none). When the next window starts no later, the next window would be
	// the same with the Exchange run first, so the Group runs it at the start of the next
	// window's job instead of as a job of its own: one hand-off a window instead of two
	// (the Exchange's writes are then double-buffered by parity). Otherwise, after a stop, or
	// when the main Sim's events follow the window, the Exchange runs at once.
	Exchange     func(part int, bound Time, parity int)
	ExchangeFrom func(parity int) Time
	// Deferred counts the windows whose Exchange ran with the next window.
	Deferred uint64
	// Trace, when set, is called after every window (the partitions idle, before the owner's
	// AfterWindow) with what each partition did in it: for measuring the load balance window
	// by window (docs/architecture.md, "Work per window"). Its slices are reused.
	Trace    func(w *WindowWork)
	last     WindowWork      // what Trace is given
	busySeen []time.Duration // per partition, its busy time at the window before
	started  bool

	// The hand-offs (barrier.go): the coordinator writes job, then counts it in posted; each
	// worker counts the jobs it finished in finished, and the coordinator waits for all of
	// them. quit, set before a last count in posted, ends the workers.
	job      job
	posted   atomic.Uint64
	finished atomic.Uint64
	want     uint64 // finished when the job posted last is done
	quit     atomic.Bool
	coord    *waiter
}

// WindowWork is what the partitions did in one window (Group.Trace).
type WindowWork struct {
	Window      uint64 // its number, from 0
	From, Bound Time   // it ran the events at From..Bound
	// Events and Handed are, per partition, the events it ran and those it handed to other
	// partitions (for the next windows).
	Events, Handed []uint64
	// Busy is, per partition, the wall time of its jobs since the window before (this window's,
	// and an exchange run on its own in between): machine-dependent, unlike the counts.
	Busy []time.Duration
}

// partition is one worker's share: its own Sim (queue and clock) and the events it hands to
// the others, double-buffered by window parity (a window writes one buffer while the receivers
// drain the other, filled by the window before).
type partition struct {
	g    *Group
	id   int32
	s    *Sim
	out  [2][][]handed // [parity][destination partition]
	par  int           // parity of the window running
	end  Time          // the window's end (exclusive): handed-over events lie at or after it
	next Time          // earliest pending event after the window (own or handed over)
	w    *waiter       // where its worker sleeps between jobs (barrier.go)
	// panicked holds what a worker's window panicked with.
	panicked any
	seen     uint64 // events run before the window
	// busy sums the wall time of the jobs it ran (Group.Times).
	busy time.Duration
	// The partitions are allocated one after another and each is written by its own worker:
	// whole cache lines keep one's words off another's line (TestPartitionLayout).
	_ [56]byte
}

// runs reports whether p (nil: not a partition) runs entity ent's events.
func (p *partition) runs(ent int32) bool { return p != nil && p.g.partOf[ent] == p.id }

// job is a worker's next task: the Exchange after the window that ended at exBound (of parity
// exParity), if exchange; then the window from..bound (of parity), if window.
type job struct {
	exchange bool
	exBound  Time
	exParity int
	window   bool
	from     Time
	bound    Time
	parity   int
}

// run runs job j on partition p.
func (p *partition) run(j job) {
	start := time.Now()
	defer func() { p.busy += time.Since(start) }()
	if j.exchange {
		p.g.Exchange(int(p.id), j.exBound, j.exParity)
		if j.window && p.next < j.from {
			panic(fmt.Sprintf("sim: the exchange after the window ending at %v scheduled an event at %v, before the next window's start %v (ExchangeFrom)", j.exBound, p.next, j.from))
		}
	}
	if j.window {
		p.window(j.bound, j.parity)
	}
}

type handed struct {
	at  Time
	ord uint64
	ent int32
	op  int32
	i   int32
	h   Handler
	p   unsafe.Pointer
}

// NewGroup splits the simulation of main into parts partitions: partOf gives each of main's
// entities (SetEntities, which must have been called) its partition, 0..parts-1, or -1 for
// the main Sim. lookahead is the least time ahead of its scheduling event at which an event can
// reach another partition's entity. Events for partition entities must be scheduled on the
// group's Sims (main's ScheduleTo routes them) from now on.
func NewGroup(main *Sim, parts int, partOf []int32, lookahead Time) *Group {
	if main.counts == nil || len(partOf) != len(main.counts) {
		panic("sim: NewGroup needs SetEntities and one partition per entity")
	}
	if parts < 1 || lookahead <= 0 {
		panic(fmt.Sprintf("sim: NewGroup with %d partitions and lookahead %v", parts, lookahead))
	}
	if main.q.len() > 0 {
		panic("sim: NewGroup after events were scheduled")
	}
	g := &Group{main: main, partOf: partOf, lookahead: lookahead}
	for i := 0; i < parts; i++ {
		s := &Sim{ProgressEvery: 1<<63 - 1, counts: main.counts, cur: main.cur}
		s.q.noTouch, s.q.prefetch = main.q.noTouch, main.q.prefetch
		p := &partition{g: g, id: int32(i), s: s, next: units.MaxTime}
		for b := range p.out {
			p.out[b] = make([][]handed, parts)
		}
		s.par, s.split = p, true
		g.parts = append(g.parts, p)
	}
	main.grp, main.split = g, true
	return g
}

// Waits returns how many of the hand-offs' waits (barrier.go) ended while spinning and how
// many slept, over the coordinator and the workers: machine-dependent, for measuring.
func (g *Group) Waits() (spun, slept uint64) {
	ws := []*waiter{g.coord}
	for _, p := range g.parts[1:] {
		ws = append(ws, p.w)
	}
	for _, w := range ws {
		if w != nil {
			spun += w.spun
			slept += w.slept
		}
	}
	return spun, slept
}

// Times returns, per partition, the wall time of the jobs it ran (windows and exchanges) and
// the wall time its worker waited for the next one (partition 0's: the coordinator's, for the
// other workers to finish; barrier.go): machine-dependent, for measuring where the threads'
// time goes.
func (g *Group) Times() (busy, waited []time.Duration) {
	for i, p := range g.parts {
		w := p.w
		if i == 0 {
			w = g.coord
		}
		var d time.Duration
		if w != nil {
			d = w.waited
		}
		busy, waited = append(busy, p.busy), append(waited, d)
	}
	return busy, waited
}

// PartEvents returns, per partition, the events it ran in the windows so far.
func (g *Group) PartEvents() []uint64 {
	ev := make([]uint64, len(g.parts))
	for i, p := range g.parts {
		ev[i] = p.seen
	}
	return ev
}

// Partitions returns the number of partitions.
func (g *Group) Partitions() int { return len(g.parts) }

// Part returns partition i's Sim (the clock its entities' handlers read).
func (g *Group) Part(i int) *Sim { return g.parts[i].s }

// Events returns the events run so far in every partition and the main Sim.
func (g *Group) Events() uint64 {
	n := g.main.events
	for _, p := range g.parts {
		n += p.s.events
	}
	return n
}

// Pending returns the events not yet run anywhere.
func (g *Group) Pending() int {
	n := g.main.q.len()
	for _, p := range g.parts {
		n += p.s.q.len()
		for _, b := range p.out {
			for _, l := range b {
				n += len(l)
			}
		}
	}
	return n
}

// route files an event the main Sim schedules for a partition's entity (between windows, with
// the partitions idle).
func (g *Group) route(at Time, ord uint64, ent int32, h Handler, op, i int32, p unsafe.Pointer) {
	d := g.partOf[ent]
	if d < 0 {
		g.main.q.push(at, ord, ent, h, op, i, p)
		return
	}
	dp := g.parts[d]
	if at < dp.s.now {
		panic(fmt.Sprintf("sim: event for entity %d at %v, before its partition's time %v", ent, at, dp.s.now))
	}
	dp.s.q.rewind(at)
	dp.s.q.push(at, ord, ent, h, op, i, p)
	dp.next = min(dp.next, at)
}

// handOver keeps an event for another partition's entity until the barrier.
func (p *partition) handOver(at Time, ord uint64, ent int32, h Handler, op, i int32, ptr unsafe.Pointer) {
	d := p.g.partOf[ent]
	if d < 0 {
		panic(fmt.Sprintf("sim: partition %d scheduled an event of global entity %d", p.id, ent))
	}
	if at < p.end {
		panic(fmt.Sprintf("sim: partition %d scheduled an event for entity %d (partition %d) at %v, inside the window ending at %v: the lookahead is broken", p.id, ent, d, at, p.end))
	}
	p.out[p.par][d] = append(p.out[p.par][d], handed{at: at, ord: ord, ent: ent, op: op, i: i, h: h, p: ptr})
	p.next = min(p.next, at)
}

// window runs one window on partition p: take the events the others handed over in the
// window before, run up to bound, and note the earliest event pending afterwards.
func (p *partition) window(bound Time, parity int) {
	prev := parity ^ 1
	t := units.MaxTime
	for _, src := range p.g.parts {
		for _, e := range src.out[prev][p.id] {
			t = min(t, e.at)
		}
	}
	if t != units.MaxTime {
		p.s.q.rewind(t)
		for _, src := range p.g.parts {
			// The entries keep their references until overwritten, as the queue's slab slots
			// do (queue.release): handlers are long-lived and packets pooled. Clearing them here
			// wrote every line of the sender's outbox from the other core, and the sender's next
			// window then took each line back: that store was 91-94 % of window's own samples
			// on the k=16 Ethernet run with two threads (docs/architecture.md, "Sleeping
			// hand-offs").
			l := src.out[prev][p.id]
			for k := range l {
				e := &l[k]
				p.s.q.push(e.at, e.ord, e.ent, e.h, e.op, e.i, e.p)
			}
			src.out[prev][p.id] = l[:0]
		}
	}
	p.par, p.end = parity, bound+1
	p.next = units.MaxTime
	_ = p.s.Run(bound)
	if p.s.q.len() > 0 && !p.s.stopped {
		p.next = min(p.next, p.s.q.minTime())
	}
}

// safeWindow runs window (or, for an exchange job, the Group's Exchange) on a worker
// goroutine, keeping a panic for the coordinator to raise.
func (p *partition) safeWindow(j job) {
	defer func() {
		if r := recover(); r != nil {
			p.panicked = r
		}
	}()
	p.run(j)
}

// work is partition p's worker: it waits for each job posted, runs it and counts it finished.
func (g *Group) work(p *partition) {
	for seen := uint64(1); ; seen++ {
		p.w.await(&g.posted, seen)
		if g.quit.Load() {
			return
		}
		p.safeWindow(g.job)
		g.finished.Add(1)
		g.coord.signal()
	}
}

// runAll runs j on every partition, the first on the calling goroutine, the others on their
// workers, and waits for them; a worker's panic is raised here.
func (g *Group) runAll(j job) {
	if len(g.parts) == 1 {
		g.parts[0].run(j)
		return
	}
	g.job = j
	g.posted.Add(1)
	for _, p := range g.parts[1:] {
		p.w.signal()
	}
	g.parts[0].run(j)
	g.want += uint64(len(g.parts) - 1)
	g.coord.await(&g.finished, g.want)
	for _, p := range g.parts[1:] {
		if r := p.panicked; r != nil {
			panic(r) // a worker's panic (a broken invariant) ends the run as in a sequential one
		}
	}
}

// deferExchange reports whether the Exchange of the window just run (of parity) can run at
// the start of the next window: no event it schedules lies before the next window's start,
// the earliest event pending in the partitions (the main Sim's do not run before the
// Exchange: the caller runs it at once when they follow the window), and that window will run.
func (g *Group) deferExchange(parity int, until Time) bool {
	if g.ExchangeFrom == nil {
		return false
	}
	from := g.ExchangeFrom(parity)
	t := units.MaxTime
	for _, p := range g.parts {
		t = min(t, p.next)
	}
	return t <= until && t <= from
}

// Run executes events in every partition and the main Sim until none is left, one stops
// (Stop, or the main Sim's context: StopOn), or the next lies after until. The main Sim's
// Progress is called about every ProgressEvery events (all partitions' together), at a window's
// end. It returns the first error (the main Sim's, then the partitions' in order). The main
// Sim's Events and Now then count every partition's events and the latest time any reached.
func (g *Group) Run(until Time) error {
	if g.started {
		panic("sim: Group.Run twice")
	}
	g.started = true
	for _, p := range g.parts {
		if p.s.q.len() > 0 {
			p.next = p.s.q.minTime()
		}
	}
	if len(g.parts) > 1 {
		g.coord = newWaiter(len(g.parts))
		var wg sync.WaitGroup
		for _, p := range g.parts[1:] {
			p.w = newWaiter(len(g.parts))
			wg.Go(func() { g.work(p) })
		}
		defer func() {
			g.quit.Store(true)
			g.posted.Add(1)
			for _, p := range g.parts[1:] {
				p.w.signal()
			}
			wg.Wait()
		}()
	}
	main := g.main
	nextProgress := main.ProgressEvery
	var pend job // the last window's Exchange, when it runs with the next window
	var err error
	for !main.stopped {
		t := units.MaxTime
		for _, p := range g.parts {
			t = min(t, p.next)
		}
		mainNext := units.MaxTime
		if main.q.len() > 0 {
			mainNext = main.q.minTime()
		}
		t = min(t, mainNext)
		if t == units.MaxTime || t > until {
			break
		}
		bound := min(t+g.lookahead-1, until, mainNext)
		j := pend
		pend = job{}
		j.window, j.from, j.bound, j.parity = true, t, bound, int(g.Windows&1)
		g.runAll(j)
		g.Windows++
		var most uint64
		w := &g.last
		w.Window, w.From, w.Bound = g.Windows-1, t, bound
		w.Events, w.Handed, w.Busy = w.Events[:0], w.Handed[:0], w.Busy[:0]
		if g.busySeen == nil {
			g.busySeen = make([]time.Duration, len(g.parts))
		}
		for i, p := range g.parts {
			ev := p.s.events - p.seen
			most = max(most, ev)
			p.seen = p.s.events
			var out uint64
			for _, l := range p.out[p.par] {
				out += uint64(len(l))
			}
			g.HandedOver += out
			w.Events, w.Handed = append(w.Events, ev), append(w.Handed, out)
			w.Busy = append(w.Busy, p.busy-g.busySeen[i])
			g.busySeen[i] = p.busy
		}
		g.CriticalEvents += most
		if g.Trace != nil {
			g.Trace(w)
		}
		stopped := false
		for _, p := range g.parts {
			if p.s.stopped {
				stopped = true
				if err == nil {
					err = p.s.err
				}
			}
		}
		if g.Exchange != nil {
			ex := job{exchange: true, exBound: bound, exParity: j.parity}
			// (deferExchange first: ExchangeFrom is called after every window.)
			if g.deferExchange(j.parity, until) && !stopped && mainNext != bound {
				pend = ex
				g.Deferred++
			} else {
				g.runAll(ex)
			}
		}
		if stopped {
			break
		}
		if g.AfterWindow != nil {
			g.AfterWindow()
		}
		if mainNext == bound {
			if g.BeforeMain != nil {
				g.BeforeMain()
			}
			if merr := main.Run(bound); merr != nil && main.err == nil {
				main.err = merr
			}
		}
		if ev := g.Events(); ev >= nextProgress {
			for nextProgress <= ev {
				nextProgress += main.ProgressEvery
			}
			if main.Progress != nil {
				main.Progress(bound, ev)
			}
			if main.ctx != nil && main.ctx.Err() != nil {
				main.Stop(context.Cause(main.ctx))
			}
		}
	}
	if pend.exchange {
		g.runAll(pend)
	}
	// The main Sim accounts for the whole run.
	for _, p := range g.parts {
		main.events += p.s.events
		main.now = max(main.now, p.s.now)
		p.s.events = 0
	}
	if main.err != nil {
		return main.err
	}
	return err
}
