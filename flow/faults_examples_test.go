package flow_test

import (
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/flow"
	"github.com/fabricsim/fabricsim/units"
)

// The fault examples (examples/fault-*.yaml) on both backends: the flow backend's completion
// time must be within tol of the packet backend's, with its invariant checks on. fault-switch-
// down runs with a 300 us RTO here: with the example's 50 us, shorter than the queueing after
// the reroute, the packet backend's go-back-N times out again and again after the reroute (165
// timeouts against the flow backend's 80, which fire only for bytes lost: 1.009 ms against
// 0.600 ms; docs/faults.md, "On the flow backend").
func TestFaultExamplesMatchPacket(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*fabric.Config)
		tol  float64
	}{
		{"fault-ib-link-down.yaml", nil, 0.05},
		{"fault-roce-link-down.yaml", nil, 0.05},
		{"fault-link-flap.yaml", nil, 0.05},
		{"fault-link-degrade.yaml", nil, 0.05},
		{"fault-slow-receiver.yaml", nil, 0.05},
		{"fault-switch-down.yaml", func(c *fabric.Config) { c.RTO = 300 * units.Microsecond }, 0.10},
	} {
		t.Run(strings.TrimSuffix(c.name, ".yaml"), func(t *testing.T) {
			g, cfg, mg := loadExample(t, c.name)
			if c.edit != nil {
				c.edit(&cfg)
			}
			fr, err := flow.Run(g, nil, cfg, mg, flow.Options{Check: true})
			if err != nil {
				t.Fatalf("flow: %v", err)
			}
			pr := packetRun(t, c.name, g, cfg, mg)
			d := relErr(float64(fr.SimTime), float64(pr.SimTime))
			t.Logf("%s: packet %v (%d timeouts), flow %v (%d timeouts): %+.1f %%", c.name, pr.SimTime, pr.Timeouts, fr.SimTime, fr.Timeouts, 100*d)
			if d < -c.tol || d > c.tol {
				t.Errorf("flow %v, packet %v: %+.1f %%, want within %.0f %%", fr.SimTime, pr.SimTime, 100*d, 100*c.tol)
			}
			if fr.BytesDelivered != pr.BytesDelivered {
				t.Errorf("flow delivered %d B, packet %d B", fr.BytesDelivered, pr.BytesDelivered)
			}
		})
	}
}
