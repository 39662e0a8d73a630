package collective

import (
	"fmt"
	"math"
	"slices"

	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/units"
)

// Compile appends the messages of collective s to g and returns, for each rank (in rank order),
// a zero-byte node on that rank's endpoint that completes when the rank's part is over: every
// message it sends and every message it receives has completed. A following collective can list
// them in its Spec.After.
//
// If Spec.After has more than one entry, one zero-byte node on rank 0's endpoint joins them and
// the first messages depend on it. On error g is left as it was.
func Compile(g *msggraph.Graph, s Spec) (done []msggraph.ID, err error) {
	if g == nil {
		return nil, fmt.Errorf("%s: nil message graph", s.Op)
	}
	algo, err := s.validate(g)
	if err != nil {
		return nil, err
	}
	if est := s.estimate(algo); est > maxMessages {
		return nil, fmt.Errorf("%s %s on %d ranks with %d bytes in %d-byte chunks over %d channels would need about %.3g messages (limit %d): raise ChunkBytes",
			s.Op, algo, len(s.Ranks), s.Bytes, s.ChunkBytes, s.channels(), est, maxMessages)
	}
	orig := len(g.Msgs)
	// Growing a graph of a million messages one append at a time spends most of Compile
	// copying; reserve the estimate up front.
	g.Msgs = slices.Grow(g.Msgs, int(s.estimate(algo)))
	b := &builder{g: g, s: &s, n: len(s.Ranks), fold: s.Fold, base: msggraph.ID(orig), tag: s.tag(), rb: s.ReduceBandwidth,
		rankOf: make(map[int32]int, len(s.Ranks)), hasDependent: make([]bool, 0, int(s.estimate(algo)))}
	for r, ep := range s.Ranks {
		b.rankOf[ep] = r
	}
	switch len(s.After) {
	case 0:
	case 1:
		b.entry = []msggraph.ID{s.After[0]}
	default:
		deps := append([]msggraph.ID(nil), s.After...)
		id := g.Add(msggraph.Message{Src: s.Ranks[0], Dst: s.Ranks[0], Start: s.Start, Deps: deps, Tag: b.tag + "/start"})
		b.hasDependent = append(b.hasDependent, false)
		b.entry = []msggraph.ID{id}
	}
	if s.Bytes > 0 && b.n > 1 {
		switch algo {
		case Ring:
			switch s.Op {
			case AllReduce:
				b.ringAllReduce()
			case ReduceScatter:
				b.ringReduceScatter()
			case AllGather:
				b.ringAllGather()
			case Broadcast:
				b.chainBroadcast()
			case Reduce:
				b.chainReduce()
			}
		case Tree:
			b.treeAllReduce()
		case Hierarchical:
			if err := b.hierarchical(); err != nil {
				g.Msgs = g.Msgs[:orig]
				return nil, err
			}
		case Direct:
			if s.Op == AllToAll {
				b.directAllToAll()
			} else {
				b.sendRecv()
			}
		}
	}
	return b.finish(), nil
}

// estimate is an upper bound on the number of messages Compile would add.
func (s Spec) estimate(algo Algo) float64 {
	n := float64(len(s.Ranks))
	c := float64(s.channels())
	S := float64(s.Bytes)
	loops := func(perChannel, unit float64) float64 {
		if s.ChunkBytes == 0 || perChannel == 0 {
			return 1
		}
		return math.Ceil(perChannel / (unit * float64(s.ChunkBytes)))
	}
	perCh := math.Ceil(S / c)
	switch {
	case algo == Tree:
		return 2*c*loops(math.Ceil(S/2/c), 1)*2*(n-1) + 2*n
	case algo == Direct && s.Op == AllToAll:
		return n*(n-1)*c*loops(math.Ceil(S/n/c), 1) + 2*n
	case algo == Direct:
		return n*c*loops(perCh, 1) + 2*n
	case s.Op == Broadcast || s.Op == Reduce:
		return c*loops(perCh, 1)*n + 2*n
	case s.Fold > 0:
		return c*loops(perCh, n)*float64(s.Fold)*2*n + 2*n
	default:
		return c*loops(perCh, n)*n*2*n + 2*n
	}
}

