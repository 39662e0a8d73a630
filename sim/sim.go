// Package sim is fabricsim's discrete-event kernel: one clock in integer picoseconds, one queue of
// value-typed events, and a run loop. Events at the same time run in the order of an ordering
// word given when they were scheduled, so a run is a pure function of its inputs and seed. By
// default the word is a global sequence number (ties run in the order they were scheduled);
// with entities (SetEntities) it is the scheduling entity and that entity's own count, an order
// that does not depend on how entities' events interleave, so that a run split into partitions
// that run in parallel (Group, parallel.go) executes every entity's events in the same order.
//
// Components (ports, NICs, timers) implement Handler; an event names its handler and carries a
// small opcode, an integer and an optional pointer, so scheduling allocates nothing once the
// queue's backing array has grown to the run's working size.
package sim

import (
	"context"
	"fmt"
	"unsafe"

	"github.com/fabricsim/fabricsim/units"
)

// Time is simulated time in picoseconds.
type Time = units.Time

// Handler receives the events scheduled for it. ev points into the kernel's storage and is valid
// only during the call: a handler must neither keep it nor write to it.
type Handler interface {
	Handle(ev *Event)
}

// Prefetcher is implemented by a Handler that can read, shortly before its event runs, the memory
// the event will use, so that the cache misses of many events overlap instead of following one
// another. Prefetch must not change any state; it returns a value derived from what it read (the
// kernel keeps it, so the reads are not optimized away).
type Prefetcher interface {
	Prefetch(ev *Event) uintptr
}

// Event is one scheduled occurrence. Op, I and P mean whatever the handler defines: P is the
// handler's own pointer (the fabric's packet), which it converts back to its type, or nil. The
// event's time is the clock (Sim.Now) when it runs.
//
// An event is 32 bytes, two to a cache line in the page-aligned slab, so a slot never straddles
// lines; the pending events of the k=16 InfiniBand benchmark then take half the cache they did
// at 64 bytes (time, ordering word and entity live only in the queue's keys). P is an
// unsafe.Pointer rather than an interface for the same reason: 8 bytes instead of 16.
type Event struct {
	H  Handler
	P  unsafe.Pointer
	Op int32
	I  int32
}

// Sim owns the clock and the event queue.
type Sim struct {
	now Time
	seq uint64
	// cur is the entity of the event being handled (ScheduleTo; 0 without entities); counts,
	// when set by SetEntities, holds each entity's next ordering word (the entity number above
	// EntityBits, its scheduling count below: the word is the count plus a constant, so
	// scheduling takes it and adds one), shared by a Group's partitions (each entity's word is
	// written only by the partition that runs its events).
	cur    int32
	counts []uint64
	// par is set on a partition of a Group, grp on the Group's main Sim (parallel.go).
	par     *partition
	grp     *Group
	split   bool // par or grp is set
	q       queue
	events  uint64
	stopped bool
	// check is the event count at which Run next reports progress; 0 after Stop.
	check uint64
	err   error
	// Progress, if set, is called about every ProgressEvery events with the current time.
	Progress      func(now Time, events uint64)
	ProgressEvery uint64
	// ctx, when set by StopOn, is checked at the same points as Progress.
	ctx context.Context
}

// New returns an empty simulator at time zero.
func New() *Sim { return &Sim{ProgressEvery: 1 << 20} }

// Now is the current simulated time.
func (s *Sim) Now() Time { return s.now }

// Events is the number of events executed so far.
func (s *Sim) Events() uint64 { return s.events }

// Pending is the number of events in the queue.
func (s *Sim) Pending() int { return s.q.len() }

// EntityBits is the width of an entity's count in the ordering word: an entity may schedule 2^40
// events; the entity number takes the 24 bits above.
const EntityBits = 40

// MaxEntities is the most entities SetEntities accepts.
const MaxEntities = 1 << (64 - EntityBits)

// SetEntities turns on the entity order for n entities (0..n-1): an event then belongs to an
// entity (ScheduleTo; Schedule keeps the current one), and events of equal time run in the order
// of (scheduling entity, that entity's count of events scheduled), which is the same however the
// entities' events interleave. cur is the entity whose events the caller schedules until the run
// starts (the setup's). It must be called before anything is scheduled.
func (s *Sim) SetEntities(n int, cur int32) {
	if n <= 0 || n > MaxEntities || cur < 0 || int(cur) >= n {
		panic(fmt.Sprintf("sim: %d entities (current %d), want 1..%d", n, cur, MaxEntities))
	}
	if s.q.len() > 0 {
		panic("sim: SetEntities after events were scheduled")
	}
	s.counts = make([]uint64, n)
	for e := range s.counts {
		s.counts[e] = uint64(e) << EntityBits
	}
	s.cur = cur
}

