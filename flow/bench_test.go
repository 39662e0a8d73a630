package flow

import (
	"fmt"
	"runtime/metrics"
	"testing"

	"github.com/fabricsim/fabricsim/collective"
	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/result"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/traffic"
	"github.com/fabricsim/fabricsim/units"
)

// BenchmarkPermutationDCQCN: a k=8 fat tree at 100 Gb/s, a random permutation of 16 MB flows on
// RoCE with DCQCN (the sweep-small example's run).
func BenchmarkPermutationDCQCN(b *testing.B) {
	g, r, cfg, mg := permutationDCQCN(b)
	b.ResetTimer()
	for range b.N {
		if _, err := Run(g, r, cfg, mg, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// permutationDCQCN is BenchmarkPermutationDCQCN's run: a k=8 fat tree at 100 Gb/s, a random
// permutation (seed 1) of 16 MB flows, RoCE with DCQCN and ECN between 100 and 400 KB.
func permutationDCQCN(t testing.TB) (*topo.Graph, *topo.Routes, fabric.Config, *msggraph.Graph) {
	g, r := fatTree(t, 8, 100*units.Gbps)
	cfg := fabric.DefaultRoCE()
	cfg.RoCE.Kmin, cfg.RoCE.Kmax = 100*units.KB, 400*units.KB
	flows, err := traffic.PermutationFlows(len(g.Hosts), 16*units.MB, 0, traffic.NewRand(1))
	if err != nil {
		t.Fatal(err)
	}
	return g, r, cfg, traffic.ToGraph(flows, len(g.Hosts))
}

// BenchmarkIncastTailDrop: incast-32's run (hosts 1-32 send 2 MB each to host 0 of a k=8 fat
// tree at 100 Gb/s, Ethernet with 16 MiB buffers, tail drop and go-back-N; seed 1): every step
// of its 7-12 ms is congested and lossy (loss.go's admission and recovery).
func BenchmarkIncastTailDrop(b *testing.B) {
	g, r := fatTree(b, 8, 100*units.Gbps)
	cfg := fabric.DefaultEthernet()
	cfg.MTU, cfg.Buffer, cfg.Seed = 4096, 16*units.MiB, 1
	senders := make([]int, 32)
	for i := range senders {
		senders[i] = i + 1
	}
	flows, err := traffic.Incast(senders, 0, 2*units.MB, 0)
	if err != nil {
		b.Fatal(err)
	}
	mg := traffic.ToGraph(flows, len(g.Hosts))
	b.ResetTimer()
	for range b.N {
		res, err := Run(g, r, cfg, mg, Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(res.Events), "steps/op")
	}
}

// BenchmarkRing1024: one class run of the 1,024-GPU compare's data-parallel ring (8 rails of 128
// ranks on a rail-optimized fabric of 64-port switches, a 25 MiB reduce-scatter in two channels
// of 512 KiB chunks), RoCE with PFC.
func BenchmarkRing1024(b *testing.B) {
	g, err := topo.RailOptimized(topo.RailSpec{Servers: 128, NICsPerServer: 8, NIC: topo.LinkSpec{Rate: 390 * units.Gbps, Latency: 100 * units.Nanosecond},
		Radix: 64, Oversubscription: 1, Spine: topo.LinkSpec{Rate: 400 * units.Gbps, Latency: 150 * units.Nanosecond}})
	if err != nil {
		b.Fatal(err)
	}
	mg := &msggraph.Graph{Endpoints: 1024}
	for rail := 0; rail < 8; rail++ {
		ranks := make([]int32, 128)
		for s := range ranks {
			ranks[s] = int32(s*8 + rail)
		}
		if _, err := collective.Compile(mg, collective.Spec{Op: collective.ReduceScatter, Ranks: ranks, Bytes: 25 * units.MiB, Channels: 2, ChunkBytes: 512 * units.KiB, ConnBase: int32(rail * 2)}); err != nil {
			b.Fatal(err)
		}
	}
	cfg := fabric.DefaultRoCE()
	cfg.RoCE.DCQCN, cfg.RoCE.ECN = false, false
	for _, plain := range []bool{false, true} {
		name := "reduced"
		if plain {
			name = "plain"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			var red *reduction
			for b.Loop() {
				var err error
				if _, red, err = run(g, nil, cfg, mg, Options{NoSymmetry: plain}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(mg.Msgs)), "messages")
			if red != nil && !red.broken {
				b.ReportMetric(float64(red.copies), "copies")
			}
		})
	}
}

// pipelineClass is one pipeline class of the 70B three-tier compare (examples/compare-70b-16k.yaml
// with servers and DP scaled): Llama-3-70B with TP 8 and PP 8 on a three-tier rail-optimized Clos
// of 64-port switches, scalable units of 32 servers, one pipeline stage per SU from 2,048 GPUs
// (servers/8 per stage). Stage s's GPUs each send a 16 MiB scaled-down pipeline send (compare's
// scaledsend: 128 MiB / 8) to the GPU of the same rail in stage s+1 and one to stage s-1, all at
// once, every send crossing the core: ECMP collisions there congest it. The NIC links run at
// the GPUDirect path's wire rate (47.8 GB/s of payload), as compare simulates them.
func pipelineClass(tb testing.TB, servers, stage int) (*topo.Graph, *msggraph.Graph, fabric.Config) {
	return pipelineClassPlanes(tb, servers, stage, false)
}

// pipelineClassPlanes is pipelineClass, on a plane per rail with railPlanes (the 131,072-GPU step
// of compare's BenchmarkCompare16kFlow/70b-131k: three tiers of 64-port switches join at most
// 65,536 NIC ports, so each of its 16,384 servers' eight rails has a plane of its own).
func pipelineClassPlanes(tb testing.TB, servers, stage int, railPlanes bool) (*topo.Graph, *msggraph.Graph, fabric.Config) {
	cfg := fabric.Defaults(fabric.KindRoCE, "", "connectx")
	cfg.RoCE.Kmin, cfg.RoCE.Kmax = 150*units.KB, 1500*units.KB
	cfg.Seed = 1                           // the network seed of compare's first step: ECMP hashes
	payload := units.Rate(0.92 * 52e9 * 8) // GPUDirect: 0.92 of the H100's 52 GB/s PCIe P2P rate
	nic := units.Rate(float64(payload) * float64(int(cfg.MTU)+cfg.HeaderBytes+cfg.L1Overhead) / float64(cfg.MTU))
	nic = min(nic, 400*units.Gbps)
	g, err := topo.Clos(topo.ClosSpec{Servers: servers, NICsPerServer: 8, RailPlanes: railPlanes, RailOptimized: true, Tiers: 3, Radix: 64, ServersPerSU: 32,
		Oversubscription: []float64{0, 0},
		NIC:              topo.LinkSpec{Rate: nic, Latency: 100 * units.Nanosecond},
		LeafSpine:        topo.LinkSpec{Rate: 400 * units.Gbps, Latency: 150 * units.Nanosecond},
		SpineCore:        topo.LinkSpec{Rate: 400 * units.Gbps, Latency: 150 * units.Nanosecond}})
	if err != nil {
		tb.Fatal(err)
	}
	per := servers // GPUs per stage: servers x 8 GPUs / 8 stages
	mg := &msggraph.Graph{Endpoints: len(g.Hosts)}
	for _, to := range []int{stage + 1, stage - 1} {
		for i := range per {
			mg.Add(msggraph.Message{Src: int32(stage*per + i), Dst: int32(to*per + i), Bytes: 16 * units.MiB})
		}
	}
	return g, mg, cfg
}

// BenchmarkPipelineClass runs one congested pipeline class of the 70B three-tier compare (stage
// 3: sends to stages 2 and 4), at 2,048 GPUs (512 sends) and 16,384 GPUs (4,096 sends, the
// class the 16k compare runs 8 x 3 seeds x 4 variants of), on roce-default (DCQCN, where every
// step is the base step) and roce-pfc-only (PFC alone, where the adaptive step acts): as run
// (adaptive), with every step at 1 us (fixed), and with the plain hand-off of a flow's pieces
// as entries of their own (split, Options.SplitEntries), reporting CPU seconds, steps and the
// slowest message's FCT:
// go test ./flow -run '^$' -bench PipelineClass -benchtime 1x -count 3.
func BenchmarkPipelineClass(b *testing.B) {
	for _, servers := range []int{256, 2048} {
		for _, variant := range []string{"roce-default", "roce-pfc-only"} {
			for _, mode := range []string{"adaptive", "fixed", "split"} {
				b.Run(fmt.Sprintf("%dGPUs/%s/%s", servers*8, variant, mode), func(b *testing.B) {
					g, mg, cfg := pipelineClass(b, servers, 3)
					if variant == "roce-pfc-only" {
						cfg.RoCE.DCQCN, cfg.RoCE.ECN = false, false
					}
					res := benchClass(b, g, mg, cfg, Options{FixedStep: mode == "fixed", SplitEntries: mode == "split"})
					var slowest units.Time
					for _, m := range res.Messages {
						slowest = max(slowest, m.Finish-m.Start)
					}
					b.ReportMetric(slowest.Seconds()*1e6, "slowest-us")
				})
			}
		}
	}
}

// BenchmarkPipelineClass131k is BenchmarkPipelineClass's class at 131,072 GPUs (16,384 servers, a
// plane per rail): 32,768 congested 16 MiB sends, the pipeline class of the 131,072-GPU step.
// "whole" runs it to the end (several minutes of CPU); "300us" and its 16,384-GPU counterpart
// run the first 300 us of simulated time, to compare the cost of the same stretch at both sizes:
// go test ./flow -run '^$' -bench PipelineClass131k -benchtime 1x -timeout 60m.
func BenchmarkPipelineClass131k(b *testing.B) {
	for _, c := range []struct {
		name       string
		servers    int
		railPlanes bool
		until      units.Time
	}{
		{"16384GPUs-300us", 2048, false, 300 * units.Microsecond},
		{"131072GPUs-300us", 16384, true, 300 * units.Microsecond},
		{"131072GPUs-whole", 16384, true, 0},
	} {
		b.Run(c.name, func(b *testing.B) {
			g, mg, cfg := pipelineClassPlanes(b, c.servers, 3, c.railPlanes)
			benchClass(b, g, mg, cfg, Options{Until: c.until})
			b.ReportMetric(float64(len(mg.Msgs)), "sends")
		})
	}
}

// benchClass runs one class b.N times with opt and reports its CPU seconds a run and its steps;
// it returns the last run's result.
func benchClass(b *testing.B, g *topo.Graph, mg *msggraph.Graph, cfg fabric.Config, opt Options) *result.Run {
	rt, err := topo.ComputeRoutes(g)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	// The collections during the runs. Not the runtime's estimate of their CPU
	// (/cpu/classes/gc/total): it counts its workers' wall time, 19-26 % of the run's CPU on
	// this loaded machine where a CPU profile and GOGC=off's instructions say 2 %: docs/flow.md,
	// "The garbage collector at 16,384-131,072 GPUs".
	gc := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(gc)
	gcCycles := gc[0].Value.Uint64()
	cpu := cpuSeconds()
	var res *result.Run
	for b.Loop() {
		if res, err = Run(g, rt, cfg, mg, opt); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric((cpuSeconds()-cpu)/float64(b.N), "cpu-s/op")
	metrics.Read(gc)
	b.ReportMetric(float64(gc[0].Value.Uint64()-gcCycles)/float64(b.N), "gcs/op")
	b.ReportMetric(res.Counters["flow_steps"], "steps")
	return res
}
