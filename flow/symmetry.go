package flow

import (
	"errors"
	"math"
	"slices"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/sim"
	"github.com/fabricsim/fabricsim/topo"
)

// Symmetry reduction: identical parts of the network that share nothing run once.
//
// A message graph often holds copies of one piece of work on disjoint parts of the fabric: the
// data-parallel rings of the eight rails of a rail-optimized cluster, the same collective of
// every pipeline stage. Messages fall into components (connected by dependencies, by a host, or
// by a resource any of their QPs' data crosses; ACK paths only count bytes on links, which the
// run does not report, and are left out). Two components are copies when they
// are the same up to renaming hosts and resources: message by message in ID order the same bytes,
// priority, start, delay and dependencies, and QP by QP paths whose resources have the same
// properties and are shared in the same pattern (canonical sequences, compared whole). A
// component's copies take no resource, host or dependency from it, and the engine steps the
// whole network on one clock, so in a run without random draws the copies move in lockstep: the
// same events at the same picoseconds, the same rates in every step. Running one representative
// and giving each copy its results is then the plain run's result exactly.
//
// What can still couple copies with the rest, or make them differ, is checked while running:
//   - a random draw (an ECN mark reaching DCQCN's notification point) by a representative's flow:
//     its copies would draw from their own streams;
//   - an IB CC FECN on a representative's flow (its counters are not per component);
//   - bytes held in a switch's shared buffer where a representative's component meets another
//     component at that switch, when the buffer's occupancy matters (PFC's dynamic threshold).
//
// When one happens, the reduced run stops and the plain run is made instead (Run), so the
// result is always the plain run's (the internal per-link byte counters, txBytes, are the one
// exception: copies' ACK and CNP bytes are not expanded). Lossy fabrics (tail drop, go-back-N)
// are not reduced.
// TestSymmetryMatchesPlain compares reduced and plain runs byte for byte.
type reduction struct {
	// repOf is, per message, the message whose results it takes: itself, or its counterpart in
	// the representative of its component's class (a copy, not run).
	repOf []int32
	// mult is, per message, how many copies its component has (0 for a copy itself).
	mult []int32
	// pairs maps each copy's resources: its resource and the representative's, in turn.
	pairs []int32
	// coupled marks the switches where a component with copies meets another component.
	coupled []bool
	copies  int // messages not run
	broken  bool
}

// errReductionBroken stops a reduced run whose premises failed (see reduction).
var errReductionBroken = errors.New("flow: symmetry reduction does not hold")

// unionFind is a disjoint-set forest with path halving.
type unionFind []int32

func (u *unionFind) find(x int32) int32 {
	p := *u
	for p[x] != x {
		p[x] = p[p[x]]
		x = p[x]
	}
	return x
}

func (u *unionFind) union(a, b int32) {
	a, b = u.find(a), u.find(b)
	if a == b {
		return
	}
	if a > b {
		a, b = b, a
	}
	(*u)[b] = a // the smaller index is the root: the component's first message
}