type builder struct {
	g            *msggraph.Graph
	s            *Spec
	n            int
	fold         int // Spec.Fold: positions compiled per ring (0: all)
	base         msggraph.ID
	entry        []msggraph.ID
	hasDependent []bool // indexed by ID - base
	rankOf       map[int32]int
	tag          string
	rb           units.Rate
}

// conn is the connection id of channel index i (0-based) of this collective.
func (b *builder) conn(i int) int32 { return b.s.ConnBase + 1 + int32(i) }

// add appends one message from rank src to rank dst. Empty deps mean the collective's entry.
// reduce says the sender has just reduced the payload, which costs bytes/ReduceBandwidth.
func (b *builder) add(src, dst int, bytes int64, conn int32, deps []msggraph.ID, reduce bool, label string) msggraph.ID {
	if len(deps) == 0 {
		deps = b.entry
	}
	var delay units.Time
	if reduce && b.rb > 0 {
		delay = b.rb.TransmitTime(units.Size(bytes))
	}
	for _, d := range deps {
		if d >= b.base {
			b.hasDependent[d-b.base] = true
		}
	}
	if bytes == 0 {
		conn = 0
	}
	id := b.g.Add(msggraph.Message{
		Src: b.s.Ranks[src], Dst: b.s.Ranks[dst], Bytes: units.Size(bytes),
		Start: b.s.Start, Delay: delay, Deps: deps, Conn: conn, Tag: b.tag + "/" + label,
	})
	b.hasDependent = append(b.hasDependent, false)
	return id
}

// reduceNode appends the final reduction of bytes at rank r as a zero-byte delay node, when
// reduction is not free.
func (b *builder) reduceNode(r int, bytes int64, deps []msggraph.ID, label string) {
	if b.rb <= 0 || bytes == 0 {
		return
	}
	b.add(r, r, 0, 0, deps, false, label)
	b.g.Msgs[len(b.g.Msgs)-1].Delay = b.rb.TransmitTime(units.Size(bytes))
}

// finish appends one done node per rank depending on every sink message that touches the rank
// (with a fold, per compiled rank; the others share their representative's).
func (b *builder) finish() []msggraph.ID {
	if b.fold > 0 && b.s.Bytes > 0 && b.n > 1 {
		return b.finishFolded()
	}
	per := make([][]msggraph.ID, b.n)
	end := msggraph.ID(len(b.g.Msgs))
	for id := b.base; id < end; id++ {
		if b.hasDependent[id-b.base] {
			continue
		}
		m := &b.g.Msgs[id]
		rs, okS := b.rankOf[m.Src]
		rd, okD := b.rankOf[m.Dst]
		if okS {
			per[rs] = append(per[rs], id)
		}
		if okD && rd != rs {
			per[rd] = append(per[rd], id)
		}
	}
	done := make([]msggraph.ID, b.n)
	for r := range done {
		deps := per[r]
		if len(deps) == 0 {
			deps = b.entry
		}
		ep := b.s.Ranks[r]
		done[r] = b.g.Add(msggraph.Message{Src: ep, Dst: ep, Start: b.s.Start, Deps: deps, Tag: fmt.Sprintf("%s/done/r%d", b.tag, r)})
	}
	return done
}

// finishFolded is finish for a folded ring: positions 0..fold-1 hold every message; a sink
// message's destination at position fold counts for position 0, which stands for it.
func (b *builder) finishFolded() []msggraph.ID {
	P := b.fold
	per := make([][]msggraph.ID, P)
	end := msggraph.ID(len(b.g.Msgs))
	for id := b.base; id < end; id++ {
		if b.hasDependent[id-b.base] {
			continue
		}
		m := &b.g.Msgs[id]
		rs, okS := b.rankOf[m.Src]
		rd, okD := b.rankOf[m.Dst]
		if okS && rs < b.n {
			rs %= P
			per[rs] = append(per[rs], id)
		}
		if okD {
			if rd %= P; !okS || rd != rs%P {
				per[rd] = append(per[rd], id)
			}
		}
	}
	done := make([]msggraph.ID, b.n)
	for r := 0; r < P; r++ {
		deps := per[r]
		if len(deps) == 0 {
			deps = b.entry
		}
		ep := b.s.Ranks[r]
		done[r] = b.g.Add(msggraph.Message{Src: ep, Dst: ep, Start: b.s.Start, Deps: deps, Tag: fmt.Sprintf("%s/done/r%d", b.tag, r)})
	}
	for r := P; r < b.n; r++ {
		done[r] = done[r%P]
	}
	return done
}

