package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// A RoCE incast run writes ports.csv (the switch ports that paused their senders) and, with
// --series, sampled queue depths and rates; the summary shows the PFC line.
func TestRunRoCEPortsAndSeries(t *testing.T) {
	dir := t.TempDir()
	scen := filepath.Join(dir, "r.yaml")
	os.WriteFile(scen, []byte(`name: r
topology: {kind: fat-tree, k: 4}
fabric: {kind: roce, dcqcn: false, ecn: false, buffer: 2MB}
traffic: {kind: incast, senders: 6, size: 1MB}
`), 0o644)
	series := filepath.Join(dir, "series.csv")
	code, out := run(t, "run", scen, "--out", filepath.Join(dir, "out"), "--series", series, "--series-every", "20us", "--check")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	if !strings.Contains(out, "  pfc       ") || !strings.Contains(out, "most paused") {
		t.Errorf("summary lacks PFC lines:\n%s", out)
	}
	ports, err := os.ReadFile(filepath.Join(dir, "out", "ports.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(ports), "port,prio,pauses_sent,") || !strings.Contains(string(ports), ",3,") {
		t.Errorf("ports.csv:\n%s", ports)
	}
	s, err := os.ReadFile(series)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(s), "time_ns,kind,name,prio,value\n") || !strings.Contains(string(s), ",queue,") || !strings.Contains(string(s), ",rate,flow") {
		t.Errorf("series.csv starts:\n%.400s", s)
	}
	if code, out := run(t, "run", scen, "--series-every", "1us"); code != exitUsage {
		t.Errorf("--series-every without --series: exit %d: %s", code, out)
	}
}

// TestPortsCSVEveryFabric: `run --out` writes ports.csv for every fabric kind, as documented: the
// same header; RoCE rows with pauses on priority 3, InfiniBand rows with credit-stall time per
// port and VL (their sum equals the run's ib_credit_stall_ns), the generic Ethernet fabric (no
// link-level flow control) the header alone.
func TestPortsCSVEveryFabric(t *testing.T) {
	const header = "port,prio,pauses_sent,resumes_sent,pauses_received,paused_ns,ecn_marks,headroom_drops,credit_stall_ns\n"
	for _, c := range []struct {
		kind string
		rows bool
	}{{"ethernet", false}, {"roce", true}, {"infiniband", true}} {
		t.Run(c.kind, func(t *testing.T) {
			dir := t.TempDir()
			scen := filepath.Join(dir, "s.yaml")
			os.WriteFile(scen, []byte("name: s\ntopology: {kind: fat-tree, k: 4}\nfabric: {kind: "+c.kind+"}\ntraffic: {kind: incast, senders: 6, size: 1MB}\n"), 0o644)
			code, out := run(t, "run", scen, "--out", filepath.Join(dir, "out"), "--json")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, out)
			}
			data, err := os.ReadFile(filepath.Join(dir, "out", "ports.csv"))
			if err != nil {
				t.Fatalf("ports.csv not written for %s: %v", c.kind, err)
			}
			csv := string(data)
			if !strings.HasPrefix(csv, header) {
				t.Fatalf("ports.csv header:\n%s", csv)
			}
			lines := strings.Split(strings.TrimSpace(csv), "\n")[1:]
			if c.rows != (len(lines) > 0) {
				t.Fatalf("%s: %d rows:\n%s", c.kind, len(lines), csv)
			}
			if c.kind != "infiniband" {
				return
			}
			var sum float64
			for _, l := range lines {
				f := strings.Split(l, ",")
				x, err := strconv.ParseFloat(f[len(f)-1], 64)
				if err != nil || x <= 0 {
					t.Errorf("row %q: credit_stall_ns %q", l, f[len(f)-1])
				}
				sum += x
			}
			var js struct {
				Counters map[string]float64 `json:"counters"`
			}
			if err := json.Unmarshal([]byte(out), &js); err != nil {
				t.Fatal(err)
			}
			if total := js.Counters["ib_credit_stall_ns"]; math.Abs(sum-total) > 1e-3*float64(len(lines)) || total == 0 {
				t.Errorf("ports.csv credit stalls sum to %.3f ns, ib_credit_stall_ns %.3f", sum, total)
			}
		})
	}
}
