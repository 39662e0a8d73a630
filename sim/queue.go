package sim

import (
	"slices"
)

// queue holds pending events ordered by (time, sequence number). It is a calendar queue: a ring
// of buckets each covering bucketWidth of simulated time, spanning horizon = buckets x width
// ahead of the bucket being drained. A packet simulation schedules almost everything a few
// nanoseconds to microseconds ahead (serialization, propagation, switch latency), so events land
// in buckets in O(1) and each bucket is sorted once, when it is reached, while it is small and
// in cache. Events beyond the horizon (retransmission timers, late flow starts) wait in a 4-ary
// heap and move into the ring when their bucket comes up. Only 16-byte keys move; the events
// stay in a slab whose slots are reused last-freed-first.
//
// The order is exactly that of sorting all events by (At, seq): ties in time run in the order
// they were scheduled.
type queue struct {
	slab []Event
	free []int32

	buckets  [][]key
	ringN    int  // keys in ring buckets (not counting cur)
	idx      int  // ring index of the bucket being drained
	curStart Time // start time of that bucket
	// cur holds the unrun keys of the bucket being drained in descending order, so the next
	// key is the last one and an event scheduled for (nearly) now is inserted near the end.
	cur   []key
	far   farHeap
	n     int
	spare [][]key // drained bucket slices, reused so that steady state allocates nothing
}

type key struct {
	at Time
	ss uint64 // seq<<slotBits | slot
}

const (
	slotBits    = 24
	widthBits   = 12 // bucket width 4.096 ns
	bucketWidth = Time(1) << widthBits
	ringBits    = 16 // 65,536 buckets: a horizon of 268 us
	ringSize    = 1 << ringBits
	horizon     = bucketWidth * ringSize
)

func (k key) less(o key) bool { return k.at < o.at || (k.at == o.at && k.ss < o.ss) }

func cmpKeyDesc(a, b key) int { return cmpKey(b, a) }

func cmpKey(a, b key) int {
	switch {
	case a.at < b.at:
		return -1
	case a.at > b.at:
		return 1
	case a.ss < b.ss:
		return -1
	case a.ss > b.ss:
		return 1
	}
	return 0
}

func (q *queue) len() int { return q.n }

func (q *queue) push(e Event) {
	if q.buckets == nil {
		q.buckets = make([][]key, ringSize)
		q.curStart = e.At &^ (bucketWidth - 1)
		q.idx = int(e.At>>widthBits) & (ringSize - 1)
	}
	var slot int32
	if n := len(q.free); n > 0 {
		slot = q.free[n-1]
		q.free = q.free[:n-1]
		q.slab[slot] = e
	} else {
		slot = int32(len(q.slab))
		if slot >= 1<<slotBits {
			panic("sim: more than 16M pending events")
		}
		q.slab = append(q.slab, e)
	}
	q.n++
	k := key{at: e.At, ss: e.seq<<slotBits | uint64(slot)}
	switch {
	case e.At < q.curStart+bucketWidth:
		// The bucket being drained: insert in order among the keys not yet run. New keys have
		// the highest sequence number, so they run after every key with the same time.
		i, _ := slices.BinarySearchFunc(q.cur, k, cmpKeyDesc)
		q.cur = slices.Insert(q.cur, i, k)
	case e.At < q.curStart+horizon:
		b := int(e.At>>widthBits) & (ringSize - 1)
		if cap(q.buckets[b]) == 0 {
			if n := len(q.spare); n > 0 {
				q.buckets[b] = q.spare[n-1]
				q.spare = q.spare[:n-1]
			}
		}
		q.buckets[b] = append(q.buckets[b], k)
		q.ringN++
	default:
		q.far.push(k)
	}
}

// settle makes the last key of q.cur the earliest pending key, advancing through buckets as
// needed. It requires q.n > 0.
func (q *queue) settle() {
	for len(q.cur) == 0 {
		if q.ringN == 0 {
			// Nothing within the horizon: jump straight to the earliest far event's bucket.
			t := q.far.min().at &^ (bucketWidth - 1)
			q.curStart = t
			q.idx = int(t>>widthBits) & (ringSize - 1)
		} else {
			q.curStart += bucketWidth
			q.idx = (q.idx + 1) & (ringSize - 1)
		}
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
			q.cur = append(q.cur, q.far.pop())
		}
		if len(q.cur) > 1 {
			slices.SortFunc(q.cur, cmpKeyDesc)
		}
	}
}

func (q *queue) minTime() Time {
	q.settle()
	return q.cur[len(q.cur)-1].at
}

// pop removes the earliest event and copies it into *out.
func (q *queue) pop(out *Event) {
	q.settle()
	k := q.cur[len(q.cur)-1]
	q.cur = q.cur[:len(q.cur)-1]
	q.n--
	slot := int32(k.ss & (1<<slotBits - 1))
	*out = q.slab[slot]
	q.slab[slot] = Event{} // drop references for the GC
	q.free = append(q.free, slot)
}

// farHeap is a 4-ary min-heap of keys beyond the ring's horizon.
type farHeap []key

func (h farHeap) len() int { return len(h) }
func (h farHeap) min() key { return h[0] }
func (h *farHeap) push(k key) {
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

func (h *farHeap) pop() key {
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
