package analytic

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/collective"
	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/units"
)

func ranks(n int) []int32 {
	r := make([]int32, n)
	for i := range r {
		r[i] = int32(i)
	}
	return r
}

// ringAllReduceTime is the analytic time of a chunked ring all-reduce on n ranks, c channels,
// chunks of m bytes (every step of every loop sends one m-byte message per channel), per-rank
// bandwidth B and latency alpha, with each channel's messages served in order on its own
// connection and the c channels sharing the rank's bandwidth.
//
// Derivation: per channel a rank sends K = S/(c n m) loops x 2(n-1) steps of one chunk, each
// taking tau = c m / B on the wire. Chunk k of step s becomes ready tau + alpha after chunk k of
// step s-1 started leaving the predecessor, so a step repeats every max(K tau, tau + alpha) and
//
//	T = K tau + (2n-3) max(K tau, tau + alpha) + alpha
//	  = 2(n-1)/n S/B + alpha + (2n-3) max(0, tau + alpha - K tau).
//
// Unpipelined (K = 1) this is the textbook 2(n-1)(S/(nB) + alpha); once (K-1) tau >= alpha
// the pipeline hides all but one latency: 2(n-1)/n S/B + alpha. The pipelining correction to
// the 2(n-1) alpha term is therefore [1 + (2n-3) max(0, 1 - (K-1) tau/alpha)] / (2(n-1)).
func ringAllReduceTime(n, c int, S, m float64, B units.Rate, alpha units.Time) float64 {
	bw := float64(B) / 8 // bytes per second
	K := S / (float64(c) * float64(n) * m)
	tau := float64(c) * m / bw
	a := alpha.Seconds()
	return 2*float64(n-1)/float64(n)*S/bw + a + float64(2*n-3)*math.Max(0, tau+a-K*tau)
}

func TestRingAllReduceTime(t *testing.T) {
	cases := []struct {
		n, c  int
		S, m  float64 // m = 0: no chunking (m = S/(c n))
		B     units.Rate
		alpha units.Time
		want  units.Time // worked out by hand from the formula above
	}{
		// Pipelined, bandwidth-bound: tau = 1 MiB / 50 GB/s = 20.97152 us, K = 32,
		// T = 14 x 32 x 20.97152 + 2 = 9397.24096 us.
		{8, 1, 256 << 20, 1 << 20, 400 * units.Gbps, 2 * units.Microsecond, 9397240960},
		// Unpipelined: tau = 32 MiB / 50 GB/s = 671.08864 us, T = 14 (671.08864 + 2).
		{8, 1, 256 << 20, 0, 400 * units.Gbps, 2 * units.Microsecond, 9423240960},
		// Latency-bound pipeline: tau = 64 KiB / 50 GB/s = 1.31072 us, K = 4, alpha = 50 us:
		// T = 4 tau + 13 (tau + alpha) + alpha = 5.24288 + 667.03936 + 50 = 722.28224 us.
		{8, 1, 2 << 20, 64 << 10, 400 * units.Gbps, 50 * units.Microsecond, 722282240},
		// Four channels sharing the NIC: tau = 4 x 256 KiB / 50 GB/s = 20.97152 us, K = 8:
		// T = 1.5 x 32 MiB / 50 GB/s + 1 us = 1007.63296 us.
		{4, 4, 32 << 20, 256 << 10, 400 * units.Gbps, 1 * units.Microsecond, 1007632960},
		// Non-power-of-two ring, 100 Gb/s: tau = 100000 B / 12.5 GB/s = 8 us, K = 10, alpha 5 us:
		// T = 2 x 6/7 x 7 MB / 12.5 GB/s + 5 us = 960 + 5 = 965 us.
		{7, 1, 7e6, 1e5, 100 * units.Gbps, 5 * units.Microsecond, 965000000},
	}
	for _, tc := range cases {
		name := fmt.Sprintf("n%d/c%d/S%g/m%g/alpha%v", tc.n, tc.c, tc.S, tc.m, tc.alpha)
		t.Run(name, func(t *testing.T) {
			g := &msggraph.Graph{Endpoints: tc.n}
			if _, err := collective.Compile(g, collective.Spec{Op: collective.AllReduce, Ranks: ranks(tc.n),
				Bytes: units.Size(tc.S), Channels: tc.c, ChunkBytes: units.Size(tc.m)}); err != nil {
				t.Fatal(err)
			}
			res, err := Run(g, Uniform{Lat: tc.alpha, BW: tc.B})
			if err != nil {
				t.Fatal(err)
			}
			m := tc.m
			if m == 0 {
				m = tc.S / float64(tc.c*tc.n)
			}
			formula := ringAllReduceTime(tc.n, tc.c, tc.S, m, tc.B, tc.alpha)
			if math.Abs(formula-tc.want.Seconds()) > 1e-12 {
				t.Fatalf("formula %.9g s disagrees with the hand-worked %v", formula, tc.want)
			}
			// The brief's bound is 0.5 %; the fluid model is exact to a picosecond per message.
			if got := res.Makespan; math.Abs(float64(got-tc.want)) > 0.005*float64(tc.want) || math.Abs(float64(got-tc.want)) > float64(len(g.Msgs)) {
				t.Errorf("makespan %v, want %v", got, tc.want)
			}
		})
	}
}

