package analytic

import (
	"fmt"
	"math"
	"testing"

	"github.com/fabricsim/fabricsim/collective"
	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/units"
)

// hopNet answers for every (src, dst) pair of a ring with that hop's parameters.
type hopNet map[[2]int32]RingHop

func (h hopNet) Latency(s, d int32) units.Time   { return h[[2]int32{s, d}].Lat }
func (h hopNet) Bandwidth(s, d int32) units.Rate { return h[[2]int32{s, d}].BW }
func (h hopNet) TxPort(s, d int32) Port          { return h[[2]int32{s, d}].Tx }
func (h hopNet) RxPort(s, d int32) Port          { return h[[2]int32{s, d}].Rx }

// ringCase is a ring over n ranks on servers of g ranks: hops inside a server are fast and short
// and share one "NVLink" port per rank among the channels; the hop out of a server is a
// "network" hop with a port of its own; every slowEvery-th server hop is longer (a leaf
// crossing). Channel c runs the ranks rotated by c.
func ringCase(n, g, channels, slowEvery int) ([][]int32, hopNet) {
	net := hopNet{}
	var orders [][]int32
	for c := 0; c < channels; c++ {
		order := make([]int32, n)
		for i := range order {
			order[i] = int32((i + c) % n)
		}
		orders = append(orders, order)
		for p := 0; p < n; p++ {
			src, dst := order[p], order[(p+1)%n]
			h := RingHop{Lat: 800 * units.Nanosecond, BW: 2960 * units.Gbps,
				Tx: Port{ID: int64(src), Rate: 2960 * units.Gbps}, Rx: Port{ID: int64(dst), Rate: 2960 * units.Gbps}}
			if src/int32(g) != dst/int32(g) {
				h = RingHop{Lat: 2 * units.Microsecond, BW: 380 * units.Gbps,
					Tx: Port{ID: 1e6 + int64(src), Rate: 380 * units.Gbps}, Rx: Port{ID: 1e6 + int64(dst), Rate: 380 * units.Gbps}}
				if slowEvery > 0 && (src/int32(g))%int32(slowEvery) == int32(slowEvery)-1 {
					h.Lat = 3500 * units.Nanosecond
				}
			}
			net[[2]int32{src, dst}] = h
		}
	}
	return orders, net
}

// TestRingTimeMatchesEngine compares the ring pipeline model with the fluid engine run on the
// ring's whole message graph, from latency-bound (small blocks) to bandwidth-bound rings, with
// channels sharing ports: within 3 %.
func TestRingTimeMatchesEngine(t *testing.T) {
	for _, c := range []struct {
		op                     collective.Op
		n, g, channels, slowEv int
		bytes                  units.Size
	}{
		{collective.AllReduce, 64, 8, 8, 4, 1 * units.MiB},
		{collective.AllReduce, 64, 8, 8, 4, 64 * units.MiB},
		{collective.AllReduce, 128, 8, 8, 0, 1 * units.GiB},
		{collective.AllReduce, 96, 8, 4, 3, 8 * units.MiB},
		{collective.AllGather, 64, 8, 8, 2, 64 * units.MiB},
		{collective.ReduceScatter, 128, 8, 8, 4, 256 * units.MiB},
		{collective.AllReduce, 32, 4, 2, 0, 4 * units.KiB},
	} {
		name := fmt.Sprintf("%s n=%d ch=%d %v", c.op, c.n, c.channels, c.bytes)
		orders, net := ringCase(c.n, c.g, c.channels, c.slowEv)
		g := &msggraph.Graph{Endpoints: c.n}
		unit := int64(1)
		if c.op != collective.AllReduce {
			unit = int64(c.n)
		}
		per := int64(c.bytes) / unit / int64(c.channels)
		var chans []RingChannel
		for ch, order := range orders {
			spec := collective.Spec{Op: c.op, Ranks: order, Bytes: units.Size(per * unit), ChunkBytes: 512 * units.KiB, ConnBase: int32(ch)}
			if _, err := collective.Compile(g, spec); err != nil {
				t.Fatal(err)
			}
			rc := RingChannel{Blocks: collective.RingBlocks(spec)}
			for p := range order {
				rc.Hops = append(rc.Hops, net[[2]int32{order[p], order[(p+1)%c.n]}])
			}
			chans = append(chans, rc)
		}
		want, err := Run(g, net)
		if err != nil {
			t.Fatal(err)
		}
		steps := c.n - 1
		if c.op == collective.AllReduce {
			steps = 2 * (c.n - 1)
		}
		got, err := RingTime(chans, steps)
		if err != nil {
			t.Fatal(err)
		}
		rel := float64(got-want.Makespan) / float64(want.Makespan)
		t.Logf("%s: engine %v, model %v (%+.2f%%)", name, want.Makespan, got, 100*rel)
		if math.Abs(rel) > 0.03 {
			t.Errorf("%s: model %v, engine %v: %+.2f%% off", name, got, want.Makespan, 100*rel)
		}
	}
}
