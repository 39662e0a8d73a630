package compare

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fabricsim/fabricsim/backend"
)

// TestAutoBackend: a scenario without a backend key runs on auto. The 16-GPU dense step is
// millions of packet events, well within the default 60 s budget, so it runs on the packet
// backend, and its estimate is within a factor of 1.5 of the events the packet backend then
// counts (docs/architecture.md, "Choosing a backend: auto": 1.00 and 1.06 on the compare
// examples). With a budget of 1 ms the same scenario runs on the flow backend. Either way
// every variant carries the backend and the reason, in the table and in compare.json.
func TestAutoBackend(t *testing.T) {
	src := strings.Replace(fmt.Sprintf(dense, "400Gbps", "gpudirect", "ib-ndr, roce-default"), "steps: 1", "steps: 1\nfidelity: classes", 1)
	s, err := Parse([]byte(src), "test.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	if s.Backend != backend.Auto {
		t.Fatalf("default backend %q, want auto", s.Backend)
	}
	p := run(t, src, Options{})
	var measured float64
	for _, v := range p.Variants {
		measured += float64(v.Events)
	}
	estimated := estimatedEvents(t, p.Variants[0].BackendReason)
	if r := measured / estimated; r < 1/1.5 || r > 1.5 {
		t.Errorf("estimated %.3g packet events, measured %.3g (ratio %.2f)", estimated, measured, r)
	}
	f := run(t, src, Options{AutoBudget: time.Millisecond})
	for _, c := range []struct {
		r      *Result
		want   backend.Name
		reason string
	}{{p, backend.Packet, "within the 60 s budget"}, {f, backend.Flow, "on the packet backend, above the 1ms budget"}} {
		var table, js bytes.Buffer
		if err := c.r.WriteTable(&table); err != nil {
			t.Fatal(err)
		}
		if err := c.r.WriteJSON(&js); err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Variants []struct {
				Backend string `json:"backend"`
				Reason  string `json:"backend_reason"`
			} `json:"variants"`
		}
		if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		if c.r.Backend != c.want || len(doc.Variants) != 2 {
			t.Fatalf("ran on %s with %d variants, want %s and 2", c.r.Backend, len(doc.Variants), c.want)
		}
		for i, v := range doc.Variants {
			if v.Backend != string(c.want) || !strings.HasPrefix(v.Reason, string(c.want)+": estimated ") || !strings.HasSuffix(v.Reason, c.reason) {
				t.Errorf("variant %d: compare.json backend %q, reason %q; want %s, ending %q", i, v.Backend, v.Reason, c.want, c.reason)
			}
		}
		if line := "backend (all variants) " + doc.Variants[0].Reason; !strings.Contains(table.String(), line) {
			t.Errorf("table lacks %q:\n%s", line, table.String())
		}
	}
	// A named backend is the reason itself.
	n := run(t, src, Options{Backend: backend.Flow})
	if v := n.Variants[0]; v.Backend != backend.Flow || v.BackendReason != "flow: --backend" {
		t.Errorf("--backend flow: ran %s, reason %q", v.Backend, v.BackendReason)
	}
	_, err = Run(context.Background(), s, Options{AutoBudget: -time.Second})
	var ce *Error
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "--auto-budget -1s: want a positive duration") {
		t.Errorf("negative budget: %v", err)
	}
}

// estimatedEvents reads the estimate back from auto's reason ("... estimated 2.35 M packet
// events ...").
func estimatedEvents(t *testing.T, reason string) float64 {
	t.Helper()
	f := strings.Fields(reason[strings.Index(reason, "estimated ")+len("estimated "):])
	x, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		t.Fatalf("reason %q: %v", reason, err)
	}
	return x * map[string]float64{"k": 1e3, "M": 1e6, "G": 1e9}[f[1]]
}
