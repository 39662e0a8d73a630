package flow

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/topo"
)

// TestStopOnControl: a run with Options.StopOnControl stops where a control loop acted, and
// only there. The congested incasts (3:1 onto one leaf downlink per rail) mark with DCQCN and
// pause with PFC alone: the run stops (reduced, or plain after the reduction broke), with the
// count that stopped it above zero as in the whole run, after fewer steps than the whole run.
// The uncongested rings, and InfiniBand (credit stalls are not watched), run to the end: the
// same result JSON as without the option.
func TestStopOnControl(t *testing.T) {
	roce, ib, rings, incasts := railFixtures(t)
	for _, c := range []struct {
		name    string
		build   func(testing.TB) (*topo.Graph, *msggraph.Graph)
		cfg     fabric.Config
		counter string // what stops the run ("": it does not stop)
	}{
		{"incasts, RoCE DCQCN", incasts, roce(true), "ecn_marks"},
		{"incasts, RoCE PFC", incasts, roce(false), "pfc_pause_frames_sent"},
		{"incasts, InfiniBand", incasts, ib, ""},
		{"rings, RoCE DCQCN", rings, roce(true), ""},
		{"rings, RoCE PFC", rings, roce(false), ""},
	} {
		for _, plain := range []bool{false, true} {
			g, mg := c.build(t)
			whole, err := Run(g, nil, c.cfg, mg, Options{NoSymmetry: plain})
			if err != nil {
				t.Fatal(err)
			}
			stop, err := Run(g, nil, c.cfg, mg, Options{NoSymmetry: plain, StopOnControl: true})
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if c.counter == "" {
				whole.WallSeconds, stop.WallSeconds = 0, 0
				a, _ := json.Marshal(whole)
				b, _ := json.Marshal(stop)
				if stop.Stopped || !bytes.Equal(a, b) {
					t.Errorf("%s (no symmetry %v): stopped %v; the run differs from the plain one", c.name, plain, stop.Stopped)
				}
				continue
			}
			if !stop.Stopped || stop.Counters[c.counter] <= 0 || whole.Counters[c.counter] <= 0 {
				t.Errorf("%s (no symmetry %v): stopped %v with %s %v (whole run %v)", c.name, plain, stop.Stopped, c.counter, stop.Counters[c.counter], whole.Counters[c.counter])
			}
			if stop.Counters["flow_steps"] >= whole.Counters["flow_steps"] {
				t.Errorf("%s (no symmetry %v): stopped after %v steps, the whole run took %v", c.name, plain, stop.Counters["flow_steps"], whole.Counters["flow_steps"])
			}
			t.Logf("%s (no symmetry %v): stopped after %v of %v steps", c.name, plain, stop.Counters["flow_steps"], whole.Counters["flow_steps"])
		}
	}
}
