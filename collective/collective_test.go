package collective

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/units"
)

// endpoints returns ranks on endpoints 10, 11, ... so that rank and endpoint numbers differ.
func endpoints(n int) []int32 {
	eps := make([]int32, n)
	for i := range eps {
		eps[i] = int32(10 + i)
	}
	return eps
}

func newGraph(n int) *msggraph.Graph { return &msggraph.Graph{Endpoints: 10 + n} }

type tally struct {
	sent, recv map[int32]int64
	data       int // messages with Bytes > 0
	total      int64
}

func count(g *msggraph.Graph) tally {
	t := tally{sent: map[int32]int64{}, recv: map[int32]int64{}}
	for _, m := range g.Msgs {
		if m.Bytes == 0 {
			continue
		}
		t.data++
		t.sent[m.Src] += int64(m.Bytes)
		t.recv[m.Dst] += int64(m.Bytes)
		t.total += int64(m.Bytes)
	}
	return t
}

func compile(t *testing.T, s Spec) (*msggraph.Graph, []msggraph.ID) {
	t.Helper()
	g := newGraph(len(s.Ranks))
	done, err := Compile(g, s)
	if err != nil {
		t.Fatalf("Compile(%s %s n=%d): %v", s.Op, s.Algo, len(s.Ranks), err)
	}
	if err := g.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if len(done) != len(s.Ranks) {
		t.Fatalf("done has %d entries, want one per rank (%d)", len(done), len(s.Ranks))
	}
	return g, done
}

// TestConservation checks the bytes each rank sends against the analytic volumes of
// [nccl-tests] doc/PERFORMANCE.md: ring all-reduce 2(n-1)/n x S, all-gather / reduce-scatter / all-to-all (n-1)/n x S,
// send/recv S; and the message counts of each algorithm.
func TestConservation(t *testing.T) {
	const chunk = 4096
	for _, n := range []int{2, 3, 4, 8} {
		for _, c := range []int{1, 2, 4} {
			k := 3 // loops per channel
			S := int64(n * c * chunk * k)
			cases := []struct {
				op       Op
				algo     Algo
				perRank  func(n int, S int64) int64
				messages int
			}{
				{AllReduce, Ring, func(n int, S int64) int64 { return 2 * int64(n-1) * S / int64(n) }, c * k * n * 2 * (n - 1)},
				{AllReduce, Default, func(n int, S int64) int64 { return 2 * int64(n-1) * S / int64(n) }, c * k * n * 2 * (n - 1)},
				{ReduceScatter, Ring, func(n int, S int64) int64 { return int64(n-1) * S / int64(n) }, c * k * n * (n - 1)},
				{AllGather, Ring, func(n int, S int64) int64 { return int64(n-1) * S / int64(n) }, c * k * n * (n - 1)},
				{AllToAll, Direct, func(n int, S int64) int64 { return int64(n-1) * S / int64(n) }, n * (n - 1) * c * ceilDiv(S/int64(n)/int64(c), chunk)},
				{SendRecv, Direct, func(n int, S int64) int64 { return S }, n * c * ceilDiv(S/int64(c), chunk)},
			}
			for _, tc := range cases {
				t.Run(fmt.Sprintf("%s/%s/n%d/c%d", tc.op, tc.algo, n, c), func(t *testing.T) {
					g, _ := compile(t, Spec{Op: tc.op, Algo: tc.algo, Ranks: endpoints(n), Bytes: units.Size(S), Channels: c, ChunkBytes: chunk})
					tl := count(g)
					want := tc.perRank(n, S)
					for r, ep := range endpoints(n) {
						if tl.sent[ep] != want {
							t.Errorf("rank %d sends %d bytes, want %d", r, tl.sent[ep], want)
						}
						if tl.recv[ep] != want {
							t.Errorf("rank %d receives %d bytes, want %d", r, tl.recv[ep], want)
						}
					}
					if tl.data != tc.messages {
						t.Errorf("%d data messages, want %d", tl.data, tc.messages)
					}
				})
			}
		}
	}
}

func ceilDiv(a, b int64) int { return int((a + b - 1) / b) }

// TestConservationUneven: with sizes that do not divide evenly, the total is still exact: every
// byte of an all-reduce crosses 2(n-1) hops, and each rank is within one block of 2(n-1)/n S.
func TestConservationUneven(t *testing.T) {
	n, S := 5, int64(1_000_003)
	g, _ := compile(t, Spec{Op: AllReduce, Ranks: endpoints(n), Bytes: units.Size(S), Channels: 3, ChunkBytes: 7777})
	tl := count(g)
	if want := 2 * int64(n-1) * S; tl.total != want {
		t.Errorf("total %d bytes, want 2(n-1)S = %d", tl.total, want)
	}
	ideal := 2 * float64(n-1) / float64(n) * float64(S)
	for ep, b := range tl.sent {
		if math.Abs(float64(b)-ideal) > 2*7777 {
			t.Errorf("endpoint %d sends %d, more than a block away from %g", ep, b, ideal)
		}
	}
}

