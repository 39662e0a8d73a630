package fabric

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/result"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

// runThreads runs mg on a fresh network of g with cfg and the given thread count and returns
// the result's JSON (without the wall time) and how the run was split.
func runThreads(t testing.TB, g *topo.Graph, cfg Config, mg *msggraph.Graph, threads int) ([]byte, ParallelInfo, *result.Run) {
	t.Helper()
	r, err := topo.ComputeRoutes(g)
	if err != nil {
		t.Fatal(err)
	}
	n, err := New(g, r, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.SetThreads(threads); err != nil {
		t.Fatal(err)
	}
	res, err := n.Run(mg, units.MaxTime)
	if err != nil {
		t.Fatal(err)
	}
	res.WallSeconds = 0
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	return b, n.Parallel(), res
}

// TestParallelMatchesSequential runs the k=8 fat tree permutation (Ethernet, tail drop) with 1
// to 4 threads: every result must be byte-identical to the sequential one, and the runs with
// more than one thread must really have been partitioned.
func TestParallelMatchesSequential(t *testing.T) {
	g, err := topo.FatTree(8, topo.LinkSpec{Rate: 100 * units.Gbps, Latency: units.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	mg := permutationGraph(len(g.Hosts), 256*units.KB, 1)
	cfg := DefaultEthernet()
	cfg.Check = true
	want, info, res := runThreads(t, g, cfg, mg, 1)
	if info.Partitions != 1 {
		t.Fatalf("1 thread ran %d partitions", info.Partitions)
	}
	if res.BytesDelivered != int64(len(mg.Msgs))*int64(256*units.KB) {
		t.Fatalf("delivered %d B", res.BytesDelivered)
	}
	for _, k := range []int{2, 3, 4} {
		got, info, _ := runThreads(t, g, cfg, mg, k)
		if info.Partitions != k {
			t.Fatalf("%d threads: %d partitions (%s)", k, info.Partitions, info.Reason)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%d threads: result differs from the sequential run", k)
		}
		t.Logf("%d threads: %s; %d windows, %d events (%.0f a window), %d handed over", k, info.Reason, info.Windows, res.Events, float64(res.Events)/float64(info.Windows), info.HandedOver)
	}
}
