package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/units"
)

// runCounters runs a scenario with --out and returns the text summary and summary.json's
// counters, the source every figure of the InfiniBand lines must repeat.
func runCounters(t *testing.T, scen string) (string, map[string]float64) {
	t.Helper()
	dir := t.TempDir()
	code, out := run(t, "run", scen, "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	data, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Counters map[string]float64 `json:"counters"`
	}
	if err := json.Unmarshal(data, &sum); err != nil {
		t.Fatal(err)
	}
	return out, sum.Counters
}

func wantLine(t *testing.T, out, line string) {
	t.Helper()
	if !strings.Contains(out, line) {
		t.Errorf("summary lacks %q:\n%s", line, out)
	}
}

// The InfiniBand run summary repeats summary.json's credit, adaptive-routing and congestion
// control counters, and lists the port VLs that waited longest for credits, longest first.
func TestRunIBSummary(t *testing.T) {
	ns := func(v float64) units.Time { return units.Time(v * 1000) }

	out, c := runCounters(t, "../../examples/ib-permutation-ar.yaml")
	wantLine(t, out, fmt.Sprintf("  credits   %v stalled for lack of credits in total over all ports; %.0f credit updates; fullest VL buffer %v\n",
		ns(c["ib_credit_stall_ns"]), c["ib_fc_packets"], units.Size(c["ib_max_vl_buffer_bytes"])))
	wantLine(t, out, fmt.Sprintf("  routing   adaptive: %.0f choices, %.0f away from the forwarding table's port; %.0f packets arrived out of order\n",
		c["ib_ar_decisions"], c["ib_ar_deviations"], c["ib_reordered_packets"]))
	if c["ib_ar_deviations"] == 0 || c["ib_reordered_packets"] == 0 {
		t.Errorf("adaptive routing on a random permutation should deviate and reorder: %v", c)
	}
	// The first row is the port VL with the largest stall counter.
	var top string
	var topNs float64
	for k, v := range c {
		if name, ok := strings.CutPrefix(k, "ib_credit_stall_ns."); ok && strings.Contains(name, ".") && (v > topNs || v == topNs && name < top) {
			top, topNs = name, v
		}
	}
	wantLine(t, out, fmt.Sprintf("most credit-stalled port.vl       stalled\n            %-28s %12v\n", top, ns(topNs)))
	if strings.Contains(out, "ib cc") {
		t.Errorf("congestion control is off in this scenario but the summary has its line:\n%s", out)
	}

	out, c = runCounters(t, "../../examples/ib-cc-victim.yaml")
	wantLine(t, out, fmt.Sprintf("  ib cc     %.0f FECN marks, %.0f BECN sent, %.0f received; highest CCT index at the end %.0f\n",
		c["ib_fecn_marked"], c["ib_becn_sent"], c["ib_becn_received"], c["ib_ccti_max_final"]))
	if c["ib_fecn_marked"] == 0 {
		t.Errorf("the incast should be marked: %v", c)
	}
	if strings.Contains(out, "  routing   ") {
		t.Errorf("static routing but the summary has the adaptive-routing line:\n%s", out)
	}
}
