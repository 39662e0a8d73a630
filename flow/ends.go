package flow

import "github.com/fabricsim/fabricsim/units"

// endHeap holds every quiet flow's projected end, keyed by (time, sequence), indexed by flow so
// that a new share of its host's round robin moves the flow's end in place instead of leaving a
// stale event behind (on a 1,024-GPU collective stale ends were most of the event queue).
type endHeap struct {
	h   []endEntry
	pos []int32 // per flow: index in h, -1 when absent
}

type endEntry struct {
	t   units.Time
	seq uint64
	fid int32
}

func (q *endHeap) less(i, j int) bool {
	a, b := &q.h[i], &q.h[j]
	if a.t != b.t {
		return a.t < b.t
	}
	return a.seq < b.seq
}

func (q *endHeap) swap(i, j int) {
	q.h[i], q.h[j] = q.h[j], q.h[i]
	q.pos[q.h[i].fid] = int32(i)
	q.pos[q.h[j].fid] = int32(j)
}

func (q *endHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !q.less(i, p) {
			return
		}
		q.swap(i, p)
		i = p
	}
}

func (q *endHeap) down(i int) {
	n := len(q.h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && q.less(r, l) {
			m = r
		}
		if !q.less(m, i) {
			return
		}
		q.swap(i, m)
		i = m
	}
}

// set places flow fid's end at (t, seq), inserting it or moving it.
func (q *endHeap) set(fid int32, t units.Time, seq uint64) {
	for int(fid) >= len(q.pos) {
		q.pos = append(q.pos, -1)
	}
	if i := q.pos[fid]; i >= 0 {
		later := t > q.h[i].t || t == q.h[i].t && seq > q.h[i].seq
		q.h[i].t, q.h[i].seq = t, seq
		if later {
			q.down(int(i))
		} else {
			q.up(int(i))
		}
		return
	}
	q.h = append(q.h, endEntry{t: t, seq: seq, fid: fid})
	q.pos[fid] = int32(len(q.h) - 1)
	q.up(len(q.h) - 1)
}

// remove takes flow fid's end out, if it has one.
func (q *endHeap) remove(fid int32) {
	if int(fid) >= len(q.pos) || q.pos[fid] < 0 {
		return
	}
	i := int(q.pos[fid])
	last := len(q.h) - 1
	if i != last {
		q.swap(i, last)
	}
	q.h = q.h[:last]
	q.pos[fid] = -1
	if i < last {
		q.up(i)
		q.down(int(q.pos[q.h[i].fid]))
	}
}

// top is the earliest end, if any.
func (q *endHeap) top() (endEntry, bool) {
	if len(q.h) == 0 {
		return endEntry{}, false
	}
	return q.h[0], true
}
