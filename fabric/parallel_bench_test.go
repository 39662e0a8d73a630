package fabric

import (
	"fmt"
	"runtime/metrics"
	"testing"

	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

// BenchmarkParallelK16 runs the reference k=16 permutation (1,024 hosts, 100 Gb/s, 1 us links,
// 2 MB flows; the runs of BenchmarkFatTreePermutation and BenchmarkFatTreePermutationRoCE) with
// 1 and 2 threads, on Ethernet, on RoCE with PFC, ECN and DCQCN, and on InfiniBand (EDR
// defaults, the run of BenchmarkFatTreePermutationIB, in windows with either count): the speedup of the parallel
// engine is the ratio of the two ns/op (on two free cores; every thread count gives the same
// result bytes, TestParallelMatchesSequential). windows/run and handed/run are exact.
func BenchmarkParallelK16(b *testing.B) {
	for _, fab := range []struct {
		name string
		cfg  Config
	}{{"ethernet", DefaultEthernet()}, {"roce-dcqcn", DefaultRoCE()}, {"infiniband", ibEDR(b)}} {
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/threads=%d", fab.name, threads), func(b *testing.B) {
				benchThreads(b, 16, fab.cfg, threads)
			})
		}
	}
}

// BenchmarkParallelK8 is the same on k=8 (128 hosts), where a window holds about 3,100 events
// on Ethernet, on Ethernet and InfiniBand.
func BenchmarkParallelK8(b *testing.B) {
	for _, fab := range []struct {
		name string
		cfg  Config
	}{{"ethernet", DefaultEthernet()}, {"infiniband", ibEDR(b)}} {
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/threads=%d", fab.name, threads), func(b *testing.B) {
				benchThreads(b, 8, fab.cfg, threads)
			})
		}
	}
}

// ibEDR is the InfiniBand fabric of the IB benchmarks.
func ibEDR(b *testing.B) Config {
	cfg, err := DefaultInfiniBand("edr")
	if err != nil {
		b.Fatal(err)
	}
	return cfg
}

func benchThreads(b *testing.B, k int, cfg Config, threads int) {
	g, err := topo.FatTree(k, topo.LinkSpec{Rate: 100 * units.Gbps, Latency: units.Microsecond})
	if err != nil {
		b.Fatal(err)
	}
	r, err := topo.ComputeRoutes(g)
	if err != nil {
		b.Fatal(err)
	}
	mg := permutationGraph(len(g.Hosts), 2*units.MB, 1)
	b.ReportAllocs()
	var windows, handed, events, credits, slept, deferred uint64
	var balance, exchange, gcCPU float64
	var gcCycles uint64
	gc := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/cpu/classes/gc/total:cpu-seconds"}}
	busy, waited := make([]float64, threads), make([]float64, threads)
	for i := 0; i < b.N; i++ {
		n, err := New(g, r, cfg)
		if err != nil {
			b.Fatal(err)
		}
		if err := n.SetThreads(threads); err != nil {
			b.Fatal(err)
		}
		metrics.Read(gc)
		cycles, cpu := gc[0].Value.Uint64(), gc[1].Value.Float64()
		if _, err := n.Run(mg, units.MaxTime); err != nil {
			b.Fatal(err)
		}
		metrics.Read(gc)
		gcCycles += gc[0].Value.Uint64() - cycles
		gcCPU += gc[1].Value.Float64() - cpu
		info := n.Parallel()
		if info.Partitions != threads {
			b.Fatalf("%d partitions for %d threads: %s", info.Partitions, threads, info.Reason)
		}
		windows += info.Windows
		handed += info.HandedOver
		events += info.Events
		balance += info.Balance
		credits += info.CreditsHanded
		exchange += info.ExchangeTime.Seconds()
		slept += info.Slept
		deferred += info.Deferred
		for p := range info.Busy {
			busy[p] += info.Busy[p].Seconds()
			waited[p] += info.Waited[p].Seconds()
		}
	}
	for p := range busy {
		b.ReportMetric(busy[p]*1e3/float64(b.N), fmt.Sprintf("busy%d-ms", p))
		if threads > 1 {
			b.ReportMetric(waited[p]*1e3/float64(b.N), fmt.Sprintf("waited%d-ms", p))
		}
	}
	// The garbage collections that ran during the runs (the packet pools and the kernel's queues
	// grow while the run starts) and their CPU: with one thread the collector has the other
	// core to itself, with two it takes it from a partition (docs/architecture.md, "Work per
	// window").
	b.ReportMetric(float64(gcCycles)/float64(b.N), "gc/run")
	b.ReportMetric(gcCPU*1e3/float64(b.N), "gc-cpu-ms")
	b.ReportMetric(balance/float64(b.N), "balance")
	b.ReportMetric(float64(events)/float64(b.N), "events/run")
	b.ReportMetric(float64(windows)/float64(b.N), "windows/run")
	b.ReportMetric(float64(handed)/float64(b.N), "handed/run")
	if threads > 1 {
		b.ReportMetric(float64(slept)/float64(windows), "slept/window")
	}
	if credits > 0 {
		b.ReportMetric(float64(credits)/float64(b.N), "credits/run")
		b.ReportMetric(exchange*1e9/float64(windows), "exchange-ns/window")
		b.ReportMetric(float64(deferred)/float64(b.N), "deferred/run")
	}
}
