package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/compare"
)

// TestCompareDefault runs the embedded default on the analytic backend (the flow backend's
// figure, as compare runs it, is BenchmarkCompareDefault) and checks the table, both files and
// the warning that the fluid model leaves out what parts the fabrics.
func TestCompareDefault(t *testing.T) {
	dir := t.TempDir()
	code, out := run(t, "compare", "--backend", "analytic", "--steps", "1", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for _, want := range []string{"mixtral-8x7b", "ib-ndr", "ib-ndr-static", "roce-default", "roce-tuned", "roce-pfc-only", "exposed", "network $", "wrote",
		"! roce-default: the analytic backend leaves out PFC, ECN marking, DCQCN congestion control, contention on leaf uplinks and spines"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "compare.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Scenario struct {
			Source string `json:"source"`
		} `json:"scenario"`
		Variants []struct {
			StepTime float64 `json:"step_time_s"`
			Network  float64 `json:"network_usd"`
		} `json:"variants"`
	}
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Variants) != 5 || res.Variants[0].StepTime <= 0 || res.Variants[0].Network <= 0 {
		t.Errorf("compare.json variants: %+v", res.Variants)
	}
	if !strings.Contains(res.Scenario.Source, "mixtral-8x7b") {
		t.Error("compare.json does not echo the scenario")
	}
	html, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil || !strings.Contains(string(html), "<svg") {
		t.Errorf("report.html: %v", err)
	}
}

func TestCompareVariantsFlag(t *testing.T) {
	code, out := run(t, "compare", "--backend", "analytic", "--steps", "1", "--out", "", "--variants", "roce-tuned,ib-ndr")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if strings.Contains(out, "roce-default ") || !strings.Contains(out, "roce-tuned:    baseline") {
		t.Errorf("--variants not applied in order:\n%s", out)
	}
	code, out = run(t, "compare", "--backend", "analytic", "--out", "", "--variants", "nope")
	if code != exitUsage || !strings.Contains(out, `"nope" is not a variant`) {
		t.Errorf("unknown variant: exit %d\n%s", code, out)
	}
}

func TestCompareBadScenarioExitsTwo(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "bad.yaml")
	os.WriteFile(p, []byte("cluster: {servers: 2}\nworkload:\n  model: llama3-8b\n  tp: 3\n  dp: 4\n"), 0o644)
	code, out := run(t, "compare", p, "--out", "")
	if code != exitUsage || !strings.Contains(out, "bad.yaml:4") || !strings.Contains(out, "tp 3") {
		t.Errorf("exit %d, want 2 with file:line:\n%s", code, out)
	}
}

