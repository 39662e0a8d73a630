package chakra

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/training"
	"github.com/fabricsim/fabricsim/units"
)

func load(t *testing.T, prefix string) *Job {
	t.Helper()
	j, err := Load(prefix, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// TestLoadDP16: the fixture's plan has one op per compute node and one per collective and
// message, and every collective's size and ranks are the trace's.
func TestLoadDP16(t *testing.T) {
	j := load(t, "testdata/dp16")
	p := j.Plan
	if p.GPUs != 16 || len(j.Files) != 16 || j.Files[3] != filepath.Join("testdata", "dp16.3.et") {
		t.Fatalf("%d GPUs, files %v", p.GPUs, j.Files)
	}
	// 16 ranks x 6 compute nodes; 2 all-reduces over all 16; one all-to-all in each of the two
	// expert groups; 8 send/recv pairs.
	want := map[training.OpKind]int{training.Compute: 96, training.AllReduce: 2, training.AllToAll: 2, training.SendRecv: 8}
	if got := p.Count(); !reflect.DeepEqual(got, want) {
		t.Errorf("ops by kind %v, want %v", got, want)
	}
	var evens, odds, all []int
	for r := range 16 {
		all = append(all, r)
		if r%2 == 0 {
			evens = append(evens, r)
		} else {
			odds = append(odds, r)
		}
	}
	type coll struct {
		kind  training.OpKind
		ranks []int
		bytes units.Size
		dim   string
	}
	var got []coll
	for _, o := range p.Ops {
		if o.Kind != training.Compute {
			got = append(got, coll{o.Kind, o.Ranks, o.Bytes, o.Dim})
		}
	}
	wantColl := []coll{
		{training.AllToAll, evens, 4 << 20, "pg 1"}, {training.AllToAll, odds, 4 << 20, "pg 2"},
		{training.AllReduce, all, 8 << 20, "pg 0"}, {training.AllReduce, all, 4 << 20, "pg 0"},
	}
	for r := range 8 {
		wantColl = append(wantColl, coll{training.SendRecv, []int{r, r + 8}, 1 << 20, "p2p"})
	}
	// The plan's order is topological; compare collectives as a set.
	for _, w := range wantColl {
		found := false
		for _, g := range got {
			if reflect.DeepEqual(g, w) {
				found = true
			}
		}
		if !found {
			t.Errorf("no collective %+v in %+v", w, got)
		}
	}
	if len(got) != len(wantColl) {
		t.Errorf("%d collectives, want %d", len(got), len(wantColl))
	}
	// Every collective's size equals each of its nodes' comm_size in the trace files.
	for _, tr := range j.Traces {
		for _, n := range tr.Nodes {
			if n.Type != CommCollNode {
				continue
			}
			size := n.Attr("comm_size").Ints[0]
			if size != 4<<20 && size != 8<<20 {
				t.Errorf("%s node %d: comm_size %d", tr.File, n.ID, size)
			}
		}
	}
	// The busiest GPU computes 1500 + 1500 + 3000 + 3000 + 500 us and the 0-us zero_grad (1 ns).
	if wantT := 9500*units.Microsecond + units.Nanosecond; p.ComputeTime != wantT {
		t.Errorf("compute time %v, want %v", p.ComputeTime, wantT)
	}
	if got := j.Groups; !reflect.DeepEqual(got, map[string][]int{"": all, "1": evens, "2": odds}) {
		t.Errorf("groups %v", got)
	}
	// Gradient bucket 0 waits for the 16 "bwd layers 7-4" computes (data_deps) and, on each
	// rank, for the collective before it on the GPU's communication (the rank's all-to-all).
	for _, o := range p.Ops {
		if o.Kind == training.AllReduce && o.Bytes == 8<<20 {
			var kinds []string
			for _, d := range o.Deps {
				d := p.Ops[d]
				kinds = append(kinds, fmt.Sprintf("%s %s", d.Kind, strings.Fields(d.Tag + " x x x")[4]))
			}
			if len(o.Deps) != 18 {
				t.Errorf("bucket 0 depends on %d ops (%v), want 16 backward computes and 2 all-to-alls", len(o.Deps), kinds)
			}
		}
	}
	// The gzip variant is the same job.
	gz := load(t, "testdata/dp16-gz")
	if !reflect.DeepEqual(gz.Plan, p) {
		t.Error("the gzip variant builds a different plan")
	}
}

// trace builds an in-memory trace for rank r from nodes.
func trace(r int, nodes ...Node) *Trace {
	return &Trace{File: fmt.Sprintf("t.%d.et", r), Nodes: nodes}
}

func comp(id uint64, us uint64, deps ...uint64) Node {
	return Node{ID: id, Name: fmt.Sprintf("c%d", id), Type: CompNode, DurationMicros: us, DataDeps: deps}
}

func cpuOp(id uint64, us uint64, deps ...uint64) Node {
	n := comp(id, us, deps...)
	n.Attrs = []Attr{flag1("is_cpu_op", true)}
	return n
}

func collN(id uint64, ct CollectiveType, size int64, pg string, deps ...uint64) Node {
	n := Node{ID: id, Name: fmt.Sprintf("coll%d", id), Type: CommCollNode, DataDeps: deps,
		Attrs: []Attr{i64("comm_type", int64(ct)), i64("comm_size", size)}}
	if pg != "" {
		n.Attrs = append(n.Attrs, str("pg_name", pg))
	}
	return n
}

func sendN(id uint64, dst, tag int32, size int64, deps ...uint64) Node {
	return Node{ID: id, Type: CommSendNode, DataDeps: deps, Attrs: []Attr{i64("comm_size", size), i32("comm_dst", dst), i32("comm_tag", tag)}}
}

func recvN(id uint64, src, tag int32, size int64, deps ...uint64) Node {
	return Node{ID: id, Type: CommRecvNode, DataDeps: deps, Attrs: []Attr{i64("comm_size", size), i32("comm_src", src), i32("comm_tag", tag)}}
}

func build(t *testing.T, traces ...*Trace) *training.Plan {
	t.Helper()
	p, _, err := Build(traces, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// finish is each op's completion with collectives taking zero time: the plan's longest paths.
func finish(p *training.Plan) []units.Time {
	fin := make([]units.Time, len(p.Ops))
	for i, o := range p.Ops {
		var start units.Time
		for _, d := range o.Deps {
			start = max(start, fin[d])
		}
		fin[i] = start + o.Duration
	}
	return fin
}

func opByTag(t *testing.T, p *training.Plan, prefix string) int {
	t.Helper()
	for i, o := range p.Ops {
		if strings.HasPrefix(o.Tag, prefix) {
			return i
		}
	}
	t.Fatalf("no op tagged %q", prefix)
	return -1
}

// TestSemantics: what the plan makes of data_deps, ctrl_deps, resources, metadata nodes and
// zero durations, each on a tiny trace whose answer is worked out by hand.
func TestSemantics(t *testing.T) {
	t.Run("one GPU compute at a time", func(t *testing.T) {
		// Two independent 10-us computes on one GPU run one after the other (ASTRA-sim's
		// HardwareResource): 20 us, not 10. A CPU op alongside overlaps them.
		p := build(t, trace(0, comp(1, 10), comp(2, 10), cpuOp(3, 15)))
		fin := finish(p)
		if got := fin[opByTag(t, p, "rank 0 node 2")]; got != 20*units.Microsecond {
			t.Errorf("second compute ends at %v, want 20us", got)
		}
		if got := fin[opByTag(t, p, "rank 0 node 3")]; got != 15*units.Microsecond {
			t.Errorf("CPU op ends at %v, want 15us", got)
		}
		if p.ComputeTime != 20*units.Microsecond {
			t.Errorf("busiest GPU compute %v, want 20us (the CPU op is not GPU compute)", p.ComputeTime)
		}
	})
	t.Run("ctrl_deps are not waited for", func(t *testing.T) {
		// A GPU compute whose ctrl_dep is a 100-us CPU op starts at 0.
		c := comp(2, 5)
		c.CtrlDeps = []uint64{1}
		p := build(t, trace(0, cpuOp(1, 100), c))
		if got := finish(p)[opByTag(t, p, "rank 0 node 2")]; got != 5*units.Microsecond {
			t.Errorf("ends at %v, want 5us", got)
		}
	})
	t.Run("issue order follows data_deps, then ids", func(t *testing.T) {
		// Node 1 depends on node 3 (a later id): issue order 2, 3, 1 (2 and 3 are ready, 2 is
		// lower; then 1 once 3 is done). Chained on the GPU: 2 ends at 1, 3 at 3, 1 at 7 us.
		p := build(t, trace(0, comp(1, 4, 3), comp(2, 1), comp(3, 2)))
		fin := finish(p)
		for tag, want := range map[string]units.Time{"rank 0 node 2": 1, "rank 0 node 3": 3, "rank 0 node 1": 7} {
			if got := fin[opByTag(t, p, tag)]; got != want*units.Microsecond {
				t.Errorf("%s ends at %v, want %dus", tag, got, want)
			}
		}
	})
	t.Run("zero duration is 1 ns", func(t *testing.T) {
		p := build(t, trace(0, comp(1, 0)))
		if p.Ops[0].Duration != units.Nanosecond {
			t.Errorf("%v", p.Ops[0].Duration)
		}
	})
	t.Run("metadata nodes pass dependencies through", func(t *testing.T) {
		// 3 depends on metadata 2, which depends on 1: 3 waits for 1.
		p := build(t, trace(0, cpuOp(1, 7), Node{ID: 2, Type: MetadataNode, DataDeps: []uint64{1}}, comp(3, 1, 2)))
		if len(p.Ops) != 2 || finish(p)[opByTag(t, p, "rank 0 node 3")] != 8*units.Microsecond {
			t.Errorf("%+v", p.Ops)
		}
	})
	t.Run("a collective waits for all its ranks", func(t *testing.T) {
		// Rank 1 computes 9 us before the all-reduce, rank 0 2 us: the all-reduce starts at 9.
		p := build(t, trace(0, comp(1, 2), collN(2, AllReduce, 100, "", 1), comp(3, 1, 2)),
			trace(1, comp(1, 9), collN(2, AllReduce, 100, "", 1), comp(3, 1, 2)))
		fin := finish(p)
		if got := fin[opByTag(t, p, "rank 0 node 3")]; got != 10*units.Microsecond {
			t.Errorf("rank 0's compute after the all-reduce ends at %v, want 10us", got)
		}
	})
	t.Run("collectives one at a time, receives exempt", func(t *testing.T) {
		// Rank 0 sends to 1 (tag 1), then all-reduces; the all-reduce waits for the send on
		// rank 0's communication. Rank 1 receives, then all-reduces: a receive holds nothing.
		p := build(t,
			trace(0, sendN(1, 1, 1, 64), collN(2, AllReduce, 100, "")),
			trace(1, recvN(1, 0, 1, 64), collN(2, AllReduce, 100, "")))
		ar := p.Ops[opByTag(t, p, "ALL_REDUCE")]
		snd := opByTag(t, p, "send 0->1")
		if !reflect.DeepEqual(ar.Deps, []int{snd}) {
			t.Errorf("all-reduce deps %v, want [%d] (the send)", ar.Deps, snd)
		}
	})
	t.Run("sends match receives by tag", func(t *testing.T) {
		// Tags 5 and 6 in opposite orders on the two sides still pair by tag.
		p := build(t,
			trace(0, sendN(1, 1, 5, 10), sendN(2, 1, 6, 20)),
			trace(1, recvN(1, 0, 6, 20), recvN(2, 0, 5, 10)))
		for _, o := range p.Ops {
			if (strings.Contains(o.Tag, "tag 5") && o.Bytes != 10) || (strings.Contains(o.Tag, "tag 6") && o.Bytes != 20) || !reflect.DeepEqual(o.Ranks, []int{0, 1}) {
				t.Errorf("%+v", o)
			}
		}
	})
	t.Run("all-gather size is the gathered output", func(t *testing.T) {
		// comm_size is each rank's contribution (ASTRA-sim's ring); 4 ranks x 1 KiB = 4 KiB.
		var ts []*Trace
		for r := range 4 {
			ts = append(ts, trace(r, collN(1, AllGather, 1024, "")))
		}
		if p := build(t, ts...); p.Ops[0].Kind != training.AllGather || p.Ops[0].Bytes != 4096 {
			t.Errorf("%+v", p.Ops[0])
		}
	})
	t.Run("reduce-scatter, broadcast, reduce keep comm_size", func(t *testing.T) {
		for _, c := range []struct {
			ct   CollectiveType
			kind training.OpKind
		}{{ReduceScatter, training.ReduceScatter}, {Broadcast, training.Broadcast}, {Reduce, training.Reduce}, {AllToAll, training.AllToAll}} {
			p := build(t, trace(0, collN(1, c.ct, 3000, "")), trace(1, collN(1, c.ct, 3000, "")))
			if p.Ops[0].Kind != c.kind || p.Ops[0].Bytes != 3000 {
				t.Errorf("%s: %+v", c.ct, p.Ops[0])
			}
		}
	})
	t.Run("a one-rank process group moves nothing", func(t *testing.T) {
		p := build(t, trace(0, collN(1, AllReduce, 100, "5"), comp(2, 1, 1)), trace(1, comp(1, 1)))
		if p.Count()[training.AllReduce] != 0 || len(p.Ops) != 2 {
			t.Errorf("%s", p.Summary())
		}
	})
	t.Run("comm groups file", func(t *testing.T) {
		// pg "3" = ranks 1 and 2 by the file; rank 0 runs compute only.
		ts := []*Trace{trace(0, comp(1, 1)), trace(1, collN(1, AllReduce, 8, "3")), trace(2, collN(1, AllReduce, 8, "3"))}
		p, groups, err := Build(ts, map[string][]int{"3": {1, 2}}, "groups.json")
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(groups["3"], []int{1, 2}) || p.Count()[training.AllReduce] != 1 {
			t.Errorf("%v %s", groups, p.Summary())
		}
	})
}

// TestBadTraces: each way a trace cannot be replayed is one error naming the file, the node
// and what is wrong.
func TestBadTraces(t *testing.T) {
	two := func(a, b Node) []*Trace { return []*Trace{trace(0, a), trace(1, b)} }
	withAttr := func(n Node, a Attr) Node { n.Attrs = append(n.Attrs, a); return n }
	for _, c := range []struct {
		name   string
		traces []*Trace
		groups map[string][]int
		want   string
	}{
		{"unknown node type", []*Trace{trace(0, Node{ID: 4, Name: "x", Type: 12})},
			nil, `t.0.et: node 4 "x" (record 0, byte 0): type: 12 is not a Chakra NodeType`},
		{"memory node", []*Trace{trace(0, Node{ID: 4, Type: MemLoadNode})},
			nil, "t.0.et: node 4 (record 0, byte 0): type: MEM_LOAD_NODE is not modelled"},
		{"invalid node", []*Trace{trace(0, comp(1, 1), Node{ID: 2, Type: InvalidNode})},
			nil, "t.0.et: node 2 (record 1, byte 0): type: INVALID_NODE (0)"},
		{"barrier", two(collN(1, Barrier, 8, ""), collN(1, Barrier, 8, "")),
			nil, "t.0.et: node 1 \"coll1\" (record 0, byte 0): comm_type: BARRIER (9) is not modelled"},
		{"gather", two(collN(1, Gather, 8, ""), collN(1, Gather, 8, "")),
			nil, "comm_type: GATHER (3) is not modelled"},
		{"comm_type out of range", two(collN(1, 42, 8, ""), collN(1, 0, 8, "")),
			nil, "t.0.et: node 1 \"coll1\" (record 0, byte 0): comm_type: 42 is not a CollectiveCommType"},
		{"comm_type missing", []*Trace{trace(0, Node{ID: 1, Type: CommCollNode, Attrs: []Attr{i64("comm_size", 8)}})},
			nil, "comm_type: missing"},
		{"comm_size missing", []*Trace{trace(0, Node{ID: 1, Type: CommCollNode, Attrs: []Attr{i64("comm_type", 0)}})},
			nil, "t.0.et: node 1 (record 0, byte 0): comm_size: missing"},
		{"comm_size zero", two(collN(1, AllReduce, 0, ""), collN(1, AllReduce, 0, "")),
			nil, "comm_size: 0: want a positive number of bytes"},
		{"comm_size a string", []*Trace{trace(0, Node{ID: 1, Type: CommCollNode, Attrs: []Attr{i64("comm_type", 0), str("comm_size", "8MB")}})},
			nil, "comm_size: string_val, want an integer"},
		{"communication on the CPU", []*Trace{trace(0, withAttr(collN(1, AllReduce, 8, ""), flag1("is_cpu_op", true)))},
			nil, "is_cpu_op: true on a COMM_COLL_NODE"},
		{"missing dependency", []*Trace{trace(0, comp(1, 1, 99))},
			nil, "t.0.et: node 1 \"c1\" (record 0, byte 0): data_deps: node 99 is not in the file"},
		{"dependency cycle", []*Trace{trace(0, comp(1, 1, 2), comp(2, 1, 1), comp(3, 1))},
			nil, "t.0.et: node 1 \"c1\" (record 0, byte 0): data_deps: a dependency cycle: 2 nodes"},
		{"duplicate id", []*Trace{trace(0, comp(1, 1), comp(1, 2))},
			nil, "t.0.et: node 1 \"c1\" (record 1, byte 0): id: 1 is also the id of record 0"},
		{"empty trace", []*Trace{trace(0)}, nil, "t.0.et: no nodes"},
		{"collective count differs", []*Trace{
			trace(0, collN(1, AllReduce, 8, ""), collN(2, AllReduce, 8, "")), trace(1, collN(1, AllReduce, 8, ""))},
			nil, `t.0.et: node 2 "coll2" (record 1, byte 0): pg_name: inconsistent process groups: rank 0 runs 2 collectives in group "0" but rank 1 (t.1.et) only 1, so this one (its 2nd) has no partner there`},
		{"collective size differs", two(collN(1, AllReduce, 8, ""), collN(1, AllReduce, 16, "")),
			nil, `t.1.et: node 1 "coll1" (record 0, byte 0): comm_size: 16 bytes, but the matching ALL_REDUCE (the 1st in group "0") has 8 on rank 0 (node 1 of t.0.et)`},
		{"collective type differs", two(collN(1, AllReduce, 8, ""), collN(1, AllGather, 8, "")),
			nil, `t.1.et: node 1 "coll1" (record 0, byte 0): comm_type: ALL_GATHER, but the matching collective (the 1st in group "0") is ALL_REDUCE on rank 0`},
		{"rank outside its declared group", two(collN(1, AllReduce, 8, "4"), collN(1, AllReduce, 8, "4")),
			map[string][]int{"4": {1}}, `t.0.et: node 1 "coll1" (record 0, byte 0): pg_name: inconsistent process groups: rank 0 runs a collective in group "4", whose ranks are [1] (groups.json)`},
		{"declared member runs nothing", []*Trace{trace(0, collN(1, AllReduce, 8, "4")), trace(1, comp(1, 1)), trace(2, collN(1, AllReduce, 8, "4"))},
			map[string][]int{"4": {0, 1, 2}}, `inconsistent process groups: rank 0 runs 1 collectives in group "4" but rank 1 (t.1.et) only 0`},
		{"metadata groups disagree", []*Trace{
			trace(0, Node{ID: 1, Type: MetadataNode, Inputs: &IOInfo{Values: `['[{"pg_name": "1", "ranks": [0, 1]}]']`}}),
			trace(1, Node{ID: 1, Type: MetadataNode, Inputs: &IOInfo{Values: `['[{"pg_name": "1", "ranks": [1]}]']`}})},
			nil, `t.1.et: node 1 (record 0, byte 0): inputs: inconsistent process groups: group "1" has ranks [1] here but [0 1] in node 1 of t.0.et`},
		{"metadata groups unreadable", []*Trace{trace(0, Node{ID: 1, Type: MetadataNode, Inputs: &IOInfo{Values: `['[{"pg_name": 1]']`}})},
			nil, "t.0.et: node 1 (record 0, byte 0): inputs: inputs.values mentions pg_name but is not PyTorch's process-group list"},
		{"send without receive", []*Trace{trace(0, sendN(1, 1, 0, 8)), trace(1, comp(1, 1))},
			nil, "t.0.et: node 1 (record 0, byte 0): comm_dst: rank 0 sends 1 messages to rank 1 with tag 0, but rank 1 (t.1.et) receives only 0"},
		{"receive without send", []*Trace{trace(0, comp(1, 1)), trace(1, recvN(1, 0, 3, 8))},
			nil, "t.1.et: node 1 (record 0, byte 0): comm_src: rank 1 receives 1 messages from rank 0 with tag 3, but rank 0 (t.0.et) sends only 0"},
		{"message sizes differ", two(sendN(1, 1, 0, 8), recvN(1, 0, 0, 9)),
			nil, "t.1.et: node 1 (record 0, byte 0): comm_size: 9 bytes, but the matching send (node 1 of t.0.et) has 8"},
		{"send to itself", two(sendN(1, 0, 0, 8), comp(1, 1)), nil, "comm_dst: 0 is the node's own rank"},
		{"send outside the job", two(sendN(1, 5, 0, 8), comp(1, 1)), nil, "comm_dst: rank 5 is outside the job's ranks 0..1"},
		{"send with another rank's comm_src", two(withAttr(sendN(1, 1, 0, 8), i32("comm_src", 1)), comp(1, 1)),
			nil, "comm_src: 1, but the node is in rank 0's file"},
		{"receive without comm_src", two(comp(1, 1), Node{ID: 1, Type: CommRecvNode, Attrs: []Attr{i64("comm_size", 8)}}),
			nil, "t.1.et: node 1 (record 0, byte 0): comm_src: missing"},
		{"deadlock", []*Trace{
			// Rank 0 runs pg 1 then pg 2, rank 1 pg 2 then pg 1: each waits for the other on its
			// one-at-a-time communication.
			trace(0, collN(1, AllReduce, 8, "1"), collN(2, AllReduce, 8, "2")),
			trace(1, collN(1, AllReduce, 8, "2"), collN(2, AllReduce, 8, "1"))},
			map[string][]int{"1": {0, 1}, "2": {0, 1}}, "data_deps: the ranks deadlock: 2 ops never start"},
		{"duration too long", []*Trace{trace(0, comp(1, 2_000_000_000_000))}, nil, "duration_micros: 2000000000000 us is over"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := Build(c.traces, c.groups, "groups.json")
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q\nwant it to contain %q", err, c.want)
			}
			if _, ok := err.(*Error); !ok {
				t.Errorf("%T, want *Error", err)
			}
		})
	}
}

// TestRankFiles: the rank files are found by name, and a missing rank, an empty directory,
// two files for a rank, an unreadable file and a bad communicator-group file are errors naming
// the file.
func TestRankFiles(t *testing.T) {
	dir := t.TempDir()
	good, err := os.ReadFile("testdata/dp16.0.et")
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.0.et", good)
	write("a.2.et", good)
	write("a.x.et", good)    // not a rank file
	write("ab.1.et", good)   // another prefix
	write("a.01.et", good)   // not a canonical rank number
	write("b.0.et", good)    //
	write("b.0.et.gz", good) // two files for rank 0
	write("c.0.et", good[:40])
	write("groups.json", []byte(`{"1": [0, 7]}`))
	write("outside.json", []byte(`{"1": [0, 99]}`))
	write("bad.json", []byte(`{"1": [0, 1],}`))
	for _, c := range []struct{ prefix, groups, want string }{
		{filepath.Join(dir, "a"), "", filepath.Join(dir, "a.1.et") + ": missing: the trace has files for ranks up to 2"},
		{filepath.Join(dir, "none"), "", filepath.Join(dir, "none") + ": no trace files none.<rank>.et in " + dir},
		{filepath.Join(dir, "b"), "", "rank 0 has two files"},
		{filepath.Join(dir, "c"), "", filepath.Join(dir, "c.0.et") + ": byte 0: record length: 70 bytes, but only 39 are left in the file: truncated"},
		{filepath.Join(dir, "nodir", "x"), "", "cannot list"},
		{dir + "/", "", "want a path prefix"},
		{"testdata/dp16", filepath.Join(dir, "outside.json"), filepath.Join(dir, "outside.json") + ": 1: rank 99 is outside the job's ranks 0..15"},
		// The traces' metadata declares group 1 as the even ranks.
		{"testdata/dp16", filepath.Join(dir, "groups.json"), `testdata/dp16.0.et: node 0 "## process_group:init ##" (record 0, byte 71): inputs: inconsistent process groups: group "1" has ranks [0 2 4 6 8 10 12 14] here but [0 7] in ` + filepath.Join(dir, "groups.json")},
		{"testdata/dp16", filepath.Join(dir, "bad.json"), filepath.Join(dir, "bad.json") + ": not a communicator-group file"},
		{"testdata/dp16", filepath.Join(dir, "nofile.json"), filepath.Join(dir, "nofile.json") + ": cannot read the communicator groups"},
	} {
		_, err := Load(c.prefix, Options{CommGroups: c.groups})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Load(%q, %q): %v\nwant %q", c.prefix, c.groups, err, c.want)
		}
	}
}

// FuzzBuild: any two decodable files, as ranks 0 and 1, build a valid plan or fail with an
// Error naming a file; nothing panics, and no plan fails training.Plan.Validate.
func FuzzBuild(f *testing.F) {
	two := []*Trace{
		trace(0, Node{ID: 0, Type: MetadataNode, Inputs: &IOInfo{Values: `['[{"pg_name": "1", "ranks": [0, 1]}]']`}},
			comp(1, 5, 0), collN(2, AllReduce, 64, "1", 1), sendN(3, 1, 2, 8, 2), comp(4, 0, 2, 3)),
		trace(1, comp(1, 5), collN(2, AllReduce, 64, "1", 1), recvN(3, 0, 2, 8), cpuOp(4, 3, 3)),
	}
	f.Add(Encode(two[0]), Encode(two[1]))
	for _, r := range []string{"0", "8"} {
		data, err := os.ReadFile("testdata/dp16." + r + ".et")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, data)
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		ta, err := Decode(a, "f.0.et")
		if err != nil {
			return
		}
		tb, err := Decode(b, "f.1.et")
		if err != nil {
			return
		}
		_, _, err = Build([]*Trace{ta, tb}, nil, "")
		if err == nil {
			return
		}
		if _, ok := err.(*Error); !ok {
			t.Fatalf("%T: %v", err, err)
		}
		if s := err.Error(); !strings.HasPrefix(s, "f.0.et: ") && !strings.HasPrefix(s, "f.1.et: ") {
			t.Fatalf("error names no file: %v", err)
		}
	})
}

