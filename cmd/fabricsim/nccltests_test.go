package main

import (
	"encoding/json"
	"os"

	"github.com/fabricsim/fabricsim/nccltests"
	"path/filepath"
	"strings"
	"testing"
)

// TestNCCLTestsBadInput: every bad command line exits with status 2 and says what is wrong.
func TestNCCLTestsBadInput(t *testing.T) {
	dir := t.TempDir()
	badCluster := filepath.Join(dir, "bad.yaml")
	os.WriteFile(badCluster, []byte("fabric:\n  kind: infiniband\n  mtu: 3\n"), 0o644)
	odd := filepath.Join(dir, "odd.yaml")
	os.WriteFile(odd, []byte("topology: {kind: leaf-spine, leaves: 2, spines: 1, hosts_per_leaf: 6}\n"), 0o644)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"gpus do not divide into servers", []string{"all_reduce_perf", "--gpus", "12", "--gpus-per-node", "8"}, "does not divide into servers"},
		{"-g does not divide the gpus", []string{"all_reduce_perf", "-g", "3", "--nodes", "2"}, "does not divide the 16 GPUs"},
		{"cluster hosts not a multiple of nics", []string{"all_reduce_perf", "--cluster", odd}, "not a multiple of 8"},
		{"minbytes above maxbytes", []string{"all_reduce_perf", "-b", "1M", "-e", "8K", "-g", "8"}, "1048576 > 8192"},
		{"unknown collective", []string{"all_to_everyone_perf", "-b", "8"}, "unknown collective binary"},
		{"size not a multiple of the element", []string{"all_reduce_perf", "-b", "6", "-e", "6", "-g", "8"}, "not a multiple of 4"},
		{"all_gather granule", []string{"all_gather_perf", "-b", "1000", "-e", "1000", "-g", "8"}, "not a multiple of 128"},
		{"unknown data path", []string{"all_reduce_perf", "--data-path", "nvme"}, "unknown data path"},
		{"unknown backend", []string{"all_reduce_perf", "--backend", "fluid"}, "want packet, flow, analytic or auto"},
		{"unknown fabric", []string{"all_reduce_perf", "--fabric", "myrinet"}, `--fabric: "myrinet" is not a fabric kind (valid: ethernet, roce, infiniband)`},
		{"unknown server", []string{"all_reduce_perf", "--server", "b300"}, "unknown server model"},
		{"bad nodes", []string{"all_reduce_perf", "--nodes", "0"}, "--nodes"},
		{"missing value", []string{"all_reduce_perf", "--nodes"}, "needs a value"},
		{"bad cluster file", []string{"all_reduce_perf", "--cluster", badCluster}, "bad.yaml:3"},
		{"missing cluster file", []string{"all_reduce_perf", "--cluster", filepath.Join(dir, "none.yaml")}, "none.yaml"},
		{"fabric disagrees with file", []string{"all_reduce_perf", "--cluster", badCluster, "--fabric", "roce"}, "change one of them"},
		{"unknown nccl-tests option", []string{"all_reduce_perf", "-q", "1"}, "unknown option -q"},
		{"bad algo", []string{"all_reduce_perf", "--algo", "butterfly"}, "unknown collective algorithm"},
		{"too many gpus per process", []string{"all_reduce_perf", "-g", "16", "--nodes", "2"}, "more than the 8 GPUs"},
	} {
		code, out := run(t, append([]string{"nccl-tests"}, tc.args...)...)
		if code != exitUsage || !strings.Contains(out, tc.want) {
			t.Errorf("%s: exit %d, output %q; want exit 2 and %q", tc.name, code, out, tc.want)
		}
	}
}

// TestNCCLTestsTable: a small sweep prints nccl-tests' table with the closing lines, and busbw
// of the largest size is what two H100 servers carry (analytic backend: fast; the packet backend
// is checked against it in package gpu).
func TestNCCLTestsTable(t *testing.T) {
	code, out := run(t, "nccl-tests", "all_reduce_perf", "-b", "8M", "-e", "32M", "-f", "4", "-g", "8", "--nodes", "2", "--backend", "analytic")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	for _, want := range []string{"# nThread 1 nGpus 8 minBytes 8388608 maxBytes 33554432 step: 4(factor)",
		"#  Rank 15 Group  0 Pid  10001 on     node01 device  7 [0xdb] NVIDIA H100 80GB HBM3",
		"# Out of bounds values : 0 OK", "# Avg bus bandwidth    : "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	var rows int
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) == 13 && f[2] == "float" {
			rows++
		}
	}
	if rows != 2 {
		t.Errorf("%d rows, want 2 (8M, 32M):\n%s", rows, out)
	}
}