func TestBroadcastReduce(t *testing.T) {
	n, S := 6, int64(6*8192)
	for _, op := range []Op{Broadcast, Reduce} {
		for _, root := range []int{0, 4} {
			g, _ := compile(t, Spec{Op: op, Ranks: endpoints(n), Bytes: units.Size(S), ChunkBytes: 8192, Root: root, Channels: 2})
			tl := count(g)
			if tl.total != int64(n-1)*S {
				t.Errorf("%s root %d: total %d, want (n-1)S = %d", op, root, tl.total, int64(n-1)*S)
			}
			rootEP := endpoints(n)[root]
			// Broadcast: the root sends S and receives nothing; Reduce: the mirror image.
			if op == Broadcast && (tl.sent[rootEP] != S || tl.recv[rootEP] != 0) {
				t.Errorf("broadcast root sends %d receives %d, want %d and 0", tl.sent[rootEP], tl.recv[rootEP], S)
			}
			if op == Reduce && (tl.recv[rootEP] != S || tl.sent[rootEP] != 0) {
				t.Errorf("reduce root receives %d sends %d, want %d and 0", tl.recv[rootEP], tl.sent[rootEP], S)
			}
			if want := 2 * 6 / 2 * (n - 1); tl.data != want { // channels x chunks per channel x hops
				t.Errorf("%s: %d data messages, want %d", op, tl.data, want)
			}
		}
	}
}

// TestTree: every byte goes up n-1 edges and down n-1 edges in each tree, and each tree carries
// half the data, so the total is 2(n-1) x S.
func TestTree(t *testing.T) {
	for _, n := range []int{2, 3, 5, 8, 13} {
		S := int64(2 * 3 * 4096)
		g, _ := compile(t, Spec{Op: AllReduce, Algo: Tree, Ranks: endpoints(n), Bytes: units.Size(S), ChunkBytes: 4096})
		tl := count(g)
		if want := 2 * int64(n-1) * S; tl.total != want {
			t.Errorf("n=%d: total %d, want %d", n, tl.total, want)
		}
		if want := 2 * 3 * 2 * (n - 1); tl.data != want { // trees x chunks x (up + down edges)
			t.Errorf("n=%d: %d messages, want %d", n, tl.data, want)
		}
		conns := map[int32]bool{}
		for _, m := range g.Msgs {
			if m.Bytes > 0 {
				conns[m.Conn] = true
			}
		}
		if len(conns) != 2 {
			t.Errorf("n=%d: %d connection ids, want 2 (one channel per tree)", n, len(conns))
		}
	}
}

func TestBinaryTreeShape(t *testing.T) {
	for n := 1; n <= 70; n++ {
		tr := newBinaryTree(n)
		for v := 0; v < n; v++ {
			if len(tr.children[v]) > 2 {
				t.Fatalf("n=%d: node %d has %d children", n, v, len(tr.children[v]))
			}
			if v > 0 && tr.depth[v] > 2*bitsLen(n)+1 {
				t.Fatalf("n=%d: node %d at depth %d, not logarithmic", n, v, tr.depth[v])
			}
		}
		if n > 1 && len(tr.children[0]) != 1 {
			t.Fatalf("n=%d: root has %d children, want 1", n, len(tr.children[0]))
		}
		// Complementary trees: a rank that is a leaf in both trees sends its data up twice and
		// forwards nothing; in NCCL's construction at most one rank is in that position.
		if n >= 4 {
			leafA, leafB := leaves(tr, treeRanks(0, n)), leaves(tr, treeRanks(1, n))
			both := 0
			for r := 0; r < n; r++ {
				if leafA[r] && leafB[r] {
					both++
				}
			}
			if both > 1 {
				t.Errorf("n=%d: %d ranks are leaves of both trees", n, both)
			}
		}
	}
}

func bitsLen(n int) int {
	l := 0
	for ; n > 0; n >>= 1 {
		l++
	}
	return l
}

func leaves(tr binaryTree, rank []int) map[int]bool {
	out := map[int]bool{}
	for v := range rank {
		if len(tr.children[v]) == 0 {
			out[rank[v]] = true
		}
	}
	return out
}

