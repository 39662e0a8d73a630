package nccl

import (
	"context"
	"runtime"
	"testing"

	"github.com/fabricsim/fabricsim/backend"
	"github.com/fabricsim/fabricsim/cluster"
	"github.com/fabricsim/fabricsim/gpu"

	"github.com/fabricsim/fabricsim/collective"
	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

// allocated returns the bytes f allocates (runtime.MemStats.TotalAlloc: exact, unlike peak
// memory, and linear in the same things).
func allocated(t testing.TB, f func()) uint64 {
	t.Helper()
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// TestMemoryDoublingAnalytic: building an H100 cluster and computing a 1 GiB all-reduce on the
// analytic backend (the ring pipeline model) allocates at most 2.2x as much when the GPUs double,
// from 1,024 to 4,096 GPUs (docs/architecture.md has peak memory up to 16,384).
func TestMemoryDoublingAnalytic(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	cfg := fabric.DefaultEthernet()
	allocDoubles(t, "", []int{128, 256, 512}, func(cl *cluster.Cluster) {
		if _, ok, err := RingTime(cl, collective.AllReduce, units.GiB, Options{}, cfg); err != nil || !ok {
			t.Fatal(ok, err)
		}
	})
}

// allocDoubles builds an H100 cluster of each of the server counts (each twice the last), runs
// run on it and fails when the bytes allocated grow more than 2.2x from one to the next.
func allocDoubles(t *testing.T, label string, servers []int, run func(cl *cluster.Cluster)) {
	t.Helper()
	srv, _ := gpu.Preset("h100")
	var prev uint64
	for _, n := range servers {
		b := allocated(t, func() {
			cl, err := cluster.Build(cluster.Spec{Servers: n, Server: srv})
			if err != nil {
				t.Fatal(err)
			}
			run(cl)
		})
		t.Logf("%s%d GPUs: %.1f MB allocated", label, n*8, float64(b)/1e6)
		if prev > 0 && float64(b) > 2.2*float64(prev) {
			t.Errorf("%s%d GPUs allocate %.2fx what half as many do", label, n*8, float64(b)/float64(prev))
		}
		prev = b
	}
}

// TestMemoryDoublingPacket: a send/recv of 1 MiB from every GPU to the next on the packet
// backend (a workload linear in the GPUs) allocates at most 2.2x as much when the GPUs double,
// from 128 to 512 GPUs, on Ethernet and on InfiniBand: the cluster routes keep nothing per pair
// of nodes, and the subnet manager's tables keep no row for the servers' insides (ibsm).
func TestMemoryDoublingPacket(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	ib, err := fabric.DefaultInfiniBand("ndr")
	if err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []fabric.Config{fabric.DefaultEthernet(), ib} {
		memoryDoublingPacket(t, cfg)
	}
}

func memoryDoublingPacket(t *testing.T, cfg fabric.Config) {
	allocDoubles(t, string(cfg.Kind)+": ", []int{16, 32, 64}, func(cl *cluster.Cluster) {
		g, err := Compile(cl, collective.SendRecv, units.MiB, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cl.Run(context.Background(), g, cluster.RunOptions{Backend: backend.Packet, Fabric: cfg}); err != nil {
			t.Fatal(err)
		}
	})
}

// TestMemoryDoublingTree: a double-binary-tree all-reduce has a message graph linear in the
// GPUs (per chunk, one message up and one down per rank), unlike a flat ring's (steps x ranks),
// so it runs on the analytic backend message by message at any size: compiling and running a
// 64 MiB tree all-reduce allocates at most 2.2x as much when the GPUs double, 128 to 512 GPUs.
func TestMemoryDoublingTree(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	cfg := fabric.DefaultEthernet()
	allocDoubles(t, "", []int{16, 32, 64}, func(cl *cluster.Cluster) {
		g, err := Compile(cl, collective.AllReduce, 64*units.MiB, Options{Algo: collective.Tree})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cl.Run(context.Background(), g, cluster.RunOptions{Backend: backend.Analytic, Fabric: cfg}); err != nil {
			t.Fatal(err)
		}
	})
}

// BenchmarkAllReduceAnalytic: a 1 GiB all-reduce on the analytic backend (the ring pipeline
// model), cluster built and routed included, at 8,192 GPUs (1,024 H100 servers, three tiers) and
// at 131,072 GPUs (16,384 servers, a plane per rail), what nccl-tests all_reduce_perf -b 1G
// -e 1G --backend analytic runs (the targets on one core: 2 s and 300 MB, 60 s and 4 GB):
// GOMAXPROCS=1 go test ./nccl -run '^$' -bench AllReduceAnalytic -benchtime 1x
func BenchmarkAllReduceAnalytic(b *testing.B) {
	srv, _ := gpu.Preset("h100")
	cfg := fabric.DefaultEthernet()
	for _, c := range []struct {
		name    string
		servers int
		net     cluster.Network
	}{
		{"8192GPUs", 1024, cluster.Network{}},
		{"131072GPUs", 16384, cluster.Network{Kind: "clos", Clos: topo.ClosSpec{RailOptimized: true, RailPlanes: true}}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				cl, err := cluster.Build(cluster.Spec{Servers: c.servers, Server: srv, Net: c.net})
				if err != nil {
					b.Fatal(err)
				}
				if _, ok, err := RingTime(cl, collective.AllReduce, units.GiB, Options{}, cfg); err != nil || !ok {
					b.Fatal(ok, err)
				}
			}
		})
	}
}
