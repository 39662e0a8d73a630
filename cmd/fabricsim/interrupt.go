package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/fabricsim/fabricsim/internal/progress"
)

// interruptible returns a context that is cancelled by the first SIGINT (Ctrl-C) or SIGTERM
// (kill, Slurm's and Kubernetes' stop), so that a long command stops its simulations, writes
// what finished and exits 130. After the first signal the default action is restored: a second
// Ctrl-C ends the process at once, should writing the partial results itself hang.
func interruptible(c *cobra.Command) (context.Context, context.CancelFunc) {
	parent := c.Context()
	if parent == nil {
		parent = context.Background()
	}
	ctx, stop := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	return ctx, stop
}

// interrupted is the exit error of a command cut short: status 130, as a shell reports a
// process ended by SIGINT (128 + 2).
func interrupted(format string, args ...any) error {
	return &exitError{exitInterrupted, fmt.Errorf(format, args...)}
}

// progressFlags are the progress options of every long-running command.
type progressFlags struct {
	quiet bool
	every time.Duration
}

func (p *progressFlags) add(c *cobra.Command) {
	c.Flags().BoolVar(&p.quiet, "quiet", false, "print no progress on stderr")
	c.Flags().DurationVar(&p.every, "progress-every", progress.DefaultEvery, "period of the progress lines printed when stderr is not a terminal (0: one per change)")
	_ = c.Flags().MarkHidden("progress-every") // for tests and the curious; the default suits logs
}

// meter starts the progress report of a command on its stderr.
func (p *progressFlags) meter(c *cobra.Command, label, unit string) *progress.Meter {
	return progress.Start(c.ErrOrStderr(), progress.Options{Label: label, Unit: unit, Quiet: p.quiet, Every: p.every})
}
