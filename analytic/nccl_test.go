package analytic

import (
	"math"
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/collective"
	"github.com/fabricsim/fabricsim/units"
)

// Two H100 nodes of 8 GPUs (16 ranks), 16 channels, 20 GB/s per channel inside the node (NCCL
// uses the intra figure up to two nodes).
func twoNodes() NCCLModel { return NewNCCLModel(16, 2, 16, 20, 25) }

func TestNCCLModelHandWorked(t *testing.T) {
	const GiB, MiB = units.Size(1 << 30), units.Size(1 << 20)
	cases := []struct {
		name  string
		m     NCCLModel
		op    collective.Op
		algo  collective.Algo
		proto Protocol
		bytes units.Size
		want  float64 // us
	}{
		// Ring/Simple all-reduce, 1 GiB, 16 ranks on 2 nodes:
		//   busBW = 16 ch x 20 = 320 GB/s; algBW = 320 x 16/30 = 170.667 GB/s
		//   latency = 8.4 + (30-4) x 3.4 (NVLink hop, above the 3 x 1 us net overhead)
		//           + 4 x 14 (2 x nodes network hops) = 152.8 us; x 1.4 plateau = 213.92 us
		//   time = 213.92 + 2^30 / (1000 x 170.667) = 213.92 + 6291.456 = 6505.376 us
		// (a public nccl-tests log for 16 H100s on 2 nodes measured 6759 us).
		{"ring simple 1GiB", twoNodes(), collective.AllReduce, collective.Ring, Simple, GiB, 6505.376},
		// Tree/Simple all-reduce, 1 GiB: busBW = min(320 x 0.92, 16 x 41.4) = 294.4, algBW = 147.2
		//   (no size correction above 2^28 B); latency = 0 + 2 x ((8-1) x 28 + log2(2) x 28) = 448
		//   time = 448 + 2^30 / 147200 = 7742.4417 us.
		{"tree simple 1GiB", twoNodes(), collective.AllReduce, collective.Tree, Simple, GiB, 7742.441739},
		// Same at 1 MiB: correction factor for 2^20 >> 6 = 2^14 on Simple is 0.5, algBW 73.6:
		//   448 + 2^20 / 73600 = 462.2469 us.
		{"tree simple 1MiB", twoNodes(), collective.AllReduce, collective.Tree, Simple, MiB, 462.246957},
		// Ring/Simple at 1 MiB: 213.92 + 2^20 / 170666.67 = 220.064 us.
		{"ring simple 1MiB", twoNodes(), collective.AllReduce, collective.Ring, Simple, MiB, 220.064},
		// Ring/LL128 at 1 MiB: busBW = min(320 x 0.92, 16 x 36.7) = 294.4, algBW = 157.013;
		//   latency = 14 + 26 x 1.9 + 4 x 4.0 = 79.4; time = 79.4 + 6.678 = 86.0783 us.
		{"ring ll128 1MiB", twoNodes(), collective.AllReduce, collective.Ring, LL128, MiB, 86.078261},
		// Ring/LL at 1 MiB: busBW = min(39 (2-node LL ceiling), 320/4) = 39, algBW = 20.8;
		//   latency = 6.6 + 26 x max(0.6, 1 us overhead) + 4 x 2.7 = 43.4; time = 43.4 + 50.4123.
		{"ring ll 1MiB", twoNodes(), collective.AllReduce, collective.Ring, LL, MiB, 93.812308},
		// Tree/LL128 at 1 MiB: busBW = 294.4 x 120/128 = 276, algBW 138 x 0.6 correction = 82.8;
		//   latency = 14 + 2 x (7 x 1.25 + 8.5) = 48.5; time = 48.5 + 12.66396 = 61.16396 us.
		{"tree ll128 1MiB", twoNodes(), collective.AllReduce, collective.Tree, LL128, MiB, 61.163961},
		// One node, 8 ranks, 2 channels of 40 GB/s, ring/LL all-reduce of 8 KiB:
		//   busBW = min(87.7, 80/4) = 20, algBW = 20 x 8/14 = 11.4286; latency = 6.6 + 14 x 0.6 = 15
		//   time = 15 + 8192 / 11428.6 = 15.7168 us.
		{"one node ll 8KiB", NewNCCLModel(8, 1, 2, 40, 0), collective.AllReduce, collective.Ring, LL, 8192, 15.7168},
		// All-gather ring/Simple, one node, 8 ranks, 2 x 40 GB/s: algBW = 80 x 8/7 = 91.43;
		//   latency = 8.4 + 7 x 3.4 = 32.2; 64 MiB: 32.2 + 67108864/91428.57 = 766.2 us.
		{"allgather 64MiB", NewNCCLModel(8, 1, 2, 40, 0), collective.AllGather, collective.Ring, Simple, 64 * MiB, 32.2 + 67108864.0*7/8/80/1000},
	}
	for _, tc := range cases {
		got, err := tc.m.TimeUs(tc.op, tc.algo, tc.proto, tc.bytes)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if math.Abs(got-tc.want) > 1e-5 {
			t.Errorf("%s: %.6f us, want %.6f", tc.name, got, tc.want)
		}
	}
	// Best at 1 MiB on two nodes is tree/LL128 (61.16 us, the smallest of the cases above).
	a, p, tm, err := twoNodes().Best(collective.AllReduce, MiB)
	if err != nil || a != collective.Tree || p != LL128 || math.Abs(tm.Microseconds()-61.163961) > 1e-3 {
		t.Errorf("Best = %v/%v %v %v, want tree/LL128 61.16us", a, p, tm, err)
	}
}

func TestNCCLModelErrors(t *testing.T) {
	m := twoNodes()
	for _, tc := range []struct {
		op   collective.Op
		algo collective.Algo
		want string
	}{
		{collective.AllToAll, collective.Direct, "has no AllToAll"},
		{collective.AllGather, collective.Tree, "not modelled"},
		{collective.AllReduce, collective.Hierarchical, "not modelled"},
	} {
		if _, err := m.TimeUs(tc.op, tc.algo, Simple, 1024); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %s: %v, want %q", tc.op, tc.algo, err, tc.want)
		}
	}
	bad := m
	bad.Nodes = 32
	if _, err := bad.TimeUs(collective.AllReduce, collective.Ring, Simple, 1); err == nil {
		t.Error("more nodes than ranks accepted")
	}
}
