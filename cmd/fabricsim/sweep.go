package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/fabricsim/fabricsim/runner"
	"github.com/fabricsim/fabricsim/sweep"
)

// newSweepCmd mounts the sweep command with the packet backend as its engine. A bad sweep file
// (or a run the sweep rejects before starting) is a usage error; a sweep with failed runs is a
// failure; a sweep stopped by SIGINT or SIGTERM exits 130 (its finished runs are committed).
func newSweepCmd() *cobra.Command {
	c := sweep.NewCommand(func() sweep.Engine { return runner.SweepEngine{} })
	inner := c.RunE
	c.RunE = func(cmd *cobra.Command, args []string) error {
		err := inner(cmd, args)
		if err == nil {
			return nil
		}
		var se *sweep.Error
		var sl sweep.ErrorList
		switch {
		case errors.As(err, &se) || errors.As(err, &sl):
			return usageErr(err)
		case errors.Is(err, sweep.ErrInterrupted):
			return &exitError{exitInterrupted, err}
		}
		return failureErr(err)
	}
	return c
}