// Split divides total into parts nearly equal pieces (the first total%parts get one more byte),
// as NCCL divides a buffer among channels and ring blocks.
func Split(total int64, parts int) []int64 {
	out := make([]int64, parts)
	q, r := total/int64(parts), total%int64(parts)
	for i := range out {
		out[i] = q
		if int64(i) < r {
			out[i]++
		}
	}
	return out
}

// loops cuts d bytes into pieces of unit x ChunkBytes (the last may be shorter); without a chunk
// size it is one piece.
func (b *builder) loops(d int64, unit int) []int64 {
	c := int64(b.s.ChunkBytes) * int64(unit)
	if c <= 0 || d <= c {
		return []int64{d}
	}
	out := make([]int64, 0, (d+c-1)/c)
	for ; d > 0; d -= c {
		out = append(out, min(c, d))
	}
	return out
}

func mod(a, n int) int { return ((a % n) + n) % n }

func sum(xs []int64) int64 {
	var t int64
	for _, x := range xs {
		t += x
	}
	return t
}

// ring describes one pass of a ring over some ranks for one loop of data.
type ring struct {
	members []int   // rank indices, in ring order: position p sends to position p+1
	blocks  []int64 // block sizes, one per position
	conn    int32
	steps   int
	// blockOf is the block position p sends at step s.
	blockOf func(p, s int) int
	// own[p] must complete before position p's first send, and before every send s < ownSteps
	// (the steps whose payload includes p's own data). nil means the collective's entry.
	own      [][]msggraph.ID
	ownSteps int
	// reduce says the payload of step s was just reduced by its sender.
	reduce func(s int) bool
	label  string
}

// run appends the ring's messages and returns msgs[s][p], the message position p sends at
// step s. The message that arrives at position p at step s is msgs[s][p-1].
//
// With a fold (Spec.Fold) only positions 0..fold-1 are compiled: msgs[s] has fold entries, and
// position 0 waits on position fold-1, which stands for position n-1.
func (b *builder) run(rg ring) [][]msggraph.ID {
	n := len(rg.members)
	m := n
	if b.fold > 0 && n == b.n {
		m = b.fold
	}
	msgs := make([][]msggraph.ID, rg.steps)
	for s := 0; s < rg.steps; s++ {
		msgs[s] = make([]msggraph.ID, m)
		for p := 0; p < m; p++ {
			var deps []msggraph.ID
			var own []msggraph.ID
			if rg.own != nil {
				own = rg.own[p]
			}
			if s == 0 {
				deps = own
			} else {
				deps = make([]msggraph.ID, 0, 1+len(own))
				deps = append(deps, msgs[s-1][mod(p-1, m)])
				if s < rg.ownSteps {
					deps = append(deps, own...)
				}
			}
			blk := rg.blockOf(p, s)
			red := rg.reduce != nil && rg.reduce(s)
			msgs[s][p] = b.add(rg.members[p], rg.members[mod(p+1, n)], rg.blocks[blk], rg.conn, deps, red,
				fmt.Sprintf("%s/s%d/b%d", rg.label, s, blk))
		}
	}
	return msgs
}

// Block schedules. With reduce-scatter sending block p-1-s at step s, position p ends up
// owning block p; all-gather then starts with that block.
func rsBlock(n int) func(p, s int) int { return func(p, s int) int { return mod(p-1-s, n) } }
func agBlock(n int) func(p, s int) int { return func(p, s int) int { return mod(p-s, n) } }
func arBlock(n int) func(p, s int) int {
	return func(p, s int) int {
		if s < n-1 {
			return mod(p-1-s, n)
		}
		return mod(p-(s-(n-1)), n)
	}
}

func allRanks(n int) []int {
	r := make([]int, n)
	for i := range r {
		r[i] = i
	}
	return r
}

