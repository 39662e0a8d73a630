package runner

import (
	"bytes"
	"context"
	"testing"

	"github.com/fabricsim/fabricsim/examples"
	"github.com/fabricsim/fabricsim/sweep"
)

// The shipped starter sweep expands to 24 runs (4 ECN threshold pairs x 2 DCQCN presets x 3
// seeds), every one of which the real scenario loader accepts, and a run (shrunk to 256 KB flows
// to keep the test quick) produces the metrics it asks for.
func TestSweepSmallExample(t *testing.T) {
	data, err := examples.Read("sweep-small.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := sweep.Parse(data, "../examples/sweep-small.yaml")
	if err != nil {
		t.Fatal(err)
	}
	runs, err := s.Expand()
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 24 {
		t.Fatalf("%d runs, want 4 x 2 x 3 = 24", len(runs))
	}
	eng := SweepEngine{}
	if err := s.Validate(eng, runs); err != nil {
		t.Fatal(err)
	}
	small := bytes.Replace(runs[0].Scenario, []byte("size: 16MB"), []byte("size: 256KB"), 1)
	if bytes.Equal(small, runs[0].Scenario) {
		t.Fatalf("resolved scenario has no 'size: 16MB' to shrink:\n%s", runs[0].Scenario)
	}
	m, err := eng.Run(context.Background(), small, runs[0].ID, s.Dir)
	if err != nil {
		t.Fatal(err)
	}
	// 128 hosts x 256 KB each reach their destination.
	if m["bytes_delivered"] != 128*256000 {
		t.Fatalf("run %s delivered %v bytes, want %d", runs[0].ID, m["bytes_delivered"], 128*256000)
	}
	for _, k := range []string{"fct_ns.p50", "fct_ns.p99", "slowdown.p99", "sim_time_ns", "drops", "ecn_marks", "cnps_sent", "pfc_pause_frames_sent"} {
		if _, ok := m[k]; !ok {
			t.Errorf("metric %s missing", k)
		}
	}
}