// TestHierarchical checks volumes per rank and per link class: with g ranks per server and m
// servers, an all-reduce sends 2(g-1)/g S inside the server and 2(m-1)/m x S/g across, which
// adds up to the flat ring's 2(n-1)/n S.
func TestHierarchical(t *testing.T) {
	for _, gm := range [][2]int{{4, 2}, {2, 3}, {1, 4}, {4, 1}, {8, 2}} {
		g, m := gm[0], gm[1]
		n := g * m
		S := int64(n * 2 * 1024 * 2) // 2 channels, 2 loops of n x 1 KiB
		serverOf := func(r int) int { return 100 + r/g }
		for _, op := range []Op{AllReduce, AllGather, ReduceScatter} {
			t.Run(fmt.Sprintf("%s/g%d/m%d", op, g, m), func(t *testing.T) {
				gr, _ := compile(t, Spec{Op: op, Algo: Hierarchical, Ranks: endpoints(n), Bytes: units.Size(S), Channels: 2, ChunkBytes: 1024, ServerOf: serverOf})
				intra, inter := map[int32]int64{}, map[int32]int64{}
				server := func(ep int32) int { return serverOf(int(ep - 10)) }
				for _, msg := range gr.Msgs {
					if msg.Bytes == 0 {
						continue
					}
					if server(msg.Src) == server(msg.Dst) {
						intra[msg.Src] += int64(msg.Bytes)
					} else {
						inter[msg.Src] += int64(msg.Bytes)
					}
				}
				var wantIntra, wantInter int64
				switch op {
				case AllReduce:
					wantIntra = 2 * int64(g-1) * S / int64(g)
					wantInter = 2 * int64(m-1) * S / int64(m*g)
				default:
					wantIntra = int64(g-1) * S / int64(g)
					wantInter = int64(m-1) * S / int64(m*g)
				}
				for _, ep := range endpoints(n) {
					if intra[ep] != wantIntra || inter[ep] != wantInter {
						t.Errorf("endpoint %d: intra %d inter %d, want %d and %d", ep, intra[ep], inter[ep], wantIntra, wantInter)
					}
				}
			})
		}
	}
}

// TestRingPipelining checks the dependency rule: message k of step s+1 from rank r depends on
// message k of step s from rank r-1 arriving at r, on the same channel connection.
func TestRingPipelining(t *testing.T) {
	n := 4
	g, _ := compile(t, Spec{Op: AllReduce, Ranks: endpoints(n), Bytes: 4 * 4 * 2 * 1000, Channels: 2, ChunkBytes: 1000})
	conns := map[int32]bool{}
	steps := 0
	for _, m := range g.Msgs {
		if m.Bytes == 0 {
			continue
		}
		conns[m.Conn] = true
		if strings.Contains(m.Tag, "/s0/") {
			if len(m.Deps) != 0 {
				t.Fatalf("%s: first step has deps %v", m.Tag, m.Deps)
			}
			continue
		}
		steps++
		if len(m.Deps) != 1 {
			t.Fatalf("%s: %d deps, want 1", m.Tag, len(m.Deps))
		}
		prev := g.Msgs[m.Deps[0]]
		if prev.Dst != m.Src || prev.Conn != m.Conn || prev.Src != endpoints(n)[(int(m.Src-10)+n-1)%n] {
			t.Fatalf("%s (%d->%d conn %d) depends on %s (%d->%d conn %d)", m.Tag, m.Src, m.Dst, m.Conn, prev.Tag, prev.Src, prev.Dst, prev.Conn)
		}
	}
	if len(conns) != 2 {
		t.Errorf("%d connections, want one per channel (2)", len(conns))
	}
	if want := 2 * 4 * n * (2*(n-1) - 1); steps != want { // channels x loops x ranks x steps after the first
		t.Errorf("%d dependent messages, want %d", steps, want)
	}
}

