package main

import "github.com/spf13/cobra"

// newSweepCmd is replaced when the sweep package lands.
func newSweepCmd() *cobra.Command {
	return &cobra.Command{Use: "sweep", Short: "Run a parameter sweep (not yet available)", Hidden: true,
		RunE: func(*cobra.Command, []string) error { return usageErr(errNotYet) }}
}

var errNotYet = errorString("sweep is not available in this build")

type errorString string

func (e errorString) Error() string { return string(e) }
