package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/flow"
	"github.com/fabricsim/fabricsim/scenario"
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

// TestFlowBadInput: every other misuse of the flow backend's inputs, one clear message and exit
// status 2 each, on every command that takes them: --flow-step on the analytic backend (the
// packet case is in TestFlowBackendCLI), --packet-scale given to the flow or analytic backend
// of nccl-tests (it merges packets, which those backends do not have), a budget of 0 for auto
// on run and compare, and a run, a compare or an nccl-tests size whose flow-backend memory
// estimate is above the limit (flow.EstimateMemory; lowered here so that a small run is "too
// large"). The run is an all-to-all among 64 hosts on one switch: 4,032 messages at 160 B and
// 128 ports at 456 B, 687 KiB, above a 512 KiB limit that its topology (about 270 KiB) is within.
func TestFlowBadInput(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "s.yaml")
	os.WriteFile(small, []byte("name: small\ntopology: {kind: fat-tree, k: 4}\nfabric: {kind: roce}\ntraffic: {kind: permutation, size: 100KB}\n"), 0o644)
	wide := filepath.Join(dir, "a2a.yaml")
	os.WriteFile(wide, []byte("name: a2a\ntopology: {kind: leaf-spine, leaves: 1, spines: 0, hosts_per_leaf: 64}\nfabric: {kind: roce}\ntraffic: {kind: all-to-all, size: 4KB}\n"), 0o644)
	nccl := []string{"nccl-tests", "all_reduce_perf", "-b", "1M", "-e", "1M", "--nodes", "2", "--quiet"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", small, "--backend", "analytic", "--flow-step", "2us"}, "--flow-step is an option of the flow backend, and this run uses the analytic backend"},
		{append(nccl, "--backend", "flow", "--packet-scale", "4"), "--packet-scale is an option of the packet backend, and this run uses the flow backend"},
		{append(nccl, "--backend", "analytic", "--packet-scale", "auto"), "--packet-scale is an option of the packet backend, and this run uses the analytic backend"},
		{[]string{"run", small, "--backend", "auto", "--auto-budget", "0"}, "--auto-budget 0s: want a positive duration"},
		{[]string{"compare", "--backend", "auto", "--auto-budget", "0", "--out", ""}, "--auto-budget 0s: want a positive duration"},
	} {
		if code, out := run(t, c.args...); code != exitUsage || !strings.Contains(out, c.want) {
			t.Errorf("%v: exit %d, output %q; want exit 2 and %q", c.args, code, out, c.want)
		}
	}
	// --backend auto takes either backend's options, and says on stderr when the backend it
	// chose does not use one (exit 0: the run is valid): --flow-step where it ran packet,
	// --threads where it ran flow; nothing where the option applies.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--flow-step", "2us"}, "warning: --flow-step 2us is an option of the flow backend, and --backend auto ran the packet backend (packet: estimated"},
		{[]string{"--flow-step", "2us", "--auto-budget", "1ns"}, ""},
		{[]string{"--threads", "2", "--auto-budget", "1ns"}, "warning: --threads 2 is an option of the packet backend, and --backend auto ran the flow backend (flow: estimated"},
		{[]string{"--threads", "2"}, ""},
	} {
		code, out := run(t, append([]string{"run", small, "--backend", "auto"}, c.args...)...)
		if code != 0 || c.want == "" && strings.Contains(out, "warning:") || c.want != "" && !strings.Contains(out, c.want) {
			t.Errorf("run --backend auto %v: exit %d, want exit 0 and %q in\n%s", c.args, code, c.want, out)
		}
	}
	// Packet merging stays allowed where auto may choose the packet backend.
	if code, out := run(t, append(nccl, "--backend", "auto", "--packet-scale", "2")...); code != 0 {
		t.Errorf("--backend auto --packet-scale 2: exit %d\n%s", code, out)
	}

	savedRun, savedFlow := scenario.MemoryLimit, flow.DefaultMemoryLimit
	defer func() { scenario.MemoryLimit, flow.DefaultMemoryLimit = savedRun, savedFlow }()
	scenario.MemoryLimit = 512 << 10
	if code, out := run(t, "run", wide, "--backend", "flow"); code != exitUsage || !strings.Contains(out, "a2a.yaml") ||
		!strings.Contains(out, "a run of 64 hosts and 4032 messages needs about 0.7 MiB, above the memory limit of 0.5 MiB") {
		t.Errorf("run above the memory limit: exit %d, %q", code, out)
	}
	if code, out := run(t, "run", wide, "--backend", "packet"); code != 0 {
		t.Errorf("the same run on the packet backend, which the flow estimate does not limit: exit %d, %q", code, out)
	}
	flow.DefaultMemoryLimit = 1 << 20
	code, out := run(t, "nccl-tests", "all_reduce_perf", "-b", "64M", "-e", "64M", "--nodes", "4", "--backend", "flow", "--quiet")
	if code != exitUsage || !strings.Contains(out, "above the memory limit of 1.0 MiB") {
		t.Errorf("nccl-tests above the memory limit: exit %d, %q", code, out)
	}
}