// pairNet is a network with per-pair latency and bandwidth (default: 1 us, 100 Gb/s).
type pairNet struct {
	lat map[[2]int32]units.Time
	bw  map[[2]int32]units.Rate
}

func (p pairNet) Latency(s, d int32) units.Time {
	if l, ok := p.lat[[2]int32{s, d}]; ok {
		return l
	}
	return units.Microsecond
}

func (p pairNet) Bandwidth(s, d int32) units.Rate {
	if b, ok := p.bw[[2]int32{s, d}]; ok {
		return b
	}
	return 100 * units.Gbps
}

// TestChain: a chain of dependent messages adds their latencies, serialization times, start
// and delays exactly.
func TestChain(t *testing.T) {
	net := pairNet{
		lat: map[[2]int32]units.Time{{0, 1}: 3 * units.Microsecond, {1, 2}: 500 * units.Nanosecond},
		bw:  map[[2]int32]units.Rate{{0, 1}: 400 * units.Gbps, {1, 2}: 200 * units.Gbps},
	}
	g := &msggraph.Graph{Endpoints: 4}
	a := g.Add(msggraph.Message{Src: 0, Dst: 1, Bytes: 1_000_000, Start: 10 * units.Microsecond})                                                  // 10 + 20 + 3 = 33 us
	b := g.Add(msggraph.Message{Src: 1, Dst: 2, Bytes: 500_000, Deps: []msggraph.ID{a}})                                                           // + 20 + 0.5 = 53.5 us
	c := g.Add(msggraph.Message{Src: 2, Dst: 2, Delay: 7 * units.Microsecond, Deps: []msggraph.ID{b}})                                             // compute: 60.5 us
	d := g.Add(msggraph.Message{Src: 2, Dst: 3, Bytes: 125_000, Delay: units.Microsecond, Deps: []msggraph.ID{c}, Start: 100 * units.Microsecond}) // waits for Start: 100 + 1 + 10 + 1 = 112 us
	res, err := Run(g, net)
	if err != nil {
		t.Fatal(err)
	}
	want := []units.Time{33 * units.Microsecond, 53500 * units.Nanosecond, 60500 * units.Nanosecond, 112 * units.Microsecond}
	for i, id := range []msggraph.ID{a, b, c, d} {
		if res.Finish[id] != want[i] {
			t.Errorf("message %d finished at %v, want %v", i, res.Finish[id], want[i])
		}
	}
	if res.Makespan != 112*units.Microsecond {
		t.Errorf("makespan %v", res.Makespan)
	}
}

