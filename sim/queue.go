package sim

import (
	"math/bits"
	"unsafe"
)

// queue holds pending events ordered by (time, ordering word). It is a calendar queue: a ring
// of buckets each covering bucketWidth of simulated time, spanning horizon = buckets x width
// ahead of the bucket being drained. A packet simulation schedules almost everything a few
// nanoseconds to microseconds ahead (serialization, propagation, switch latency), so events land
// in buckets in O(1) and each bucket is sorted once, when it is reached, while it is small and
// in cache. Events beyond the horizon (retransmission timers, late flow starts) wait in a 4-ary
// heap and move into the ring when their bucket comes up. Only 16-byte keys move; the events
// stay in a slab whose slots are reused last-freed-first.
//
// The order is exactly that of sorting all events by (at, ord), ord being the event's ordering
// word (Sim.Schedule): ties in time run in ord's order. Every key also names its event's slab
// slot and the entity the event belongs to (Sim.ScheduleTo). A key in the ring holds its time
// only as the offset within its bucket (the bucket's place in the ring gives the rest), so that
// time, ordering word, entity and slot fit in two words; keys beyond the horizon carry their
// full time beside the key (farKey).
type queue struct {
	slab []Event
	free []int32
	// noTouch turns reading ahead off (tests prove it changes nothing but speed).
	noTouch bool
	// prefetch, when set (Sim.SetPrefetcher), reads ahead for every event in place of the
	// Prefetcher assertion.
	prefetch func(ev *Event) uintptr

	buckets *[ringSize][]key
	// plain sends every push through place (tests: the fast path must change nothing).
	plain   bool
	ringN   int  // keys in ring buckets (not counting cur)
	ringMax Time // at or after the latest time of a key filed in the ring (rewind)
	// curStart is the start time of the bucket being drained; the keys of cur and of every
	// ring bucket lie in [curStart, curStart+horizon) (rewind keeps it so).
	idx      int // ring index of the bucket being drained
	curStart Time
	// cur holds the unrun keys of the bucket being drained in descending order, so the next
	// key is the last one and an event scheduled for (nearly) now is inserted near the end.
	cur   []key
	far   farHeap
	n     int
	spare [][]key // drained bucket slices, reused so that steady state allocates nothing
	tmp   []key   // scratch for sorting a bucket
	// touchSink keeps touch's loads from being optimized away (per queue: a Group's
	// partitions each have their own).
	touchSink uintptr
}

// key is a pending event's place in the queue: 16 bytes, four to a cache line, compared as
// one 128-bit number. hi holds the event's time within its bucket (the top widthBits bits)
// and the ordering word's top 52 bits; lo the ordering word's low 12 bits, then the entity the
// event belongs to (entBits) and its slab slot (slotBits). Comparing (hi, lo) is comparing
// (time, ordering word), since the word is unique among pending keys; for equal times it is
// the entity order's (scheduling entity, count) or the global sequence. (Keys were 24 bytes
// with the entity order, a full time and word: half as many lines again to sort and move.)
type key struct {
	hi, lo uint64
}

const (
	widthBits   = 12 // bucket width 4.096 ns
	bucketWidth = Time(1) << widthBits
	ringBits    = 16 // 65,536 buckets: a horizon of 268 us
	ringSize    = 1 << ringBits
	horizon     = bucketWidth * ringSize

	offShift = 64 - widthBits // the time offset's place in hi
	slotBits = 28             // 268 M pending events (an 8 GiB slab)
	entBits  = 64 - EntityBits
)

// makeKey builds the key of an event at time at (its offset within its bucket: buckets start
// at multiples of bucketWidth) with ordering word ord, entity ent and slab slot slot.
func makeKey(at Time, ord uint64, ent, slot int32) key {
	return key{
		hi: uint64(at)&uint64(bucketWidth-1)<<offShift | ord>>widthBits,
		lo: ord<<offShift | uint64(ent)<<slotBits | uint64(slot),
	}
}

// off is the key's time within its bucket.
func (k key) off() Time { return Time(k.hi >> offShift) }

