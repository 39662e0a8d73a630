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
	if code, out := run(t, "run", scen, "--backend", "fluid"); code != exitUsage || !strings.Contains(out, "want packet, flow, analytic or auto") {
		t.Errorf("--backend fluid: exit %d: %s", code, out)
	}
	if code, out := run(t, "run", scen, "--backend", "analytic", "--pcap", dir); code != exitUsage || !strings.Contains(out, "need the packet backend") {
		t.Errorf("--pcap on analytic: exit %d: %s", code, out)
	}
}

// TestRunAutoBackend: `run --backend auto` says which backend ran and why. The incast of
// TestRunAnalyticBackend is 6 messages of 1 MB, 245 packets of 4,096 bytes each, over 2 links
// (host, leaf, host): 2,940 packet-hops, 11,760 estimated events, 1.2 ms at 10 M events/s (7 hosts):
// packet within the default 60 s, flow above a budget of 1 ms. A budget of 0 or below is a
// usage error, for run and compare alike; nccl-tests on the analytic backend says what of a
// RoCE fabric it leaves out.
func TestRunAutoBackend(t *testing.T) {
	dir := t.TempDir()
	scen := filepath.Join(dir, "r.yaml")
	os.WriteFile(scen, []byte(`name: r
topology: {kind: leaf-spine, leaves: 1, spines: 0, hosts_per_leaf: 8, host_link: {rate: 100Gbps, latency: 1us}}
fabric: {kind: roce, dcqcn: false, ecn: false}
traffic: {kind: incast, senders: 6, size: 1MB}
`), 0o644)
	if mtu := fabric.DefaultRoCE().MTU; mtu != 4096 {
		t.Fatalf("RoCE MTU %v; the figures above assume 4096", mtu)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "  backend   packet: estimated 11.8 k packet events, about 0.0012 s on the packet backend, within the 60 s budget"},
		{[]string{"--auto-budget", "1ms"}, "  backend   flow: estimated 11.8 k packet events, about 0.0012 s on the packet backend, above the 1ms budget"},
	} {
		code, out := run(t, append([]string{"run", scen, "--backend", "auto"}, c.args...)...)
		if code != 0 || !strings.Contains(out, c.want) {
			t.Errorf("run --backend auto %v: exit %d, want %q in\n%s", c.args, code, c.want, out)
		}
	}
	for _, args := range [][]string{
		{"run", scen, "--backend", "auto", "--auto-budget", "0s"},
		{"compare", "--auto-budget", "-1m", "--out", ""},
	} {
		if code, out := run(t, args...); code != exitUsage || !strings.Contains(out, "--auto-budget") || !strings.Contains(out, "want a positive duration") {
			t.Errorf("%v: exit %d, %q; want exit 2 naming --auto-budget", args, code, out)
		}
	}
	for _, b := range []string{"0s", "-5s"} {
		if code, out := run(t, "compare", "--class-budget", b, "--out", ""); code != exitUsage || !strings.Contains(out, "--class-budget") || !strings.Contains(out, "want a positive duration") {
			t.Errorf("compare --class-budget %s: exit %d, %q; want exit 2 naming --class-budget", b, code, out)
		}
	}
	code, out := run(t, "nccl-tests", "all_reduce_perf", "-b", "1M", "-e", "1M", "-g", "8", "--nodes", "2", "--fabric", "roce", "--backend", "analytic")
	if want := "! the analytic backend leaves out PFC, ECN marking, DCQCN congestion control: its times do not show them"; code != 0 || !strings.Contains(out, want) {
		t.Errorf("nccl-tests --backend analytic --fabric roce: exit %d, want %q in\n%s", code, want, out)
	}
	code, out = run(t, "nccl-tests", "all_reduce_perf", "-b", "1M", "-e", "1M", "-g", "8", "--nodes", "2", "--backend", "auto")
	if want := "fabricsim: 1048576 bytes and up: backend packet: estimated "; code != 0 || !strings.Contains(out, want) {
		t.Errorf("nccl-tests --backend auto: exit %d, want %q in\n%s", code, want, out)
	}
}
