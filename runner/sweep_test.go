package runner

import (
	"context"
	"testing"

	"github.com/fabricsim/fabricsim/examples"
	"github.com/fabricsim/fabricsim/sweep"
)

// The shipped starter sweep expands to 24 runs (3 rates x 4 buffers x 2 seeds), every one of
// which the real scenario loader accepts, and its runs produce the metrics it asks for.
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
		t.Fatalf("%d runs, want 3 x 4 x 2 = 24", len(runs))
	}
	eng := SweepEngine{}
	if err := s.Validate(eng, runs); err != nil {
		t.Fatal(err)
	}
	m, err := eng.Run(context.Background(), runs[0].Scenario, runs[0].ID, s.Dir)
	if err != nil {
		t.Fatal(err)
	}
	// 12 senders x 1 MB each reach the receiver.
	if m["bytes_delivered"] != 12e6 {
		t.Fatalf("run %s delivered %v bytes, want 12e6", runs[0].ID, m["bytes_delivered"])
	}
	for _, k := range []string{"fct_ns.p50", "fct_ns.p99", "sim_time_ns", "drops", "bytes_retransmitted", "timeouts"} {
		if _, ok := m[k]; !ok {
			t.Errorf("metric %s missing", k)
		}
	}
}
