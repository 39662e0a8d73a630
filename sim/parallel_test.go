package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/fabricsim/fabricsim/units"
)

// node is one entity of the ring model: each event it handles is logged, and schedules up to
// two more of its own (zero delay, so ties in time are common, or a little later) and one for
// the next entity on the ring, at least lookahead ahead.
type node struct {
	id, next  int32
	s         *Sim // its partition's Sim (or the only one)
	ring      []*node
	rng       *rand.Rand
	log       []int64
	left      int
	lookahead Time
}

func (n *node) Handle(ev *Event) {
	n.log = append(n.log, int64(n.s.Now())<<20|int64(ev.I))
	if n.left <= 0 {
		return
	}
	n.left--
	for k := n.rng.IntN(3); k > 0; k-- {
		n.s.Schedule(n.s.Now()+Time(n.rng.IntN(3))*1000, n, 0, int32(n.rng.IntN(1000)), nil)
	}
	peer := n.ring[n.next]
	n.s.ScheduleTo(peer.id, n.s.Now()+n.lookahead+Time(n.rng.IntN(4))*500, peer, 0, int32(n.rng.IntN(1000)), nil)
}

// ring builds the model on main for ents entities (the last, ents, is the global entity) and
// returns the nodes; partOf, when set, gives each its partition.
func ring(main *Sim, ents int, partOf []int32, look Time) []*node {
	main.SetEntities(ents+1, int32(ents))
	var g *Group
	if partOf != nil {
		parts := int(slices.Max(partOf)) + 1
		g = NewGroup(main, parts, append(slices.Clone(partOf), -1), look)
	}
	nodes := make([]*node, ents)
	for i := range nodes {
		n := &node{id: int32(i), next: int32((i + 1) % ents), s: main, rng: rand.New(rand.NewPCG(uint64(i), 7)), left: 300, lookahead: look}
		if g != nil {
			n.s = g.Part(int(partOf[i]))
		}
		nodes[i] = n
	}
	for i, n := range nodes {
		n.ring = nodes
		// Every entity starts at time 0 and at 5000 (ties across entities at once).
		main.ScheduleTo(int32(i), 0, n, 0, int32(i), nil)
		main.ScheduleTo(int32(i), 5000, n, 0, int32(i), nil)
	}
	return nodes
}

// TestGroupMatchesSequential runs the ring model sequentially and in 2, 3 and 5 partitions:
// every entity must handle the same events at the same times in the same order, and the totals
// (events, end time) must agree.
func TestGroupMatchesSequential(t *testing.T) {
	const ents, look = 10, Time(3000)
	seq := New()
	want := ring(seq, ents, nil, look)
	if err := seq.Run(units.MaxTime); err != nil {
		t.Fatal(err)
	}
	for _, partOf := range [][]int32{
		{0, 0, 0, 0, 0, 1, 1, 1, 1, 1},
		{0, 1, 2, 0, 1, 2, 0, 1, 2, 0},
		{4, 4, 3, 3, 2, 2, 1, 1, 0, 0},
	} {
		main := New()
		got := ring(main, ents, partOf, look)
		if err := main.grp.Run(units.MaxTime); err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if !slices.Equal(got[i].log, want[i].log) {
				t.Fatalf("partitions %v: entity %d handled %d events, differing from the sequential run's %d", partOf, i, len(got[i].log), len(want[i].log))
			}
		}
		if main.Events() != seq.Events() || main.Now() != seq.Now() || main.grp.Pending() != 0 {
			t.Fatalf("partitions %v: %d events ending at %v (%d pending), sequential %d at %v", partOf, main.Events(), main.Now(), main.grp.Pending(), seq.Events(), seq.Now())
		}
		if main.grp.HandedOver == 0 || main.grp.Windows < 2 {
			t.Fatalf("partitions %v: %d windows, %d events handed over: not a parallel run", partOf, main.grp.Windows, main.grp.HandedOver)
		}
	}
}

// TestGroupLookaheadBroken: an event for another partition inside the window is a broken
// lookahead, which the kernel refuses rather than run out of order.
func TestGroupLookaheadBroken(t *testing.T) {
	main := New()
	nodes := ring(main, 4, []int32{0, 0, 1, 1}, 3000)
	for _, n := range nodes {
		n.lookahead = 10 // shorter than the group's 3000
	}
	defer func() {
		if recover() == nil {
			t.Fatal("no panic for an event inside the window")
		}
	}()
	_ = main.grp.Run(units.MaxTime)
}