// dpJob is a synthetic data-parallel step on n ranks: per rank, layers forward and backward
// computes and, every 4 layers of the backward, a gradient all-reduce over all ranks.
func dpJob(n, layers int) []*Trace {
	var out []*Trace
	for r := range n {
		var nodes []Node
		id := uint64(0)
		add := func(nd Node) uint64 {
			nd.ID = id
			nodes = append(nodes, nd)
			id++
			return nd.ID
		}
		last := add(comp(0, 100))
		for l := 1; l < 2*layers; l++ {
			last = add(comp(0, 100, last))
			if l > layers && l%4 == 0 {
				add(collN(0, AllReduce, 25<<20, "", last))
			}
		}
		out = append(out, trace(r, nodes...))
	}
	return out
}

// BenchmarkBuild: building the plan of a data-parallel step grows linearly with the ranks
// (per-rank issue order and chains, one op per compute node, collectives matched per group).
func BenchmarkBuild(b *testing.B) {
	for _, n := range []int{64, 256} {
		traces := dpJob(n, 64)
		b.Run(fmt.Sprintf("ranks=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := Build(traces, nil, ""); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecode: decoding one rank's file of the 256-rank synthetic step (128 compute nodes,
// 16 all-reduces).
func BenchmarkDecode(b *testing.B) {
	data := Encode(dpJob(1, 64)[0])
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(data, "b.et"); err != nil {
			b.Fatal(err)
		}
	}
}