// reduce finds the copies in the engine's message graph (nil when there are none, or the run
// cannot be reduced).
func (e *engine) reduce() (*reduction, error) {
	if e.loss != nil {
		return nil, nil
	}
	mg := e.mg
	M := int32(len(mg.Msgs))
	H := int32(len(e.g.Hosts))
	uf := make(unionFind, M+H)
	for i := range uf {
		uf[i] = int32(i)
	}
	resElem := func(r int32) int32 {
		x := M + H + r
		for int32(len(uf)) <= x {
			uf = append(uf, int32(len(uf)))
		}
		return x
	}
	seen := newConnIndex(len(e.g.Hosts)) // a connection's first message
	for i := int32(0); i < M; i++ {
		m := &mg.Msgs[i]
		for _, d := range m.Deps {
			uf.union(i, int32(d))
		}
		if m.Bytes == 0 {
			continue
		}
		uf.union(i, M+m.Src)
		uf.union(i, M+m.Dst)
		if m.Conn != 0 {
			// The messages of a connection take its QPs' routes (qpHash): one is enough.
			if j := seen.get(m); j >= 0 && e.sameConn(m, &mg.Msgs[j]) {
				uf.union(i, j)
				continue
			}
			seen.set(m, i)
		}
		for q := range e.qpCount(m) {
			pc, err := e.paths(m.Src, m.Dst, qpHash(e.cfg.Seed, i, m, q), q)
			if err != nil {
				return nil, err
			}
			for _, r := range pc.p[:pc.hops] {
				uf.union(i, resElem(r))
			}
		}
	}
	seen = nil
	// Components in order of their first message; local index of each message in its component.
	comp := make([]int32, M) // component index
	local := make([]int32, M)
	var size []int32
	rootComp := map[int32]int32{}
	for i := int32(0); i < M; i++ {
		r := uf.find(i)
		c, ok := rootComp[r]
		if !ok {
			c = int32(len(size))
			rootComp[r] = c
			size = append(size, 0)
		}
		comp[i] = c
		local[i] = size[c]
		size[c]++
	}
	rootComp = nil
	uf = nil
	nComp := len(size)
	if nComp < 2 {
		return nil, nil
	}
	start := make([]int32, nComp+1)
	for c := range size {
		start[c+1] = start[c] + size[c]
	}
	msgs := make([]int32, M)
	fill := append([]int32(nil), start[:nComp]...)
	for i := int32(0); i < M; i++ {
		msgs[fill[comp[i]]] = i
		fill[comp[i]]++
	}
	// Classes of copies: canonical sequences, bucketed by hash and compared whole.
	cs := newCanon(e)
	cs.comp = comp
	repComp := make([]int32, nComp) // each component's representative component
	resStart := make([]int32, nComp+1)
	var resList []int32 // each component's resources, in order of first use
	byHash := map[uint64][]int32{}
	cur := make([]uint64, 0, 16*int(slices.Max(size)))
	other := make([]uint64, 0, cap(cur))
	otherOf := int32(-1) // the component whose sequence other holds
	red := &reduction{}
	for c := 0; c < nComp; c++ {
		repComp[c] = int32(c)
		ids := msgs[start[c]:start[c+1]]
		cur, resList = cs.sequence(ids, local, cur[:0], resList)
		resStart[c+1] = int32(len(resList))
		curRes := resList[resStart[c]:]
		h := hashSeq(cur)
		for _, rc := range byHash[h] {
			if start[rc+1]-start[rc] != int32(len(ids)) || resStart[rc+1]-resStart[rc] != int32(len(curRes)) {
				continue
			}
			if otherOf != rc {
				other, _ = cs.sequence(msgs[start[rc]:start[rc+1]], local, other[:0], nil)
				otherOf = rc
			}
			if !slices.Equal(cur, other) {
				continue
			}
			repComp[c] = rc
			for k, r := range curRes {
				red.pairs = append(red.pairs, r, resList[resStart[rc]+int32(k)])
			}
			break
		}
		if repComp[c] == int32(c) {
			byHash[h] = append(byHash[h], int32(c))
		}
	}
	byHash = nil
	red.repOf = make([]int32, M)
	red.mult = make([]int32, M)
	copiesOf := make([]int32, nComp)
	for c := range nComp {
		if rc := repComp[c]; rc != int32(c) {
			copiesOf[rc]++
		}
	}
	for c := range nComp {
		rc := repComp[c]
		for k, i := range msgs[start[c]:start[c+1]] {
			if rc == int32(c) {
				red.repOf[i] = i
				red.mult[i] = copiesOf[c]
			} else {
				red.repOf[i] = msgs[start[rc]+int32(k)]
				red.copies++
			}
		}
	}
	if red.copies == 0 {
		return nil, nil
	}
	if e.fc.kind == bpPFC && e.fc.alpha > 0 {
		// The switches where a component with copies (or a copy) meets another component.
		owner := make([]int32, len(e.g.Nodes))
		for i := range owner {
			owner[i] = -1
		}
		red.coupled = make([]bool, len(e.g.Nodes))
		withCopies := make([]bool, len(e.g.Nodes))
		touch := func(n topo.NodeID, c int32) {
			if e.g.Nodes[n].Kind != topo.Switch {
				return
			}
			switch o := owner[n]; {
			case o == -1:
				owner[n] = c
			case o != c:
				owner[n] = -2
			}
			if copiesOf[repComp[c]] > 0 {
				withCopies[n] = true
			}
		}
		for c := range nComp {
			for _, r := range resList[resStart[c]:resStart[c+1]] {
				res := &e.net.res[r]
				touch(res.from, int32(c))
				if res.to >= 0 {
					touch(res.to, int32(c))
				}
				for _, s := range res.toSwitches {
					touch(s, int32(c))
				}
			}
		}
		for n := range owner {
			red.coupled[n] = owner[n] == -2 && withCopies[n]
		}
	}
	return red, nil
}

