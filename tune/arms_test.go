package tune

import (
	"context"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// choices: builtin on roce-default: the PFC threshold rule and DCQCN on or off, four arms, the
// configured one first with nothing written over the fabric; each arm searches what it turns
// on (XOFF and XON, not alpha, with static thresholds; no DCQCN or ECN setting without DCQCN,
// and ECN follows DCQCN).
func TestBuiltinChoices(t *testing.T) {
	p, err := Load(writeScenario(t, t.TempDir(), "choices: builtin"), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		name     string
		settings string
		has, not []string
	}{
		{"pfc_threshold=dynamic dcqcn=true", "[]", []string{"pfc_alpha", "dcqcn_rate_ai", "ecn_kmin"}, []string{"pfc_xoff"}},
		{"pfc_threshold=dynamic dcqcn=false", "[[dcqcn false] [ecn false]]", []string{"pfc_alpha", "qps_per_conn"}, []string{"dcqcn_g", "ecn_kmin", "pfc_xoff"}},
		{"pfc_threshold=static dcqcn=true", "[[pfc_threshold static]]", []string{"pfc_xoff", "pfc_xon", "pfc_headroom", "dcqcn_g"}, []string{"pfc_alpha"}},
		{"pfc_threshold=static dcqcn=false", "[[pfc_threshold static] [dcqcn false] [ecn false]]", []string{"pfc_xoff", "pfc_xon"}, []string{"pfc_alpha", "dcqcn_g", "ecn_pmax"}},
	}
	if len(p.Arms) != len(want) {
		t.Fatalf("%d arms, want %d", len(p.Arms), len(want))
	}
	for i, w := range want {
		a := p.Arms[i]
		var keys []string
		for _, q := range a.Space {
			keys = append(keys, q.Key)
		}
		if a.Name != w.name || fmtKV(a.Settings) != w.settings || a.Invalid != "" {
			t.Errorf("arm %d: %q settings %s invalid %q, want %q %s", i, a.Name, fmtKV(a.Settings), a.Invalid, w.name, w.settings)
		}
		for _, k := range w.has {
			if !slices.Contains(keys, k) {
				t.Errorf("arm %s: %s not searched (%v)", a.Name, k, keys)
			}
		}
		for _, k := range w.not {
			if slices.Contains(keys, k) {
				t.Errorf("arm %s: %s searched but has no effect there", a.Name, k)
			}
		}
	}
	// The problem's space is the union: 16 built-in settings of roce-default and XOFF, XON.
	if len(p.Space) != 18 {
		t.Errorf("union space of %d settings, want 18", len(p.Space))
	}
}

func fmtKV(kv [][2]string) string {
	var s []string
	for _, x := range kv {
		s = append(s, "["+x[0]+" "+x[1]+"]")
	}
	return "[" + strings.Join(s, " ") + "]"
}

// A numeric setting chosen from values: one arm per value, and the setting leaves each arm's
// continuous space.
func TestNumericChoice(t *testing.T) {
	p, err := Load(writeScenario(t, t.TempDir(), "choices: {fabric.qps_per_conn: [1, 2, 4]}"), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Arms) != 3 || p.Arms[0].Name != "qps_per_conn=1" || fmtKV(p.Arms[0].Settings) != "[]" || fmtKV(p.Arms[2].Settings) != "[[qps_per_conn 4]]" {
		t.Fatalf("arms %+v", p.Arms)
	}
	for _, a := range p.Arms {
		if len(a.Space) != 15 || slices.ContainsFunc(a.Space, func(q Param) bool { return q.Key == "qps_per_conn" }) {
			t.Errorf("arm %s searches %d settings (want the 15 others of roce-default's 16)", a.Name, len(a.Space))
		}
	}
}

// Bad tune.choices: one message each at the line and column at fault.
func TestBadChoices(t *testing.T) {
	l := tinyLines + 2
	at := func(col int) string { return "tiny.yaml:" + itoa(l) + ":" + itoa(col) + ": " }
	cases := []struct{ name, section, want string }{
		{"list key", "choices: {fabric.weights: [[1, 1, 1, 1, 1, 1, 1, 1]]}", at(13) + "tune.choices.fabric.weights: is a list setting; choices are true/false, named or numeric settings"},
		{"bad number", "choices: {fabric.qps_per_conn: [1, 2x]}", at(38) + `tune.choices.fabric.qps_per_conn: "2x" is not a whole number`},
		{"unknown value", "choices: {fabric.pfc_threshold: [dynamic, sometimes]}", at(45) + `tune.choices.fabric.pfc_threshold: "sometimes" is not a PFC threshold rule (valid: static, dynamic)`},
		{"not a list", "choices: {fabric.dcqcn: true}", at(27) + "tune.choices.fabric.dcqcn: want a list of the values to try"},
		{"other kind", "choices: {fabric.adaptive_routing: [true, false]}", at(13) + "tune.choices.fabric.adaptive_routing: is not a setting of fabric kind roce"},
		{"twice", "choices: {fabric.dcqcn: [true, true]}", at(34) + "tune.choices.fabric.dcqcn: true listed twice"},
		{"not a boolean", "choices: {fabric.dcqcn: [true, maybe]}", at(34) + `tune.choices.fabric.dcqcn: "maybe" is not true or false`},
		{"unknown word", "choices: all", at(12) + `tune.choices: "all" unknown: want builtin`},
		{"none valid", "choices: {fabric.dcqcn: [true], fabric.ecn: [false]}", at(12) + "tune.choices: no combination of the choices is a valid configuration (dcqcn=true ecn=false: dcqcn: DCQCN needs ecn: true"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			_, err := Load(writeScenario(t, dir, c.section), LoadOptions{})
			if err == nil {
				t.Fatalf("no error, want %q", c.want)
			}
			if got := strings.TrimPrefix(err.Error(), dir+"/"); !strings.HasPrefix(got, c.want) {
				t.Errorf("error\n%s\nwant it to start with\n%s", got, c.want)
			}
		})
	}
}

