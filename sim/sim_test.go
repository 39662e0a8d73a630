package sim

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/fabricsim/fabricsim/units"
)

type recorder struct {
	s   *Sim
	got []int32
	at  []Time
}

func (r *recorder) Handle(ev *Event) {
	r.got = append(r.got, ev.I)
	r.at = append(r.at, r.s.Now())
}

func TestOrderTimeThenInsertion(t *testing.T) {
	s := New()
	r := &recorder{s: s}
	s.Schedule(30, r, 0, 3, nil)
	s.Schedule(10, r, 0, 1, nil)
	s.Schedule(20, r, 0, 2, nil)
	s.Schedule(10, r, 0, 11, nil) // same time as 1, scheduled later: runs after it
	s.Schedule(20, r, 0, 21, nil)
	if err := s.Run(units.MaxTime); err != nil {
		t.Fatal(err)
	}
	want := []int32{1, 11, 2, 21, 3}
	for i := range want {
		if r.got[i] != want[i] {
			t.Fatalf("order %v, want %v", r.got, want)
		}
	}
	if s.Now() != 30 || s.Events() != 5 {
		t.Fatalf("now %d events %d, want 30 and 5", s.Now(), s.Events())
	}
}

func TestHeapMatchesSort(t *testing.T) {
	// Random times with many ties: the pop order must be exactly (time, insertion).
	rng := rand.New(rand.NewPCG(1, 2))
	s := New()
	r := &recorder{s: s}
	type key struct {
		at  Time
		seq int32
	}
	var keys []key
	for i := 0; i < 5000; i++ {
		at := Time(rng.IntN(200))
		s.Schedule(at, r, 0, int32(i), nil)
		keys = append(keys, key{at, int32(i)})
	}
	if err := s.Run(units.MaxTime); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(r.got); i++ {
		a, b := keys[r.got[i-1]], keys[r.got[i]]
		if a.at > b.at || (a.at == b.at && a.seq > b.seq) {
			t.Fatalf("event %d (%v) ran before %d (%v)", r.got[i-1], a, r.got[i], b)
		}
	}
	if len(r.got) != 5000 {
		t.Fatalf("ran %d events, want 5000", len(r.got))
	}
}

func TestRunUntilAndStop(t *testing.T) {
	s := New()
	r := &recorder{s: s}
	for i := 1; i <= 5; i++ {
		s.Schedule(Time(i*10), r, 0, int32(i), nil)
	}
	s.Run(25)
	if len(r.got) != 2 || s.Pending() != 3 {
		t.Fatalf("ran %d, pending %d; want 2 and 3", len(r.got), s.Pending())
	}
	s.Run(units.MaxTime)
	if len(r.got) != 5 {
		t.Fatalf("ran %d, want 5", len(r.got))
	}
}

// chain reschedules itself with the delays of a packet simulation: serialization of frames at
// 100-400 Gb/s (tens to hundreds of ns), propagation plus switch latency (1-2 us), and now and
// then zero (a port restarting at once).
type chain struct {
	s *Sim
	n int
}

var chainDelays = [8]Time{0, 83_560, 334_240, 1_500_000, 5_280, 2_000_000, 334_240, 1_834_240}

func (c *chain) Handle(ev *Event) {
	c.n++
	c.s.After(chainDelays[c.n&7], c, 0, ev.I, nil)
}

