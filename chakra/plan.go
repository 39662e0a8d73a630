package chakra

import (
	"container/heap"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/fabricsim/fabricsim/training"
	"github.com/fabricsim/fabricsim/units"
)

// Options adjust Load.
type Options struct {
	// CommGroups is an ASTRA-sim communicator-group file (ReadCommGroups); "" for none.
	CommGroups string
}

// Job is the traces of every rank of a job and the plan they make.
type Job struct {
	Prefix string
	Files  []string // by rank
	Traces []*Trace // by rank
	Plan   *training.Plan
	// Groups is the ranks of every process group a collective used, by pg_name ("" for the
	// default group of all ranks).
	Groups map[string][]int
}

// Load reads the rank files of prefix (RankFiles) and builds the job's plan (Build).
func Load(prefix string, opt Options) (*Job, error) {
	files, err := RankFiles(prefix)
	if err != nil {
		return nil, err
	}
	j := &Job{Prefix: prefix, Files: files, Traces: make([]*Trace, len(files))}
	for r, f := range files {
		if j.Traces[r], err = ReadFile(f); err != nil {
			return nil, err
		}
	}
	var groups map[string][]int
	if opt.CommGroups != "" {
		if groups, err = ReadCommGroups(opt.CommGroups, len(files)); err != nil {
			return nil, err
		}
	}
	j.Plan, j.Groups, err = Build(j.Traces, groups, opt.CommGroups)
	if err != nil {
		return nil, err
	}
	return j, nil
}

// ZeroDuration is what a compute node of duration 0 takes: ASTRA-sim replays it as 1 ns
// (Workload::issue_replay, astra-sim/workload/Workload.cc @518bd513ae11).
const ZeroDuration = units.Nanosecond

// MaxDurationMicros bounds duration_micros (about 11.6 days): the plan's times are int64
// picoseconds, and a larger value is a corrupt trace, not a step.
const MaxDurationMicros = 1_000_000_000_000

// resource is what a node occupies on its rank while it runs. ASTRA-sim runs at most one
// CPU op, one GPU compute and one GPU communication (sends and collectives; receives exempt) at
// a time per rank (astra-sim/workload/HardwareResource.cc @518bd513ae11).
type resource uint8

const (
	noResource resource = iota
	cpuOps
	gpuCompute
	gpuComm
	numResources
)

type member struct{ rank, node int }

// op is one plan op under construction: a compute node, or a collective or a send/receive pair
// matched across ranks (members: the nodes it stands for).
type op struct {
	kind    training.OpKind
	ranks   []int
	bytes   units.Size
	dur     units.Time
	members []member
	tag     string
	dim     string
}

type builder struct {
	traces []*Trace
	n      int
	index  []map[uint64]int // per rank: node id -> index in Nodes
	order  [][]int          // per rank: node indices in issue order
	opOf   [][]int          // per rank and node: its op, or -1 (metadata, one-rank collectives)
	res    [][]resource     // per rank and node
	ops    []*op

	declared    map[string][]int  // process groups from the comm-group file and metadata nodes
	declaredBy  map[string]string // where each was declared, for messages
	used        map[string][]int  // process groups collectives ran on
	collSeq     map[string][][]int
	sends       map[p2pKey][]int
	recvs       map[p2pKey][]int
	resolved    [][][]int // per rank and node: the ops whose completion means the node is done
	resolveDone [][]bool
}

type p2pKey struct{ src, dst, tag int }

// Build turns the traces of ranks 0..n-1 into a plan (docs/chakra.md has the mapping):
// compute nodes become compute ops, the collectives of a process group are matched across its
// ranks in issue order, sends with receives by source, destination and tag; every op waits for
// its nodes' data_deps and for the op before it on the same resource of each of its ranks.
// groups (may be nil) are process groups from a communicator-group file named groupsFile.
func Build(traces []*Trace, groups map[string][]int, groupsFile string) (*training.Plan, map[string][]int, error) {
	b := &builder{traces: traces, n: len(traces), declared: map[string][]int{}, declaredBy: map[string]string{},
		used: map[string][]int{}, collSeq: map[string][][]int{}, sends: map[p2pKey][]int{}, recvs: map[p2pKey][]int{}}
	if b.n == 0 {
		return nil, nil, fmt.Errorf("chakra: no traces")
	}
	for pg, g := range groups {
		b.declared[pg], b.declaredBy[pg] = g, groupsFile
	}
	for r := range traces {
		if err := b.indexRank(r); err != nil {
			return nil, nil, err
		}
	}
	for r := range traces {
		if err := b.classify(r); err != nil {
			return nil, nil, err
		}
	}
	if err := b.matchCollectives(); err != nil {
		return nil, nil, err
	}
	if err := b.matchP2P(); err != nil {
		return nil, nil, err
	}
	p, err := b.plan()
	if err != nil {
		return nil, nil, err
	}
	return p, b.used, nil
}