// Current is the entity of the event being handled (or the setup's, before the run).
func (s *Sim) Current() int32 { return s.cur }

// ord returns the ordering word of an event scheduled now.
func (s *Sim) ord() uint64 {
	if s.counts == nil {
		s.seq++
		return s.seq
	}
	ord := s.counts[s.cur]
	s.counts[s.cur] = ord + 1
	return ord
}

// Schedule runs h.Handle at time at, as an event of the current entity. Scheduling in the past is
// a broken invariant.
func (s *Sim) Schedule(at Time, h Handler, op, i int32, p unsafe.Pointer) {
	s.sched(s.cur, at, h, op, i, p)
}

// ScheduleTo runs h.Handle at time at as an event of entity ent (with SetEntities; ent is
// ignored without). In a Group's partition, an event of an entity another partition runs is
// handed over at the end of the window: it must lie at least the group's lookahead ahead.
func (s *Sim) ScheduleTo(ent int32, at Time, h Handler, op, i int32, p unsafe.Pointer) {
	if s.split && !s.par.runs(ent) {
		s.scheduleSplit(ent, at, h, op, i, p)
		return
	}
	s.sched(ent, at, h, op, i, p)
}

// sched queues an event of entity ent that the current entity schedules (Schedule, and
// ScheduleTo where the run is not split). Its common case (entities, a free slab slot, a ring
// bucket with room: all but about one push in ten on a fat tree) is queue.push's fast path
// written out here, so that a scheduled event costs one call that calls nothing; the rest, and
// every push when the queue is plain, goes through schedPlain. A bucket that holds no slice yet
// takes a spare one in place (file), not here: about 3 % of the k=16 RoCE/PFC run's pushes, and
// the test cost every push three instructions.
func (s *Sim) sched(ent int32, at Time, h Handler, op, i int32, p unsafe.Pointer) {
	q := &s.q
	n := len(q.free) - 1
	counts := s.counts // read once: after the free list's store below it would be read again
	if at < s.now || n < 0 || counts == nil || q.plain {
		s.schedPlain(ent, at, h, op, i, p)
		return
	}
	// The slot first: after the count's store (which may alias q.free, as far as the compiler
	// knows) q.free would be read again and its index checked again.
	slot := q.free[n]
	q.free = q.free[:n]
	ord := counts[s.cur]
	counts[s.cur] = ord + 1
	ev := q.event(slot)
	ev.H, ev.P, ev.Op, ev.I = h, p, op, i
	q.n++
	k := makeKey(at, ord, ent, slot)
	// at in [curStart+bucketWidth, curStart+horizon): a ring bucket other than the one drained.
	if uint64(at-q.curStart-bucketWidth) < uint64(horizon-bucketWidth) {
		b := &q.buckets[int(at>>widthBits)&(ringSize-1)]
		if len(*b) < cap(*b) {
			// The append before any other store: after one the compiler reads the bucket
			// again and keeps the append's growth path.
			*b = append(*b, k)
			q.ringMax = max(q.ringMax, at)
			q.ringN++
			return
		}
	}
	q.place(at, k)
}

// schedPlain is sched without its fast path: the ordering word from ord, the key through push.
//
//go:noinline
func (s *Sim) schedPlain(ent int32, at Time, h Handler, op, i int32, p unsafe.Pointer) {
	if at < s.now {
		s.past(at)
	}
	if s.counts == nil {
		ent = 0
	}
	s.q.push(at, s.ord(), ent, h, op, i, p)
}

// scheduleSplit is ScheduleTo in a Group for an entity the Sim does not run (on a partition:
// another partition's, handed over; on the main Sim: routed).
func (s *Sim) scheduleSplit(ent int32, at Time, h Handler, op, i int32, p unsafe.Pointer) {
	if at < s.now {
		s.past(at)
	}
	if s.counts == nil {
		ent = 0
	}
	if s.par != nil {
		if s.par.g.partOf[ent] != s.par.id {
			s.par.handOver(at, s.ord(), ent, h, op, i, p)
			return
		}
	} else {
		s.grp.route(at, s.ord(), ent, h, op, i, p)
		return
	}
	s.q.push(at, s.ord(), ent, h, op, i, p)
}

// past panics: an event scheduled at at, before now (out of line: its formatting would make
// the scheduling functions keep their arguments on the stack).
//
//go:noinline
func (s *Sim) past(at Time) {
	panic(fmt.Sprintf("sim: event scheduled at %v, before now %v", at, s.now))
}