// TestRewind files keys before the bucket being drained (as a partition's queue does after its
// peek moved ahead) and checks they come out in order, with the far keys.
func TestRewind(t *testing.T) {
	s := New()
	r := &recorder{s: s}
	s.Schedule(10*bucketWidth, r, 0, 3, nil)
	s.Schedule(horizon+50*bucketWidth, r, 0, 4, nil)
	s.Schedule(20*bucketWidth, r, 0, 5, nil)
	if got := s.q.minTime(); got != 10*bucketWidth {
		t.Fatalf("min %v", got)
	}
	s.q.rewind(3)
	s.q.push(3, 100, 0, r, 0, 1, nil)
	s.q.push(2*bucketWidth, 101, 0, r, 0, 2, nil)
	if err := s.Run(units.MaxTime); err != nil {
		t.Fatal(err)
	}
	if want := []int32{1, 2, 3, 5, 4}; !slices.Equal(r.got, want) {
		t.Fatalf("order %v, want %v", r.got, want)
	}
}

// BenchmarkGroupWindow measures the synchronization cost of a window: two partitions that each
// run one event per window and hand one to the other (the barrier, the hand-over and the
// coordinator's step, with almost no work inside). ns/op is the cost of one window.
func BenchmarkGroupWindow(b *testing.B) {
	main := New()
	main.SetEntities(3, 2)
	partOf := []int32{0, 1, -1}
	g := NewGroup(main, 2, partOf, 1000)
	startPingPong(main, g, partOf, b.N, 0)
	b.ResetTimer()
	if err := g.Run(units.MaxTime); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(g.Windows)/float64(b.N), "windows/op")
}

// BenchmarkGroupHandoff is BenchmarkGroupWindow with work in the windows: each entity's
// event computes for a fixed loop (20,000 steps, some tens of microseconds), so that each
// worker is busy when the other finishes, as in a packet run's windows, and a waiter that
// sleeps waits for its thread to be woken; in two partitions with the waiters spinning
// (SpinWait) and sleeping at once (spin=0), and in one partition (both entities' work on one
// thread, no hand-off). One partition's ns/op over two's is the speedup the hand-offs leave of
// the ideal 2 (on two free cores only: with more runnable threads than cores it measures the
// machine's load).
func BenchmarkGroupHandoff(b *testing.B) {
	defer func(d time.Duration) { SpinWait = d }(SpinWait)
	for _, c := range []struct {
		parts int
		spin  time.Duration
	}{{2, SpinWait}, {2, 0}, {1, 0}} {
		b.Run(fmt.Sprintf("parts=%d/spin=%v", c.parts, c.spin), func(b *testing.B) {
			SpinWait = c.spin
			main := New()
			main.SetEntities(3, 2)
			partOf := []int32{0, 1, -1}
			if c.parts == 1 {
				partOf[1] = 0
			}
			g := NewGroup(main, c.parts, partOf, 1000)
			startPingPong(main, g, partOf, b.N, 20000)
			b.ResetTimer()
			if err := g.Run(units.MaxTime); err != nil {
				b.Fatal(err)
			}
			if spun, slept := g.Waits(); spun+slept > 0 {
				b.ReportMetric(float64(slept)/float64(spun+slept), "slept/wait")
			}
		})
	}
}

// startPingPong schedules the first events of two pingPong entities (0 and 1, in the partitions
// partOf gives them) that exchange n events each, work iterations of busy work an event.
func startPingPong(main *Sim, g *Group, partOf []int32, n, work int) {
	p := [2]*pingPong{}
	for i := range p {
		p[i] = &pingPong{id: int32(i), s: g.Part(int(partOf[i])), left: n, work: work}
	}
	p[0].peer, p[1].peer = p[1], p[0]
	main.ScheduleTo(0, 0, p[0], 0, 0, nil)
	main.ScheduleTo(1, 0, p[1], 0, 0, nil)
}

type pingPong struct {
	id   int32
	s    *Sim
	peer *pingPong
	left int
	work int // iterations of busy work an event
	sink uint64
}

func (p *pingPong) Handle(*Event) {
	x := uint64(p.left)
	for range p.work { // a few ns an iteration
		x = x*6364136223846793005 + 1442695040888963407
	}
	p.sink += x
	if p.left--; p.left > 0 {
		p.s.ScheduleTo(p.peer.id, p.s.Now()+1000, p.peer, 0, 0, nil)
	}
}

