package tune

import (
	"math"
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/units"
)

// tinyLines is the number of lines of testdata/tiny.yaml: a tune: section appended by
// writeScenario starts on the line after it, its first entry one further (indented by 2).
const tinyLines = 22

// Bad tune: sections: one message each, at the line and column of the value at fault, naming
// the field and what is valid.
func TestBadTuneSection(t *testing.T) {
	l := tinyLines + 2
	at := func(col int) string { return "tiny.yaml:" + itoa(l) + ":" + itoa(col) + ": " }
	cases := []struct{ name, section, want string }{
		{"budget 0", "budget: 0", at(11) + "tune.budget: 0: want 1..10000 evaluations"},
		{"min above max", "params: {fabric.dcqcn_rate_ai: {min: 100Mbps, max: 5Mbps}}", at(40) + "tune.params.fabric.dcqcn_rate_ai.min: 100Mbps above max 5Mbps: min must be at most max"},
		{"key of another kind", "params: {fabric.ib_cc.threshold: {min: 1, max: 5}}", at(12) + "tune.params.fabric.ib_cc.threshold: is not a setting of fabric kind roce"},
		{"unknown key", "params: {fabric.dcqcn_rate_aj: {min: 1, max: 5}}", at(12) + "tune.params.fabric.dcqcn_rate_aj: is not a fabric key (keys of kind roce: kind, netdev_mtu"},
		{"not numeric", "params: {fabric.pfc: {min: 1, max: 5}}", at(12) + "tune.params.fabric.pfc: is a true/false setting; only numbers, rates, sizes and times have a range to search"},
		{"no fabric prefix", "params: {dcqcn_rate_ai: {min: 1Mbps, max: 5Mbps}}", at(12) + "tune.params.dcqcn_rate_ai: want a fabric setting written as fabric.KEY"},
		{"bad unit", "params: {fabric.dcqcn_rate_ai: {min: 1Mbs, max: 5Mbps}}", at(40) + `tune.params.fabric.dcqcn_rate_ai.min: rate "1Mbs": unknown unit "Mbs"`},
		{"outside the setting's own range", "params: {fabric.dcqcn_min_dec_factor: {min: 0.5, max: 1.5}}", at(57) + "tune.params.fabric.dcqcn_min_dec_factor.max: 1.5: 1.5 outside [0,1)"},
		{"missing max", "params: {fabric.dcqcn_g: {min: 0.01}}", at(28) + "tune.params.fabric.dcqcn_g.max: missing: a range needs min and max"},
		{"log from 0", "params: {fabric.dcqcn_cnp_interval: {min: 0us, max: 5us, scale: log}}", at(67) + "tune.params.fabric.dcqcn_cnp_interval.scale: log needs min above 0 (min is 0s)"},
		{"objective of the other kind", "objective: p99-fct", at(14) + `tune.objective: "p99-fct" is not an objective of a compare scenario (valid: step, p99-collective)`},
		{"unknown variant", "variant: roce-x", at(12) + `tune.variant: "roce-x" is neither a variant of this scenario (ib-ndr, roce-default, roce-tuned) nor a built-in one`},
		{"InfiniBand variant", "variant: ib-ndr", at(12) + "tune.variant: ib-ndr is not a RoCE variant (its fabric kind is infiniband)"},
		{"unknown key of the section", "budgett: 3", at(3) + "tune.budgett: unknown key (valid keys here: budget, choices, holdout, objective, params, population, space, variant)"},
		{"bad second mix", "holdout: {workload: {global_batch: 7}}", at(12) + "tune.holdout: the second traffic mix is not a valid scenario: workload.global_batch: global_batch 7 is not a multiple of micro_batch x dp = 1 x 8 = 8"},
		{"unknown space", "space: none", at(10) + `tune.space: "none" unknown (valid: builtin`},
		{"nothing to search", "space: listed", at(3) + "tune.params: nothing to search"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := writeScenario(t, dir, c.section)
			_, err := Load(path, LoadOptions{})
			if err == nil {
				t.Fatalf("no error, want %q", c.want)
			}
			got := strings.TrimPrefix(err.Error(), dir+"/")
			if !strings.HasPrefix(got, c.want) {
				t.Errorf("error\n%s\nwant it to start with\n%s", got, c.want)
			}
		})
	}
}

