package fabric

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// TestPartitionNodesBalance checks the partitioner's port weights: every link between two
// partitions has a top-tier switch at one end (groups stay whole), and the partitions' port
// counts differ by at most one unit's ports (a group, or a top-tier switch: with groups of equal
// size the runs of groups differ by at most one group, and the top-tier switches, filling the
// partitions below an equal share, only close that gap; 5 leaves of 12 hosts in 4 partitions:
// 2 x 28 ports against 28 and two spines' 2 x 5). On a k-ary fat tree, where a pod has
// k^2/4 hosts and k switches of k ports (k^2/4 + k^2 ports) and the (k/2)^2 cores k ports
// each, the counts are exactly equal for 2 and 4 partitions (k=8: 2 x 384 and 4 x 192
// ports; k=16: 2 x 3,072 and 4 x 1,536).
func TestPartitionNodesBalance(t *testing.T) {
	link := topo.LinkSpec{Rate: 100 * units.Gbps, Latency: units.Microsecond}
	ls, err := topo.LeafSpine(topo.LeafSpineSpec{Leaves: 5, HostsPerLeaf: 12, Spines: 4, Host: link})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		g     *topo.Graph
		parts int
		equal int // the ports every partition must have, 0: only within one top-tier switch
	}{
		{"fat tree k=8", fatTree(t, 8), 2, 384},
		{"fat tree k=8", fatTree(t, 8), 3, 0},
		{"fat tree k=8", fatTree(t, 8), 4, 192},
		{"fat tree k=16", fatTree(t, 16), 2, 3072},
		{"fat tree k=16", fatTree(t, 16), 3, 0},
		{"fat tree k=16", fatTree(t, 16), 4, 1536},
		{"leaf-spine 5x12, 4 spines", ls, 2, 0},
		{"leaf-spine 5x12, 4 spines", ls, 4, 0},
	} {
		partOf, k := partitionNodes(tc.g, tc.parts)
		if k != tc.parts {
			t.Fatalf("%s: %d partitions for %d", tc.name, k, tc.parts)
		}
		ports := make([]int, k)
		top, unitPorts := 0, 0
		for i := range tc.g.Nodes {
			nd := &tc.g.Nodes[i]
			ports[partOf[i]] += len(nd.Ports)
			if nd.Kind == topo.Switch {
				top = max(top, nd.Tier)
			}
		}
		for i := range tc.g.Nodes {
			nd := &tc.g.Nodes[i]
			if nd.Kind == topo.Switch && nd.Tier == top {
				unitPorts = max(unitPorts, len(nd.Ports))
				continue
			}
			for _, p := range nd.Ports {
				if q := &tc.g.Nodes[p.Peer]; partOf[p.Peer] != partOf[i] && (q.Kind != topo.Switch || q.Tier != top) {
					t.Errorf("%s, %d partitions: link %s-%s between partitions %d and %d has no top-tier switch", tc.name, k, nd.Name, q.Name, partOf[i], partOf[p.Peer])
				}
			}
		}
		lo, hi := ports[0], ports[0]
		for _, n := range ports {
			lo, hi = min(lo, n), max(hi, n)
			if tc.equal > 0 && n != tc.equal {
				t.Errorf("%s, %d partitions: ports %v, want %d each", tc.name, k, ports, tc.equal)
				break
			}
		}
		unitOf, groups, _ := partitionUnits(tc.g)
		groupPorts := make([]int, groups)
		for i, u := range unitOf {
			if int(u) < groups {
				groupPorts[u] += len(tc.g.Nodes[i].Ports)
				unitPorts = max(unitPorts, groupPorts[u])
			}
		}
		if hi-lo > unitPorts {
			t.Errorf("%s, %d partitions: ports %v differ by more than one unit's %d", tc.name, k, ports, unitPorts)
		}
	}
}

func fatTree(t *testing.T, k int) *topo.Graph {
	t.Helper()
	g, err := topo.FatTree(k, topo.LinkSpec{Rate: 100 * units.Gbps, Latency: units.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestWindowTrace runs a k=4 permutation in 2 partitions with FABRICSIM_WINDOWS set: the file
// has one line a window, whose events sum to each partition's (PartEvents) and to the run's
// less its global events, whose busiest partitions give the run's Balance, and whose handed
// events sum to HandedOver.
func TestWindowTrace(t *testing.T) {
	g, err := topo.FatTree(4, topo.LinkSpec{Rate: 100 * units.Gbps, Latency: units.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "windows.csv")
	t.Setenv(WindowsEnv, path)
	_, info, _ := runThreads(t, g, DefaultEthernet(), permutationGraph(len(g.Hosts), 64*units.KB, 1), 2)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if lines[0] != "window,from_ps,bound_ps,events0,events1,handed0,handed1,busy_ns0,busy_ns1" || uint64(len(lines)-1) != info.Windows {
		t.Fatalf("header %q and %d windows, want %d", lines[0], len(lines)-1, info.Windows)
	}
	var part [2]uint64
	var most, handed uint64
	var busy [2]time.Duration
	for _, l := range lines[1:] {
		var w, from, bound, e0, e1, h0, h1 uint64
		var b0, b1 time.Duration
		if _, err := fmt.Sscanf(l, "%d,%d,%d,%d,%d,%d,%d,%d,%d", &w, &from, &bound, &e0, &e1, &h0, &h1, &b0, &b1); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		part[0], part[1], most, handed = part[0]+e0, part[1]+e1, most+max(e0, e1), handed+h0+h1
		busy[0], busy[1] = busy[0]+b0, busy[1]+b1
	}
	// An Ethernet run has no exchange between windows: every job is a window's.
	if busy[0] != info.Busy[0] || busy[1] != info.Busy[1] || busy[0] <= 0 {
		t.Fatalf("the windows' jobs took %v, the partitions' Busy %v", busy, info.Busy)
	}
	if part[0] != info.PartEvents[0] || part[1] != info.PartEvents[1] || part[0]+part[1] > info.Events || info.Events-part[0]-part[1] > 2 {
		t.Fatalf("the windows ran %v events, PartEvents %v, the run %d", part, info.PartEvents, info.Events)
	}
	if handed != info.HandedOver || handed == 0 || float64(info.Events)/float64(most) != info.Balance {
		t.Fatalf("the windows handed %d events over (the run: %d) and give a balance of %d / %d, the run's %v", handed, info.HandedOver, info.Events, most, info.Balance)
	}
}