// TestIncast: n senders into one receiver share its bandwidth equally (each finishes at
// n S/B + alpha); a sender that also sends elsewhere gets the rest of its NIC (max-min).
func TestIncast(t *testing.T) {
	net := Uniform{Lat: units.Microsecond, BW: 100 * units.Gbps} // 12.5 GB/s
	for _, n := range []int{2, 4, 7} {
		g := &msggraph.Graph{Endpoints: n + 1}
		for s := 1; s <= n; s++ {
			g.Add(msggraph.Message{Src: int32(s), Dst: 0, Bytes: 1_250_000}) // 100 us alone
		}
		res, err := Run(g, net)
		if err != nil {
			t.Fatal(err)
		}
		want := units.Time(n)*100*units.Microsecond + units.Microsecond
		for i, f := range res.Finish {
			if f != want {
				t.Errorf("n=%d: sender %d finished at %v, want %v", n, i+1, f, want)
			}
		}
	}
	// A->R, B->R, C->R and A->Q: R is the bottleneck at 1/3 each; A->Q gets the remaining 2/3
	// of A's NIC and finishes at 1.5 x 100 us; the R flows finish at 3 x 100 us.
	g := &msggraph.Graph{Endpoints: 5}
	const A, B, C, R, Q = 0, 1, 2, 3, 4
	for _, s := range []int32{A, B, C} {
		g.Add(msggraph.Message{Src: s, Dst: R, Bytes: 1_250_000})
	}
	aq := g.Add(msggraph.Message{Src: A, Dst: Q, Bytes: 1_250_000})
	res, err := Run(g, net)
	if err != nil {
		t.Fatal(err)
	}
	if res.Finish[aq] != 151*units.Microsecond {
		t.Errorf("A->Q finished at %v, want 151us", res.Finish[aq])
	}
	for i := 0; i < 3; i++ {
		// After A->Q ends at 150 us the three R flows have 1/2 of their bytes left at 1/3 each.
		if res.Finish[i] != 301*units.Microsecond {
			t.Errorf("flow %d into R finished at %v, want 301us", i, res.Finish[i])
		}
	}
}

// TestConnectionOrder: two messages on one connection go one after the other; on separate
// connections (Conn 0) they share the NIC and end together.
func TestConnectionOrder(t *testing.T) {
	net := Uniform{Lat: units.Microsecond, BW: 100 * units.Gbps}
	for _, conn := range []int32{0, 5} {
		g := &msggraph.Graph{Endpoints: 2}
		g.Add(msggraph.Message{Src: 0, Dst: 1, Bytes: 1_250_000, Conn: conn})
		g.Add(msggraph.Message{Src: 0, Dst: 1, Bytes: 1_250_000, Conn: conn})
		res, err := Run(g, net)
		if err != nil {
			t.Fatal(err)
		}
		want := []units.Time{201 * units.Microsecond, 201 * units.Microsecond}
		if conn != 0 {
			want[0] = 101 * units.Microsecond
		}
		for i := range want {
			if res.Finish[i] != want[i] {
				t.Errorf("conn %d: message %d at %v, want %v", conn, i, res.Finish[i], want[i])
			}
		}
	}
}

// portNet puts endpoints 0-1 on one server (NVLink port, 800 Gb/s) and 2 elsewhere (NIC).
type portNet struct{}

func (portNet) Latency(_, _ int32) units.Time { return 0 }
func (portNet) Bandwidth(s, d int32) units.Rate {
	if s < 2 && d < 2 {
		return 800 * units.Gbps
	}
	return 100 * units.Gbps
}
func (portNet) TxPort(s, d int32) Port {
	if s < 2 && d < 2 {
		return Port{ID: 100 + int64(s), Rate: 800 * units.Gbps}
	}
	return Port{ID: int64(s), Rate: 100 * units.Gbps}
}
func (p portNet) RxPort(s, d int32) Port {
	if s < 2 && d < 2 {
		return Port{ID: 100 + int64(d), Rate: 800 * units.Gbps}
	}
	return Port{ID: int64(d), Rate: 100 * units.Gbps}
}

func TestPorts(t *testing.T) {
	g := &msggraph.Graph{Endpoints: 3}
	g.Add(msggraph.Message{Src: 0, Dst: 1, Bytes: 10_000_000}) // NVLink: 100 us
	g.Add(msggraph.Message{Src: 0, Dst: 2, Bytes: 1_250_000})  // NIC: 100 us, not slowed by NVLink
	res, err := Run(g, portNet{})
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range res.Finish {
		if f != 100*units.Microsecond {
			t.Errorf("message %d at %v, want 100us", i, f)
		}
	}
}

