package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigExportImport exports compare's roce-tuned variant in every format (twice: the same
// bytes), imports each file back (the tuned DCQCN and ECN values return), and merges the import
// into a run scenario and into a compare scenario (both load).
func TestConfigExportImport(t *testing.T) {
	dir := t.TempDir()
	src := "../../examples/compare-moe-3to1.yaml"
	want := map[string][]string{
		"nvue":     {"ecn_kmin: 150KB", "ecn_kmax: 1500KB", "pfc_priorities: [3]", "pfc_alpha: 0.125"},
		"sonic":    {"ecn_kmin: 150KB", "buffer: 32MiB", "pfc_threshold: dynamic"},
		"eos":      {"ecn_kmax: 1500KB", "pfc: true"},
		"connectx": {"dcqcn_cnp_interval: 2us", "dcqcn_min_dec_factor: 0.9", "dcqcn_decrease_period: 2us", "dcqcn_rate_ai: 10Mbps", "dcqcn_increase_timer: 50us"},
	}
	for format, keys := range want {
		a, b := filepath.Join(dir, format+".a"), filepath.Join(dir, format+".b")
		for _, out := range []string{a, b} {
			if code, msg := run(t, "config-export", "--format", format, "--variant", "roce-tuned", "--out", out, src); code != 0 {
				t.Fatalf("%s: exit %d: %s", format, code, msg)
			}
		}
		da, _ := os.ReadFile(a)
		db, _ := os.ReadFile(b)
		if len(da) == 0 || string(da) != string(db) {
			t.Errorf("%s: two exports of the same input differ", format)
		}
		code, out := run(t, "config-import", a)
		if code != 0 {
			t.Fatalf("%s: import: exit %d: %s", format, code, out)
		}
		for _, k := range keys {
			if !strings.Contains(out, "  "+k+"  # "+a+":") {
				t.Errorf("%s: import lacks %q with its origin:\n%s", format, k, out)
			}
		}
	}
	// Switch and host together, merged into a run scenario and into a compare scenario.
	run1 := "../../examples/roce-dcqcn-permutation.yaml"
	code, out := run(t, "config-import", "--base", run1, filepath.Join(dir, "nvue.a"), filepath.Join(dir, "connectx.a"))
	if code != 0 {
		t.Fatalf("--base run scenario: exit %d: %s", code, out)
	}
	for _, s := range []string{"ecn_kmin: 150KB # ", "dcqcn_rate_ai: 10Mbps # ", "traffic:"} {
		if !strings.Contains(out, s) {
			t.Errorf("--base run scenario: output lacks %q:\n%s", s, out)
		}
	}
	merged := filepath.Join(dir, "merged.yaml")
	if code, out := run(t, "config-import", "--base", src, "--out", merged, filepath.Join(dir, "sonic.a")); code != 0 {
		t.Fatalf("--base compare scenario: exit %d: %s", code, out)
	}
	if code, out := run(t, "validate", merged); code != 0 || !strings.Contains(out, "5 variants") {
		t.Errorf("the merged compare scenario: exit %d: %s", code, out)
	}
}

// TestConfigExportTuneResult reads a tune.json: the best fabric keys over a run scenario's, and
// over a compare scenario's variant.
func TestConfigExportTuneResult(t *testing.T) {
	dir := t.TempDir()
	abs := func(p string) string { a, _ := filepath.Abs(p); return a }
	tune := filepath.Join(dir, "tune.json")
	os.WriteFile(tune, []byte(`{"scenario": "`+abs("../../examples/roce-dcqcn-permutation.yaml")+`",
 "best": {"fabric": {"dcqcn_rate_ai": "20Mbps", "ecn_kmin": "50KB", "ecn_kmax": "300KB", "ecn_pmax": 0.5, "qps_per_conn": 4}}}`), 0o644)
	code, out := run(t, "config-export", "--format", "connectx", tune)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	for _, s := range []string{"echo 20 > $CC/rp_ai_rate", "export NCCL_IB_QPS_PER_CONNECTION=4", "# source: roce-dcqcn-permutation.yaml tuned (tune.json)"} {
		if !strings.Contains(out, s) {
			t.Errorf("lacks %q:\n%s", s, out)
		}
	}
	code, out = run(t, "config-export", "--format", "eos", tune)
	if code != 0 || !strings.Contains(out, "random-detect ecn minimum-threshold 50000 bytes maximum-threshold 300000 bytes max-mark-probability 50") {
		t.Errorf("eos: exit %d:\n%s", code, out)
	}
	os.WriteFile(tune, []byte(`{"scenario": "`+abs("../../examples/compare-moe-3to1.yaml")+`", "variant": "roce-default",
 "best": {"fabric": {"dcqcn_rate_ai": "15Mbps", "dcqcn_cnp_interval": "1us"}}}`), 0o644)
	code, out = run(t, "config-export", "--format", "connectx", tune)
	if code != 0 || !strings.Contains(out, "echo 15 > $CC/rp_ai_rate") || !strings.Contains(out, "echo 1 > $CC/np_min_time_between_cnps") {
		t.Errorf("compare tune result: exit %d:\n%s", code, out)
	}
}

