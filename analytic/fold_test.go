package analytic

import (
	"fmt"
	"testing"

	"github.com/fabricsim/fabricsim/collective"
	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/units"
)

// periodicNet is a network whose endpoint e behaves as endpoint e mod period: the hop out of a
// rank at position p = period-1 (mod period) is slower and longer, every other hop alike. Each
// endpoint has its own transmit and receive port, as NICs do.
type periodicNet struct {
	period int32
}

func (n periodicNet) slow(src int32) bool { return src%n.period == n.period-1 }

func (n periodicNet) Latency(src, _ int32) units.Time {
	if n.slow(src) {
		return 3 * units.Microsecond
	}
	return 700 * units.Nanosecond
}

func (n periodicNet) Bandwidth(src, _ int32) units.Rate {
	if n.slow(src) {
		return 300 * units.Gbps
	}
	return 400 * units.Gbps
}

func (n periodicNet) TxPort(src, dst int32) Port {
	return Port{ID: int64(src), Rate: n.Bandwidth(src, dst)}
}

func (n periodicNet) RxPort(src, dst int32) Port { return Port{ID: int64(dst), Rate: 400 * units.Gbps} }

// TestFoldedRingIsExact compiles rings whole and folded by their period and runs both: every
// folded message completes at the same picosecond as its counterpart in the whole ring (same
// tag, same endpoints), so the makespans are equal too.
func TestFoldedRingIsExact(t *testing.T) {
	for _, c := range []struct {
		op       collective.Op
		n, fold  int
		bytes    units.Size
		channels int
		chunk    units.Size
		reduce   units.Rate
		net      Network
	}{
		{collective.AllReduce, 16, 1, 16 * units.MiB, 2, 512 * units.KiB, 0, Uniform{Lat: units.Microsecond, BW: 400 * units.Gbps}},
		{collective.AllReduce, 12, 4, 36 * units.MiB, 3, 256 * units.KiB, 0, periodicNet{4}},
		{collective.AllReduce, 24, 8, 48 * units.MiB, 2, 128 * units.KiB, 1000 * units.Gbps, periodicNet{8}},
		{collective.ReduceScatter, 16, 4, 16 * units.MiB, 2, 512 * units.KiB, 2000 * units.Gbps, periodicNet{4}},
		{collective.AllGather, 20, 5, 40 * units.MiB, 1, 512 * units.KiB, 0, periodicNet{5}},
		{collective.AllGather, 8, 1, 8 * units.KiB, 4, 0, 0, Uniform{Lat: 2 * units.Microsecond, BW: 100 * units.Gbps}},
	} {
		name := fmt.Sprintf("%s n=%d fold=%d", c.op, c.n, c.fold)
		ranks := make([]int32, c.n)
		for i := range ranks {
			ranks[i] = int32(i)
		}
		spec := collective.Spec{Op: c.op, Ranks: ranks, Bytes: c.bytes, Channels: c.channels, ChunkBytes: c.chunk, ReduceBandwidth: c.reduce}
		if !spec.Foldable(c.fold) {
			t.Fatalf("%s: not foldable", name)
		}
		whole := &msggraph.Graph{Endpoints: c.n}
		if _, err := collective.Compile(whole, spec); err != nil {
			t.Fatal(err)
		}
		spec.Fold = c.fold
		folded := &msggraph.Graph{Endpoints: c.n}
		if _, err := collective.Compile(folded, spec); err != nil {
			t.Fatal(err)
		}
		if len(folded.Msgs)*c.n/c.fold > len(whole.Msgs)+2*c.n || len(folded.Msgs) >= len(whole.Msgs) {
			t.Fatalf("%s: %d folded messages vs %d whole", name, len(folded.Msgs), len(whole.Msgs))
		}
		rw, err := Run(whole, c.net)
		if err != nil {
			t.Fatal(err)
		}
		rf, err := Run(folded, c.net)
		if err != nil {
			t.Fatal(err)
		}
		if rw.Makespan != rf.Makespan {
			t.Fatalf("%s: makespan whole %v, folded %v", name, rw.Makespan, rf.Makespan)
		}
		type key struct {
			tag      string
			src, dst int32
		}
		at := map[key]units.Time{}
		for i, m := range whole.Msgs {
			if m.Bytes > 0 {
				at[key{m.Tag, m.Src, m.Dst}] = rw.Finish[i]
			}
		}
		checked := 0
		for i, m := range folded.Msgs {
			if m.Bytes == 0 {
				continue
			}
			want, ok := at[key{m.Tag, m.Src, m.Dst}]
			if !ok || want != rf.Finish[i] {
				t.Fatalf("%s: %s %d->%d finishes at %v folded, %v (found %v) whole", name, m.Tag, m.Src, m.Dst, rf.Finish[i], want, ok)
			}
			checked++
		}
		if checked == 0 {
			t.Fatalf("%s: nothing compared", name)
		}
	}
}

func TestFoldable(t *testing.T) {
	ranks := make([]int32, 8)
	for i := range ranks {
		ranks[i] = int32(i)
	}
	for _, c := range []struct {
		spec collective.Spec
		p    int
		want bool
	}{
		{collective.Spec{Op: collective.AllReduce, Ranks: ranks, Bytes: 8 * units.MiB, Channels: 2, ChunkBytes: 512 * units.KiB}, 2, true},
		{collective.Spec{Op: collective.AllReduce, Ranks: ranks, Bytes: 8*units.MiB + 8, Channels: 2, ChunkBytes: 512 * units.KiB}, 2, false}, // the last loop's 4 bytes per channel split over 8 ranks
		{collective.Spec{Op: collective.AllReduce, Ranks: ranks, Bytes: 8 * units.MiB, Channels: 2}, 3, false},                                // 8 ranks, period 3
		{collective.Spec{Op: collective.AllToAll, Ranks: ranks, Bytes: 8 * units.MiB}, 1, false},
		{collective.Spec{Op: collective.AllReduce, Algo: collective.Tree, Ranks: ranks, Bytes: 8 * units.MiB}, 1, false},
		{collective.Spec{Op: collective.AllGather, Ranks: ranks, Bytes: 64}, 8, true},
	} {
		if got := c.spec.Foldable(c.p); got != c.want {
			t.Errorf("%s %d bytes, %d channels, fold %d: Foldable = %v, want %v", c.spec.Op, c.spec.Bytes, c.spec.Channels, c.p, got, c.want)
		}
	}
	bad := collective.Spec{Op: collective.AllReduce, Ranks: ranks, Bytes: 8*units.MiB + 4, Fold: 2}
	if _, err := collective.Compile(&msggraph.Graph{Endpoints: 8}, bad); err == nil {
		t.Fatal("Compile folded a ring with unequal blocks")
	}
}
