package compare

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/backend"
)

// TestAnalyticSaysWhatItLeavesOut: on the analytic backend every variant whose fabric turns on
// PFC, congestion control or credits says so, on the terminal and in compare.json
// (backend_omits); on the packet backend nothing is left out and the key is absent.
func TestAnalyticSaysWhatItLeavesOut(t *testing.T) {
	src := func(variants string) string {
		return strings.Replace(fmt.Sprintf(dense, "400Gbps", "gpudirect", variants), "steps: 1", "steps: 1\nfidelity: classes", 1)
	}
	r := run(t, src("ib-ndr, roce-default"), Options{Backend: backend.Analytic})
	want := map[string][]string{
		"ib-ndr":       {"credit-based flow control", "adaptive routing"},
		"roce-default": {"PFC", "ECN marking", "DCQCN congestion control"},
	}
	var table, js bytes.Buffer
	if err := r.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Variants []struct {
			Omits []string `json:"backend_omits"`
		} `json:"variants"`
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	for i, v := range r.Variants {
		w := want[v.Variant.Name]
		if !slices.Equal(v.Omitted, w) || !slices.Equal(doc.Variants[i].Omits, w) {
			t.Errorf("%s: omits %q (compare.json %q), want %q", v.Variant.Name, v.Omitted, doc.Variants[i].Omits, w)
		}
		if line := "! " + v.Variant.Name + ": the analytic backend leaves out " + strings.Join(w, ", "); !strings.Contains(table.String(), line) {
			t.Errorf("table lacks %q:\n%s", line, table.String())
		}
	}
	p := run(t, src("roce-default"), Options{Backend: backend.Packet})
	if len(p.Variants[0].Omitted) != 0 {
		t.Errorf("packet backend omits %q", p.Variants[0].Omitted)
	}
	js.Reset()
	if err := p.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(js.String(), "backend_omits") {
		t.Errorf("packet compare.json has backend_omits")
	}
}

// TestAnalyticSaysItLeavesOutSpines: on the 12-server MoE (radix 8: 4 servers per leaf at 1:1,
// so every rail spans three leaves and the all-to-all crosses the spines) the analytic
// backend's uniform network also leaves out the contention on leaf uplinks and spines, and
// says so; on the dense 8-server step (one leaf per rail) it does not.
func TestAnalyticSaysItLeavesOutSpines(t *testing.T) {
	const note = "contention on leaf uplinks and spines (one uniform network)"
	m := run(t, fmt.Sprintf(moe, 1.0, "roce-pfc-only"), Options{Backend: backend.Analytic})
	if got := m.Variants[0].Omitted; !slices.Equal(got, []string{"PFC", note}) {
		t.Errorf("moe on analytic omits %q, want PFC and %q", got, note)
	}
	src := strings.Replace(fmt.Sprintf(dense, "400Gbps", "gpudirect", "roce-pfc-only"), "steps: 1", "steps: 1\nfidelity: classes", 1)
	d := run(t, src, Options{Backend: backend.Analytic})
	if got := d.Variants[0].Omitted; !slices.Equal(got, []string{"PFC"}) {
		t.Errorf("dense on analytic omits %q, want only PFC", got)
	}
}