// ord is the key's ordering word.
func (k key) ord() uint64 { return k.hi<<widthBits | k.lo>>offShift }

// ent is the entity the key's event belongs to.
func (k key) ent() int32 { return int32(k.lo>>slotBits) & (1<<entBits - 1) }

// slot is the key's slab slot.
func (k key) slot() int32 { return int32(k.lo & (1<<slotBits - 1)) }

// less orders keys of one bucket by (time, ordering word).
func (k key) less(o key) bool { return k.hi < o.hi || (k.hi == o.hi && k.lo < o.lo) }

// farKey is a key beyond the ring's horizon, with its full time.
type farKey struct {
	at Time
	k  key
}

func (f farKey) less(o farKey) bool { return f.at < o.at || (f.at == o.at && f.k.less(o.k)) }

func (q *queue) len() int { return q.n }

// push queues an event, writing its fields straight into a slab slot (no copy of a whole
// event through the stack). Its common case, a free slot and a key filed into a ring bucket
// that has room, calls nothing, so the arguments stay in registers; everything else (the first
// push, a full slab or bucket, the bucket being drained, the far heap) is place's.
func (q *queue) push(at Time, ord uint64, ent int32, h Handler, op, i int32, p unsafe.Pointer) {
	n := len(q.free) - 1
	if n < 0 {
		q.pushGrow(at, ord, ent, h, op, i, p)
		return
	}
	slot := q.free[n]
	q.free = q.free[:n]
	ev := &q.slab[slot]
	ev.H, ev.P, ev.Op, ev.I = h, p, op, i
	q.n++
	k := makeKey(at, ord, ent, slot)
	// at in [curStart+bucketWidth, curStart+horizon): a ring bucket other than the one drained.
	if uint64(at-q.curStart-bucketWidth) < uint64(horizon-bucketWidth) && !q.plain {
		b := &q.buckets[int(at>>widthBits)&(ringSize-1)]
		if cap(*b) == 0 {
			if m := len(q.spare) - 1; m >= 0 {
				*b = q.spare[m]
				q.spare = q.spare[:m]
			}
		}
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

// pushGrow is push with no free slot: it grows the slab (and sets the ring up at the first push).
//
//go:noinline
func (q *queue) pushGrow(at Time, ord uint64, ent int32, h Handler, op, i int32, p unsafe.Pointer) {
	if q.buckets == nil {
		q.buckets = new([ringSize][]key)
		q.curStart = at &^ (bucketWidth - 1)
		q.idx = int(at>>widthBits) & (ringSize - 1)
	}
	if len(q.slab) >= 1<<slotBits {
		panic("sim: more than 268 M pending events")
	}
	slot := int32(len(q.slab))
	q.slab = append(q.slab, Event{H: h, P: p, Op: op, I: i})
	if cap(q.free) < cap(q.slab) {
		// release appends without growing: the free list never holds more than the slab.
		q.free = append(make([]int32, 0, cap(q.slab)), q.free...)
	}
	q.n++
	q.place(at, makeKey(at, ord, ent, slot))
}

// place files key k of an event at time at: into the bucket being drained, in order (rewinding
// first if at lies before it), its ring bucket, or the far heap.
//
//go:noinline
func (q *queue) place(at Time, k key) {
	switch {
	case at < q.curStart+bucketWidth:
		if at < q.curStart {
			// Before the bucket being drained (the queue looked ahead past an idle stretch:
			// minTime, or a Run that stopped at its limit): make at's bucket the one drained.
			q.rewind(at)
		}
		// The bucket being drained: insert in order among the keys not yet run. Keys are
		// descending, so the new key goes after every key that runs later; it is usually
		// among the next few to run, so scan from the end.
		c := append(q.cur, key{})
		i := len(c) - 1
		for i > 0 && c[i-1].less(k) {
			c[i] = c[i-1]
			i--
		}
		c[i] = k
		q.cur = c
	case at < q.curStart+horizon:
		q.file(at, k)
	default:
		q.far.push(farKey{at: at, k: k})
	}
}

// file appends k, at time at, to its ring bucket.
func (q *queue) file(at Time, k key) {
	q.ringMax = max(q.ringMax, at)
	b := int(at>>widthBits) & (ringSize - 1)
	if cap(q.buckets[b]) == 0 {
		if n := len(q.spare); n > 0 {
			q.buckets[b] = q.spare[n-1]
			q.spare = q.spare[:n-1]
		}
	}
	q.buckets[b] = append(q.buckets[b], k)
	q.ringN++
}

// settle makes the last key of q.cur the earliest pending key, advancing through buckets as
// needed. It requires q.n > 0. (Small enough to inline: most calls find q.cur non-empty.)
func (q *queue) settle() {
	if len(q.cur) == 0 {
		q.advance()
	}
}

// advance is settle's loop over the buckets.
func (q *queue) advance() {
	for len(q.cur) == 0 {
		if q.ringN == 0 {
			// Nothing within the horizon: jump straight to the earliest far event's bucket.
			t := q.far.min().at &^ (bucketWidth - 1)
			q.curStart = t
			q.idx = int(t>>widthBits) & (ringSize - 1)
		} else {
			q.curStart += bucketWidth
			q.idx = (q.idx + 1) & (ringSize - 1)
			if len(q.buckets[q.idx]) == 0 && (q.far.len() == 0 || q.far.min().at >= q.curStart+bucketWidth) {
				continue // an empty bucket: nothing to load (a partition's queue meets many)
			}
		}
		q.load()
	}
}

// load makes the bucket at q.idx, with the far keys that fall in it, the bucket being drained,
// sorted. q.cur must be empty.
func (q *queue) load() {
	// Take the bucket's keys; keep the drained slice for the next bucket that fills.
	b := q.buckets[q.idx]
	q.buckets[q.idx] = nil
	if cap(b) == 0 {
		b = q.cur
	} else if cap(q.cur) > 0 {
		q.spare = append(q.spare, q.cur)
	}
	q.cur = b
	q.ringN -= len(b)
	end := q.curStart + bucketWidth
	for q.far.len() > 0 && q.far.min().at < end {
		q.cur = append(q.cur, q.far.pop().k)
	}
	if len(q.cur) > 1 {
		q.cur = q.sortDesc(q.cur)
	}
	if !q.noTouch {
		q.touch(q.cur)
	}
}

func (q *queue) minTime() Time {
	q.settle()
	return q.curStart + q.cur[len(q.cur)-1].off()
}

// rewind makes the bucket being drained the one holding t, when t lies before it, so that keys
// from t on can be filed (a partition's queue, whose peek at its next event moved the bucket
// ahead, receives other partitions' events at the next window: parallel.go). The keys of the
// bucket being drained go back to the ring or, beyond the new horizon, the far heap. A ring key
// lies before the old horizon's end; those that lie at or after the new one's sit in the
// buckets between the new and the old bucket being drained (the ring's next turn: the
// ones filed after the queue looked ahead) and move to the far heap, the other ring keys stay
// where they are: their buckets mean the same times before and after. Only the buckets up to
// ringMax are visited: none, unless the queue had jumped ahead to a far event.
func (q *queue) rewind(t Time) {
	if q.buckets == nil || t >= q.curStart {
		return
	}
	oldStart := q.curStart
	q.curStart = t &^ (bucketWidth - 1)
	q.idx = int(t>>widthBits) & (ringSize - 1)
	if end := q.curStart + horizon; q.ringN > 0 && q.ringMax >= end {
		// The buckets of times [end, ringMax] before the rewind (within the old horizon).
		for start := max(end, oldStart); start <= min(q.ringMax, oldStart+horizon-1); start += bucketWidth {
			b := int(start>>widthBits) & (ringSize - 1)
			keys := q.buckets[b]
			if len(keys) == 0 {
				continue
			}
			for _, k := range keys {
				q.far.push(farKey{at: start + k.off(), k: k})
			}
			q.ringN -= len(keys)
			q.buckets[b] = keys[:0]
		}
	}
	cur := q.cur
	q.cur = nil
	for _, k := range cur {
		if at := oldStart + k.off(); at < q.curStart+horizon {
			q.file(at, k)
		} else {
			q.far.push(farKey{at: at, k: k})
		}
	}
	q.cur = cur[:0]
	q.load()
}

// event is the event in slab slot slot, without a bounds check: every slot a key or the free
// list names lies below len(q.slab) (pushGrow appends the slot before it is named), and the
// event loop's three reads an event (sched, touch, Run) each paid a compare and a branch for it.
func (q *queue) event(slot int32) *Event {
	return (*Event)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(q.slab)), uintptr(slot)*unsafe.Sizeof(Event{})))
}

