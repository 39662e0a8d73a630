package main

import (
	"os"
	"path/filepath"
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