// TestConfigBadInput: bad sources, flags, files and values each exit 2 with one message naming
// the file, line, key or flag and what is valid.
func TestConfigBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	junos := write("leaf.conf", "interfaces {\n  et-0/0/0 { mtu 9216; }\n}\n")
	badProb := write("leaf.nvue", "nv set qos roce\nnv set qos congestion-control default-global traffic-class 3 probability 0\n")
	wd := write("wd.yaml", "name: wd\ntopology: {kind: fat-tree, k: 4, link: {rate: 100Gbps, latency: 1us}}\nfabric: {kind: roce, pfc_watchdog: 50ms}\ntraffic: {kind: permutation, size: 1MB}\n")
	ib := write("ib.yaml", "name: ib\ntopology: {kind: fat-tree, k: 4}\nfabric: {kind: infiniband}\ntraffic: {kind: permutation, size: 1MB}\n")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"config-import", junos}, junos + ": not a configuration format fabricsim reads (valid: nvue"},
		{[]string{"config-import", "--format", "sonic", badProb}, badProb + ": reads as nvue, not sonic"},
		{[]string{"config-import", badProb}, badProb + ":2: nv set qos congestion-control default-global traffic-class 3 probability 0: \"0\" is not a whole number 1..100"},
		{[]string{"config-import", "--format", "junos", badProb}, "--format: \"junos\" is not a configuration format (valid: nvue, sonic, eos, connectx)"},
		{[]string{"config-import", filepath.Join(dir, "missing.nvue")}, "missing.nvue: cannot read configuration: no such file or directory"},
		{[]string{"config-import", "--base", ib, badProb[:0] + write("ok.nvue", "nv set qos pfc default-global switch-priority 3\n")}, "its fabric is infiniband"},
		{[]string{"config-export", "--format", "sonic", wd}, "fabric.pfc_watchdog: 50ms is outside SONiC PFC_WD detection_time's 100..5000 ms (format sonic)"},
		{[]string{"config-export", "--format", "nvue", ib}, "fabric kind \"infiniband\"; config-export writes RoCE settings"},
		{[]string{"config-export", wd}, "--format is required (valid: nvue, sonic, eos, connectx)"},
		{[]string{"config-export", "--format", "eos", "../../examples/compare-moe-3to1.yaml"}, "name the variant to export with --variant (roce variants: roce-default, roce-tuned, roce-pfc-only)"},
		{[]string{"config-export", "--format", "eos", "--variant", "ib-ndr", "../../examples/compare-moe-3to1.yaml"}, "--variant ib-ndr: its fabric is infiniband"},
		{[]string{"config-export", "--format", "eos", "--rate", "fast", wd}, "--rate \"fast\": want a link rate"},
		{[]string{"config-export", "--format", "eos", write("t.json", `{"best": {}}`)}, `a tune result needs "scenario"`},
	}
	for _, c := range cases {
		code, out := run(t, c.args...)
		if code != exitUsage || !strings.Contains(out, c.want) {
			t.Errorf("%v: exit %d, want 2 with %q:\n%s", c.args, code, c.want, out)
		}
	}
}
