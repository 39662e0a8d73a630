package nccl

import (
	"context"
	"math"
	"testing"

	"github.com/fabricsim/fabricsim/backend"
	"github.com/fabricsim/fabricsim/cluster"
	"github.com/fabricsim/fabricsim/gpu"

	"github.com/fabricsim/fabricsim/collective"
	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/units"
)

// TestRingTimeMatchesMessageGraph: on H100 clusters of one leaf and of several (a ring that
// crosses leaves through the spines), the ring pipeline model agrees with the analytic engine
// run on the collective's whole message graph to within 3 % (0.1-2.1 % on these cases).
func TestRingTimeMatchesMessageGraph(t *testing.T) {
	cfg := fabric.DefaultEthernet()
	for _, c := range []struct {
		servers int
		radix   int
		op      collective.Op
		bytes   units.Size
	}{
		{4, 0, collective.AllReduce, 64 * units.MiB},
		{8, 0, collective.AllReduce, 1 * units.MiB},
		{40, 0, collective.AllReduce, 256 * units.MiB}, // 32 servers per leaf: the ring crosses spines
		{40, 0, collective.AllGather, 64 * units.MiB},
		{36, 0, collective.ReduceScatter, 96 * units.MiB},
	} {
		srv, _ := gpu.Preset("h100")
		cl, err := cluster.Build(cluster.Spec{Servers: c.servers, Server: srv, Net: cluster.Network{Radix: c.radix}})
		if err != nil {
			t.Fatal(err)
		}
		o := Options{}
		g, err := Compile(cl, c.op, c.bytes, o)
		if err != nil {
			t.Fatal(err)
		}
		run, err := cl.Run(context.Background(), g, cluster.RunOptions{Backend: backend.Analytic, Fabric: cfg})
		if err != nil {
			t.Fatal(err)
		}
		got, ok, err := RingTime(cl, c.op, c.bytes, o, cfg)
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		rel := float64(got-run.SimTime) / float64(run.SimTime)
		t.Logf("%d servers radix %d %s %v: engine %v, model %v (%+.2f%%)", c.servers, c.radix, c.op, c.bytes, run.SimTime, got, 100*rel)
		if math.Abs(rel) > 0.03 {
			t.Errorf("%d servers %s %v: model %v, engine %v", c.servers, c.op, c.bytes, got, run.SimTime)
		}
	}
}
