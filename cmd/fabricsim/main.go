// Command fabricsim simulates GPU-cluster fabrics (InfiniBand, RoCEv2, generic Ethernet) packet
// by packet and reports flow completion times, drops and what the fabric did to the traffic.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// Exit codes.
const (
	exitOK          = 0
	exitFailure     = 1 // the run failed (invariant violated, deadlock, I/O)
	exitUsage       = 2 // bad input: scenario, flag, imported file
	exitInterrupted = 130
)

// exitError carries an exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageErr(err error) error   { return &exitError{exitUsage, err} }
func failureErr(err error) error { return &exitError{exitFailure, err} }

var version = "0.1.0-dev"

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "fabricsim",
		Short:         "Packet-level simulator of GPU-cluster fabrics: InfiniBand, RoCEv2, Ethernet",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version, // --version, as `fabricsim version` prints it
	}
	root.SetVersionTemplate("fabricsim {{.Version}}\n")
	// execute prefixes every error with "fabricsim: ", so a flag error names only the flag and
	// where to read about it.
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageErr(fmt.Errorf("%v (see '%s --help')", err, c.CommandPath()))
	})
	root.AddCommand(newRunCmd(), newValidateCmd(), newVersionCmd(), newSweepCmd(), newPcapCheckCmd(), newNCCLTestsCmd(), newCompareCmd(), newHeadroomCmd(), newConfigExportCmd(), newConfigImportCmd(), newTuneCmd())
	return root
}

func main() {
	os.Exit(execute(os.Args[1:]))
}

func execute(args []string) int {
	root := newRoot()
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(os.Stderr, "fabricsim:", err)
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	// cobra's own errors (unknown command, bad arguments) are usage errors.
	return exitUsage
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run: func(c *cobra.Command, _ []string) {
			fmt.Fprintf(c.OutOrStdout(), "fabricsim %s\n", version)
		},
	}
}
