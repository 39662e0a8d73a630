package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --threads through the CLI: a run with 2 threads writes the same bytes as one with 1 (a k=4
// fat tree, partitioned by pods), and a negative count or a non-packet backend is refused with
// exit status 2 and the flag named.
func TestThreadsCLI(t *testing.T) {
	dir := t.TempDir()
	scen := filepath.Join(dir, "s.yaml")
	os.WriteFile(scen, []byte("name: small\ntopology: {kind: fat-tree, k: 4}\nfabric: {kind: roce}\ntraffic: {kind: permutation, size: 100KB}\n"), 0o644)
	var outs [3][]byte
	for _, k := range []int{1, 2} {
		out := filepath.Join(dir, "out"+string(rune('0'+k)))
		code, msg := run(t, "run", scen, "--threads", string(rune('0'+k)), "--check", "--quiet", "--out", out)
		if code != 0 {
			t.Fatalf("--threads %d: exit %d\n%s", k, code, msg)
		}
		for i, f := range []string{"summary.json", "flows.csv", "ports.csv"} {
			b, err := os.ReadFile(filepath.Join(out, f))
			if err != nil {
				t.Fatal(err)
			}
			if k == 1 {
				outs[i] = b
			} else if string(b) != string(outs[i]) {
				t.Errorf("--threads 2: %s differs from --threads 1", f)
			}
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", scen, "--threads", "-1"}, "--threads -1: want 0 (automatic) or a positive count"},
		{[]string{"run", scen, "--backend", "analytic", "--threads", "2"}, "--threads is an option of the packet backend, and this run uses the analytic backend"},
	} {
		code, out := run(t, c.args...)
		if code != exitUsage || !strings.Contains(out, c.want) {
			t.Errorf("%v: exit %d, output %q; want exit 2 and %q", c.args, code, out, c.want)
		}
	}
}
