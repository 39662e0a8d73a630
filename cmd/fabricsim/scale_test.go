package main

import (
	"strconv"
	"strings"
	"testing"
)

// TestClusterShapeBadInput: a cluster the requested tiers or radix cannot build, a spine
// oversubscription on spines that have no uplinks, and an InfiniBand subnet of more LIDs than one
// subnet holds, exit with status 2 and say what to change.
func TestClusterShapeBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"two tiers too small", []string{"--nodes", "4096", "--tiers", "2"}, "use three tiers, a larger radix"},
		{"three tiers too small", []string{"--nodes", "4096", "--tiers", "3"}, "join at most 64 pods"},
		{"bad tier count", []string{"--nodes", "16", "--tiers", "4"}, "tiers=4"},
		{"one tier too small", []string{"--nodes", "128", "--tiers", "1"}, "joins at most 64 servers, not 128"},
		{"spines without uplinks", []string{"--nodes", "16", "--tiers", "2", "--spine-oversubscription", "2"}, "no uplinks to oversubscribe"},
		{"LIDs of one subnet", []string{"--nodes", "8192", "--radix", "128", "--fabric", "infiniband"}, "more than the 49151 unicast LIDs one subnet holds"},
	} {
		code, out := run(t, append([]string{"nccl-tests", "all_reduce_perf", "-b", "1M", "-e", "1M", "--backend", "analytic"}, tc.args...)...)
		if code != exitUsage || !strings.Contains(out, tc.want) {
			t.Errorf("%s: exit %d, output %q; want exit 2 and %q", tc.name, code, out, tc.want)
		}
	}
}

// TestNCCLTestsAtScale: 4,096 GPUs (512 servers) need three tiers at radix 64 (two hold 256
// servers), and on the analytic backend their 1 GiB all-reduce ring (8 channels of 8,190 steps
// over 4,096 ranks: 268 M messages) runs on the ring pipeline model. Each step waits for the
// step before it on the preceding rank, at least one NVLink hop (H100 preset: 2 x 250 ns of
// NVLink and 300 ns of NVSwitch), so the time is at least 8,190 x 0.8 us = 6.55 ms; and at
// most the latency of the slowest hop (the network one, under 4 us) per step plus the
// bandwidth-bound time.
func TestNCCLTestsAtScale(t *testing.T) {
	code, out := run(t, "nccl-tests", "all_reduce_perf", "-b", "1G", "-e", "1G", "--nodes", "512", "--backend", "analytic")
	if code != 0 || !strings.Contains(out, "ring pipeline model") || !strings.Contains(out, "3tier") {
		t.Fatalf("exit %d: %s", code, out)
	}
	var us float64
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) > 6 && f[0] == "1073741824" {
			us, _ = strconv.ParseFloat(f[5], 64)
		}
	}
	if us < 8190*0.8 || us > 8190*4+20000 {
		t.Fatalf("all-reduce of 1 GiB on 4,096 GPUs: %g us, want between %g and %g", us, 8190*0.8, 8190*4.0+20000)
	}
}

// TestNCCLTestsTreeAtScale: a 1 GiB tree all-reduce on 4,096 GPUs (4.2 M messages) runs on the
// tree pipeline model. Each tree carries half the data, and a rank whose NIC is its way to its
// parent sends it all through that 400 Gb/s NIC: at least 512 MiB / 50 GB/s = 10.7 ms. A rank
// sends at most twice the data in all (half up and twice half down in the tree where it is
// interior, half up in the other), 4x that through one NIC, plus the trees' latencies: at most
// 5x.
func TestNCCLTestsTreeAtScale(t *testing.T) {
	code, out := run(t, "nccl-tests", "all_reduce_perf", "-b", "1G", "-e", "1G", "--nodes", "512", "--backend", "analytic", "--algo", "tree")
	if code != 0 || !strings.Contains(out, "tree pipeline model") {
		t.Fatalf("exit %d: %s", code, out)
	}
	var us float64
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) > 6 && f[0] == "1073741824" {
			us, _ = strconv.ParseFloat(f[5], 64)
		}
	}
	if lo := float64(512<<20) / 50e9 * 1e6; us < lo || us > 5*lo {
		t.Fatalf("tree all-reduce of 1 GiB on 4,096 GPUs: %g us, want between %g and %g", us, lo, 5*lo)
	}
}