// TestGroupSpinMatchesSleep runs the ring model in two partitions with the hand-offs' waiters
// spinning (SpinWait) and sleeping at once (0): the same events in the same order, and with 0
// no wait ends in a spin.
func TestGroupSpinMatchesSleep(t *testing.T) {
	const ents, look = 10, Time(3000)
	defer func(d time.Duration) { SpinWait = d }(SpinWait)
	var logs [2][]*node
	for i, spin := range []time.Duration{100 * time.Microsecond, 0} {
		SpinWait = spin
		main := New()
		logs[i] = ring(main, ents, []int32{0, 0, 0, 0, 0, 1, 1, 1, 1, 1}, look)
		if err := main.grp.Run(units.MaxTime); err != nil {
			t.Fatal(err)
		}
		spun, slept := main.grp.Waits()
		// One wait a hand-off on each side (the coordinator's and the worker's, a window), and
		// each worker's last wait, for the quit post at the end of Run (which sleeps when the
		// worker got there first: on a loaded machine, now and then).
		workers := uint64(main.grp.Partitions() - 1)
		if want := 2*main.grp.Windows + workers; spun+slept > want {
			t.Fatalf("spin %v: %d waits spun and %d slept over %d windows and %d workers: more than one each a hand-off and a quit each", spin, spun, slept, main.grp.Windows, workers)
		}
		if spin == 0 && spun != 0 {
			t.Fatalf("spin 0: %d waits ended spinning", spun)
		}
	}
	for i := range logs[0] {
		if !slices.Equal(logs[0][i].log, logs[1][i].log) {
			t.Fatalf("entity %d: %d events spinning, %d sleeping", i, len(logs[0][i].log), len(logs[1][i].log))
		}
	}
}

// exchanger is an owner's Exchange for the ring model: after every window ending before
// stop, each partition's entities with an even ID schedule for themselves (ScheduleAs) an event
// delay after the window's end, what a credit's wake-up is to the fabric; from is the window's
// end plus delay (ExchangeFrom).
type exchanger struct {
	members [][]*node // per partition
	delay   Time
	stop    Time
	ends    [2]Time // the last window's end of each parity, as ExchangeFrom saw it (when set)
	from    bool    // ExchangeFrom is set
}

func (x *exchanger) exchange(part int, bound Time, parity int) {
	if x.from && x.ends[parity] != bound {
		panic(fmt.Sprintf("exchange after the window ending at %v, the last of its parity ended at %v", bound, x.ends[parity]))
	}
	for _, n := range x.members[part] {
		if n.id%2 == 0 && bound < x.stop {
			n.s.ScheduleAs(n.id, bound+x.delay, n, 0, 7, nil)
		}
	}
}

// TestGroupDeferredExchange runs the ring model with an Exchange in one, two and three
// partitions, the Exchange run after each window as a hand-off of its own (no ExchangeFrom) and
// at the start of the next window's job: every run handles the same events in the same order
// in the same windows as the one-partition run, and with ExchangeFrom some windows' Exchange
// is deferred (those followed by events of the ring). The exchanges go on for a while after the ring's own events end, when the
// windows hold nothing else: an ExchangeFrom too late there loses events or panics.
func TestGroupDeferredExchange(t *testing.T) {
	const ents, look = 10, Time(3000)
	seq := New()
	ring(seq, ents, nil, look)
	if err := seq.Run(units.MaxTime); err != nil {
		t.Fatal(err)
	}
	run := func(partOf []int32, deferred bool) (*Group, []*node) {
		main := New()
		nodes := ring(main, ents, partOf, look)
		g := main.grp
		x := &exchanger{delay: look / 2, stop: seq.Now() + 20*look}
		x.members = make([][]*node, g.Partitions())
		for i, p := range partOf {
			x.members[p] = append(x.members[p], nodes[i])
		}
		g.Exchange = x.exchange
		if deferred {
			// Each call comes right after its window, whose end the partitions keep.
			x.from = true
			g.ExchangeFrom = func(parity int) Time {
				x.ends[parity] = g.parts[0].end - 1
				return x.ends[parity] + x.delay
			}
		}
		if err := g.Run(units.MaxTime); err != nil {
			t.Fatal(err)
		}
		return g, nodes
	}
	g0, want := run(make([]int32, ents), true)
	for _, partOf := range [][]int32{{0, 0, 0, 0, 0, 1, 1, 1, 1, 1}, {0, 1, 2, 0, 1, 2, 0, 1, 2, 0}} {
		for _, deferred := range []bool{false, true} {
			g, got := run(partOf, deferred)
			for i := range want {
				if !slices.Equal(got[i].log, want[i].log) {
					t.Fatalf("partitions %v, deferred %v: entity %d handled %d events, in one partition %d", partOf, deferred, i, len(got[i].log), len(want[i].log))
				}
			}
			if g.Windows != g0.Windows || deferred != (g.Deferred > 0) || g.Pending() != 0 {
				t.Fatalf("partitions %v, deferred %v: %d windows (one partition %d), %d exchanges deferred", partOf, deferred, g.Windows, g0.Windows, g.Deferred)
			}
		}
	}
}

