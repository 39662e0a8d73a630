package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fabricsim/fabricsim/backend"
	"github.com/fabricsim/fabricsim/internal/outpath"
	"github.com/fabricsim/fabricsim/sweep"
	"github.com/fabricsim/fabricsim/tune"
	"github.com/fabricsim/fabricsim/yamlstrict"
)

type tuneFlags struct {
	out       string
	budget    int
	jobs      int
	objective string
	backend   string
	variant   string
	resume    bool
	seed      uint64
	progress  progressFlags

	slurm       bool
	partition   string
	cpusPerTask int
	sbatchArgs  []string
	maxRetries  int
	poll        time.Duration
	binary      string
	runTimeout  time.Duration
}

func newTuneCmd() *cobra.Command {
	var f tuneFlags
	c := &cobra.Command{
		Use:   "tune SCENARIO.yaml [--out DIR] [--budget N] [--jobs N] [--objective step|p99-collective|p99-fct|mean-slowdown] [--backend packet|flow|analytic|auto] [--variant NAME] [--resume] [--seed N] [--slurm ...]",
		Short: "Search PFC, ECN and DCQCN settings for a scenario's workload (CMA-ES over the sweep machinery)",
		Long: `Tune searches a RoCE fabric's settings for the scenario's own workload: ECN Kmin/Kmax/Pmax,
DCQCN's reaction and notification point parameters, PFC's dynamic alpha (or static XOFF/XON) and
headroom (never below what the cables need), QPs per connection, and any setting the scenario's
tune: section lists with its range. Modes listed under tune.choices (builtin: PFC's threshold
rule and DCQCN on or off) are searched too, each combination with its own CMA-ES, the budget
shared among them by successive halving. On a compare scenario it tunes one variant (roce-default
unless --variant or tune.variant says otherwise) for the step time (--objective step) or the
99th-percentile collective completion (p99-collective); on a run scenario the fabric for the
99th-percentile flow completion time (p99-fct) or the mean slowdown (mean-slowdown).

Every candidate must keep the lossless class lossless (no drop, no PFC deadlock, no watchdog
flush, headroom enough for the cable); one that does not is reported and never chosen. The
search (CMA-ES, gonum) proposes one generation at a time and evaluates it through the sweep
machinery: --jobs evaluations at once, or a Slurm job array per generation (--slurm); each
finished evaluation is committed under DIR/evals, so killing tune loses none and --resume
continues with the same candidates, whatever --jobs is. The winner is then checked on seeds
the search never used and on a second traffic mix.

It writes DIR/tune.json (the winner's settings under the scenario's keys; a compare variant
{name: roce-autotuned, from_tune: DIR/tune.json} runs them) and DIR/report.html. See
docs/tune.md.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return runTune(c, args[0], &f)
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.out, "out", "tune-out", "directory for tune.json, report.html and the committed evaluations")
	fl.IntVar(&f.budget, "budget", 0, fmt.Sprintf("evaluations the search may make, 1..%d (default: the scenario's tune.budget, else %d)", tune.MaxBudget, tune.DefaultBudget))
	fl.IntVar(&f.jobs, "jobs", 0, "evaluations at once on this machine, at least 1 (default: the number of CPUs)")
	fl.StringVar(&f.objective, "objective", "", "what to minimize: step or p99-collective (compare), p99-fct or mean-slowdown (run); default: the scenario's tune.objective, else the first")
	fl.StringVar(&f.backend, "backend", "", "backend of every evaluation (default: the scenario's)")
	fl.StringVar(&f.variant, "variant", "", "compare variant to tune (default: the scenario's tune.variant, else roce-default)")
	fl.BoolVar(&f.resume, "resume", false, "continue the tune in --out (it must hold this scenario's); a plain re-run also reuses every committed evaluation")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the search's samples (the simulations take the scenario's seed)")
	f.progress.add(c)
	fl.BoolVar(&f.slurm, "slurm", false, "run each generation as a Slurm job array (--out on a filesystem every node shares)")
	fl.StringVar(&f.partition, "partition", "", "Slurm partition")
	fl.IntVar(&f.cpusPerTask, "cpus-per-task", 1, "CPUs per array task")
	fl.StringArrayVar(&f.sbatchArgs, "sbatch-arg", nil, "extra sbatch option, e.g. --sbatch-arg=--time=01:00:00 (repeatable)")
	fl.IntVar(&f.maxRetries, "max-retries", 1, "resubmit a failed array task at most this often")
	fl.DurationVar(&f.poll, "slurm-poll", 10*time.Second, "how often to ask squeue whether an array is done")
	fl.StringVar(&f.binary, "slurm-binary", "", "fabricsim binary the tasks run (default: this one)")
	fl.DurationVar(&f.runTimeout, "run-timeout", 0, "fail an evaluation that takes longer than this (Slurm tasks; default no limit)")
	c.AddCommand(newTuneEvalCmd())
	return c
}

func runTune(c *cobra.Command, path string, f *tuneFlags) error {
	fl := c.Flags()
	lo := tune.LoadOptions{Variant: f.variant, Objective: f.objective}
	switch {
	case fl.Changed("budget") && (f.budget < 1 || f.budget > tune.MaxBudget):
		return usageErr(fmt.Errorf("--budget %d: want 1..%d evaluations", f.budget, tune.MaxBudget))
	case fl.Changed("jobs") && f.jobs < 1:
		return usageErr(fmt.Errorf("--jobs %d: must be at least 1 (leave --jobs out for one per CPU)", f.jobs))
	case f.out == "":
		return usageErr(fmt.Errorf("--out: give a directory"))
	case f.cpusPerTask < 1:
		return usageErr(fmt.Errorf("--cpus-per-task %d: must be at least 1", f.cpusPerTask))
	case f.maxRetries < 0:
		return usageErr(fmt.Errorf("--max-retries %d: must be 0 or more", f.maxRetries))
	case f.poll <= 0:
		return usageErr(fmt.Errorf("--slurm-poll %s: must be above 0", f.poll))
	case f.runTimeout < 0:
		return usageErr(fmt.Errorf("--run-timeout %s: must be 0 (no limit) or more", f.runTimeout))
	}
	for _, name := range []string{"partition", "cpus-per-task", "sbatch-arg", "max-retries", "slurm-poll", "slurm-binary", "run-timeout"} {
		if fl.Changed(name) && !f.slurm {
			return usageErr(fmt.Errorf("--%s only applies with --slurm", name))
		}
	}
	lo.Budget = f.budget
	if f.objective != "" && !contains(tune.ObjectiveNames(), f.objective) {
		return usageErr(fmt.Errorf("--objective %q: valid: %s", f.objective, strings.Join(tune.ObjectiveNames(), ", ")))
	}
	if f.backend != "" {
		b, err := backend.Parse(f.backend)
		if err != nil {
			return usageErr(fmt.Errorf("--backend: %v", err))
		}
		lo.Backend = b
	}
	p, err := tune.Load(path, lo)
	if err != nil {
		return usageErr(err)
	}
	if err := outpath.Dir("--out", f.out); err != nil {
		return usageErr(err)
	}
	o := tune.Options{Out: f.out, Jobs: f.jobs, Seed: f.seed, Resume: f.resume}
	if f.slurm {
		exe := f.binary
		if exe == "" {
			if exe, err = os.Executable(); err != nil {
				return usageErr(fmt.Errorf("--slurm: cannot find this binary (%v); give --slurm-binary", err))
			}
		}
		o.Slurm = &tune.SlurmOptions{Executable: exe, Subcommand: []string{"tune", "eval"}, CPUsPerTask: f.cpusPerTask,
			Partition: f.partition, SbatchArgs: f.sbatchArgs, MaxRetries: f.maxRetries, Poll: f.poll, RunTimeout: f.runTimeout}
	}
	ctx, stop := interruptible(c)
	defer stop()
	meter := f.progress.meter(c, "tune", "evaluations")
	o.Progress, o.Note = meter.Set, meter.Note
	res, err := tune.Run(ctx, p, o)
	meter.Stop()
	var stopped error
	if err != nil {
		var ye *yamlstrict.Error
		switch {
		case errors.Is(err, tune.ErrInterrupted) && res != nil:
			stopped = interrupted("tune %v", err)
		case errors.As(err, &ye):
			return usageErr(err)
		default:
			return failureErr(err)
		}
	}
	out := c.OutOrStdout()
	if err := res.WriteSummary(out); err != nil {
		return failureErr(err)
	}
	if err := res.WriteFiles(f.out); err != nil {
		return failureErr(err)
	}
	fmt.Fprintf(out, "\nwrote %s and %s (%d evaluations run now, %.1f s)\n", filepath.Join(f.out, "tune.json"), filepath.Join(f.out, "report.html"), res.Ran, res.WallSeconds)
	return stopped
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// newTuneEvalCmd is `tune eval BATCH`, what a Slurm array task of `tune --slurm` runs: the
// evaluations of one shard of a batch, committed as sweep records.
func newTuneEvalCmd() *cobra.Command {
	var out, shard, digest string
	var jobs int
	var runTimeout time.Duration
	c := &cobra.Command{
		Use:    "eval BATCH.json --out DIR --shard i/N",
		Short:  "Run one shard of a tune batch (what tune --slurm's array tasks run)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			sh, err := sweep.ParseShard(shard)
			if err != nil {
				return usageErr(err)
			}
			ctx, stop := interruptible(c)
			defer stop()
			sum, err := tune.EvalBatch(ctx, args[0], out, sh, jobs, digest, runTimeout, nil)
			if err != nil {
				if ctx.Err() != nil {
					return interrupted("tune eval: %v", err)
				}
				return failureErr(err)
			}
			fmt.Fprintf(c.OutOrStdout(), "tune eval %s: shard %s, %d evaluations (%d before), %d failed\n", args[0], sh, sum.Selected, sum.Skipped, sum.Failed)
			return nil
		},
	}
	c.Flags().StringVar(&out, "out", "", "the tune's evals directory")
	c.Flags().StringVar(&shard, "shard", "0/1", "shard i/N of the batch")
	c.Flags().StringVar(&digest, "sweep-digest", "", "refuse to run unless the batch has this digest")
	c.Flags().IntVar(&jobs, "jobs", 1, "evaluations at once")
	c.Flags().DurationVar(&runTimeout, "run-timeout", 0, "fail an evaluation that takes longer")
	return c
}
