package runner

import (
	"context"

	"github.com/fabricsim/fabricsim/scenario"
	"github.com/fabricsim/fabricsim/units"
)

// SweepEngine runs sweep runs through the scenario loader and the packet backend; it implements
// sweep.Engine.
type SweepEngine struct{}

// Validate loads and builds a resolved scenario (topology, traffic, fabric) without running it.
func (SweepEngine) Validate(yaml []byte, name, dir string) error {
	s, err := scenario.Parse(yaml, name, dir)
	if err != nil {
		return err
	}
	_, err = s.Build()
	return err
}

// Run runs a resolved scenario and returns its summary metrics. Cancelling ctx stops the run.
func (SweepEngine) Run(ctx context.Context, yaml []byte, name, dir string) (map[string]float64, error) {
	s, err := scenario.Parse(yaml, name, dir)
	if err != nil {
		return nil, err
	}
	res, _, err := Run(s, Options{Progress: func(units.Time, int, int) bool { return ctx.Err() == nil }})
	if err != nil {
		return nil, err
	}
	return res.Summary().Metrics(), nil
}