func TestRunErrors(t *testing.T) {
	g := &msggraph.Graph{Endpoints: 2}
	g.Add(msggraph.Message{Src: 0, Dst: 1, Bytes: 10})
	if _, err := Run(g, Uniform{Lat: 1}); err == nil || !strings.Contains(err.Error(), "not positive") {
		t.Errorf("zero bandwidth: %v", err)
	}
	g.Add(msggraph.Message{Src: 0, Dst: 1, Bytes: 10, Deps: []msggraph.ID{5}})
	if _, err := Run(g, Uniform{BW: units.Gbps}); err == nil || !strings.Contains(err.Error(), "does not precede") {
		t.Errorf("bad graph: %v", err)
	}
	if _, err := Run(&msggraph.Graph{}, Uniform{BW: units.Gbps}); err != nil {
		t.Errorf("empty graph: %v", err)
	}
}

// TestCollectivesRun runs every collective and algorithm through the backend and checks the
// bandwidth-bound time against S x BusBWFactor / B (nccl-tests' busbw equals the per-rank
// bandwidth when the algorithm is bandwidth-optimal).
func TestCollectivesRun(t *testing.T) {
	n := 8
	B := 400 * units.Gbps
	S := units.Size(64 << 20)
	serverOf := func(r int) int { return r / 4 }
	cases := []struct {
		op    collective.Op
		algo  collective.Algo
		slack float64 // allowed excess over the bus-bandwidth bound
	}{
		{collective.AllReduce, collective.Ring, 0.01},
		{collective.AllReduce, collective.Hierarchical, 0.01},
		{collective.AllReduce, collective.Tree, 0.2},
		{collective.AllGather, collective.Ring, 0.01},
		{collective.ReduceScatter, collective.Hierarchical, 0.01},
		{collective.AllToAll, collective.Direct, 0.01},
		// Chains: K = 128 chunks per channel of tau = 2 x 256 KiB / 50 GB/s = 10.48576 us
		// fill n-2 hops of tau + alpha: T = K tau + (n-2)(tau + alpha) + alpha = 1412.09 us,
		// 5.2 % above S/B = 1342.18 us.
		{collective.Broadcast, collective.Ring, 0.053},
		{collective.Reduce, collective.Ring, 0.053},
		{collective.SendRecv, collective.Direct, 0.01},
	}
	for _, tc := range cases {
		g := &msggraph.Graph{Endpoints: n}
		if _, err := collective.Compile(g, collective.Spec{Op: tc.op, Algo: tc.algo, Ranks: ranks(n), Bytes: S,
			Channels: 2, ChunkBytes: 256 << 10, ServerOf: serverOf}); err != nil {
			t.Fatal(err)
		}
		res, err := Run(g, Uniform{Lat: units.Microsecond, BW: B})
		if err != nil {
			t.Fatal(err)
		}
		bound := float64(S) * collective.BusBWFactor(tc.op, n) / (float64(B) / 8)
		got := res.Makespan.Seconds()
		if tc.algo == collective.Tree {
			// Each rank is interior in one tree (sends H up and 2H down) and a leaf in the
			// other (H up): 4H = 2S per rank, so the tree is bound by 2S/B, not 1.75 S/B.
			bound = 2 * float64(S) / (float64(B) / 8)
		}
		if got < bound*(1-1e-9) || got > bound*(1+tc.slack) {
			t.Errorf("%s %s: %.1f us, bound %.1f us", tc.op, tc.algo, got*1e6, bound*1e6)
		}
	}
}

// BenchmarkRingAllReduce64: 64 ranks, 8 channels, 64 MiB in 256 KiB chunks (~65k messages).
// Target: under 0.2 s (measured ~70 ms on 2 cores).
func BenchmarkRingAllReduce64(b *testing.B) {
	g := &msggraph.Graph{Endpoints: 64}
	if _, err := collective.Compile(g, collective.Spec{Op: collective.AllReduce, Ranks: ranks(64), Bytes: 64 << 20, Channels: 8, ChunkBytes: 256 << 10}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Run(g, Uniform{Lat: units.Microsecond, BW: 400 * units.Gbps}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(g.Msgs)), "msgs")
}