// TestSpinBudgetFollowsWaits checks the spin budget's rule (barrier.go) on a run of waits: a
// wait that slept but lay within SpinWait sets the budget to twice itself (capped at SpinWait),
// one longer than SpinWait halves it (down to minSpin), one the spin caught leaves it. The
// sequence is an idle machine's (waits of 200 us, uneven windows), a descheduled worker's
// (10 ms) and the idle machine again: the budget must come back to catch the 200 us waits,
// which the rule it replaced (halve after every wait that slept) never did once below them.
func TestSpinBudgetFollowsWaits(t *testing.T) {
	us := time.Microsecond
	w := &waiter{max: 2000 * us, spin: 2000 * us}
	for _, c := range []struct {
		slept   bool
		d, want time.Duration
	}{
		{false, 200 * us, 2000 * us},  // caught: unchanged
		{true, 10000 * us, 1000 * us}, // descheduled: halved
		{true, 10000 * us, 500 * us},
		{true, 10000 * us, 250 * us},
		{true, 300 * us, 600 * us},   // slept, within SpinWait: twice the wait
		{true, 1500 * us, 2000 * us}, // twice the wait, capped
		{true, 2001 * us, 1000 * us}, // just over SpinWait: halved
		{true, 5000000 * us, 500 * us},
		{true, 5000000 * us, 250 * us},
		{true, 5000000 * us, 125 * us},
		{true, 5000000 * us, 62500 * time.Nanosecond},
		{true, 5000000 * us, 31250 * time.Nanosecond},
		{true, 5000000 * us, 15625 * time.Nanosecond},
		{true, 5000000 * us, 7812 * time.Nanosecond},
		{true, 5000000 * us, 3906 * time.Nanosecond},
		{true, 5000000 * us, minSpin},
		{true, 5000000 * us, minSpin}, // never below minSpin
		{true, 200 * us, 400 * us},    // idle again: back above the 200 us waits at once
	} {
		if c.slept {
			w.spin = w.budget(c.d)
		}
		if w.spin != c.want {
			t.Fatalf("after a wait of %v (slept %v): budget %v, want %v", c.d, c.slept, w.spin, c.want)
		}
	}
}

// TestPartitionLayout checks that a partition is a whole number of 64-byte lines, so that
// partitions allocated one after another share none (each worker writes its own per handed
// event and per window).
func TestPartitionLayout(t *testing.T) {
	if s := unsafe.Sizeof(partition{}); s%64 != 0 {
		t.Errorf("partition is %d bytes, want a multiple of 64", s)
	}
}

// TestGroupTrace checks the window trace against the Group's own totals: per window, the
// partitions' events sum to the run's events (the ring model has no global events), their
// maxima to CriticalEvents and the handed events to HandedOver; the windows are numbered in
// order, each starts after the one before and spans at most the lookahead; PartEvents sums
// each partition's windows, and Times their jobs' wall time (no exchange here: every job is a
// window's).
func TestGroupTrace(t *testing.T) {
	const ents, look = 10, Time(3000)
	partOf := []int32{0, 0, 0, 1, 1, 1, 2, 2, 2, 2}
	main := New()
	ring(main, ents, partOf, look)
	g := main.grp
	var events, most, handed uint64
	part := make([]uint64, 3)
	busy := make([]time.Duration, 3)
	prev := Time(-1)
	g.Trace = func(w *WindowWork) {
		if w.Window != g.Windows-1 || w.From <= prev || w.Bound < w.From || w.Bound-w.From >= look {
			t.Fatalf("window %d (of %d) from %v to %v after %v: not the next window of at most %v", w.Window, g.Windows, w.From, w.Bound, prev, look)
		}
		prev = w.Bound
		for i, e := range w.Events {
			events += e
			part[i] += e
			handed += w.Handed[i]
			busy[i] += w.Busy[i]
		}
		most += slices.Max(w.Events)
	}
	if err := g.Run(units.MaxTime); err != nil {
		t.Fatal(err)
	}
	if events != main.Events() || most != g.CriticalEvents || handed != g.HandedOver || handed == 0 {
		t.Fatalf("windows ran %d events (the busiest partitions %d) and handed %d over; the run: %d (%d) and %d", events, most, handed, main.Events(), g.CriticalEvents, g.HandedOver)
	}
	if !slices.Equal(part, g.PartEvents()) {
		t.Fatalf("partitions ran %v events by the trace, PartEvents %v", part, g.PartEvents())
	}
	if b, _ := g.Times(); !slices.Equal(busy, b) {
		t.Fatalf("the windows' jobs took %v by the trace, the partitions' busy times %v", busy, b)
	}
}
