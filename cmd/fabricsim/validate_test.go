package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/examples"
)

// TestValidateEveryKind: validate reads every kind of file fabricsim takes, tells which kind it
// is and which command runs it: every shipped example, the price catalogue and an nccl-tests
// cluster file are valid.
func TestValidateEveryKind(t *testing.T) {
	dir := t.TempDir()
	cluster := filepath.Join(dir, "cluster.yaml")
	os.WriteFile(cluster, []byte("fabric: {kind: infiniband}\n"), 0o644)
	// The example catalogue of docs/cost.md is valid as printed.
	doc, err := os.ReadFile("../../docs/cost.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, _ := strings.Cut(string(doc), "```yaml\n")
	block, _, _ = strings.Cut(block, "```")
	prices := filepath.Join(dir, "prices.yaml")
	os.WriteFile(prices, []byte(block), 0o644)
	want := map[string]string{
		"../../examples/compare-default.yaml": "../../examples/compare-default.yaml: a compare scenario, valid (5 variants); run it with `fabricsim compare ../../examples/compare-default.yaml`",
		"../../examples/sweep-small.yaml":     "../../examples/sweep-small.yaml: a sweep file, valid (24 runs); run it with `fabricsim sweep ../../examples/sweep-small.yaml --out DIR`",
		"../../examples/leaf-spine-2to1.yaml": "../../examples/leaf-spine-2to1.yaml: a run scenario, valid (128 hosts, 12 switches, 160 links, 128 messages); run it with `fabricsim run ../../examples/leaf-spine-2to1.yaml`",
		"../../cost/catalogue.yaml":           "a price catalogue, valid",
		prices:                                prices + ": a price catalogue, valid",
		cluster:                               cluster + ": an nccl-tests cluster file, valid; use it with `fabricsim nccl-tests all_reduce_perf --cluster " + cluster + "`",
	}
	for _, name := range examples.Names() {
		if strings.HasSuffix(name, ".yaml") {
			if p := "../../examples/" + name; want[p] == "" {
				want[p] = ": a "
			}
		}
	}
	for path, w := range want {
		code, out := run(t, "validate", path)
		if code != 0 || !strings.Contains(out, w) || !strings.Contains(out, ", valid") {
			t.Errorf("validate %s: exit %d, %q; want %q", path, code, out, w)
		}
	}
}

// TestValidateBadFiles: a bad file of each kind exits 2 with its file:line (and column where the
// decoder has it) and the field.
func TestValidateBadFiles(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, body, want string
	}{
		{"run.yaml", "topology: {kind: fat-tree, k: 3}\ntraffic: {kind: permutation}\n", "run.yaml:1:31: topology.k"},
		{"sweep.yaml", "name: s\nbase:\n  topology: {kind: fat-tree, k: 4}\n  traffic: {kind: permutation}\naxes:\n  - field: fabric.mtuu\n    values: [1024]\n", "sweep.yaml:6: axis fabric.mtuu"},
		{"compare.yaml", "name: c\ncluster: {servers: 2, colour: blue}\n", "compare.yaml:2:"},
		{"cluster.yaml", "fabric:\n  kind: infiniband\n  mtu: 3\n", "cluster.yaml:3:8: fabric.mtu"},
		{"prices.yaml", "currency: USD\nitems:\n  x:\n    kind: switch\n    price_usd: -3\n", "prices.yaml:5:16: items.x.price_usd"},
	} {
		p := filepath.Join(dir, tc.name)
		os.WriteFile(p, []byte(tc.body), 0o644)
		code, out := run(t, "validate", p)
		if code != exitUsage || !strings.Contains(out, tc.want) {
			t.Errorf("validate %s: exit %d, %q; want 2 and %q", tc.name, code, out, tc.want)
		}
	}
}