// minReducedShare is the share of a graph's messages a symmetry reduction must leave unrun to be
// kept. A reduced run costs the same steps less the copies' share, and where its premises fail
// (a DCQCN mark on a representative, the shared buffer) the plain run is made from the start:
// a second engine, its network and routes, and the steps run until then. On the 131,072-GPU
// pipeline class (BenchmarkPipelineClass131k: eight rail planes, DCQCN) the reduction found 2
// copies among 32,768 messages and broke after one step, building the 786,432-resource network
// twice for at most 0.006 % fewer messages.
const minReducedShare = 0.01

// worthwhile reports whether the reduction leaves at least minReducedShare of msgs unrun.
func (r *reduction) worthwhile(msgs int) bool {
	return float64(r.copies) >= minReducedShare*float64(msgs)
}

// qpCount is the number of QPs (flows) message m is striped over (startMessage).
func (e *engine) qpCount(m *msggraph.Message) int32 {
	nq, per := e.qpSplit(m)
	n := int32(0)
	for q := int64(0); q < nq && int64(m.Bytes)-q*per > 0; q++ {
		n++
	}
	return n
}

// copied reports whether message i's component has copies (their results are taken from it).
func (r *reduction) copied(i int32) bool { return r != nil && r.mult[i] > 0 }

// expand gives the copies the results of their representatives: the messages' start and finish,
// and each resource's counters (PFC pauses and stalls, credit stalls, ECN marks, bytes).
func (r *reduction) expand(e *engine) {
	for i, rep := range r.repOf {
		if rep != int32(i) {
			e.started[i], e.finish[i] = e.started[rep], e.finish[rep]
		}
	}
	fc := e.fc
	for k := 0; k < len(r.pairs); k += 2 {
		c, rep := r.pairs[k], r.pairs[k+1]
		e.net.res[c].marks += e.net.res[rep].marks
		e.net.res[c].txBytes += e.net.res[rep].txBytes
		if len(fc.pauseFrames) == 0 {
			continue
		}
		for cl := range e.nc {
			ci, ri := int(c)*e.nc+cl, int(rep)*e.nc+cl
			fc.pauseFrames[ci] += fc.pauseFrames[ri]
			fc.resumes[ci] += fc.resumes[ri]
			fc.stalled[ci] += fc.stalled[ri]
		}
	}
}

// connIndex remembers, per source host, the first message of its last few connections (by
// number and destination: a collective reuses its connection numbers at every position). get
// returns -1 when none is remembered; a miss only costs a route lookup.
type connIndex struct {
	ent  [][connWays]connEntry
	next []uint8
}

type connEntry struct{ conn, dst, msg int32 }

const connWays = 4

func newConnIndex(hosts int) *connIndex {
	x := &connIndex{ent: make([][connWays]connEntry, hosts), next: make([]uint8, hosts)}
	for h := range x.ent {
		for w := range x.ent[h] {
			x.ent[h][w].msg = -1
		}
	}
	return x
}