// release frees the slot of an event Run took from the queue. The slot keeps its references until reused: its handler
// is long-lived and its packet pooled, so nothing is held that could be freed, and a handled
// event costs no store to clear it.
func (q *queue) release(slot int32) {
	n := len(q.free)
	q.free = q.free[:n+1] // within its capacity: pushGrow keeps it at the slab's
	// q.free[n] = slot, whose bounds check the compiler cannot drop after the reslice (a second
	// compare and branch every event).
	*(*int32)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(q.free)), uintptr(n)*4)) = slot
}

// farHeap is a 4-ary min-heap of keys beyond the ring's horizon.
type farHeap []farKey

func (h farHeap) len() int    { return len(h) }
func (h farHeap) min() farKey { return h[0] }
func (h *farHeap) push(k farKey) {
	a := append(*h, k)
	i := len(a) - 1
	for i > 0 {
		p := (i - 1) / 4
		if !k.less(a[p]) {
			break
		}
		a[i] = a[p]
		i = p
	}
	a[i] = k
	*h = a
}

func (h *farHeap) pop() farKey {
	a := *h
	top := a[0]
	n := len(a) - 1
	last := a[n]
	a = a[:n]
	if n > 0 {
		i := 0
		for {
			c := 4*i + 1
			if c >= n {
				break
			}
			m := c
			end := min(c+4, n)
			for j := c + 1; j < end; j++ {
				if a[j].less(a[m]) {
					m = j
				}
			}
			if !a[m].less(last) {
				break
			}
			a[i] = a[m]
			i = m
		}
		a[i] = last
	}
	*h = a
	return top
}