// BenchmarkCompareDefault is the figure behind "the default compare finishes in under 60 s":
// the embedded default (1,024 GPUs) as `fabricsim compare` runs it, on the backend auto picks
// (flow), every variant and step. Target: < 60 s/op on two cores. It also reports the fabric
// gaps docs/compare.md quotes: how much slower than ib-ndr each other variant's step is, in %.
func BenchmarkCompareDefault(b *testing.B) {
	for i := 0; i < b.N; i++ {
		s, err := loadCompare(nil)
		if err != nil {
			b.Fatal(err)
		}
		r, err := compare.Run(context.Background(), s, compare.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(r.WallSeconds, "s/compare")
		for _, v := range r.Variants[1:] {
			b.ReportMetric(100*(v.StepTime/r.Variants[0].StepTime-1), v.Variant.Name+"-slower-%")
		}
	}
}

// TestCompareJSONDeterministic: compare.json holds what the scenario determines and nothing of
// the host's time, so two runs write the same bytes; the time goes to timing.json.
func TestCompareJSONDeterministic(t *testing.T) {
	dir := t.TempDir()
	var files [2][]byte
	for i := range files {
		out := filepath.Join(dir, fmt.Sprint(i))
		if code, msg := run(t, "compare", "--backend", "analytic", "--steps", "1", "--variants", "ib-ndr,roce-tuned", "--out", out); code != 0 {
			t.Fatalf("exit %d:\n%s", code, msg)
		}
		data, err := os.ReadFile(filepath.Join(out, "compare.json"))
		if err != nil {
			t.Fatal(err)
		}
		files[i] = data
		if strings.Contains(string(data), "wall") {
			t.Errorf("compare.json holds a wall time")
		}
		var timing struct {
			Wall     *float64 `json:"wall_seconds"`
			Variants []struct {
				Name string   `json:"name"`
				Sim  *float64 `json:"sim_wall_s"`
			} `json:"variants"`
		}
		tb, err := os.ReadFile(filepath.Join(out, "timing.json"))
		if err != nil || json.Unmarshal(tb, &timing) != nil || timing.Wall == nil || *timing.Wall <= 0 || len(timing.Variants) != 2 || timing.Variants[0].Name != "ib-ndr" || timing.Variants[0].Sim == nil {
			t.Errorf("timing.json: %v %s", err, tb)
		}
	}
	if string(files[0]) != string(files[1]) {
		t.Error("compare.json differs between two runs of the same scenario")
	}
}

// TestCompareBadTraceExitsTwo: a corrupt Chakra trace and a node type fabricsim does not model
// each end `fabricsim compare` with status 2 and a message naming the scenario's line, the
// trace file and the node.
func TestCompareBadTraceExitsTwo(t *testing.T) {
	dir := t.TempDir()
	for r := range 16 {
		data, err := os.ReadFile(fmt.Sprintf("../../chakra/testdata/dp16.%d.et", r))
		if err != nil {
			t.Fatal(err)
		}
		corrupt := append([]byte(nil), data...)
		if r == 7 {
			corrupt = corrupt[:len(corrupt)-3] // truncated
		}
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("bad.%d.et", r)), corrupt, 0o644)
		if r == 4 {
			i := strings.Index(string(data), "optimizer step")
			data[i+len("optimizer step")+1] = 3 // the node's type: MEM_STORE_NODE
		}
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("mem.%d.et", r)), data, 0o644)
	}
	for _, c := range []struct{ prefix, want string }{
		{"bad", "s.yaml:4:20: workload.chakra: " + filepath.Join(dir, "bad.7.et") + ": node record 10 at byte 1532: record length: 67 bytes, but only 64 are left in the file: truncated"},
		{"mem", "s.yaml:4:20: workload.chakra: " + filepath.Join(dir, "mem.4.et") + `: node 9 "optimizer step" (record 9, byte 1450): type: MEM_STORE_NODE is not modelled`},
	} {
		p := filepath.Join(dir, "s.yaml")
		os.WriteFile(p, []byte("name: t\ncluster: {servers: 2}\nvariants: [ib-ndr]\nworkload: {chakra: "+c.prefix+"}\n"), 0o644)
		code, out := run(t, "compare", p, "--out", "", "--quiet")
		if code != exitUsage || !strings.Contains(out, strings.Replace(c.want, "s.yaml", p, 1)) {
			t.Errorf("%s: exit %d, want 2 with\n%s\ngot:\n%s", c.prefix, code, c.want, out)
		}
	}
}

// A variant with a setting only the packet backend models is refused before any simulation
// when --backend flow is asked for (it used to fail half-way, exit 1).
func TestCompareFlowRefusesPacketOnlyVariant(t *testing.T) {
	code, out := run(t, "compare", "../../examples/compare-moe-3to1-cc.yaml", "--backend", "flow", "--out", "")
	if code != exitUsage || !strings.Contains(out, "variants.roce-connectx") || !strings.Contains(out, "dcqcn_model") || strings.Contains(out, "simulations") {
		t.Errorf("exit %d, want 2 naming the variant and its setting before any run:\n%s", code, out)
	}
}

// TestCompareInterruptedInSetup: a compare whose context is cancelled before its simulations
// start (Ctrl-C during the setup) exits 130, says it was interrupted before any simulation,
// prints no table and writes no file.
func TestCompareInterruptedInSetup(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "small.yaml"), []byte(smallCompare), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	root := newRoot()
	var stdout bytes.Buffer
	root.SetOut(&stdout)
	root.SetErr(&stdout)
	out := filepath.Join(dir, "out")
	root.SetArgs([]string{"compare", filepath.Join(dir, "small.yaml"), "--out", out, "--quiet"})
	err := root.ExecuteContext(ctx)
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitInterrupted || !strings.Contains(err.Error(), "interrupted while starting, before any simulation; nothing written") {
		t.Fatalf("exit %v (%v), want 130 and a message that nothing ran", ee, err)
	}
	if s := stdout.String(); s != "" {
		t.Errorf("printed %q, want nothing", s)
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Errorf("%s holds %d files, want none", out, len(entries))
	}
}
