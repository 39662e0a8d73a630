package nccl

import (
	"context"
	"math"
	"testing"

	"github.com/fabricsim/fabricsim/backend"
	"github.com/fabricsim/fabricsim/cluster"
	"github.com/fabricsim/fabricsim/collective"
	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/gpu"
	"github.com/fabricsim/fabricsim/units"
)

// TestTreeTimeMatchesMessageGraph: on H100 clusters of one server, of one leaf and of several
// (40 servers: the trees cross spines), and of one or two GPUs per server (every hop or most on
// the network; odd rank counts, whose second tree is the first shifted), from one chunk
// (latency-bound) to 512 per tree, the tree pipeline model agrees with the analytic engine run
// on the tree all-reduce's whole message graph to within 10 % (0.00-3.9 % with 8 GPUs per server,
// up to 9.8 % with one GPU per server and 8 chunks, where the fill and drain are a large part
// of the time and sharing by overlap overstates what the ports carry then; never below the
// engine by more than 0.01 %), and TreeMessages counts that graph's messages.
func TestTreeTimeMatchesMessageGraph(t *testing.T) {
	cfg := fabric.DefaultEthernet()
	for _, c := range []struct {
		servers  int
		bytes    units.Size
		channels int
		gpus     int // per server; 0 keeps the preset's 8
	}{
		{1, 64 * units.MiB, 0, 0},
		{2, 1 * units.MiB, 0, 0},
		{4, 64 * units.MiB, 0, 0},
		{8, 16 * units.MiB, 0, 0},
		{8, 256 * units.MiB, 0, 0},
		{16, 64 * units.MiB, 2, 0},
		{40, 128 * units.MiB, 0, 0}, // 32 servers per leaf: the tree crosses spines
		{40, 32 * units.KiB, 0, 0},
		{7, 8 * units.MiB, 0, 1}, // 7 ranks: the second tree is the first shifted, not mirrored
		{5, 4 * units.MiB, 3, 2},
		{8, 8 * units.MiB, 0, 1},
		{16, 64 * units.MiB, 0, 1},
		{7, 64 * units.MiB, 0, 1},
		{7, 1 * units.MiB, 0, 1},
	} {
		srv, _ := gpu.Preset("h100")
		if c.gpus > 0 {
			srv.GPUs, srv.NICs, srv.Sockets = c.gpus, c.gpus, 1
		}
		cl, err := cluster.Build(cluster.Spec{Servers: c.servers, Server: srv})
		if err != nil {
			t.Fatal(err)
		}
		o := Options{Algo: collective.Tree, Channels: c.channels}
		g, err := Compile(cl, collective.AllReduce, c.bytes, o)
		if err != nil {
			t.Fatal(err)
		}
		run, err := cl.Run(context.Background(), g, cluster.RunOptions{Backend: backend.Analytic, Fabric: cfg})
		if err != nil {
			t.Fatal(err)
		}
		got, ok, err := TreeTime(cl, collective.AllReduce, c.bytes, o, cfg)
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		if m := TreeMessages(cl, collective.AllReduce, c.bytes, o); m != float64(len(g.Msgs)) {
			t.Errorf("%d servers %v: TreeMessages %v, Compile built %d", c.servers, c.bytes, m, len(g.Msgs))
		}
		rel := float64(got-run.SimTime) / float64(run.SimTime)
		t.Logf("%d servers %v ch %d: engine %v, model %v (%+.2f%%)", c.servers, c.bytes, c.channels, run.SimTime, got, 100*rel)
		if math.Abs(rel) > 0.10 {
			t.Errorf("%d servers %v: model %v, engine %v", c.servers, c.bytes, got, run.SimTime)
		}
	}
}
