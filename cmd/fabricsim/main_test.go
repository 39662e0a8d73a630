package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// run executes the CLI in-process and returns its exit code and stdout.
func run(t *testing.T, args ...string) (int, string) {
	t.Helper()
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	code := exitOK
	if err != nil {
		code = exitUsage
		if ee, ok := err.(*exitError); ok {
			code = ee.code
		}
		out.WriteString("ERR " + err.Error())
	}
	return code, out.String()
}

func TestVersion(t *testing.T) {
	if code, out := run(t, "version"); code != 0 || !strings.HasPrefix(out, "fabricsim ") {
		t.Fatalf("version: %d %q", code, out)
	}
}

func TestRunWritesOutputs(t *testing.T) {
	dir := t.TempDir()
	scen := writeSmallRun(t, dir)
	fct := filepath.Join(dir, "fct.txt")
	code, out := run(t, "run", scen, "--out", filepath.Join(dir, "out"), "--check", "--hpcc-fct", fct)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	csv, err := os.ReadFile(filepath.Join(dir, "out", "flows.csv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(csv)), "\n")
	// k=4 fat tree: 16 hosts, so 16 permutation flows plus the header.
	if lines[0] != "id,src,dst,size_bytes,start_ns,fct_ns,ideal_fct_ns" || len(lines) != 17 {
		t.Fatalf("flows.csv: %d lines, header %q", len(lines), lines[0])
	}
	sum, _ := os.ReadFile(filepath.Join(dir, "out", "summary.json"))
	for _, key := range []string{`"scenario": "small"`, `"seed": 1`, `"backend": "packet"`, `"sim_time_ns"`, `"flows": 16`, `"fct_ns"`, `"p99"`, `"slowdown"`, `"bytes_sent"`, `"bytes_delivered": 1600000`, `"drops": 0`, `"events"`} {
		if !bytes.Contains(sum, []byte(key)) {
			t.Errorf("summary.json lacks %s", key)
		}
	}
	// Same scenario and seed, same bytes: the host time goes to timing.json, not summary.json.
	if bytes.Contains(sum, []byte("wall")) {
		t.Errorf("summary.json holds a wall time:\n%s", sum)
	}
	if code, out := run(t, "run", scen, "--out", filepath.Join(dir, "again"), "--check"); code != 0 {
		t.Fatalf("second run: exit %d: %s", code, out)
	}
	for _, name := range []string{"summary.json", "flows.csv"} {
		a, _ := os.ReadFile(filepath.Join(dir, "out", name))
		b, _ := os.ReadFile(filepath.Join(dir, "again", name))
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("%s differs between two runs of the same scenario and seed", name)
		}
	}
	var timing struct {
		Wall   *float64 `json:"wall_seconds"`
		Events uint64   `json:"events"`
	}
	if tb, err := os.ReadFile(filepath.Join(dir, "out", "timing.json")); err != nil || json.Unmarshal(tb, &timing) != nil || timing.Wall == nil || *timing.Wall <= 0 || timing.Events == 0 {
		t.Errorf("timing.json: %v, %+v; want wall_seconds > 0 and events", err, timing)
	}
	f, _ := os.ReadFile(fct)
	if n := len(strings.Split(strings.TrimSpace(string(f)), "\n")); n != 16 {
		t.Errorf("fct.txt has %d lines, want 16", n)
	}
	// HPCC's IP of node n is 0x0b000001 + (n << 8): hosts are nodes 0..15 of the k=4 tree.
	if !strings.HasPrefix(string(f), "0b0") {
		t.Errorf("fct.txt line does not start with an HPCC IP: %q", string(f)[:20])
	}
}

// writeSmallRun writes a run scenario of 16 flows of 100 KB on a k=4 fat tree into dir.
func writeSmallRun(t *testing.T, dir string) string {
	t.Helper()
	scen := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(scen, []byte("name: small\ntopology: {kind: fat-tree, k: 4}\ntraffic: {kind: permutation, size: 100KB}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return scen
}

func TestBadInputExitsTwo(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("topology: {kind: fat-tree, k: 3}\ntraffic: {kind: permutation}\n"), 0o644)
	for _, args := range [][]string{
		{"run", bad},
		{"validate", bad},
		{"run", filepath.Join(dir, "missing.yaml")},
		{"run", "--seed", "x"},
		{"frobnicate"},
	} {
		code, out := run(t, args...)
		if code != exitUsage {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, out)
		}
	}
	_, out := run(t, "validate", bad)
	if !strings.Contains(out, "bad.yaml:1:") || !strings.Contains(out, "topology.k") {
		t.Errorf("error does not name file:line and field: %q", out)
	}
}

func TestValidateOK(t *testing.T) {
	code, out := run(t, "validate", "../../examples/leaf-spine-2to1.yaml")
	if code != 0 || !strings.Contains(out, "128 hosts, 12 switches") {
		t.Fatalf("%d %q", code, out)
	}
}

// TestUnwritableOutExitsTwo: an --out (or other output flag) that cannot be written is found
// before anything is simulated: exit 2 and a message naming the flag, for every command that
// writes files. A regular file stands where the directory should be (as root, permissions
// would not stop the write).
func TestUnwritableOutExitsTwo(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, []byte("x"), 0o644)
	bad := filepath.Join(file, "out")
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"run", "--out", bad}, "--out " + bad},
		{[]string{"run", "--pcap", bad}, "--pcap " + bad},
		{[]string{"run", "--hpcc-fct", filepath.Join(bad, "fct.txt")}, "--hpcc-fct"},
		{[]string{"run", "--series", dir}, "--series " + dir + ": is a directory"},
		{[]string{"run", "--hpcc-fct", filepath.Join(dir, "fct.txt"), "--hpcc-standalone", "ns3"}, "--hpcc-standalone \"ns3\": want ideal or hpcc"},
		{[]string{"compare", "--backend", "analytic", "--out", bad}, "--out " + bad},
		{[]string{"sweep", filepath.Join("..", "..", "examples", "sweep-small.yaml"), "--out", bad}, "--out " + bad},
		{[]string{"sweep", filepath.Join("..", "..", "examples", "sweep-small.yaml"), "--out", dir, "--k8s-manifest", dir}, "--k8s-manifest " + dir + ": is a directory"},
	} {
		code, out := run(t, tc.args...)
		if code != exitUsage || !strings.Contains(out, tc.flag) {
			t.Errorf("%v: exit %d, want 2 and %q:\n%s", tc.args, code, tc.flag, out)
		}
		// Nothing was simulated: no run summary, compare table or sweep progress.
		for _, ran := range []string{"finished", "exposed", "runs done", "ran now"} {
			if strings.Contains(out, ran) {
				t.Errorf("%v: simulated before checking the output (%q in the output)", tc.args, ran)
			}
		}
	}
}