// The built-in space of roce-default on the small scenario: every mechanism it turns on, the
// ranges scaled to its 400 Gb/s links, the headroom from what its longest cable needs.
func TestBuiltinSpace(t *testing.T) {
	dir := t.TempDir()
	p, err := Load(writeScenario(t, dir, ""), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, q := range p.Space {
		keys = append(keys, q.Key)
	}
	want := "ecn_kmin ecn_kmax ecn_pmax dcqcn_g dcqcn_rate_ai dcqcn_rate_hai dcqcn_increase_timer dcqcn_byte_counter dcqcn_decrease_period dcqcn_min_rate dcqcn_cnp_interval dcqcn_alpha_timer dcqcn_min_dec_factor pfc_alpha pfc_headroom qps_per_conn"
	if got := strings.Join(keys, " "); got != want {
		t.Errorf("space %s\nwant  %s", got, want)
	}
	// The longest cable is the 150 ns (30 m) leaf-spine link at 400 Gb/s; a frame is the 4096 B
	// MTU + 66 B VLAN-tagged RoCEv2 headers + 16 B RETH + 20 B preamble and gap = 4198 B. mlx5:
	// (301 + 2.16 x 30) x 400 + 2.72 x 4198 = 157738.56 B, above the IEEE-style 73480 B.
	if p.NeedHeadroom != 157739 {
		t.Errorf("headroom needed %d B, want 157739", p.NeedHeadroom)
	}
	h := p.Space[14]
	if h.Min != 158e3 || h.Max != 632e3 || h.Min < float64(p.NeedHeadroom) {
		t.Errorf("pfc_headroom range %g..%g, want 158000..632000 (the need rounded up, x4)", h.Min, h.Max)
	}
	if p.Objective != Step || p.Budget != DefaultBudget || p.Variant != "roce-default" || p.IBVariant != "ib-ndr" {
		t.Errorf("objective %s budget %d variant %s reference %s", p.Objective, p.Budget, p.Variant, p.IBVariant)
	}
	if len(p.Production) != 5 || p.Production[0] != [2]string{"dcqcn_cnp_interval", "2us"} {
		t.Errorf("production values %v", p.Production)
	}
	if !strings.Contains(p.HoldoutText, "global_batch 16 instead of 8") {
		t.Errorf("second mix %q", p.HoldoutText)
	}
}

// Values map the unit interval onto the range: log ranges geometrically, rounded to 3
// significant digits, integers to whole numbers, and Unit inverts it.
func TestParamValues(t *testing.T) {
	ai, _ := paramFor("dcqcn_rate_ai", "roce")
	ai.Min, ai.Max, ai.Scale = 1e6, 200e6, Log
	// sqrt(1e6 x 2e8) = 14142136 -> 14.1 Mb/s.
	for _, c := range []struct {
		u    float64
		want float64
		text string
	}{{0, 1e6, "1Mbps"}, {1, 200e6, "200Mbps"}, {0.5, 14.1e6, "14.1Mbps"}, {-1, 1e6, "1Mbps"}} {
		if x := ai.Value(c.u); x != c.want || ai.Text(x) != c.text {
			t.Errorf("Value(%g) = %g %q, want %g %q", c.u, x, ai.Text(x), c.want, c.text)
		}
	}
	if u := ai.Unit(14.1e6); math.Abs(u-0.4993) > 1e-3 {
		t.Errorf("Unit(14.1Mbps) = %g, want log(14.1)/log(200) = 0.4993", u)
	}
	q, _ := paramFor("qps_per_conn", "roce")
	q.Min, q.Max, q.Scale = 1, 8, Linear
	if x := q.Value(0.5); x != 5 || q.Text(x) != "5" {
		t.Errorf("qps Value(0.5) = %g, want 4.5 rounded to 5", x)
	}
	g, _ := paramFor("dcqcn_g", "roce")
	g.Min, g.Max, g.Scale = 1.0/1024, 1.0/16, Log
	if x := g.Text(g.Value(0.3)); x != "0.0034" {
		t.Errorf("g text %q, want 64^0.3 / 1024 = 0.0034006 to 3 significant digits, 0.0034", x)
	}
	tm, _ := paramFor("dcqcn_increase_timer", "roce")
	c := fabric.DefaultRoCE()
	tm.Set(&c, float64(55*units.Microsecond))
	if c.RoCE.DCQCNParams.IncreaseTimer != 55*units.Microsecond || tm.Get(c) != 55e6 {
		t.Errorf("Set/Get: %v", c.RoCE.DCQCNParams.IncreaseTimer)
	}
}

// The constraints on what a candidate is and did, each with the message the report shows.
func TestConstraints(t *testing.T) {
	p := &Problem{Kind: KindCompare, NeedHeadroom: 157739}
	c := fabric.DefaultRoCE()
	if v := p.staticViolations(c); len(v) != 0 {
		t.Errorf("the default RoCE fabric violates %v", v)
	}
	low := c
	low.RoCE.Headroom = 100 * units.KB
	if v := p.staticViolations(low); len(v) != 1 || !strings.HasPrefix(v[0], "headroom: pfc_headroom 100KB is below the 157739B the longest cable needs") {
		t.Errorf("headroom below the need: %v", v)
	}
	bad := c
	bad.RoCE.PFCThreshold, bad.RoCE.XOFF, bad.RoCE.XON = fabric.PFCStatic, 100*units.KB, 200*units.KB
	if v := p.staticViolations(bad); len(v) != 1 || !strings.Contains(v[0], "invalid configuration: pfc_xon: 200KB above pfc_xoff 100KB") {
		t.Errorf("XON above XOFF: %v", v)
	}
	for _, x := range []struct {
		name string
		o    outcome
		want []string
	}{
		{"clean", outcome{Metrics: map[string]float64{"step_s": 1e-3}}, nil},
		{"drops", outcome{Metrics: map[string]float64{"drops": 3}}, []string{"drops: 3 packets dropped per step with PFC on (the lossless class must not drop)"}},
		{"watchdog", outcome{Metrics: map[string]float64{"pfc_watchdog_triggers": 1}}, []string{"watchdog: the PFC watchdog flushed 1 queues (pauses that long are a storm or a deadlock)"}},
		{"misconfigured", outcome{Metrics: map[string]float64{"pfc_headroom_misconfigured": 1}}, []string{"headroom: a port's headroom is below what its cable needs"}},
		{"deadlock", outcome{Err: "variant x, step 1, the whole step: PFC deadlock: no byte delivered for 100ms\nmore"}, []string{"deadlock: the run stopped with packets held and nothing delivered: variant x, step 1, the whole step: PFC deadlock: no byte delivered for 100ms"}},
		{"failed", outcome{Err: "out of memory"}, []string{"run failed: out of memory"}},
	} {
		got := p.runViolations(c, x.o)
		if strings.Join(got, "|") != strings.Join(x.want, "|") {
			t.Errorf("%s: %q, want %q", x.name, got, x.want)
		}
	}
	// Without PFC (lossy RoCE) drops are the transport's business, not a violation.
	lossy := c
	lossy.RoCE.PFC = false
	if v := p.runViolations(lossy, outcome{Metrics: map[string]float64{"drops": 3}}); len(v) != 0 {
		t.Errorf("lossy fabric: %v", v)
	}
	// A run scenario counts only drops of the fabric's own making, not injected loss.
	r := &Problem{Kind: KindRun}
	if v := r.runViolations(c, outcome{Metrics: map[string]float64{"drops": 9, "drops.random_loss": 9}}); len(v) != 0 {
		t.Errorf("injected loss reported: %v", v)
	}
	if v := r.runViolations(c, outcome{Metrics: map[string]float64{"drops": 2, "drops.buffer": 2}}); len(v) != 1 {
		t.Errorf("buffer drops not reported: %v", v)
	}
}

// The 1,024-GPU example loads for tuning as docs/tune.md describes it: the flow backend, a
// budget of 32, QPs per connection 1, 2 or 4 as three arms, each with the other 15 settings of
// roce-default's built-in space.
func TestExample1k(t *testing.T) {
	p, err := Load("../examples/compare-moe-1k-tune.yaml", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Backend != "flow" || p.Budget != 32 || p.Variant != "roce-default" || p.IBVariant != "ib-ndr" || len(p.Arms) != 3 {
		t.Fatalf("backend %s, budget %d, variant %s, reference %s, %d arms: want flow, 32, roce-default, ib-ndr, 3", p.Backend, p.Budget, p.Variant, p.IBVariant, len(p.Arms))
	}
	for i, a := range p.Arms {
		if want := "qps_per_conn=" + []string{"1", "2", "4"}[i]; a.Name != want || len(a.Space) != 15 {
			t.Errorf("arm %d: %s with %d settings, want %s with 15", i, a.Name, len(a.Space), want)
		}
	}
}