func (x *connIndex) get(m *msggraph.Message) int32 {
	for _, en := range &x.ent[m.Src] {
		if en.conn == m.Conn && en.dst == m.Dst && en.msg >= 0 {
			return en.msg
		}
	}
	return -1
}

func (x *connIndex) set(m *msggraph.Message, i int32) {
	for w := range x.ent[m.Src] {
		if en := &x.ent[m.Src][w]; en.conn == m.Conn && en.dst == m.Dst {
			en.msg = i
			return
		}
	}
	w := x.next[m.Src]
	x.ent[m.Src][w] = connEntry{m.Conn, m.Dst, i}
	x.next[m.Src] = (w + 1) % connWays
}

// sameConn reports whether message m takes the routes of message first: the same connection
// and ends, and no more QPs.
func (e *engine) sameConn(m, first *msggraph.Message) bool {
	return m.Conn == first.Conn && m.Src == first.Src && m.Dst == first.Dst &&
		(m.Bytes <= first.Bytes || e.qpCount(m) <= e.qpCount(first))
}

// canon writes components' canonical sequences.
type canon struct {
	e        *engine
	conns    *connIndex // the first message of each connection, by global index
	comp     []int32    // each message's component
	hostMark []int32    // per host: 1 + local index in the component being written, by stamp
	hostSeen []int32
	resMark  []int32
	resSeen  []int32
	stamp    int32
	// switches, when set, also writes each resource's switches by order of first use (SameRoutes:
	// across whole runs, two resources at one switch share its buffer).
	switches       bool
	swMark, swSeen []int32
	nSw            int32
	// want, when set, is a sequence to compare with while writing: sequence stops at the first
	// message whose words differ from it (differs set; SameRoutes' seeds mostly differ early).
	want    []uint64
	differs bool
}

func newCanon(e *engine) *canon {
	H := len(e.g.Hosts)
	return &canon{e: e, hostMark: make([]int32, H), hostSeen: make([]int32, H), conns: newConnIndex(len(e.g.Hosts))}
}

// sequence appends the canonical sequence of the component made of messages ids (in ID order)
// to seq, and its resources in order of first use to res.
func (c *canon) sequence(ids, local []int32, seq []uint64, res []int32) ([]uint64, []int32) {
	e := c.e
	c.stamp++
	for len(c.resMark) < len(e.net.res) {
		c.resMark = append(c.resMark, 0)
		c.resSeen = append(c.resSeen, 0)
	}
	nHosts := int32(0)
	base := len(res)
	host := func(h int32) uint64 {
		if c.hostSeen[h] != c.stamp {
			c.hostSeen[h] = c.stamp
			c.hostMark[h] = nHosts
			nHosts++
		}
		return uint64(c.hostMark[h])
	}
	checked := len(seq)
	for _, i := range ids {
		if c.want != nil {
			if len(seq) > len(c.want) || !slices.Equal(seq[checked:], c.want[checked:len(seq)]) {
				c.differs = true
				return seq, res
			}
			checked = len(seq)
		}
		m := &e.mg.Msgs[i]
		seq = append(seq, uint64(m.Bytes), uint64(m.Prio), uint64(m.Start), uint64(m.Delay), uint64(len(m.Deps)))
		for _, d := range m.Deps {
			seq = append(seq, uint64(local[d]))
		}
		if m.Bytes == 0 {
			continue
		}
		seq = append(seq, host(m.Src), host(m.Dst))
		if m.Conn != 0 {
			// A later message of a connection takes the routes of its first (the same QPs).
			// (The index may hold another component's message, or one from an earlier pass over
			// this component, not before i: then it is not a reference.)
			if j := c.conns.get(m); j >= 0 && j < i && c.comp[j] == c.comp[i] && e.sameConn(m, &e.mg.Msgs[j]) {
				seq = append(seq, 1<<62|uint64(local[j]))
				continue
			}
			c.conns.set(m, i)
		}
		nq := e.qpCount(m)
		seq = append(seq, uint64(nq))
		for q := range nq {
			pc, _ := e.paths(m.Src, m.Dst, qpHash(e.cfg.Seed, i, m, q), q)
			seq = append(seq, uint64(pc.hops))
			for _, r := range pc.p[:pc.hops] {
				for len(c.resMark) <= int(r) {
					c.resMark = append(c.resMark, 0)
					c.resSeen = append(c.resSeen, 0)
				}
				if c.resSeen[r] == c.stamp {
					seq = append(seq, uint64(c.resMark[r]))
					continue
				}
				c.resSeen[r] = c.stamp
				c.resMark[r] = int32(len(res) - base)
				res = append(res, r)
				seq = append(seq, 1<<63|uint64(len(res)-1-base))
				seq = e.net.signature(r, seq)
				if c.switches {
					seq = c.switchMarks(r, seq)
				}
				if mr := e.fc.minRate; mr != nil {
					res := &e.net.res[r]
					if res.to >= 0 {
						seq = append(seq, uint64(mr[res.to]))
					}
					for _, s := range res.toSwitches {
						seq = append(seq, uint64(mr[s]))
					}
				}
			}
		}
	}
	return seq, res
}

