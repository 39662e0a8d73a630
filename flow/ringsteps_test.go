package flow_test

import (
	"os"
	"testing"

	"github.com/fabricsim/fabricsim/flow"
	"github.com/fabricsim/fabricsim/units"
)

// TestRingStepDependence prints validation row 10 (the ring all-reduce across spines, RoCE,
// eight seeds) at fixed steps of 0.25, 0.5, 1 and 2 us, with DCQCN and with PFC alone, in the
// plain stepping (Options.ProportionalFIFO), with arrival order within the step (the default),
// with Options.JoinIntervals, and with JoinIntervals and arrival order: the
// step dependence docs/flow.md's Limits records (row 10 and the step; the two options resolve
// its two quantisations). A measurement, not a check (the packet backend has no step):
// FLOW_RINGSTEPS=1 runs it (about a minute).
func TestRingStepDependence(t *testing.T) {
	if os.Getenv("FLOW_RINGSTEPS") == "" {
		t.Skip("FLOW_RINGSTEPS=1 runs it")
	}
	var c valCase
	for _, v := range valCases {
		if v.name == "ring all-reduce 64 MiB across spines, 16 hosts, RoCE default (DCQCN), 8 seeds" {
			c = v
		}
	}
	if c.build == nil {
		t.Fatal("validation row 10 not found")
	}
	for _, v := range []struct {
		name string
		opt  flow.Options
	}{
		{"plain", flow.Options{ProportionalFIFO: true}},
		{"arrival order", flow.Options{}},
		{"JoinIntervals", flow.Options{JoinIntervals: true, ProportionalFIFO: true}},
		{"JoinIntervals+arrival order", flow.Options{JoinIntervals: true}},
	} {
		for _, dcqcn := range []bool{true, false} {
			for _, step := range []units.Time{250 * units.Nanosecond, 500 * units.Nanosecond, units.Microsecond, 2 * units.Microsecond} {
				var fl [4]float64
				for seed := 1; seed <= c.seeds; seed++ {
					g, cfg, mg := c.build(t)
					cfg.Seed = uint64(seed)
					cfg.RoCE.DCQCN = dcqcn
					o := v.opt
					o.Step, o.FixedStep = step, true
					fr, err := flow.Run(g, nil, cfg, mg, o)
					if err != nil {
						t.Fatal(err)
					}
					for k, x := range figures(fr, 0) {
						fl[k] += x / float64(c.seeds)
					}
				}
				t.Logf("%s, DCQCN %v, fixed step %v: completion %.1f us, FCT p50 %.1f us, p99 %.1f us", v.name, dcqcn, step, fl[0], fl[1], fl[2])
			}
		}
	}
}