// fakeChoices: the fake objective's three settings under the built-in choices. Its minimum,
// 0.9 ms, is in the arm with static thresholds and DCQCN on; without DCQCN it is 1.2 ms (1.1
// static), the configured start (dynamic, ConnectX defaults) 1.56 ms, the production values
// 1.0227 ms (0.9227 static).
const fakeChoices = `
budget: 120
space: listed
choices: builtin
params:
  fabric.dcqcn_rate_ai: {min: 1Mbps, max: 200Mbps}
  fabric.dcqcn_min_dec_factor: {min: 0.5, max: 0.98}
  fabric.dcqcn_increase_timer: {min: 5us, max: 1ms}
`

// Successive halving over the arms finds the best arm and the minimum in it: two arms go after
// the first round, one after the second, the last one gets the rest of the budget; every
// evaluation belongs to one arm, and the winner's settings write its choices out.
func TestChoicesSearch(t *testing.T) {
	dir := t.TempDir()
	path := writeScenario(t, dir, fakeChoices)
	r := runFake(t, path, filepath.Join(dir, "a"), 2, 0)
	if len(r.Evaluations) != 120 || r.Best == nil {
		t.Fatalf("%d evaluations, winner %v: want 120 and a winner", len(r.Evaluations), r.Best)
	}
	win := r.Evaluations[r.Best.Evaluation-1]
	if win.Arm != "pfc_threshold=static dcqcn=true" {
		t.Errorf("winner in arm %q, want pfc_threshold=static dcqcn=true", win.Arm)
	}
	if r.Best.Objective > 0.91e-3 {
		t.Errorf("winner %g, want within 1.2 %% of the minimum 0.9e-3", r.Best.Objective)
	}
	if r.Best.Fabric["pfc_threshold"] != "static" || r.Best.Fabric["dcqcn"] != "true" || r.Best.Fabric["ecn"] != "true" {
		t.Errorf("winner's settings %v lack its choices", r.Best.Fabric)
	}
	if _, ok := r.Best.Fabric["pfc_alpha"]; ok {
		t.Errorf("winner's settings %v carry pfc_alpha, which its arm does not use", r.Best.Fabric)
	}
	outcomes := map[string]int{}
	n := 0
	for _, a := range r.Arms {
		outcomes[a.Outcome]++
		n += a.Evaluations
	}
	if len(r.Arms) != 4 || outcomes["eliminated after round 1"] != 2 || outcomes["eliminated after round 2"] != 1 || outcomes["winner"] != 1 {
		t.Errorf("arms %+v: want 2 eliminated after round 1, 1 after round 2, 1 winner", r.Arms)
	}
	if n != len(r.Evaluations) {
		t.Errorf("the arms hold %d evaluations, the search made %d", n, len(r.Evaluations))
	}
	for _, e := range r.Evaluations {
		if e.Arm == "" {
			t.Errorf("evaluation %d (%s) belongs to no arm", e.N, e.Role)
		}
	}
	// The static-DCQCN arm's start point is the production values with static thresholds.
	for _, e := range r.Evaluations {
		if e.Role == "arm start" && e.Arm == "pfc_threshold=static dcqcn=true" && math.Abs(*e.Objective-0.9227e-3) > 0.0001e-3 {
			t.Errorf("static arm's start %g, want 0.9227e-3 (the production values, static)", *e.Objective)
		}
	}
	t.Logf("winner %g (%s); arms %+v", r.Best.Objective, win.Arm, r.Arms)
	// Deterministic with another number of jobs finishing out of order, and a second run in
	// the same directory runs nothing and writes the same tune.json.
	runFake(t, path, filepath.Join(dir, "b"), 4, 2e6)
	a, b := readFile(t, filepath.Join(dir, "a", "tune.json")), readFile(t, filepath.Join(dir, "b", "tune.json"))
	if a != b {
		t.Errorf("tune.json differs between --jobs 2 and --jobs 4:\n%s", firstDiff(a, b))
	}
	p, err := Load(path, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	o := fakeOptions(filepath.Join(dir, "a"), 2, 0, "")
	o.Resume = true
	again, err := Run(context.Background(), p, o)
	if err != nil {
		t.Fatal(err)
	}
	if again.Ran != 0 {
		t.Errorf("a resumed finished tune ran %d evaluations again", again.Ran)
	}
}

// The built-in choices reach the simulator: on the small congested scenario (packet backend)
// every evaluation of an arm without DCQCN has ECN off, so no packet is marked, while the
// configured arm (DCQCN and ECN on) marks; the winner's choices come back in best.fabric.
func TestChoicesReal(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs about 25 packet-level steps")
	}
	dir := t.TempDir()
	path := writeScenario(t, dir, "choices: builtin\nbudget: 10\npopulation: 4")
	p, err := Load(path, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(context.Background(), p, Options{Out: filepath.Join(dir, "out"), Jobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Evaluations) != 10 || r.Best == nil {
		t.Fatalf("%d evaluations, winner %v", len(r.Evaluations), r.Best)
	}
	marked := map[bool]int{}
	for _, e := range r.Evaluations {
		if !e.Feasible {
			continue
		}
		on := !strings.Contains(e.Arm, "dcqcn=false")
		if !on && e.Metrics["ecn_marks"] != 0 {
			t.Errorf("evaluation %d in arm %s (DCQCN and ECN off): %g ECN marks", e.N, e.Arm, e.Metrics["ecn_marks"])
		}
		if on && e.Metrics["ecn_marks"] > 0 {
			marked[on]++
		}
	}
	if marked[true] == 0 {
		t.Errorf("no evaluation with DCQCN on marked a packet: the scenario is not congested enough to tell the arms apart")
	}
	win := r.Evaluations[r.Best.Evaluation-1]
	if k := p.armOf(p.Base); k < 0 || r.Best.Fabric["dcqcn"] == "" || r.Best.Fabric["pfc_threshold"] == "" {
		t.Errorf("winner (arm %s) settings %v lack the choices", win.Arm, r.Best.Fabric)
	}
	t.Logf("winner %g in arm %s; arms %+v", r.Best.Objective, win.Arm, r.Arms)
}