// TestReduceBandwidth: ring all-reduce steps 1..n-1 forward data the sender just reduced and
// carry bytes/ReduceBandwidth; the all-gather forwarding steps carry none.
func TestReduceBandwidth(t *testing.T) {
	n := 4
	rb := 800 * units.Gbps // 100 GB/s: 1000 bytes take 10 ns
	g, _ := compile(t, Spec{Op: AllReduce, Ranks: endpoints(n), Bytes: 4000, ReduceBandwidth: rb})
	for _, m := range g.Msgs {
		if m.Bytes == 0 {
			continue
		}
		var s int
		fmt.Sscanf(m.Tag[strings.Index(m.Tag, "/s")+2:], "%d", &s)
		want := units.Time(0)
		if s >= 1 && s <= n-1 {
			want = 10 * units.Nanosecond
		}
		if m.Delay != want {
			t.Errorf("%s: delay %v, want %v", m.Tag, m.Delay, want)
		}
	}
	// Reduce-scatter ends with a reduction at every rank: one delay node each.
	g, _ = compile(t, Spec{Op: ReduceScatter, Ranks: endpoints(n), Bytes: 4000, ReduceBandwidth: rb})
	nodes := 0
	for _, m := range g.Msgs {
		if strings.HasSuffix(m.Tag, "/reduce") {
			nodes++
			if m.Delay != 10*units.Nanosecond || m.Src != m.Dst || len(m.Deps) != 1 {
				t.Errorf("%s: delay %v, %d deps", m.Tag, m.Delay, len(m.Deps))
			}
		}
	}
	if nodes != n {
		t.Errorf("%d final reduce nodes, want %d", nodes, n)
	}
}

func TestAfterAndDone(t *testing.T) {
	n := 3
	g := newGraph(n)
	first, err := Compile(g, Spec{Op: AllGather, Ranks: endpoints(n), Bytes: 3000, Tag: "ag"})
	if err != nil {
		t.Fatal(err)
	}
	mark := len(g.Msgs)
	second, err := Compile(g, Spec{Op: AllReduce, Ranks: endpoints(n), Bytes: 3000, After: first, ConnBase: 1, Start: 5 * units.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	join := g.Msgs[mark]
	if join.Bytes != 0 || len(join.Deps) != n || !strings.HasSuffix(join.Tag, "/start") {
		t.Fatalf("join node %+v", join)
	}
	for _, m := range g.Msgs[mark+1:] {
		if m.Start != 5*units.Microsecond {
			t.Fatalf("%s: start %v", m.Tag, m.Start)
		}
		if m.Bytes > 0 && strings.Contains(m.Tag, "/s0/") && (len(m.Deps) != 1 || m.Deps[0] != msggraph.ID(mark)) {
			t.Fatalf("%s: deps %v, want the join node %d", m.Tag, m.Deps, mark)
		}
		if m.Bytes > 0 && m.Conn != 2 {
			t.Fatalf("%s: conn %d, want ConnBase+1 = 2", m.Tag, m.Conn)
		}
	}
	// Every done node is on its rank's endpoint and depends on that rank's last messages.
	for r, id := range second {
		m := g.Msgs[id]
		if m.Src != endpoints(n)[r] || m.Bytes != 0 || len(m.Deps) == 0 {
			t.Errorf("done[%d] = %+v", r, m)
		}
		for _, d := range m.Deps {
			dm := g.Msgs[d]
			if dm.Src != m.Src && dm.Dst != m.Src {
				t.Errorf("done[%d] depends on %s, which does not touch the rank", r, dm.Tag)
			}
		}
	}
	// One rank, or zero bytes: nothing to send, but done nodes still exist.
	g1 := newGraph(1)
	if d, err := Compile(g1, Spec{Op: AllReduce, Ranks: endpoints(1), Bytes: 100}); err != nil || len(d) != 1 || len(g1.Msgs) != 1 {
		t.Errorf("one rank: done %v, %d msgs, err %v", d, len(g1.Msgs), err)
	}
}

func TestCompileErrors(t *testing.T) {
	ok := Spec{Op: AllReduce, Ranks: endpoints(4), Bytes: 4096}
	cases := []struct {
		name string
		mod  func(s *Spec)
		want string
	}{
		{"no ranks", func(s *Spec) { s.Ranks = nil }, "no ranks"},
		{"tree allgather", func(s *Spec) { s.Op, s.Algo = AllGather, Tree }, "no tree algorithm"},
		{"direct allreduce", func(s *Spec) { s.Algo = Direct }, "no direct algorithm"},
		{"ring alltoall", func(s *Spec) { s.Op, s.Algo = AllToAll, Ring }, "no ring algorithm"},
		{"hier without servers", func(s *Spec) { s.Algo = Hierarchical }, "needs ServerOf"},
		{"uneven servers", func(s *Spec) {
			s.Algo, s.ServerOf = Hierarchical, func(r int) int { return min(r, 1) }
		}, "server 0 holds 1 ranks but server 1 holds 3"},
		{"duplicate endpoint", func(s *Spec) { s.Ranks = []int32{10, 11, 10, 12} }, "ranks 0 and 2 are both on endpoint 10"},
		{"endpoint range", func(s *Spec) { s.Ranks = []int32{10, 99} }, "outside the graph's endpoints"},
		{"root", func(s *Spec) { s.Op, s.Root = Broadcast, 4 }, "root 4 outside ranks 0..3"},
		{"negative bytes", func(s *Spec) { s.Bytes = -1 }, "negative size"},
		{"negative chunk", func(s *Spec) { s.ChunkBytes = -1 }, "negative chunk"},
		{"bad after", func(s *Spec) { s.After = []msggraph.ID{7} }, "After names message 7"},
		{"too many", func(s *Spec) { s.Bytes, s.ChunkBytes = 1<<40, 1 }, "raise ChunkBytes"},
	}
	for _, tc := range cases {
		s := ok
		tc.mod(&s)
		g := newGraph(4)
		g.Endpoints = 14
		_, err := Compile(g, s)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.want)
		}
		if len(g.Msgs) != 0 {
			t.Errorf("%s: graph changed on error (%d msgs)", tc.name, len(g.Msgs))
		}
	}
}

