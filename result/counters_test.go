package result

import "testing"

func TestCounterDeclarations(t *testing.T) {
	for _, tc := range []struct {
		name     string
		declared bool
		agg      Aggregation
		family   Family
	}{
		{"pfc_pause_frames_sent", true, Sum, FamilyPauseFrames},
		{"pfc_resume_frames_sent", true, Sum, FamilyNone},
		{"ib_credit_stall_ns", true, Sum, FamilyCreditStallNs},
		{"ib_credit_stall_ns.vl2", true, Sum, FamilyNone}, // a breakdown: not counted twice
		{"ib_credit_stall_ns.leaf0.port3.vl0", true, Sum, FamilyNone},
		{"ecn_marks", true, Sum, FamilyCongestionMarks},
		{"ib_fecn_marked", true, Sum, FamilyCongestionMarks},
		{"max_switch_buffer_bytes", true, Max, FamilyNone},
		{"ib_max_vl_buffer_bytes", true, Max, FamilyNone},
		{"pfc_max_headroom_used_bytes", true, Max, FamilyNone},
		{"ib_ccti_max_final", true, Max, FamilyNone},
		{"drops", true, Sum, FamilyDrops},
		{"no_such_counter", false, Sum, FamilyNone},
	} {
		c, ok := Counter(tc.name)
		if ok != tc.declared || c.Agg != tc.agg || c.Family != tc.family || (ok && c.Name != tc.name) {
			t.Errorf("%s: declared %v %v/%v as %q, want %v %v/%v", tc.name, ok, c.Agg, c.Family, c.Name, tc.declared, tc.agg, tc.family)
		}
	}
	for _, c := range Counters() {
		if c.Doc == "" {
			t.Errorf("%s has no doc line", c.Name)
		}
	}
}

// TestCombine: counts from a class run standing for 3 collectives triple, high-water marks
// keep the largest; family totals add the fabrics' names for one thing and skip breakdowns.
func TestCombine(t *testing.T) {
	acc := map[string]float64{}
	for _, run := range []map[string]float64{
		{"ecn_marks": 10, "max_switch_buffer_bytes": 5000, "ib_credit_stall_ns": 100, "ib_credit_stall_ns.vl0": 100},
		{"ecn_marks": 2, "max_switch_buffer_bytes": 7000, "ib_fecn_marked": 4, "pfc_pause_frames_sent": 1},
	} {
		for k, x := range run {
			Combine(acc, k, x, 3)
		}
	}
	want := map[string]float64{"ecn_marks": 36, "max_switch_buffer_bytes": 7000, "ib_credit_stall_ns": 300,
		"ib_credit_stall_ns.vl0": 300, "ib_fecn_marked": 12, "pfc_pause_frames_sent": 3}
	for k, w := range want {
		if acc[k] != w {
			t.Errorf("%s: %g, want %g", k, acc[k], w)
		}
	}
	for _, tc := range []struct {
		f    Family
		want float64
	}{{FamilyCongestionMarks, 48}, {FamilyCreditStallNs, 300}, {FamilyPauseFrames, 3}, {FamilyDrops, 0}} {
		if got := FamilyTotal(acc, tc.f); got != tc.want {
			t.Errorf("family %v: %g, want %g", tc.f, got, tc.want)
		}
	}
}