// nodeErr is an Error about node i of rank r.
func (b *builder) nodeErr(r, i int, field, format string, args ...any) *Error {
	t := b.traces[r]
	n := &t.Nodes[i]
	return &Error{File: t.File, Offset: n.Offset, Record: i, ID: n.ID, HasID: true, Name: shortName(n.Name), Field: field, Msg: fmt.Sprintf(format, args...)}
}

// shortName keeps messages and tags readable: converted traces name GPU kernels by their whole
// C++ signature.
func shortName(s string) string {
	const limit = 60
	if len(s) <= limit {
		return s
	}
	return s[:limit-3] + "..."
}

// where names node i of rank r in a message about another node.
func (b *builder) where(r, i int) string {
	n := &b.traces[r].Nodes[i]
	return fmt.Sprintf("node %d of %s", n.ID, b.traces[r].File)
}

// indexRank maps rank r's node ids and puts its nodes in issue order: a topological order of
// data_deps that takes the lowest ready id first, the order ASTRA-sim's issue loop prefers
// (Workload::issue_dep_free_nodes walks the ready ids in a std::set). ctrl_deps are not a
// readiness condition there, nor in Chakra's feeder (et_feeder.cpp freeChildrenNodes walks
// data_deps only, @21585d8f2d65), nor here.
func (b *builder) indexRank(r int) error {
	t := b.traces[r]
	if len(t.Nodes) == 0 {
		return &Error{File: t.File, Offset: -1, Record: -1, Msg: "no nodes: the file holds only its GlobalMetadata"}
	}
	idx := make(map[uint64]int, len(t.Nodes))
	for i := range t.Nodes {
		id := t.Nodes[i].ID
		if j, dup := idx[id]; dup {
			return b.nodeErr(r, i, "id", "%d is also the id of record %d: node ids must be unique in a file", id, j)
		}
		idx[id] = i
	}
	b.index = append(b.index, idx)
	indeg := make([]int, len(t.Nodes))
	children := make([][]int, len(t.Nodes))
	for i := range t.Nodes {
		seen := map[uint64]bool{}
		for _, d := range t.Nodes[i].DataDeps {
			if seen[d] {
				continue // a repeated dependency counts once
			}
			seen[d] = true
			j, ok := idx[d]
			if !ok {
				return b.nodeErr(r, i, "data_deps", "node %d is not in the file (the node could never start)", d)
			}
			if j == i {
				return b.nodeErr(r, i, "data_deps", "the node depends on itself")
			}
			indeg[i]++
			children[j] = append(children[j], i)
		}
	}
	h := &idHeap{nodes: t.Nodes}
	for i := range t.Nodes {
		if indeg[i] == 0 {
			heap.Push(h, i)
		}
	}
	order := make([]int, 0, len(t.Nodes))
	for h.Len() > 0 {
		i := heap.Pop(h).(int)
		order = append(order, i)
		for _, c := range children[i] {
			if indeg[c]--; indeg[c] == 0 {
				heap.Push(h, c)
			}
		}
	}
	if len(order) < len(t.Nodes) {
		stuck := -1
		for i := range t.Nodes {
			if indeg[i] > 0 && (stuck < 0 || t.Nodes[i].ID < t.Nodes[stuck].ID) {
				stuck = i
			}
		}
		return b.nodeErr(r, stuck, "data_deps", "a dependency cycle: %d nodes wait for each other and never start, this among them", len(t.Nodes)-len(order))
	}
	b.order = append(b.order, order)
	return nil
}

// idHeap is a min-heap of node indices by node id.
type idHeap struct {
	nodes []Node
	x     []int
}