// ScheduleAs runs h.Handle at time at as an event that entity ent schedules for itself: its
// ordering word comes from ent's own count, whatever event is being handled. It serves events
// whose scheduling no entity's handler decides alone, such as what a Group's owner files
// between windows (Group.Exchange), which must order the same however the run is split. On a
// partition it files into the partition's own queue (ent must be one of its entities).
func (s *Sim) ScheduleAs(ent int32, at Time, h Handler, op, i int32, p unsafe.Pointer) {
	if at < s.now {
		panic(fmt.Sprintf("sim: event scheduled at %v, before now %v", at, s.now))
	}
	cur := s.cur
	if s.counts != nil {
		s.cur = ent
	} else {
		ent = 0
	}
	ord := s.ord()
	s.cur = cur
	if s.par != nil {
		if s.par.g.partOf[ent] != s.par.id {
			panic(fmt.Sprintf("sim: ScheduleAs for entity %d on partition %d, which does not run it", ent, s.par.id))
		}
		s.q.rewind(at)
		s.par.next = min(s.par.next, at)
	}
	s.q.push(at, ord, ent, h, op, i, p)
}

// After runs h.Handle d after now.
func (s *Sim) After(d Time, h Handler, op, i int32, p unsafe.Pointer) {
	s.Schedule(s.now+d, h, op, i, p)
}

// AfterTo runs h.Handle d after now as an event of entity ent (ScheduleTo).
func (s *Sim) AfterTo(ent int32, d Time, h Handler, op, i int32, p unsafe.Pointer) {
	s.ScheduleTo(ent, s.now+d, h, op, i, p)
}

// Parity returns the parity of the Group window a partition's Sim is running (0 or 1; 0 for a
// Sim that is not a partition): state handed between partitions without events is
// double-buffered by it (Group.Exchange).
func (s *Sim) Parity() int {
	if s.par != nil {
		return s.par.par
	}
	return 0
}

// SetPrefetch turns the kernel's reading ahead (the bucket touch and Prefetcher calls) on or
// off; it is on by default and changes only speed, never results.
func (s *Sim) SetPrefetch(on bool) { s.q.noTouch = !on }

// SetPrefetcher makes f the reading ahead for every event, in place of the kernel's assertion of
// each event's handler to Prefetcher: the caller knows its handlers' concrete types, and a
// switch on them costs a comparison a case where the assertion probes the runtime's cache of
// type pairs (about 20 instructions an event). f must call Prefetch for every handler that
// implements Prefetcher (it may fall back on the assertion for types it does not list) and
// return 0 for the others; nil restores the assertion. A Group's partitions take their main
// Sim's (NewGroup, or this call after it).
func (s *Sim) SetPrefetcher(f func(ev *Event) uintptr) {
	s.q.prefetch = f
	if s.grp != nil {
		for _, p := range s.grp.parts {
			p.s.q.prefetch = f
		}
	}
}

// Stop ends Run after the current event. A non-nil err is returned by Run (an invariant
// violation, a detected deadlock); the first error wins.
func (s *Sim) Stop(err error) {
	s.stopped = true
	s.check = 0
	if s.err == nil {
		s.err = err
	}
}

// StopOn makes Run stop, returning context.Cause(ctx), at the first check after ctx is done.
// The check runs every ProgressEvery events (about a tenth of a second of wall time at the
// default), on the simulation's own goroutine, so the kernel stays single-threaded and the
// event loop pays nothing more than the progress counter it already compares.
func (s *Sim) StopOn(ctx context.Context) { s.ctx = ctx }

// Stopped reports whether Stop was called.
func (s *Sim) Stopped() bool { return s.stopped }

// Run executes events in order until the queue is empty, Stop is called, or the next event lies
// after until (use units.MaxTime for no limit). The clock is left at the last executed event.
func (s *Sim) Run(until Time) error {
	next := s.ProgressEvery
	// One test an event for the progress report and Stop alike: Stop sets check to 0, and the
	// loop looks at stopped only then (not at every event).
	s.check = next
	q := &s.q
	if s.stopped {
		return s.err
	}
	for {
		// c[last] below needs no bounds check: last is len(c)-1 and not negative.
		c := q.cur
		last := len(c) - 1
		if last < 0 {
			if q.n == 0 {
				break
			}
			q.advance()
			continue
		}
		k := c[last]
		at := q.curStart + k.off()
		if at > until {
			break
		}
		q.cur = c[:last]
		q.n--
		// The event is handled where it lies in the slab (pushes during Handle take other
		// slots; if the slab grows, ev still points at the old, unchanged copy).
		slot := k.slot()
		ev := q.event(slot)
		s.now = at
		s.cur = k.ent()
		s.events++
		ev.H.Handle(ev)
		q.release(slot)
		if s.events >= s.check {
			if s.events >= next {
				next += s.ProgressEvery
				if s.Progress != nil {
					s.Progress(s.now, s.events)
				}
				if s.ctx != nil && s.ctx.Err() != nil {
					s.Stop(context.Cause(s.ctx))
				}
			}
			if s.stopped {
				break
			}
			s.check = next
		}
	}
	return s.err
}