func (b *builder) ringAllReduce() {
	n := b.n
	for ch, d := range Split(int64(b.s.Bytes), b.s.channels()) {
		for k, l := range b.loops(d, n) {
			b.run(ring{members: allRanks(n), blocks: Split(l, n), conn: b.conn(ch), steps: 2 * (n - 1),
				blockOf: arBlock(n), reduce: func(s int) bool { return s >= 1 && s <= n-1 },
				label: fmt.Sprintf("ring/c%d/k%d", ch, k)})
		}
	}
}

func (b *builder) ringReduceScatter() {
	n := b.n
	for ch, d := range Split(int64(b.s.Bytes), b.s.channels()) {
		for k, l := range b.loops(d, n) {
			blocks := Split(l, n)
			msgs := b.run(ring{members: allRanks(n), blocks: blocks, conn: b.conn(ch), steps: n - 1,
				blockOf: rsBlock(n), reduce: func(s int) bool { return s >= 1 },
				label: fmt.Sprintf("ring/c%d/k%d", ch, k)})
			m := len(msgs[n-2])
			for p := 0; p < m; p++ {
				b.reduceNode(p, blocks[p], []msggraph.ID{msgs[n-2][mod(p-1, m)]}, fmt.Sprintf("ring/c%d/k%d/reduce", ch, k))
			}
		}
	}
}

func (b *builder) ringAllGather() {
	n := b.n
	for ch, d := range Split(int64(b.s.Bytes), b.s.channels()) {
		for k, l := range b.loops(d, n) {
			b.run(ring{members: allRanks(n), blocks: Split(l, n), conn: b.conn(ch), steps: n - 1,
				blockOf: agBlock(n), label: fmt.Sprintf("ring/c%d/k%d", ch, k)})
		}
	}
}

// chainBroadcast pipelines the buffer along the ring root, root+1, ..., root-1.
func (b *builder) chainBroadcast() {
	n := b.n
	for ch, d := range Split(int64(b.s.Bytes), b.s.channels()) {
		for k, l := range b.loops(d, 1) {
			var prev []msggraph.ID
			for h := 0; h < n-1; h++ {
				src, dst := mod(b.s.Root+h, n), mod(b.s.Root+h+1, n)
				id := b.add(src, dst, l, b.conn(ch), prev, false, fmt.Sprintf("chain/c%d/k%d/h%d", ch, k, h))
				prev = []msggraph.ID{id}
			}
		}
	}
}

// chainReduce pipelines partial sums along the ring root+1, root+2, ..., root.
func (b *builder) chainReduce() {
	n := b.n
	for ch, d := range Split(int64(b.s.Bytes), b.s.channels()) {
		for k, l := range b.loops(d, 1) {
			var prev []msggraph.ID
			for h := 0; h < n-1; h++ {
				src, dst := mod(b.s.Root+1+h, n), mod(b.s.Root+2+h, n)
				id := b.add(src, dst, l, b.conn(ch), prev, h >= 1, fmt.Sprintf("chain/c%d/k%d/h%d", ch, k, h))
				prev = []msggraph.ID{id}
			}
			b.reduceNode(b.s.Root, l, prev, fmt.Sprintf("chain/c%d/k%d/reduce", ch, k))
		}
	}
}

// directAllToAll sends block d of every rank's buffer straight to rank d.
func (b *builder) directAllToAll() {
	n, c := b.n, b.s.channels()
	for r := 0; r < n; r++ {
		blocks := Split(int64(b.s.Bytes), n)
		for i := 1; i < n; i++ {
			d := mod(r+i, n)
			for ch, x := range Split(blocks[d], c) {
				for k, l := range b.loops(x, 1) {
					b.add(r, d, l, b.conn(ch), nil, false, fmt.Sprintf("direct/c%d/k%d", ch, k))
				}
			}
		}
	}
}

// sendRecv sends S from every rank r to rank r+1 (nccl-tests' sendrecv_perf pattern).
func (b *builder) sendRecv() {
	n, c := b.n, b.s.channels()
	for r := 0; r < n; r++ {
		for ch, x := range Split(int64(b.s.Bytes), c) {
			for k, l := range b.loops(x, 1) {
				b.add(r, mod(r+1, n), l, b.conn(ch), nil, false, fmt.Sprintf("p2p/c%d/k%d", ch, k))
			}
		}
	}
}