func (h *idHeap) Len() int           { return len(h.x) }
func (h *idHeap) Less(i, j int) bool { return h.nodes[h.x[i]].ID < h.nodes[h.x[j]].ID }
func (h *idHeap) Swap(i, j int)      { h.x[i], h.x[j] = h.x[j], h.x[i] }
func (h *idHeap) Push(v any)         { h.x = append(h.x, v.(int)) }
func (h *idHeap) Pop() any {
	v := h.x[len(h.x)-1]
	h.x = h.x[:len(h.x)-1]
	return v
}

// intAttr reads an integer attribute: any integer or bool member of the oneof is accepted
// (Chakra's feeder reads comm_size and comm_type from int64_val and comm_src/dst/tag from
// int32_val, and would read 0 from another member; taking the value is kinder and no less
// exact). A non-integer value is an error.
func (b *builder) intAttr(r, i int, name string) (v int64, present bool, err error) {
	a := b.traces[r].Nodes[i].Attr(name)
	if a == nil {
		return 0, false, nil
	}
	v, ok := a.Int()
	if !ok {
		return 0, true, b.nodeErr(r, i, name, "%s, want an integer (int64_val or int32_val)", a.Type)
	}
	return v, true, nil
}

func (b *builder) isCPU(r, i int) (bool, error) {
	v, _, err := b.intAttr(r, i, "is_cpu_op")
	return v != 0, err
}

// classify turns rank r's nodes, in issue order, into compute ops and queues its collectives
// and point-to-point nodes for matching.
func (b *builder) classify(r int) error {
	t := b.traces[r]
	b.opOf = append(b.opOf, make([]int, len(t.Nodes)))
	b.res = append(b.res, make([]resource, len(t.Nodes)))
	for i := range b.opOf[r] {
		b.opOf[r][i] = -1
	}
	for _, i := range b.order[r] {
		n := &t.Nodes[i]
		cpu, err := b.isCPU(r, i)
		if err != nil {
			return err
		}
		switch n.Type {
		case MetadataNode:
			// Passed through: ASTRA-sim finishes it at once (Workload::issue_metadata); a
			// PyTorch process-group list in it declares groups.
			groups, ok, err := pytorchGroups(n)
			if err != nil {
				return b.nodeErr(r, i, "inputs", "%v", err)
			}
			if ok {
				if err := b.declare(groups, r, i); err != nil {
					return err
				}
			}
		case CompNode:
			if n.DurationMicros > MaxDurationMicros {
				return b.nodeErr(r, i, "duration_micros", "%d us is over %d us (11.6 days): a corrupt trace?", n.DurationMicros, int64(MaxDurationMicros))
			}
			d := units.Time(n.DurationMicros) * units.Microsecond
			if d == 0 {
				d = ZeroDuration
			}
			b.res[r][i] = gpuCompute
			if cpu {
				b.res[r][i] = cpuOps
			}
			b.opOf[r][i] = len(b.ops)
			b.ops = append(b.ops, &op{kind: training.Compute, ranks: []int{r}, dur: d, members: []member{{r, i}},
				tag: fmt.Sprintf("rank %d node %d %s", r, n.ID, shortName(n.Name))})
		case CommCollNode, CommSendNode, CommRecvNode:
			if cpu {
				return b.nodeErr(r, i, "is_cpu_op", "true on a %s: communication runs on the GPU (ASTRA-sim rejects it too: \"Comm node should not be on CPU\")", n.Type)
			}
			if err := b.queueComm(r, i); err != nil {
				return err
			}
		case MemLoadNode, MemStoreNode:
			return b.nodeErr(r, i, "type", "%s is not modelled: fabricsim has no remote-memory model (ASTRA-sim sends these to its own); remove the node or its rank's memory traffic", n.Type)
		case InvalidNode:
			return b.nodeErr(r, i, "type", "INVALID_NODE (0), or no type at all: a corrupt or unfinished trace? (valid: COMP_NODE, COMM_COLL_NODE, COMM_SEND_NODE, COMM_RECV_NODE, METADATA_NODE)")
		default:
			return b.nodeErr(r, i, "type", "%d is not a Chakra NodeType (valid: 1 METADATA_NODE .. 7 COMM_COLL_NODE; fabricsim replays COMP_NODE, COMM_COLL_NODE, COMM_SEND_NODE, COMM_RECV_NODE)", int32(n.Type))
		}
	}
	return nil
}

