package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fabricsim/fabricsim/backend"
	"github.com/fabricsim/fabricsim/compare"
	"github.com/fabricsim/fabricsim/cost"
	"github.com/fabricsim/fabricsim/examples"
	"github.com/fabricsim/fabricsim/flow"
	"github.com/fabricsim/fabricsim/internal/outpath"
)

// DefaultCompare is the embedded scenario `fabricsim compare` runs when given none.
const DefaultCompare = "compare-default.yaml"

type compareFlags struct {
	out      string
	variants string
	backend  string
	budget   time.Duration
	class    time.Duration
	steps    int
	seed     uint64
	prices   string
	fidelity string
	progress progressFlags
}

func newCompareCmd() *cobra.Command {
	var f compareFlags
	c := &cobra.Command{
		Use:   "compare [SCENARIO.yaml] [--out DIR] [--variants a,b] [--backend auto|packet|flow|analytic] [--auto-budget DURATION] [--class-budget DURATION] [--fidelity auto|full|classes]",
		Short: "Run one training workload on InfiniBand and RoCEv2 variants, with cost, in one report",
		Long: `Compare simulates one training step of a transformer workload on a GPU cluster for every
fabric variant of the scenario (by default InfiniBand NDR, RoCEv2 with vendor-default DCQCN and
RoCEv2 tuned), prices each network, and prints one row per variant: step time, exposed
communication, collective completion percentiles, step-to-step variation, drops, pauses and
stalls, network cost, cost per GPU, and the time and cost to train the scenario's tokens.

With no argument it runs the built-in ` + DefaultCompare + ` (Mixtral-8x7B on 1,024 H100s,
five variants). --backend auto, the default, runs the packet backend where its estimated time
for the whole compare (one core) is within --auto-budget and the flow backend beyond it; the
table's backend column and the line under it say which ran and why. Where auto runs the flow
backend class by class, a class whose estimated packet time for one run is within
--class-budget runs on the packet backend, in every variant, and a line says how many. It writes
DIR/compare.json (every number and the scenario) and DIR/report.html (self-contained charts).
See docs/compare.md for the scenario format and what is simulated at packet level.

Progress goes to stderr: a bar on a terminal, a line every few seconds otherwise (--quiet: none).
Ctrl-C (or SIGTERM) stops the simulations, prints and writes the finished variants and steps,
marks the rest unfinished, and exits with status 130.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return runCompare(c, args, &f)
		},
	}
	c.Flags().StringVar(&f.out, "out", "compare-out", "write compare.json and report.html into this directory (\"\" for none)")
	c.Flags().StringVar(&f.variants, "variants", "", "run only these variants, comma-separated (e.g. ib-ndr,roce-tuned)")
	c.Flags().StringVar(&f.backend, "backend", "", "network backend: auto, packet, flow or analytic (default: the scenario's, auto: packet within --auto-budget, else flow)")
	c.Flags().DurationVar(&f.budget, "auto-budget", backend.DefaultAutoBudget, "--backend auto runs the packet backend when its estimated time for the whole compare (one core) is within this, else flow")
	c.Flags().DurationVar(&f.class, "class-budget", compare.DefaultClassBudget, "where --backend auto runs the flow backend class by class, a class whose estimated packet time for one run (one core) is within this runs on the packet backend")
	c.Flags().IntVar(&f.steps, "steps", 0, "simulated steps, 1..1000 (default: the scenario's)")
	c.Flags().Uint64Var(&f.seed, "seed", 0, "override the scenario's seed (step k runs with seed + 7919 k)")
	c.Flags().StringVar(&f.prices, "prices", "", "price catalogue merged over the built-in one (format: docs/cost.md); overrides the scenario's cost.catalogue")
	c.Flags().StringVar(&f.fidelity, "fidelity", "", "auto, full (whole steps) or classes (collective classes one by one); default: the scenario's")
	f.progress.add(c)
	return c
}

func loadCompare(args []string) (*compare.Scenario, error) {
	if len(args) == 0 {
		data, err := examples.Read(DefaultCompare)
		if err != nil {
			return nil, err
		}
		return compare.Parse(data, "<embedded>/"+DefaultCompare, "")
	}
	return compare.Load(args[0])
}

func runCompare(c *cobra.Command, args []string, f *compareFlags) error {
	s, err := loadCompare(args)
	if err != nil {
		return usageErr(err)
	}
	opt := compare.Options{}
	if f.backend != "" {
		if opt.Backend, err = backend.Parse(f.backend); err != nil {
			return usageErr(fmt.Errorf("--backend: %v", err))
		}
	}
	if f.budget <= 0 {
		return usageErr(fmt.Errorf("--auto-budget %v: want a positive duration (e.g. 60s, 5m)", f.budget))
	}
	opt.AutoBudget = f.budget
	if f.class <= 0 {
		return usageErr(fmt.Errorf("--class-budget %v: want a positive duration (e.g. 5s, 30s)", f.class))
	}
	opt.ClassBudget = f.class
	if c.Flags().Changed("steps") {
		if f.steps < 1 || f.steps > compare.MaxSteps {
			return usageErr(fmt.Errorf("--steps %d: valid: 1..%d", f.steps, compare.MaxSteps))
		}
		s.Steps = f.steps
	}
	if c.Flags().Changed("seed") {
		s.Seed = f.seed
	}
	if f.prices != "" {
		// Checked here, with its own file:line messages, rather than after the simulation.
		if _, err := cost.LoadCatalogue(f.prices); err != nil {
			return usageErr(fmt.Errorf("--prices %w", err))
		}
		abs, err := filepath.Abs(f.prices)
		if err != nil {
			return usageErr(fmt.Errorf("--prices %s: %v", f.prices, err))
		}
		s.Cost.Catalogue = abs
	}
	if f.fidelity != "" {
		if opt.Fidelity, err = compare.ParseFidelity(f.fidelity); err != nil {
			return usageErr(fmt.Errorf("--fidelity %v", err))
		}
	}
	if f.variants != "" {
		for _, v := range strings.Split(f.variants, ",") {
			if v = strings.TrimSpace(v); v != "" {
				opt.Variants = append(opt.Variants, v)
			}
		}
	}
	if f.out != "" {
		if err := outpath.Dir("--out", f.out); err != nil { // before simulating, not after
			return usageErr(err)
		}
	}
	ctx, stop := interruptible(c)
	defer stop()
	meter := f.progress.meter(c, "compare", "simulations")
	opt.Progress = meter.Set
	res, err := compare.Run(ctx, s, opt)
	meter.Stop()
	var stopped error
	if err != nil {
		if errors.Is(err, compare.ErrInterrupted) && res != nil {
			stopped = interrupted("compare %v; the table and files hold the finished steps", err)
		} else if errors.Is(err, compare.ErrInterrupted) {
			// Stopped during the setup: no simulation ran, so no table and no files.
			return interrupted("compare %v; nothing written", err)
		} else if _, ok := err.(*compare.Error); ok || errors.As(err, new(*flow.LimitError)) {
			return usageErr(err)
		} else {
			return failureErr(err)
		}
	}
	out := c.OutOrStdout()
	if err := res.WriteTable(out); err != nil {
		return failureErr(err)
	}
	if f.out == "" {
		return stopped
	}
	for _, o := range []struct {
		name  string
		write func(io.Writer) error
	}{{"compare.json", res.WriteJSON}, {"report.html", res.WriteHTML}, {"timing.json", res.WriteTimingJSON}} {
		path := filepath.Join(f.out, o.name)
		if werr := writeFile(path, o.write); werr != nil {
			return failureErr(fmt.Errorf("%s: %w", path, werr))
		}
	}
	fmt.Fprintf(out, "\nwrote %s, %s and %s (%.1f s)\n", filepath.Join(f.out, "compare.json"), filepath.Join(f.out, "report.html"), filepath.Join(f.out, "timing.json"), res.WallSeconds)
	return stopped
}