// switchMarks appends the switches at resource r's ends, each as the order of its first use in
// the sequence being written (hosts are named by hostMark; a switch is written once per stamp).
func (c *canon) switchMarks(r int32, seq []uint64) []uint64 {
	e := c.e
	if c.swMark == nil {
		c.swMark = make([]int32, len(e.g.Nodes))
		c.swSeen = make([]int32, len(e.g.Nodes))
	}
	res := &e.net.res[r]
	mark := func(n topo.NodeID) {
		if e.g.Nodes[n].Kind != topo.Switch {
			seq = append(seq, 1<<61)
			return
		}
		if c.swSeen[n] != c.stamp {
			c.swSeen[n] = c.stamp
			c.swMark[n] = c.nSw
			c.nSw++
		}
		seq = append(seq, uint64(c.swMark[n]))
	}
	mark(res.from)
	if res.to >= 0 {
		mark(res.to)
	}
	for _, s := range res.toSwitches {
		mark(s)
	}
	return seq
}

// SameRoutes groups seeds by how they route message graph mg on topology g with fabric cfg
// (nh as for Run): out[i] is the first seed index j <= i under which every flow's path is seed
// i's up to renaming links and switches of the same properties, shared by the same flows in the
// same pattern (the canonical sequence of the symmetry reduction, written over the whole graph
// as one component, with the switches at every link's ends unless switches is false). The
// switches matter where bytes are held in their shared buffers (PFC's dynamic threshold, the
// reported high-water mark); a run that held none (result.Run.NoQueues) is another seed's run
// when the links alone are shared alike. The engine's results do not read
// resource or switch identities, so two runs of mg that differ only in such seeds take the same
// steps to the picosecond when neither draws a random number (result.Run.NoDraws): compare runs
// a class once per group of seeds (TestSeedReuseMatchesEverySeed). InfiniBand's forwarding
// tables and adaptive routing, and packet spraying, do not read the seed: every seed is seed 0's
// without routing anything.
func SameRoutes(g *topo.Graph, nh NextHopper, cfg fabric.Config, mg *msggraph.Graph, seeds []uint64, switches bool) ([]int, error) {
	out := make([]int, len(seeds))
	if len(seeds) < 2 || cfg.Kind == fabric.KindInfiniBand || cfg.Routing == fabric.RoutingSpray {
		return out, nil
	}
	if nh == nil {
		lr, err := NewLeafRoutes(g)
		if err != nil {
			return nil, err
		}
		nh = lr
	}
	e, err := newEngine(g, nh, cfg, mg, Options{})
	if err != nil {
		return nil, err
	}
	M := int32(len(mg.Msgs))
	ids := make([]int32, M)
	for i := range ids {
		ids[i] = int32(i)
	}
	cs := newCanon(e)
	cs.comp = make([]int32, M) // one component
	cs.switches = switches
	seqs := make([][]uint64, len(seeds))
	for i, sd := range seeds {
		e.cfg.Seed, e.rt.seed = sd, sd
		clear(e.pathCache)
		out[i] = i
		var first []uint64 // seed i's whole sequence, when another seed's stopped short
		for j := range i {
			if seqs[j] == nil {
				continue
			}
			cs.want, cs.differs = seqs[j], false
			cs.conns, cs.nSw = newConnIndex(len(g.Hosts)), 0
			seq, _ := cs.sequence(ids, ids, nil, nil)
			if !cs.differs && slices.Equal(seq, seqs[j]) {
				out[i] = j
				break
			}
			if !cs.differs {
				first = seq
			}
		}
		if out[i] == i && i < len(seeds)-1 { // a later seed may route like it
			if first == nil {
				cs.want = nil
				cs.conns, cs.nSw = newConnIndex(len(g.Hosts)), 0
				first, _ = cs.sequence(ids, ids, nil, nil)
			}
			seqs[i] = first
		}
	}
	return out, nil
}

