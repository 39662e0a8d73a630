// Command fakesim is fabricsim's sweep command on a deterministic fake engine, for the Slurm
// integration test: `fakesim sweep SWEEP.yaml --out DIR ...`. The engine is configured by the
// FAKESIM_* environment variables (see fakeengine.FromEnv).
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/fabricsim/fabricsim/sweep"
	"github.com/fabricsim/fabricsim/sweep/internal/fakeengine"
)

func main() {
	root := &cobra.Command{Use: "fakesim", SilenceErrors: true, SilenceUsage: true}
	root.AddCommand(sweep.NewCommand(func() sweep.Engine { return fakeengine.FromEnv() }))
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "fakesim:", err)
		os.Exit(1)
	}
}