func TestNoAllocationsPerEvent(t *testing.T) {
	s := New()
	cs := make([]*chain, 64)
	for i := range cs {
		cs[i] = &chain{s: s}
		s.Schedule(Time(i), cs[i], 0, int32(i), nil)
	}
	s.Run(300 * units.Microsecond) // a full turn of the calendar: every bucket has been used
	allocs := testing.AllocsPerRun(10, func() {
		s.Run(s.q.minTime() + 10*units.Microsecond)
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per run of ~10^5 events, want 0", allocs)
	}
}

func BenchmarkEventLoop(b *testing.B) {
	// 4096 pending events (the order of a k=16 fat-tree run's queue), each rescheduling itself.
	s := New()
	for i := 0; i < 4096; i++ {
		c := &chain{s: s}
		s.Schedule(Time(i), c, 0, int32(i), nil)
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := s.Events()
	for s.Events()-start < uint64(b.N) {
		s.Run(s.q.minTime() + 100_000)
	}
	b.ReportMetric(float64(s.Events()-start)/b.Elapsed().Seconds(), "events/s")
}

// entChain is chain with entities, as the fabric runs: each event schedules its successor for
// the next entity (ScheduleTo: a packet crossing a link) or, every fourth, for its own
// (Schedule: a port's transmit-done).
type entChain struct {
	s    *Sim
	n    int
	ents int32
}

func (c *entChain) Handle(ev *Event) {
	c.n++
	if c.n&3 == 0 {
		c.s.After(chainDelays[c.n&7], c, 0, ev.I, nil)
		return
	}
	c.s.AfterTo((c.s.Current()+1)%c.ents, chainDelays[c.n&7], c, 0, ev.I, nil)
}

func BenchmarkEventLoopEntities(b *testing.B) {
	// BenchmarkEventLoop's 4096 pending events with the entity order of a fabric run (1,024
	// entities), every scheduling through Schedule or ScheduleTo's common path.
	s := New()
	const ents = 1024
	s.SetEntities(ents, 0)
	for i := 0; i < 4096; i++ {
		c := &entChain{s: s, ents: ents}
		s.ScheduleTo(int32(i%ents), Time(i), c, 0, int32(i), nil)
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := s.Events()
	for s.Events()-start < uint64(b.N) {
		s.Run(s.q.minTime() + 100_000)
	}
	b.ReportMetric(float64(s.Events()-start)/b.Elapsed().Seconds(), "events/s")
}

func TestRNGStreamsIndependent(t *testing.T) {
	a1 := RNG(7, "switch3").Uint64()
	a2 := RNG(7, "switch3").Uint64()
	b := RNG(7, "switch4").Uint64()
	c := RNG(8, "switch3").Uint64()
	if a1 != a2 || a1 == b || a1 == c {
		t.Fatalf("streams: same %x %x, other name %x, other seed %x", a1, a2, b, c)
	}
}

// chaos reschedules at random scales: zero delay (the current bucket), nanoseconds (the ring),
// milliseconds (beyond the horizon), so every path of the calendar queue is exercised against a
// reference model: each event run must be the (time, scheduling order) minimum of those pending.
type chaos struct {
	s       *Sim
	rng     *rand.Rand
	pending map[int64]Time // id -> time
	next    int64
	t       *testing.T
	left    int
}

func (c *chaos) add(at Time) {
	c.next++
	c.pending[c.next] = at
	c.s.Schedule(at, c, 0, int32(c.next), nil)
}

func (c *chaos) Handle(ev *Event) {
	id, now := int64(ev.I), c.s.Now()
	if want := c.pending[id]; want != now {
		c.t.Fatalf("event %d ran at %d, scheduled for %d", id, now, want)
	}
	for other, at := range c.pending {
		if at < now || (at == now && other < id) {
			c.t.Fatalf("ran event %d at %d while event %d at %d was pending", id, now, other, at)
		}
	}
	delete(c.pending, id)
	if c.left <= 0 {
		return
	}
	for k := c.rng.IntN(3); k >= 0 && c.left > 0; k-- {
		c.left--
		c.add(c.s.Now() + chaosDelay(c.rng, false))
	}
}

// chaosDelay draws a chaos workload's next delay: none, a few picoseconds, up to 2 us, anywhere
// in the ring, or beyond it into the far heap; with lockstep also multiples of one frame time
// (many keys of equal time, as a fat tree's ports make them).
func chaosDelay(rng *rand.Rand, lockstep bool) Time {
	n := 6
	if lockstep {
		n = 7
	}
	k := rng.IntN(n)
	if !lockstep && k >= 4 {
		k++ // no lockstep case: 4 and 5 are the ring and the heap
	}
	switch k {
	case 0:
		return 0
	case 1:
		return Time(rng.IntN(50))
	case 2, 3:
		return Time(rng.IntN(2_000_000)) // up to 2 us
	case 4:
		return Time(rng.IntN(4)) * 83_560 // lockstep: many keys of equal time
	case 5:
		return Time(rng.IntN(int(horizon))) // anywhere in the ring
	default:
		return horizon + Time(rng.IntN(10_000_000_000)) // beyond it, up to 10 ms more
	}
}

func TestCalendarQueueMatchesReference(t *testing.T) {
	s := New()
	c := &chaos{s: s, rng: rand.New(rand.NewPCG(3, 4)), pending: map[int64]Time{}, t: t, left: 6000}
	for i := 0; i < 50; i++ {
		c.add(Time(c.rng.IntN(1000)))
	}
	if err := s.Run(units.MaxTime); err != nil {
		t.Fatal(err)
	}
	if len(c.pending) != 0 || s.Pending() != 0 {
		t.Fatalf("%d events never ran", len(c.pending))
	}
	if s.Events() < 6000 {
		t.Fatalf("only %d events ran", s.Events())
	}
}

// TestSortDesc checks the bucket sort against the standard library's on random keys with many
// equal times, for sizes around the insertion-sort cutoff and far above it, with keys appended
// in sequence order (as a bucket fills) or not (keys from the far heap), with ordering words
// of a global sequence or of entities (each entity's count growing in append order, as when a
// bucket fills, or not), entities few or many.
func TestSortDesc(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var q queue
	for _, n := range []int{0, 1, 2, 3, 12, 13, 31, 32, 33, 49, 100, 255, 256, 1000, 5000} {
		for trial := 0; trial < 40; trial++ {
			start := Time(rng.IntN(1000)) << widthBits
			a := make([]key, n)
			ents := []int{1, 3, 70, 5000, 1 << 23}[trial%5]
			counts := make(map[uint64]uint64)
			for i := range a {
				ss := uint64(i)
				switch trial % 4 {
				case 1:
					ss = uint64(rng.IntN(4 * (n + 1)))
				case 2:
					e := uint64(rng.IntN(ents))
					ss = e<<EntityBits | counts[e]
					counts[e]++
				case 3:
					ss = uint64(rng.IntN(ents))<<EntityBits | uint64(rng.IntN(4*(n+1)))
				}
				at := start + Time(rng.IntN(1+min(n/3, int(bucketWidth)-1)))
				if trial%3 == 2 {
					at = start + Time(rng.IntN(3)) // most times equal
				}
				a[i] = makeKey(at, ss, int32(rng.IntN(MaxEntities)), int32(i))
			}
			want := slices.Clone(a)
			slices.SortFunc(want, func(x, y key) int {
				switch {
				case y.less(x):
					return -1
				case x.less(y):
					return 1
				}
				return 0
			})
			a = q.sortDesc(a)
			if !slices.Equal(a, want) {
				t.Fatalf("n=%d trial %d: sortDesc differs from slices.SortFunc", n, trial)
			}
		}
	}
}

// TestKeyFields: a key gives back the time offset, ordering word, entity and slot it was made
// of, at the fields' extremes, and key order within a bucket is (time, ordering word) order.
func TestKeyFields(t *testing.T) {
	if s := unsafe.Sizeof(key{}); s != 16 {
		t.Fatalf("key is %d bytes, want 16", s)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 10000; i++ {
		at := Time(rng.Int64N(1 << 50))
		ord, ent, slot := rng.Uint64(), int32(rng.IntN(MaxEntities)), int32(rng.IntN(1<<slotBits))
		switch i {
		case 0:
			at, ord, ent, slot = 0, 0, 0, 0
		case 1:
			at, ord, ent, slot = bucketWidth-1, 1<<64-1, MaxEntities-1, 1<<slotBits-1
		}
		k := makeKey(at, ord, ent, slot)
		if k.off() != at&(bucketWidth-1) || k.ord() != ord || k.ent() != ent || k.slot() != slot {
			t.Fatalf("makeKey(%d, %#x, %d, %d) gives back %d, %#x, %d, %d", at, ord, ent, slot,
				k.off(), k.ord(), k.ent(), k.slot())
		}
		at2, ord2 := at&^(bucketWidth-1)+Time(rng.IntN(3)), ord
		if rng.IntN(2) == 0 {
			ord2 = rng.Uint64()
		}
		at, ord = at&^(bucketWidth-1)+Time(rng.IntN(3)), ord^uint64(rng.IntN(2))
		k2 := makeKey(at2, ord2, int32(rng.IntN(MaxEntities)), int32(rng.IntN(1<<slotBits)))
		if at == at2 && ord == ord2 {
			continue // ordering words are unique among pending keys
		}
		k = makeKey(at, ord, ent, slot)
		want := at < at2 || (at == at2 && ord < ord2)
		if k.less(k2) != want {
			t.Fatalf("(%d, %#x) < (%d, %#x): key says %v", at, ord, at2, ord2, !want)
		}
	}
}

// TestScheduleBeforeLookahead: after a Run that stopped at its limit, the queue has looked
// ahead to the next event's bucket and filed later keys relative to it (some in the ring's
// next turn); an event then scheduled before that bucket runs first, and every other one at
// its own time (the rewind moves the next turn's keys to the far heap).
func TestScheduleBeforeLookahead(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ahead Time // the event the queue looks ahead to
	}{
		{"within the horizon", 1000 * bucketWidth},
		{"beyond it", 3*horizon + 7},
	} {
		s := New()
		r := &recorder{s: s}
		s.Schedule(0, r, 0, 1, nil)
		s.Schedule(tc.ahead, r, 0, 2, nil)
		if err := s.Run(10); err != nil {
			t.Fatal(err)
		}
		if got := s.q.minTime(); got != tc.ahead {
			t.Fatalf("%s: min %v, want %v", tc.name, got, tc.ahead)
		}
		last := s.q.curStart + horizon - 1 // the last instant filed in the ring
		s.Schedule(last, r, 0, 3, nil)
		s.Schedule(tc.ahead+3, r, 0, 4, nil) // the bucket being drained
		s.Schedule(5*bucketWidth, r, 0, 5, nil)
		if err := s.Run(units.MaxTime); err != nil {
			t.Fatal(err)
		}
		wantI := []int32{1, 5, 2, 4, 3}
		wantAt := []Time{0, 5 * bucketWidth, tc.ahead, tc.ahead + 3, last}
		if !slices.Equal(r.got, wantI) || !slices.Equal(r.at, wantAt) {
			t.Fatalf("%s: ran %v at %v, want %v at %v", tc.name, r.got, r.at, wantI, wantAt)
		}
	}
}

// TestEventIsHalfACacheLine pins the event size the slab's layout relies on: two events to a
// 64-byte line, none straddling two.
func TestEventIsHalfACacheLine(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the layout is tuned for 64-bit platforms")
	}
	if s := unsafe.Sizeof(Event{}); s != 32 {
		t.Fatalf("Event is %d bytes, want 32", s)
	}
}

// cancelAt cancels a context when it has run n events, then keeps rescheduling itself.
type cancelAt struct {
	s      *Sim
	n, at  int
	cancel func()
}

func (c *cancelAt) Handle(ev *Event) {
	c.n++
	if c.n == c.at {
		c.cancel()
	}
	c.s.After(1, c, 0, 0, nil)
}

// TestStopOn: a run whose context is cancelled at event 1000 stops at the next check, which
// comes every ProgressEvery (256) events: after event 1024, with the context's error.
func TestStopOn(t *testing.T) {
	s := New()
	s.ProgressEvery = 256
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := &cancelAt{s: s, at: 1000, cancel: cancel}
	s.Schedule(0, c, 0, 0, nil)
	s.StopOn(ctx)
	err := s.Run(units.MaxTime)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run returned %v, want context.Canceled", err)
	}
	if s.Events() != 1024 {
		t.Errorf("stopped after %d events, want 1024 (the first check after the cancel)", s.Events())
	}
}

// TestSetPrefetcher: a Sim's prefetch function reads ahead in place of the Prefetcher
// assertion (called for events of the bucket being loaded, never for more events than ran),
// and a Group's partitions take it, whether it is set before NewGroup or after.
func TestSetPrefetcher(t *testing.T) {
	for _, after := range []bool{false, true} {
		main := New()
		main.SetEntities(3, 2)
		var calls atomic.Int64 // partitions run on their own goroutines
		f := func(ev *Event) uintptr { calls.Add(1); return 0 }
		if !after {
			main.SetPrefetcher(f)
		}
		g := NewGroup(main, 2, []int32{0, 1, -1}, 1000)
		if after {
			main.SetPrefetcher(f)
		}
		p := [2]*pingPong{}
		for i := range p {
			p[i] = &pingPong{id: int32(i), s: g.Part(i), left: 50}
		}
		p[0].peer, p[1].peer = p[1], p[0]
		main.ScheduleTo(0, 0, p[0], 0, 0, nil)
		main.ScheduleTo(1, 0, p[1], 0, 0, nil)
		if err := g.Run(units.MaxTime); err != nil {
			t.Fatal(err)
		}
		if n, ev := calls.Load(), main.Events(); n == 0 || uint64(n) > ev {
			t.Errorf("set after NewGroup %v: prefetch called %d times for %d events", after, n, ev)
		}
	}
}

// entChaos is chaos with entities: every event belongs to a random entity (ScheduleTo, or
// Schedule for the current one), so the ordering word is (scheduling entity, its count), and
// the test keeps those counts itself to know each event's word. Each event run must be the
// (time, word) minimum of those pending, and run as its own entity.
type entChaos struct {
	s       *Sim
	rng     *rand.Rand
	pending map[int32]entPending
	counts  []uint64
	next    int32
	t       *testing.T
	left    int
	trace   []entPending
}

type entPending struct {
	at  Time
	ord uint64
	ent int32
}

func (c *entChaos) add(at Time, ent int32, to bool) {
	cur := c.s.Current()
	if !to {
		ent = cur
	}
	c.next++
	c.pending[c.next] = entPending{at, uint64(cur)<<EntityBits | c.counts[cur], ent}
	c.counts[cur]++
	if to {
		c.s.ScheduleTo(ent, at, c, 0, c.next, nil)
	} else {
		c.s.Schedule(at, c, 0, c.next, nil)
	}
}

func (c *entChaos) Handle(ev *Event) {
	id, now := ev.I, c.s.Now()
	e := c.pending[id]
	if e.at != now || c.s.Current() != e.ent {
		c.t.Fatalf("event %d ran at %d as entity %d, scheduled for %d as %d", id, now, c.s.Current(), e.at, e.ent)
	}
	for other, o := range c.pending {
		if o.at < now || (o.at == now && o.ord < e.ord) {
			c.t.Fatalf("ran event %d (%d, %#x) while event %d (%d, %#x) was pending", id, now, e.ord, other, o.at, o.ord)
		}
	}
	delete(c.pending, id)
	c.trace = append(c.trace, e)
	for k := c.rng.IntN(3); k >= 0 && c.left > 0; k-- {
		c.left--
		d := chaosDelay(c.rng, true)
		c.add(now+d, int32(c.rng.IntN(len(c.counts))), c.rng.IntN(4) != 0)
	}
}

// TestSchedMatchesPlain: the scheduling fast path (sched: a free slot and a ring bucket with
// room, written out without calls) runs every event at the same time, as the same entity, in
// the same order as the plain path (queue.plain: every key through place), and both in the
// reference order, with entities few or many and delays that hit the bucket being drained,
// the ring, equal times and the far heap.
func TestSchedMatchesPlain(t *testing.T) {
	for _, ents := range []int{1, 7, 300} {
		var traces [2][]entPending
		for i, plain := range []bool{false, true} {
			s := New()
			s.SetEntities(ents, 0)
			s.q.plain = plain
			c := &entChaos{s: s, rng: rand.New(rand.NewPCG(7, uint64(ents))), pending: map[int32]entPending{},
				counts: make([]uint64, ents), t: t, left: 6000}
			for j := 0; j < 64; j++ {
				c.add(Time(c.rng.IntN(1000)), int32(c.rng.IntN(ents)), true)
			}
			if err := s.Run(units.MaxTime); err != nil {
				t.Fatal(err)
			}
			if len(c.pending) != 0 || s.Pending() != 0 || s.Events() < 6000 {
				t.Fatalf("%d entities, plain %v: %d events never ran, %d ran", ents, plain, len(c.pending), s.Events())
			}
			traces[i] = c.trace
		}
		if !slices.Equal(traces[0], traces[1]) {
			t.Fatalf("%d entities: the fast path ran events in another order than the plain path", ents)
		}
	}
}