// signature appends what the model reads of resource r, beyond its identity: rates, delays, its
// rank in the sweep, its marking thresholds, the buffers of the switches at its ends and, for
// credits, the slowest port downstream and the way back.
func (n *network) signature(r int32, seq []uint64) []uint64 {
	res := &n.res[r]
	f := math.Float64bits
	seq = append(seq, f(res.rate), uint64(res.prop), uint64(res.linkRate), uint64(res.delay), uint64(res.rank), uint64(res.links),
		b2u(res.toHost), b2u(res.fromHost), f(res.ecn.kmin), f(res.ecn.kmax), f(res.ecn.pmax), uint64(len(res.toSwitches)))
	bufSig := func(s topo.NodeID) {
		b := &n.bufs[s]
		seq = append(seq, f(b.size), f(b.shared), uint64(len(n.g.Nodes[s].Ports)))
	}
	bufSig(res.from)
	if res.to >= 0 {
		bufSig(res.to)
	}
	for _, s := range res.toSwitches {
		bufSig(s)
	}
	seq = append(seq, uint64(n.res[n.reverse(res.first)].delay))
	return seq
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// hashSeq buckets sequences (FNV-1a over words; equal buckets are compared whole).
func hashSeq(s []uint64) uint64 {
	h := uint64(14695981039346656037)
	for _, x := range s {
		h = (h ^ x) * 1099511628211
	}
	return sim.Mix64(h ^ uint64(len(s)))
}

// hold notes bytes entering the switch buffers downstream of res: where a component with copies
// meets another one, the shared buffer couples them (PFC's dynamic threshold).
func (r *reduction) hold(res *resource) {
	if res.to >= 0 {
		r.broken = r.broken || r.coupled[res.to]
		return
	}
	for _, s := range res.toSwitches {
		r.broken = r.broken || r.coupled[s]
	}
}

// Copies is how many messages of graph mg on g with fabric cfg (nh as for Run) the symmetry
// reduction finds to be copies of another component's, before running (they are not run unless
// the reduction breaks). For measurements (docs/flow.md, "Figures").
func Copies(g *topo.Graph, nh NextHopper, cfg fabric.Config, mg *msggraph.Graph) (int, error) {
	if nh == nil && cfg.Kind != fabric.KindInfiniBand {
		lr, err := NewLeafRoutes(g)
		if err != nil {
			return 0, err
		}
		nh = lr
	}
	e, err := newEngine(g, nh, cfg, mg, Options{})
	if err != nil {
		return 0, err
	}
	red, err := e.reduce()
	if err != nil || red == nil {
		return 0, err
	}
	return red.copies, nil
}