// sortDesc sorts a drained bucket's keys into descending (at, ord) order and returns them (in a
// or in the queue's scratch slice, which then takes a's place). Every key lies in one bucket.
// Small buckets use insertion sort. Larger ones are first distributed by their time offset
// within the bucket, 6 bits a pass, largest digit first (a stable counting sort): buckets of up
// to 255 keys by the top 6 bits only, larger ones by all 12. A final insertion pass then puts
// right what the digits left unordered: keys closer than the last digit's resolution, and keys
// of equal time, which come out in reverse order of appending (without entities, ord order,
// descending) except those that came from the far heap. On sorted runs it costs one comparison
// a key. (The generic slices.SortFunc, which calls its comparison through a function value, was
// the largest item of the kernel's profile; insertion alone on the typical 20-40 keys a bucket
// was next.) The one-pass distribution visits only the digits that occur (a bit set of them):
// a k=16 bucket holds about 33 keys at about 18 distinct times, and the sum over all 64 digits
// was a seventh of the sort's instructions.
func (q *queue) sortDesc(a []key) []key {
	if len(a) <= 12 {
		insertionDesc(a)
		return a
	}
	if cap(q.tmp) < len(a) {
		q.tmp = make([]key, 0, 2*len(a))
	}
	dst := q.tmp[:len(a)]
	if len(a) <= 255 {
		// Descending: the largest digit goes first.
		const top = offShift + widthBits/2
		var count [64]int32
		var seen uint64
		for _, k := range a {
			d := int(^k.hi >> top) // 63 minus the digit: the compiler sees it below 64
			count[d]++
			seen |= 1 << d
		}
		var sum int32
		for m := seen; m != 0; m &= m - 1 {
			d := bits.TrailingZeros64(m)
			c := count[d]
			count[d] = sum
			sum += c
		}
		// Taken from the end, so that keys of equal digit come out last-appended first.
		for i := len(a) - 1; i >= 0; i-- {
			k := a[i]
			d := int(^k.hi >> top)
			dst[count[d]] = k
			count[d]++
		}
		insertionDesc(dst)
		q.tmp = a[:0]
		return dst
	}
	const radixBits = widthBits / 2
	const radix = 1 << radixBits
	src := a
	for shift, first := uint(0), true; shift < widthBits; shift, first = shift+radixBits, false {
		var count [radix + 1]int32
		for _, k := range src {
			d := radix - 1 - int(k.hi>>(offShift+shift))&(radix-1)
			count[d+1]++
		}
		for d := 1; d <= radix; d++ {
			count[d] += count[d-1]
		}
		// Taken from the end, so that keys of equal digit come out last-appended (highest
		// sequence) first; the second pass keeps the first pass's order (from the start).
		if first {
			for i := len(src) - 1; i >= 0; i-- {
				k := src[i]
				d := radix - 1 - int(k.hi>>(offShift+shift))&(radix-1)
				dst[count[d]] = k
				count[d]++
			}
		} else {
			for _, k := range src {
				d := radix - 1 - int(k.hi>>(offShift+shift))&(radix-1)
				dst[count[d]] = k
				count[d]++
			}
		}
		src, dst = dst, src
	}
	insertionDesc(src)
	q.tmp = dst[:0]
	return src
}

