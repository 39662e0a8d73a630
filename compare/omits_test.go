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