// declare records process groups from rank r's metadata node i; a group declared twice must
// have the same ranks.
func (b *builder) declare(groups map[string][]int, r, i int) error {
	names := make([]string, 0, len(groups))
	for k := range groups {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, pg := range names {
		g, err := checkGroup(groups[pg], b.n)
		if err != nil {
			return b.nodeErr(r, i, "inputs", "process group %q: %v", pg, err)
		}
		if old, ok := b.declared[pg]; ok && fmt.Sprint(old) != fmt.Sprint(g) {
			return b.nodeErr(r, i, "inputs", "inconsistent process groups: group %q has ranks %v here but %v in %s", pg, g, old, b.declaredBy[pg])
		}
		b.declared[pg], b.declaredBy[pg] = g, b.where(r, i)
	}
	return nil
}

// supported maps the collectives fabricsim simulates to plan op kinds.
var supported = map[CollectiveType]training.OpKind{AllReduce: training.AllReduce, AllGather: training.AllGather,
	ReduceScatter: training.ReduceScatter, AllToAll: training.AllToAll, Broadcast: training.Broadcast, Reduce: training.Reduce}

// queueComm checks a communication node's attributes and queues it for matching.
func (b *builder) queueComm(r, i int) error {
	n := &b.traces[r].Nodes[i]
	size, ok, err := b.intAttr(r, i, "comm_size")
	switch {
	case err != nil:
		return err
	case !ok:
		return b.nodeErr(r, i, "comm_size", "missing: a %s needs its size in bytes", n.Type)
	case size <= 0:
		return b.nodeErr(r, i, "comm_size", "%d: want a positive number of bytes", size)
	}
	if n.Type == CommCollNode {
		ct, ok, err := b.intAttr(r, i, "comm_type")
		switch {
		case err != nil:
			return err
		case !ok:
			return b.nodeErr(r, i, "comm_type", "missing: a COMM_COLL_NODE needs its collective (0 ALL_REDUCE, 1 REDUCE, 2 ALL_GATHER, 5 BROADCAST, 6 ALL_TO_ALL, 7 REDUCE_SCATTER)")
		case ct < 0 || ct > int64(Barrier):
			return b.nodeErr(r, i, "comm_type", "%d is not a CollectiveCommType (0 ALL_REDUCE .. 9 BARRIER)", ct)
		}
		if _, ok := supported[CollectiveType(ct)]; !ok {
			return b.nodeErr(r, i, "comm_type", "%s (%d) is not modelled (fabricsim simulates ALL_REDUCE, REDUCE, ALL_GATHER, BROADCAST, ALL_TO_ALL and REDUCE_SCATTER)", CollectiveType(ct), ct)
		}
		pg := ""
		if a := n.Attr("pg_name"); a != nil {
			s, ok := a.String()
			if !ok {
				return b.nodeErr(r, i, "pg_name", "%s, want string_val", a.Type)
			}
			pg = s
		}
		if isDefaultGroup(pg) {
			pg = ""
		}
		seq := b.collSeq[pg]
		if seq == nil {
			seq = make([][]int, b.n)
			b.collSeq[pg] = seq
		}
		seq[r] = append(seq[r], i)
		b.res[r][i] = gpuComm
		return nil
	}
	peerAttr, selfAttr := "comm_dst", "comm_src"
	if n.Type == CommRecvNode {
		peerAttr, selfAttr = "comm_src", "comm_dst"
	}
	peer, ok, err := b.intAttr(r, i, peerAttr)
	switch {
	case err != nil:
		return err
	case !ok:
		return b.nodeErr(r, i, peerAttr, "missing: a %s needs its peer's rank (ASTRA-sim matches sends and receives by comm_src, comm_dst and comm_tag)", n.Type)
	case peer < 0 || peer >= int64(b.n):
		return b.nodeErr(r, i, peerAttr, "rank %d is outside the job's ranks 0..%d", peer, b.n-1)
	case peer == int64(r):
		return b.nodeErr(r, i, peerAttr, "%d is the node's own rank: a message to itself", peer)
	}
	if self, ok, err := b.intAttr(r, i, selfAttr); err != nil {
		return err
	} else if ok && self != int64(r) {
		return b.nodeErr(r, i, selfAttr, "%d, but the node is in rank %d's file (a %s runs on its own rank)", self, r, n.Type)
	}
	tag, _, err := b.intAttr(r, i, "comm_tag")
	if err != nil {
		return err
	}
	if n.Type == CommSendNode {
		b.sends[p2pKey{r, int(peer), int(tag)}] = append(b.sends[p2pKey{r, int(peer), int(tag)}], i)
		b.res[r][i] = gpuComm
	} else {
		b.recvs[p2pKey{int(peer), r, int(tag)}] = append(b.recvs[p2pKey{int(peer), r, int(tag)}], i)
	}
	return nil
}

func (b *builder) commSize(r, i int) int64 {
	v, _, _ := b.intAttr(r, i, "comm_size")
	return v
}

func (b *builder) commType(r, i int) CollectiveType {
	v, _, _ := b.intAttr(r, i, "comm_type")
	return CollectiveType(v)
}

// matchCollectives makes one op of the k-th collective of every rank of each process group.
func (b *builder) matchCollectives() error {
	pgs := make([]string, 0, len(b.collSeq))
	for pg := range b.collSeq {
		pgs = append(pgs, pg)
	}
	sort.Strings(pgs)
	for _, pg := range pgs {
		seq := b.collSeq[pg]
		var users []int
		for r := range seq {
			if len(seq[r]) > 0 {
				users = append(users, r)
			}
		}
		ranks, from := users, "the ranks whose traces use it"
		switch g, ok := b.declared[pg]; {
		case pg == "":
			ranks, from = allRanks(b.n), "the default group"
		case ok:
			ranks, from = g, b.declaredBy[pg]
		}
		for _, r := range users {
			if !contains(ranks, r) {
				return b.nodeErr(r, seq[r][0], "pg_name", "inconsistent process groups: rank %d runs a collective in group %q, whose ranks are %v (%s)", r, pgLabel(pg), ranks, from)
			}
		}
		count := 0
		for _, r := range ranks {
			count = max(count, len(seq[r]))
		}
		for _, r := range ranks {
			if len(seq[r]) < count {
				long := ranks[0]
				for _, x := range ranks {
					if len(seq[x]) == count {
						long = x
						break
					}
				}
				return b.nodeErr(long, seq[long][len(seq[r])], "pg_name", "inconsistent process groups: rank %d runs %d collectives in group %q but rank %d (%s) only %d, so this one (its %s) has no partner there",
					long, count, pgLabel(pg), r, b.traces[r].File, len(seq[r]), ordinal(len(seq[r])+1))
			}
		}
		for k := range count {
			r0, i0 := ranks[0], seq[ranks[0]][k]
			ct, size := b.commType(r0, i0), b.commSize(r0, i0)
			for _, r := range ranks[1:] {
				i := seq[r][k]
				if c := b.commType(r, i); c != ct {
					return b.nodeErr(r, i, "comm_type", "%s, but the matching collective (the %s in group %q) is %s on rank %d (%s): the ranks' collectives do not line up",
						c, ordinal(k+1), pgLabel(pg), ct, r0, b.where(r0, i0))
				}
				if s := b.commSize(r, i); s != size {
					return b.nodeErr(r, i, "comm_size", "%d bytes, but the matching %s (the %s in group %q) has %d on rank %d (%s)",
						s, ct, ordinal(k+1), pgLabel(pg), size, r0, b.where(r0, i0))
				}
			}
			if len(ranks) < 2 {
				continue // a collective of one rank moves nothing: passed through
			}
			bytes := units.Size(size)
			if ct == AllGather {
				// comm_size is each rank's contribution (ASTRA-sim's ring: msg_size = data_size,
				// final_data_size = data_size x n, Ring.cc @518bd513ae11); the plan's all-gather
				// size is the gathered output (nccl-tests' convention).
				if size > math.MaxInt64/int64(len(ranks)) {
					return b.nodeErr(r0, i0, "comm_size", "%d x %d ranks overflows", size, len(ranks))
				}
				bytes *= units.Size(len(ranks))
			}
			o := &op{kind: supported[ct], ranks: ranks, bytes: bytes, dim: "pg " + pgLabel(pg),
				tag: fmt.Sprintf("%s pg %s #%d", ct, pgLabel(pg), k)}
			for _, r := range ranks {
				o.members = append(o.members, member{r, seq[r][k]})
				b.opOf[r][seq[r][k]] = len(b.ops)
			}
			b.ops = append(b.ops, o)
		}
		b.used[pg] = ranks
	}
	return nil
}

// pgLabel names a process group in messages and tags: the default group is "0".
func pgLabel(pg string) string {
	if pg == "" {
		return "0"
	}
	return pg
}

func ordinal(k int) string {
	switch {
	case k%100 >= 11 && k%100 <= 13:
		return fmt.Sprintf("%dth", k)
	case k%10 == 1:
		return fmt.Sprintf("%dst", k)
	case k%10 == 2:
		return fmt.Sprintf("%dnd", k)
	case k%10 == 3:
		return fmt.Sprintf("%drd", k)
	}
	return fmt.Sprintf("%dth", k)
}

func allRanks(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func contains(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// matchP2P pairs the k-th send from src to dst with tag t with the k-th receive at dst from
// src with tag t, both in issue order.
func (b *builder) matchP2P() error {
	keys := map[p2pKey]bool{}
	for k := range b.sends {
		keys[k] = true
	}
	for k := range b.recvs {
		keys[k] = true
	}
	sorted := make([]p2pKey, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Slice(sorted, func(i, j int) bool {
		a, c := sorted[i], sorted[j]
		if a.src != c.src {
			return a.src < c.src
		}
		if a.dst != c.dst {
			return a.dst < c.dst
		}
		return a.tag < c.tag
	})
	for _, k := range sorted {
		s, v := b.sends[k], b.recvs[k]
		if len(s) != len(v) {
			if len(s) > len(v) {
				return b.nodeErr(k.src, s[len(v)], "comm_dst", "rank %d sends %d messages to rank %d with tag %d, but rank %d (%s) receives only %d from rank %d with that tag: this send has no receive",
					k.src, len(s), k.dst, k.tag, k.dst, b.traces[k.dst].File, len(v), k.src)
			}
			return b.nodeErr(k.dst, v[len(s)], "comm_src", "rank %d receives %d messages from rank %d with tag %d, but rank %d (%s) sends only %d to rank %d with that tag: this receive has no send",
				k.dst, len(v), k.src, k.tag, k.src, b.traces[k.src].File, len(s), k.dst)
		}
		for j := range s {
			size := b.commSize(k.src, s[j])
			if rs := b.commSize(k.dst, v[j]); rs != size {
				return b.nodeErr(k.dst, v[j], "comm_size", "%d bytes, but the matching send (%s) has %d", rs, b.where(k.src, s[j]), size)
			}
			o := &op{kind: training.SendRecv, ranks: []int{k.src, k.dst}, bytes: units.Size(size), dim: "p2p",
				members: []member{{k.src, s[j]}, {k.dst, v[j]}},
				tag:     fmt.Sprintf("send %d->%d tag %d #%d", k.src, k.dst, k.tag, j)}
			b.opOf[k.src][s[j]] = len(b.ops)
			b.opOf[k.dst][v[j]] = len(b.ops)
			b.ops = append(b.ops, o)
		}
	}
	return nil
}

// done is the set of ops whose completion completes node i of rank r: its own op, or, for a
// node passed through (metadata, a one-rank collective), what its data_deps resolve to.
func (b *builder) done(r, i int) []int {
	if o := b.opOf[r][i]; o >= 0 {
		return []int{o}
	}
	if b.resolveDone[r][i] {
		return b.resolved[r][i]
	}
	var out []int
	for _, d := range b.traces[r].Nodes[i].DataDeps {
		out = append(out, b.done(r, b.index[r][d])...)
	}
	out = dedupInts(out)
	b.resolved[r][i], b.resolveDone[r][i] = out, true
	return out
}

func dedupInts(xs []int) []int {
	sort.Ints(xs)
	out := xs[:0]
	for i, x := range xs {
		if i == 0 || x != xs[i-1] {
			out = append(out, x)
		}
	}
	return out
}

// plan wires the ops' dependencies, sorts them topologically and emits the plan.
func (b *builder) plan() (*training.Plan, error) {
	b.resolved = make([][][]int, b.n)
	b.resolveDone = make([][]bool, b.n)
	for r := range b.n {
		b.resolved[r] = make([][]int, len(b.traces[r].Nodes))
		b.resolveDone[r] = make([]bool, len(b.traces[r].Nodes))
	}
	deps := make([][]int, len(b.ops))
	// The op before each node on its resource, in its rank's issue order.
	prev := make([][]int, b.n)
	for r := range b.n {
		prev[r] = make([]int, len(b.traces[r].Nodes))
		var last [numResources]int
		for k := range last {
			last[k] = -1
		}
		for _, i := range b.order[r] {
			prev[r][i] = -1
			res := b.res[r][i]
			if res == noResource || b.opOf[r][i] < 0 {
				continue
			}
			prev[r][i] = last[res]
			last[res] = b.opOf[r][i]
		}
	}
	for o, x := range b.ops {
		for _, m := range x.members {
			for _, d := range b.traces[m.rank].Nodes[m.node].DataDeps {
				deps[o] = append(deps[o], b.done(m.rank, b.index[m.rank][d])...)
			}
			if p := prev[m.rank][m.node]; p >= 0 {
				deps[o] = append(deps[o], p)
			}
		}
		deps[o] = dedupInts(deps[o])
	}
	// Kahn's algorithm, lowest op first among the ready: deterministic.
	indeg := make([]int, len(b.ops))
	children := make([][]int, len(b.ops))
	for o, ds := range deps {
		for _, d := range ds {
			if d == o {
				return nil, b.deadlock(o, 1)
			}
			indeg[o]++
			children[d] = append(children[d], o)
		}
	}
	h := &intHeap{}
	for o := range b.ops {
		if indeg[o] == 0 {
			heap.Push(h, o)
		}
	}
	pos := make([]int, len(b.ops))
	order := make([]int, 0, len(b.ops))
	for h.Len() > 0 {
		o := heap.Pop(h).(int)
		pos[o] = len(order)
		order = append(order, o)
		for _, c := range children[o] {
			if indeg[c]--; indeg[c] == 0 {
				heap.Push(h, c)
			}
		}
	}
	if len(order) < len(b.ops) {
		for o := range b.ops {
			if indeg[o] > 0 {
				return nil, b.deadlock(o, len(b.ops)-len(order))
			}
		}
	}
	p := &training.Plan{GPUs: b.n, TP: 1, PP: 1, DP: b.n, EP: 1, MicroBatches: 1, Ops: make([]training.Op, len(order))}
	busy := make([]units.Time, b.n)
	for k, o := range order {
		x := b.ops[o]
		op := training.Op{ID: k, Kind: x.kind, Ranks: x.ranks, Bytes: x.bytes, Duration: x.dur, Phase: "trace", Dim: x.dim,
			Layer: -1, Microbatch: -1, Tag: x.tag}
		if x.kind != training.Compute {
			op.Repeat = 1
		} else if b.res[x.ranks[0]][x.members[0].node] == gpuCompute {
			busy[x.ranks[0]] += x.dur
		}
		for _, d := range deps[o] {
			op.Deps = append(op.Deps, pos[d])
		}
		sort.Ints(op.Deps)
		p.Ops[k] = op
	}
	for _, t := range busy {
		p.ComputeTime = max(p.ComputeTime, t)
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("chakra: built an invalid plan (a bug): %v", err)
	}
	return p, nil
}

// deadlock reports op o, which never becomes ready: its nodes wait, through data_deps and the
// one-at-a-time order of their ranks, for an op that waits for them.
func (b *builder) deadlock(o, stuck int) error {
	m := b.ops[o].members[0]
	var others []string
	for _, x := range b.ops[o].members[1:] {
		others = append(others, fmt.Sprintf("rank %d node %d", x.rank, b.traces[x.rank].Nodes[x.node].ID))
	}
	with := ""
	if len(others) > 0 {
		with = " (with " + strings.Join(others, ", ") + ")"
	}
	return b.nodeErr(m.rank, m.node, "data_deps", "the ranks deadlock: %d ops never start, this %s%s among them; each waits, through data_deps or the one-collective-at-a-time order of its ranks, for another that waits for it (are the collectives of different process groups issued in different orders on different ranks?)",
		stuck, b.ops[o].kind, with)
}

type intHeap []int

func (h intHeap) Len() int           { return len(h) }
func (h intHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h intHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *intHeap) Push(v any)        { *h = append(*h, v.(int)) }
func (h *intHeap) Pop() any {
	v := (*h)[len(*h)-1]
	*h = (*h)[:len(*h)-1]
	return v
}
