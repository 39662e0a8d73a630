package runner

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/fabricsim/fabricsim/scenario"
	"github.com/fabricsim/fabricsim/units"
)

// HPCC's sample mix/flow.txt starts its flows at 2 s (alibaba-edu/High-Precision-Congestion-Control
// simulation/mix/flow.txt). Imported as is, both flows run to completion: the no-progress watchdog
// must not count the idle 2 s before the first packet as a standstill.
func TestHPCCFlowsStartingAt2s(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Three hosts (nodes 0..2) on one switch (node 3), 100 Gb/s, 1 us links.
	write("topology.txt", "4 1 3\n3\n0 3 100Gbps 0.001ms 0\n1 3 100Gbps 0.001ms 0\n2 3 100Gbps 0.001ms 0\n")
	write("flow.txt", "2\n0 1 3 100 2000000 2\n2 1 3 100 1500000 2\n")
	write("s.yaml", "name: hpcc-2s\ntopology: {kind: hpcc, file: topology.txt}\nfabric: {kind: roce}\ntraffic: {kind: hpcc, file: flow.txt}\n")
	s, err := scenario.Load(filepath.Join(dir, "s.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := Run(s, Options{Check: true})
	if err != nil {
		t.Fatalf("HPCC flows starting at 2s: %v", err)
	}
	sum := r.Summary()
	if sum.Flows != 2 || sum.Unfinished != 0 {
		t.Fatalf("%d flows, %d unfinished; want 2 and 0", sum.Flows, sum.Unfinished)
	}
	// 3.5 MB into one 100 Gb/s host link needs at least 280 us after the 2 s start.
	if min := 2*units.Second + 280*units.Microsecond; r.SimTime < min || r.SimTime > 2*units.Second+10*units.Millisecond {
		t.Errorf("last flow done at %v, want after %v and within 10 ms of the start", r.SimTime, min)
	}
}