// insertionDesc sorts a into descending (at, ord) order by insertion. A key already in place
// (the common case after the distribution) costs one comparison and no store. It walks
// pointers rather than indexes: a key is 16 bytes, which x86 addressing cannot scale, so an
// index cost a shift and a bounds check at every step of the inner loop (without them the pass
// takes 14 % fewer instructions on the k=16 RoCE/PFC run, whose insertion pass moves about 2.7
// keys a key, all between keys of equal time; TestSortDesc checks the order against
// slices.SortFunc).
func insertionDesc(a []key) {
	if len(a) < 2 {
		return
	}
	base := unsafe.Pointer(unsafe.SliceData(a))
	for i := 1; i < len(a); i++ {
		p := unsafe.Add(base, uintptr(i)*unsafe.Sizeof(key{})) // &a[i]
		k := *(*key)(p)
		prev := *(*key)(unsafe.Add(p, -int(unsafe.Sizeof(key{}))))
		if !prev.less(k) {
			continue
		}
		// Move the keys that run after k one place up, from a[i-1] down, and put k below them.
		for {
			*(*key)(p) = prev
			p = unsafe.Add(p, -int(unsafe.Sizeof(key{})))
			if p == base {
				break
			}
			prev = *(*key)(unsafe.Add(p, -int(unsafe.Sizeof(key{}))))
			if !prev.less(k) {
				break
			}
		}
		*(*key)(p) = k
	}
}

// touch reads, for every key of a bucket about to run, its event in the slab and the first word
// of what the event's P points to (a packet, on the fabric's per-hop path). Those lines were
// written about a microsecond of simulated time ago and have mostly left the cache; touching
// them all here lets the processor fetch them in parallel, instead of one miss at a time as each
// event runs. A second pass lets handlers that implement Prefetcher (or the Sim's prefetch
// function: SetPrefetcher) touch what their event will need next (a routing table row, the head
// of an egress queue), now that the packets are on their way in. It changes nothing but timing.
func (q *queue) touch(keys []key) {
	var sum uintptr
	for i := len(keys) - 1; i >= 0; i-- {
		ev := q.event(keys[i].slot())
		if p := ev.P; p != nil {
			sum += *(*uintptr)(p)
		}
	}
	if f := q.prefetch; f != nil {
		for i := len(keys) - 1; i >= 0; i-- {
			sum += f(q.event(keys[i].slot()))
		}
	} else {
		for i := len(keys) - 1; i >= 0; i-- {
			ev := &q.slab[keys[i].slot()]
			if pf, ok := ev.H.(Prefetcher); ok {
				sum += pf.Prefetch(ev)
			}
		}
	}
	q.touchSink += sum
}
