package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const tiny = "../../tune/testdata/tiny.yaml"

// withTune writes the small tune scenario with a tune: section (one flow-style line).
func withTune(t *testing.T, section string) string {
	t.Helper()
	b, err := os.ReadFile(tiny)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(p, append(b, []byte("tune: "+section+"\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Bad input to tune exits 2 before anything runs, with one message naming the flag or the
// file:line:column and the field.
func TestTuneBadInput(t *testing.T) {
	minMax := withTune(t, "{params: {fabric.dcqcn_rate_ai: {min: 100Mbps, max: 5Mbps}}}")
	otherKind := withTune(t, "{params: {fabric.vl_arb_high: {min: 1, max: 5}}}")
	budget := withTune(t, "{budget: 0}")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"tune", tiny, "--budget", "0"}, "--budget 0: want 1..10000 evaluations"},
		{[]string{"tune", tiny, "--jobs", "0"}, "--jobs 0: must be at least 1"},
		{[]string{"tune", tiny, "--objective", "p99-fct"}, `--objective: "p99-fct" is not an objective of a compare scenario (valid: step, p99-collective)`},
		{[]string{"tune", tiny, "--objective", "fast"}, `--objective "fast": valid: step, p99-collective, p99-fct, mean-slowdown`},
		{[]string{"tune", tiny, "--backend", "fluid"}, `--backend: "fluid" is not a backend`},
		{[]string{"tune", tiny, "--variant", "roce-x"}, `--variant: "roce-x" is neither a variant of this scenario`},
		{[]string{"tune", tiny, "--partition", "p"}, "--partition only applies with --slurm"},
		{[]string{"tune", "../../examples/roce-incast-32.yaml", "--variant", "roce-default"}, "--variant: a run scenario has one fabric and no variants"},
		{[]string{"tune", minMax}, "s.yaml:23:45: tune.params.fabric.dcqcn_rate_ai.min: 100Mbps above max 5Mbps: min must be at most max"},
		{[]string{"tune", otherKind}, "s.yaml:23:17: tune.params.fabric.vl_arb_high: is not a setting of fabric kind roce"},
		{[]string{"tune", budget}, "s.yaml:23:16: tune.budget: 0: want 1..10000 evaluations"},
		{[]string{"validate", minMax}, "s.yaml:23:45: tune.params.fabric.dcqcn_rate_ai.min: 100Mbps above max 5Mbps"},
	} {
		code, out := run(t, c.args...)
		if code != exitUsage || !strings.Contains(out, c.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", c.args, code, out, c.want)
		}
	}
}

// A small tune end to end: tune.json holds the winner's settings under the scenario's keys and
// a compare variant from_tune runs them; running the same command again simulates nothing.
func TestTuneCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates; skipped in -short")
	}
	s := withTune(t, "{budget: 3, space: listed, params: {fabric.dcqcn_rate_ai: {min: 5Mbps, max: 100Mbps}, fabric.qps_per_conn: {min: 1, max: 4}}}")
	out := filepath.Join(t.TempDir(), "out")
	code, text := run(t, "tune", s, "--out", out, "--jobs", "2", "--quiet")
	if code != 0 {
		t.Fatalf("tune: exit %d\n%s", code, text)
	}
	for _, w := range []string{"tune tiny-moe: variant roce-default of compare scenario", "vendor default (roce-default)", "production values (roce-tuned)", "InfiniBand (ib-ndr)", "tune's winner (evaluation", "gap to InfiniBand closed", "winner (evaluation"} {
		if !strings.Contains(text, w) {
			t.Errorf("summary lacks %q:\n%s", w, text)
		}
	}
	var r struct {
		Variant string
		Best    struct{ Fabric map[string]string }
	}
	b, err := os.ReadFile(filepath.Join(out, "tune.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.Variant != "roce-default" || r.Best.Fabric["dcqcn_rate_ai"] == "" || r.Best.Fabric["qps_per_conn"] == "" {
		t.Errorf("tune.json: variant %q, best.fabric %v", r.Variant, r.Best.Fabric)
	}
	html, err := os.ReadFile(filepath.Join(out, "report.html"))
	if err != nil || !strings.Contains(string(html), "Convergence") || !strings.Contains(string(html), "Each setting&#39;s effect") {
		t.Errorf("report.html lacks its sections (%v)", err)
	}
	code, text = run(t, "tune", s, "--out", out, "--resume", "--quiet")
	if code != 0 || !strings.Contains(text, "(0 evaluations run now") {
		t.Errorf("resumed finished tune: exit %d, want nothing simulated:\n%s", code, text)
	}
	// compare with the tuned variant.
	cmp := filepath.Join(filepath.Dir(s), "c.yaml")
	src, _ := os.ReadFile(tiny)
	body := strings.Replace(string(src), "variants: [ib-ndr, roce-default, roce-tuned]", "variants: [roce-default, {name: roce-autotuned, from_tune: "+filepath.Join(out, "tune.json")+"}]", 1)
	os.WriteFile(cmp, []byte(body), 0o644)
	code, text = run(t, "compare", cmp, "--out", "")
	if code != 0 || !strings.Contains(text, "roce-autotuned") {
		t.Errorf("compare with from_tune: exit %d\n%s", code, text)
	}
}