// TestNCCLTestsJSONPacket: the packet backend behind --json on a 2-server cluster with one GPU
// each, every data path, and a cluster file that sets the fabric.
func TestNCCLTestsJSONPacket(t *testing.T) {
	dir := t.TempDir()
	cl := filepath.Join(dir, "c.yaml")
	os.WriteFile(cl, []byte("fabric:\n  kind: ethernet\n  header_bytes: 26\n  l1_overhead: 0\n"), 0o644)
	var prev float64
	for _, dp := range []string{"gpudirect", "rdma-host", "host-staged"} {
		code, out := run(t, "nccl-tests", "sendrecv_perf", "-b", "4M", "-e", "4M", "--nodes", "2", "--gpus-per-node", "1",
			"--cluster", cl, "--data-path", dp, "--json")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", dp, code, out)
		}
		var rep struct {
			Results []struct {
				OutOfPlace struct {
					Time  float64 `json:"time"`
					BusBW float64 `json:"bus_bw"`
				} `json:"out_of_place"`
			} `json:"results"`
		}
		if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):strings.LastIndex(out, "}")+1]), &rep); err != nil || len(rep.Results) != 1 {
			t.Fatalf("%s: %v: %s", dp, err, out)
		}
		r := rep.Results[0].OutOfPlace
		t.Logf("sendrecv 4 MiB %s: %.1f us, busbw %.2f GB/s", dp, r.Time, r.BusBW)
		if r.Time <= prev || r.BusBW <= 0 || r.BusBW > 50 {
			t.Errorf("%s: time %.1f us (previous data path %.1f us), busbw %.2f", dp, r.Time, prev, r.BusBW)
		}
		prev = r.Time
	}
}

// TestNCCLTestsFabrics: --fabric roce and infiniband take the scenario package's defaults for
// those kinds (PFC/ECN/DCQCN; credits, VLs) and run; InfiniBand's lighter framing (26 B against
// RoCEv2's 66 B with VLAN, plus 20 B of Ethernet preamble and gap) makes it the faster.
func TestNCCLTestsFabrics(t *testing.T) {
	busbw := map[string]float64{}
	for _, f := range []string{"ethernet", "roce", "infiniband"} {
		code, out := run(t, "nccl-tests", "sendrecv_perf", "-b", "8M", "-e", "8M", "--nodes", "2", "--gpus-per-node", "1",
			"--fabric", f, "--json")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", f, code, out)
		}
		var rep struct {
			Avg float64 `json:"avg_bus_bw"`
		}
		if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):strings.LastIndex(out, "}")+1]), &rep); err != nil {
			t.Fatal(err)
		}
		busbw[f] = rep.Avg
		t.Logf("%s: sendrecv 8 MiB busbw %.2f GB/s", f, rep.Avg)
	}
	if !(busbw["infiniband"] > busbw["roce"]) || busbw["roce"] <= 0 || busbw["infiniband"] > 50 {
		t.Errorf("busbw %v: want 0 < roce < infiniband <= 50 GB/s", busbw)
	}
}

// FuzzNCCLTestsArgs: no command line panics the argument splitting and nccl-tests parsing.
func FuzzNCCLTestsArgs(f *testing.F) {
	f.Add("all_reduce_perf -b 8 -e 8G -f 2 --nodes 2 --gpus-per-node 8 --fabric roce --json")
	f.Add("alltoall_perf --cluster=x.yaml --data-path rdma-host --chunk 1MiB -g 8")
	f.Add("--nodes")
	f.Fuzz(func(t *testing.T, line string) {
		fl, rest, err := splitNCCLArgs(strings.Fields(line))
		if err != nil {
			return
		}
		if fl == nil {
			t.Fatal("nil flags without an error")
		}
		if len(rest) > 0 {
			nccltests.Parse(rest)
		}
	})
}

// TestNCCLTestsPacketScaleLabelled: real packets unless --packet-scale asks for merging, and a
// merged table says so in a comment line (docs/gpu.md: merging changes busbw by several per cent
// on the roce and infiniband fabrics).
func TestNCCLTestsPacketScaleLabelled(t *testing.T) {
	base := []string{"nccl-tests", "sendrecv_perf", "-b", "1M", "-e", "1M", "--nodes", "2", "--gpus-per-node", "1"}
	const label = "# fabricsim: packets merged (--packet-scale): 2-fold from 1048576 B"
	for _, tc := range []struct {
		extra  []string
		code   int
		merged bool
	}{
		{nil, 0, false},
		{[]string{"--packet-scale", "1"}, 0, false},
		{[]string{"--packet-scale", "2"}, 0, true},
		{[]string{"--packet-scale", "auto"}, 0, false}, // 256 packets: under the budget, not merged
		{[]string{"--packet-scale", "0"}, exitUsage, false},
		{[]string{"--packet-scale", "eight"}, exitUsage, false},
	} {
		code, out := run(t, append(append([]string{}, base...), tc.extra...)...)
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d: %s", tc.extra, code, tc.code, out)
			continue
		}
		if code != 0 {
			if !strings.Contains(out, "--packet-scale") || !strings.Contains(out, "auto or an integer >= 1") {
				t.Errorf("%v: %q does not name --packet-scale and what is valid", tc.extra, out)
			}
			continue
		}
		if got := strings.Contains(out, label); got != tc.merged {
			t.Errorf("%v: label present %v, want %v:\n%s", tc.extra, got, tc.merged, out)
		}
	}
}