func TestBusBWFactor(t *testing.T) {
	cases := []struct {
		op   Op
		n    int
		want float64
	}{
		{AllReduce, 8, 1.75}, {AllReduce, 16, 1.875}, {AllReduce, 1, 0},
		{AllGather, 8, 0.875}, {ReduceScatter, 4, 0.75}, {AllToAll, 2, 0.5},
		{Broadcast, 8, 1}, {Reduce, 8, 1}, {SendRecv, 8, 1},
	}
	for _, tc := range cases {
		if got := BusBWFactor(tc.op, tc.n); got != tc.want {
			t.Errorf("BusBWFactor(%s, %d) = %g, want %g", tc.op, tc.n, got, tc.want)
		}
	}
	// nccl-tests row for 16 ranks (public log, H100): 33554432 B in 1059.9 us -> algbw 31.66,
	// busbw 59.36.
	tm := 1059900 * units.Nanosecond
	if a, b := AlgBW(33554432, tm), BusBW(AllReduce, 16, 33554432, tm); math.Abs(a-31.66) > 0.005 || math.Abs(b-59.36) > 0.005 {
		t.Errorf("algbw %.4f busbw %.4f, want 31.66 and 59.36", a, b)
	}
}

func TestParse(t *testing.T) {
	for in, want := range map[string]Op{"allreduce": AllReduce, "All-Reduce": AllReduce, "all_gather": AllGather,
		"ReduceScatter": ReduceScatter, "all-to-all": AllToAll, "a2a": AllToAll, "bcast": Broadcast, "reduce": Reduce, "sendrecv": SendRecv} {
		if got, err := ParseOp(in); err != nil || got != want {
			t.Errorf("ParseOp(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseOp("allscatter"); err == nil || !strings.Contains(err.Error(), `unknown collective "allscatter"`) {
		t.Errorf("ParseOp(allscatter): %v", err)
	}
	for in, want := range map[string]Algo{"ring": Ring, "Tree": Tree, "hier": Hierarchical, "direct": Direct, "": Default} {
		if got, err := ParseAlgo(in); err != nil || got != want {
			t.Errorf("ParseAlgo(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseAlgo("nvls"); err == nil || !strings.Contains(err.Error(), "ring, tree, hierarchical, direct") {
		t.Errorf("ParseAlgo(nvls): %v", err)
	}
	for _, op := range Ops() {
		if back, err := ParseOp(op.String()); err != nil || back != op {
			t.Errorf("ParseOp(%q) = %v, %v", op.String(), back, err)
		}
	}
}

func FuzzParseOp(f *testing.F) {
	for _, s := range []string{"allreduce", "All-Gather", "", "x", "all_to_all"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		op, err := ParseOp(s)
		if err == nil {
			if back, err := ParseOp(op.String()); err != nil || back != op {
				t.Fatalf("%q -> %v does not round-trip", s, op)
			}
		}
		if _, err := ParseAlgo(s); err != nil && !strings.Contains(err.Error(), "unknown collective algorithm") {
			t.Fatalf("ParseAlgo(%q): %v", s, err)
		}
	})
}

// BenchmarkCompileRingAllReduce: 64 ranks, 8 channels, 256 MiB in 512 KiB chunks (~65k
// messages). Target: under 100 ms.
func BenchmarkCompileRingAllReduce(b *testing.B) {
	for i := 0; i < b.N; i++ {
		g := &msggraph.Graph{Endpoints: 64}
		eps := make([]int32, 64)
		for r := range eps {
			eps[r] = int32(r)
		}
		if _, err := Compile(g, Spec{Op: AllReduce, Ranks: eps, Bytes: 256 * units.MiB, Channels: 8, ChunkBytes: 512 * units.KiB}); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(len(g.Msgs)), "msgs")
	}
}
