package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/units"
)

// TestRunAnalyticBackend: `run --backend analytic` runs a scenario on the fluid model. An incast
// of 6 x 1 MB through one switch into one 100 Gb/s host ends, there, when the receiver's link has
// carried the 6 MB at its payload rate (100 Gb/s x MTU / wire bytes of a full frame), plus the
// path's latency: two 1 us links, the switch, one frame's store-and-forward. The summary says
// PFC was left out and loss not modelled. An unknown backend, and packet captures on the
// analytic backend, are usage errors.
func TestRunAnalyticBackend(t *testing.T) {
	dir := t.TempDir()
	scen := filepath.Join(dir, "r.yaml")
	os.WriteFile(scen, []byte(`name: r
topology: {kind: leaf-spine, leaves: 1, spines: 0, hosts_per_leaf: 8, host_link: {rate: 100Gbps, latency: 1us}}
fabric: {kind: roce, dcqcn: false, ecn: false}
traffic: {kind: incast, senders: 6, size: 1MB}
`), 0o644)
	code, out := run(t, "run", scen, "--backend", "analytic")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	for _, want := range []string{"analytic backend", "finished  6/6 flows", "omitted   PFC:", "not modelled"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	code, out = run(t, "run", scen, "--backend", "analytic", "--json")
	var sum struct {
		SimTimeNs float64 `json:"sim_time_ns"`
	}
	if err := json.Unmarshal([]byte(out), &sum); code != 0 || err != nil {
		t.Fatalf("exit %d, %v: %s", code, err, out)
	}
	cfg := fabric.DefaultRoCE()
	wire := int64(cfg.MTU) + int64(cfg.HeaderBytes) + int64(cfg.L1Overhead)
	payload := 100e9 * float64(cfg.MTU) / float64(wire)
	want := (2*units.Microsecond + cfg.SwitchLatency + (100 * units.Gbps).TransmitTime(units.Size(wire))).Nanoseconds() + 6e6*8/payload*1e9
	if math.Abs(sum.SimTimeNs-want) > 1 {
		t.Errorf("incast ends at %.3f ns, want %.3f", sum.SimTimeNs, want)
	}
	if code, out := run(t, "run", scen, "--backend", "fluid"); code != exitUsage || !strings.Contains(out, "want packet, flow or analytic") {
		t.Errorf("--backend fluid: exit %d: %s", code, out)
	}
	if code, out := run(t, "run", scen, "--backend", "analytic", "--pcap", dir); code != exitUsage || !strings.Contains(out, "need the packet backend") {
		t.Errorf("--pcap on analytic: exit %d: %s", code, out)
	}
}
