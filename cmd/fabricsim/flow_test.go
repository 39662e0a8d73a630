package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/flow"
)

// The flow backend through the CLI: a run, and one clear message with exit status 2 for each
// misuse: a flow-backend option given to a packet run, a time step of 0, a packet-only option
// with the flow backend, and a run above the memory limit.
func TestFlowBackendCLI(t *testing.T) {
	dir := t.TempDir()
	scen := filepath.Join(dir, "s.yaml")
	os.WriteFile(scen, []byte("name: small\ntopology: {kind: fat-tree, k: 4}\nfabric: {kind: roce}\ntraffic: {kind: permutation, size: 100KB}\n"), 0o644)
	code, out := run(t, "run", scen, "--backend", "flow", "--check", "--out", filepath.Join(dir, "out"))
	if code != 0 || !strings.Contains(out, "flow backend") || !strings.Contains(out, "finished  16/16 flows") {
		t.Fatalf("run --backend flow: exit %d\n%s", code, out)
	}
	sum, _ := os.ReadFile(filepath.Join(dir, "out", "summary.json"))
	if !strings.Contains(string(sum), `"backend": "flow"`) {
		t.Errorf("summary.json does not name the flow backend")
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", scen, "--flow-step", "2us"}, "--flow-step is an option of the flow backend, and this run uses the packet backend"},
		{[]string{"run", scen, "--backend", "flow", "--flow-step", "0"}, `--flow-step "0": want a duration above 0 and at most 4us`},
		{[]string{"run", scen, "--backend", "flow", "--flow-step", "1ms"}, `--flow-step "1ms": want a duration above 0 and at most 4us`},
		{[]string{"run", scen, "--backend", "fluid"}, `"fluid" is not a backend: want packet, flow, analytic or auto`},
		{[]string{"run", scen, "--backend", "flow", "--series", filepath.Join(dir, "s.csv")}, "packet captures and series need the packet backend, not flow"},
		{[]string{"compare", "--backend", "fluid"}, `"fluid" is not a backend: want packet, flow, analytic or auto`},
		{[]string{"nccl-tests", "all_reduce_perf", "--backend", "fluid"}, `"fluid" is not a backend: want packet, flow, analytic or auto`},
	} {
		code, out := run(t, c.args...)
		if code != exitUsage || !strings.Contains(out, c.want) {
			t.Errorf("%v: exit %d, output %q; want exit 2 and %q", c.args, code, out, c.want)
		}
	}
	saved := flow.DefaultMemoryLimit
	flow.DefaultMemoryLimit = 1 << 20
	defer func() { flow.DefaultMemoryLimit = saved }()
	moe := filepath.Join("..", "..", "examples", "compare-moe-3to1.yaml")
	code, out = run(t, "compare", moe, "--backend", "flow", "--out", "", "--variants", "ib-ndr")
	if code != exitUsage || !strings.Contains(out, "above the memory limit of 1.0 MiB") {
		t.Errorf("compare above the memory limit: exit %d, %q", code, out)
	}
}
