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

// incastGraph sends size bytes from each of senders hosts (spread over the fabric) to host 0.
func incastGraph(hosts, senders int, size units.Size) *msggraph.Graph {
	mg := &msggraph.Graph{Endpoints: hosts}
	for i := 1; i <= senders; i++ {
		mg.Add(msggraph.Message{Src: int32(i * (hosts - 1) / senders), Dst: 0, Bytes: size})
	}
	return mg
}

// TestParallelMatchesSequential runs k=8 fat tree workloads with 1 to 4 threads: a permutation
// on Ethernet (tail drop) and on RoCE (PFC, ECN, DCQCN, DWRR), a 32-to-1 RoCE incast whose
// PAUSE frames cross partitions, and on InfiniBand a permutation (static and adaptive routing)
// and a 32-to-1 incast whose credit stalls end with updates that cross partitions at window
// ends. Every result must be byte-identical to the one-thread run, and the runs with more than
// one thread must really have been partitioned.
func TestParallelMatchesSequential(t *testing.T) {
	g, err := topo.FatTree(8, topo.LinkSpec{Rate: 100 * units.Gbps, Latency: units.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	roce := DefaultRoCE()
	ib, err := DefaultInfiniBand("edr")
	if err != nil {
		t.Fatal(err)
	}
	ibAR := ib
	ibAR.IB.Adaptive = true
	pfcOnly := DefaultRoCE() // PFC alone: the incast's queues grow until it pauses
	pfcOnly.RoCE.DCQCN, pfcOnly.RoCE.ECN = false, false
	for _, tc := range []struct {
		name string
		cfg  Config
		mg   *msggraph.Graph
		want func(*result.Run) string
	}{
		{"ethernet permutation", DefaultEthernet(), permutationGraph(len(g.Hosts), 256*units.KB, 1), nil},
		{"roce permutation", roce, permutationGraph(len(g.Hosts), 256*units.KB, 1), func(r *result.Run) string {
			if r.Counters["ecn_marks"] == 0 || r.Counters["cnps_received"] == 0 {
				return "no ECN mark or CNP: DCQCN not exercised"
			}
			return ""
		}},
		{"roce pfc incast", pfcOnly, incastGraph(len(g.Hosts), 32, 512*units.KB), func(r *result.Run) string {
			if r.Counters["pfc_pause_frames_sent"] == 0 {
				return "no PAUSE sent: PFC not exercised"
			}
			return ""
		}},
		{"infiniband permutation", ib, permutationGraph(len(g.Hosts), 256*units.KB, 1), nil},
		{"infiniband adaptive permutation", ibAR, permutationGraph(len(g.Hosts), 256*units.KB, 1), func(r *result.Run) string {
			if r.Counters["ib_ar_deviations"] == 0 {
				return "no adaptive deviation: adaptive routing not exercised"
			}
			return ""
		}},
		{"infiniband incast", ib, incastGraph(len(g.Hosts), 32, 512*units.KB), func(r *result.Run) string {
			if r.Counters["ib_credit_stall_ns"] == 0 {
				return "no credit stall: the wake-up of a waiting port not exercised"
			}
			return ""
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Check = true
			want, info, res := runThreads(t, g, cfg, tc.mg, 1)
			if info.Partitions != 1 {
				t.Fatalf("1 thread ran %d partitions", info.Partitions)
			}
			var total int64
			for _, m := range tc.mg.Msgs {
				total += int64(m.Bytes)
			}
			if res.BytesDelivered != total {
				t.Fatalf("delivered %d B of %d", res.BytesDelivered, total)
			}
			if tc.want != nil {
				if why := tc.want(res); why != "" {
					t.Fatal(why)
				}
			}
			for _, k := range []int{2, 3, 4} {
				got, info, _ := runThreads(t, g, cfg, tc.mg, k)
				if info.Partitions != k {
					t.Fatalf("%d threads: %d partitions (%s)", k, info.Partitions, info.Reason)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("%d threads: result differs from the sequential run", k)
				}
				t.Logf("%d threads: %s; %d windows, %d events (%.0f a window), %d handed over", k, info.Reason, info.Windows, info.Events, float64(info.Events)/float64(info.Windows), info.HandedOver)
			}
		})
	}
}
