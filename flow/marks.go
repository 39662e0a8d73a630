package flow

import "math"

// markQueue is a flow's ECN marks on their way to its receiver (DCQCN, markAt): records of the
// marks on a range of the flow's bytes, handed to the notification point in the order of their
// bytes as the bytes are delivered (delivered).
//
// The order is that of one list sorted by the records' ends, a record filed after those with
// the same end (a stable sort of the records as filed: the plain form, TestMarksMatchPlain's
// plainMarks). It is kept as one list per hop the marks were made at, merged when read: a
// hop's records come in the order of their ends (each ends at the bytes that have reached that
// hop so far, which only grow), so a record is appended to its hop's list, where in one list it
// went in front of the records of the bytes upstream of its hop and every one of them was
// moved (BenchmarkPipelineClass's 2,048-GPU DCQCN class: 37.6 of a flow's 220.5 records on
// average, lines its other flows' steps had evicted; docs/flow.md, "A flow's marks by hop, the
// quiet pass and the empty queues' ECN"). A record whose end rounding puts below its list's
// last is placed by a scan from the list's end, and records of equal ends in two lists are read
// in the order they were filed (seq), so the merged order is the one list's whatever list a
// record is filed in.
type markQueue struct {
	hops []markList // by the hop of the flow's path the marks were made at
	seq  uint64     // records filed so far
}

// markList is one hop's records, in the order of their ends: a window of buf that pop moves
// past the records done with and push moves to buf's front (or grows buf) only when it reaches
// buf's end (a queue: each record is moved O(1) times on average; moving the records left on
// every step cost about 10 % of BenchmarkPermutationDCQCN's instructions).
type markList struct {
	recs []markBatch
	buf  []markBatch
}

// markBatch is the marks of the flow's bytes (start, end] (its injected bytes, counted from
// the message's first): logKeep is the log of the probability that none of them is marked;
// seq is its place among the flow's records as filed.
type markBatch struct {
	start, end, logKeep float64
	seq                 uint64
}

// before reports whether record a comes before b: by their ends, then as filed.
func (a *markBatch) before(b *markBatch) bool {
	return a.end < b.end || a.end == b.end && a.seq < b.seq
}

// reset empties the queue for a new flow, keeping its buffers.
func (m *markQueue) reset() {
	for h := range m.hops {
		m.hops[h].recs = m.hops[h].buf[:0]
	}
	m.seq = 0
}

// file adds b, marks made at hop h of the flow's path.
func (m *markQueue) file(h int32, b markBatch) {
	for int(h) >= len(m.hops) {
		m.hops = append(m.hops, markList{})
	}
	b.seq = m.seq
	m.seq++
	m.hops[h].push(b)
}

// push adds b to the list, after the records whose ends are at most b's.
func (l *markList) push(b markBatch) {
	if n := len(l.recs); n == cap(l.recs) { // at buf's end
		if cap(l.buf) > 0 && 2*n <= cap(l.buf) {
			l.recs = l.buf[:copy(l.buf[:n], l.recs)]
		} else {
			l.buf = make([]markBatch, 0, 2*n+8)
			l.recs = append(l.buf, l.recs...)
		}
	}
	i := len(l.recs)
	for i > 0 && l.recs[i-1].end > b.end { // (only where rounding took b's end below the last)
		i--
	}
	l.recs = append(l.recs, markBatch{})
	copy(l.recs[i+1:], l.recs[i:])
	l.recs[i] = b
}

// first is the list whose first record comes first, nil where every list is empty.
func (m *markQueue) first() *markList {
	var f *markList
	for h := range m.hops {
		if l := &m.hops[h]; len(l.recs) > 0 && (f == nil || l.recs[0].before(&f.recs[0])) {
			f = l
		}
	}
	return f
}

// each calls fn with the records in order until it returns false.
func (m *markQueue) each(fn func(b *markBatch) bool) {
	var c [8]int
	cur := c[:0]
	if len(m.hops) <= len(c) {
		cur = c[:len(m.hops)]
	} else {
		cur = make([]int, len(m.hops))
	}
	for {
		k := -1
		for h := range m.hops {
			if r := m.hops[h].recs; cur[h] < len(r) && (k < 0 || r[cur[h]].before(&m.hops[k].recs[cur[k]])) {
				k = h
			}
		}
		if k < 0 || !fn(&m.hops[k].recs[cur[k]]) {
			return
		}
		cur[k]++
	}
}

// len is the number of records under way.
func (m *markQueue) len() int {
	n := 0
	for h := range m.hops {
		n += len(m.hops[h].recs)
	}
	return n
}

// delivered hands emit the marks on the flow's bytes (d0, d1] (eps: rounding), record by
// record in the order of their bytes, as the log of the probability that none of them is marked
// and the bytes they are on, and keeps the rest. A record's marks are spread evenly over its
// bytes, so the part of it delivered carries its share (the log is additive over packets); a
// record every packet of which is marked (-Inf) is -Inf in every part. A record partly
// delivered holds back the records after it (a later hop's marks on bytes that overlap it)
// until it is done.
func (m *markQueue) delivered(d0, d1, eps float64, emit func(lk, from, to float64)) {
	for {
		l := m.first()
		if l == nil {
			return
		}
		b := &l.recs[0]
		st := max(b.start, d0) // (bytes of a record below d0 were delivered by earlier steps)
		done := b.end <= d1+eps
		if !done && st >= d1-eps {
			return
		}
		hi, lk := min(b.end, d1), b.logKeep
		if !done && !math.IsInf(lk, -1) {
			lk = b.logKeep * (hi - st) / (b.end - st)
			b.logKeep -= lk
		}
		if lk < 0 {
			emit(lk, st, hi)
		}
		if !done {
			b.start = hi
			return
		}
		if l.recs = l.recs[1:]; len(l.recs) == 0 {
			l.recs = l.buf[:0]
		}
	}
}
