package sweep

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/fabricsim/fabricsim/internal/outpath"
)

type cmdOptions struct {
	out        string
	jobs       int
	resume     bool
	shard      string
	merge      bool
	quiet      bool
	skipFailed bool
	runTimeout time.Duration
	digest     string

	slurm       bool
	partition   string
	arrayMax    int
	sbatchArgs  []string
	dryRun      bool
	maxRetries  int
	tasks       int
	cpusPerTask int
	poll        time.Duration
	binary      string

	k8sManifest    string
	k8sImage       string
	k8sParallelism int
	k8sPVC         string
	k8sMount       string
	k8sBinary      string
}

// NewCommand returns the `sweep` command. newEngine makes one Engine per worker (and one for
// validation).
func NewCommand(newEngine func() Engine) *cobra.Command {
	var o cmdOptions
	cmd := &cobra.Command{
		Use:   "sweep SWEEP.yaml --out DIR",
		Short: "Run a scenario over a grid of parameter values and collect one results table",
		Long: `sweep expands a sweep file (a base scenario plus axes of values, optional zipped axes
and replicate seeds) into runs, validates all of them, runs them on a local pool, on a Slurm
job array (--slurm) or prepares a Kubernetes Indexed Job (--k8s-manifest), and writes
DIR/results.csv and DIR/results.parquet with one row per run, sorted by run id.

Each finished run is committed as DIR/runs/<id>.json before it counts, so an interrupted
sweep resumes where it stopped when run again; runs that failed run again too.
See docs/sweep.md for the sweep file format.`,
		Args:         cobra.ExactArgs(1),
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd, args[0], newEngine)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.out, "out", "", "output directory (required); on a shared filesystem for --slurm and --k8s-manifest")
	f.IntVar(&o.jobs, "jobs", 0, "runs at once on this machine, at least 1 (default: the number of CPUs)")
	f.BoolVar(&o.resume, "resume", false, "continue the sweep already in --out (it must hold this sweep); a plain re-run also skips finished runs")
	f.StringVar(&o.shard, "shard", "", "run only shard i of N (`i/N`): the runs, sorted by id, whose index mod N is i")
	f.BoolVar(&o.merge, "merge", false, "run nothing; rebuild the results table from --out/runs")
	f.BoolVar(&o.quiet, "quiet", false, "print no progress")
	f.BoolVar(&o.skipFailed, "skip-failed", false, "do not run again the runs that failed before")
	f.DurationVar(&o.runTimeout, "run-timeout", 0, "fail a run that takes longer than this (e.g. 2h; default no limit)")
	f.StringVar(&o.digest, "sweep-digest", "", "refuse to run unless the sweep expands to this digest (set by --slurm and --k8s-manifest)")
	_ = f.MarkHidden("sweep-digest")

	f.BoolVar(&o.slurm, "slurm", false, "run the sweep as a Slurm job array and wait for it")
	f.StringVar(&o.partition, "partition", "", "Slurm partition")
	f.IntVar(&o.arrayMax, "array-max", 0, "at most this many array tasks at once (%K; 0: no limit)")
	f.StringArrayVar(&o.sbatchArgs, "sbatch-arg", nil, "extra sbatch option for the script, e.g. --sbatch-arg=--time=02:00:00 (repeatable)")
	f.BoolVar(&o.dryRun, "slurm-dry-run", false, "only write DIR/sweep.sbatch and print its path")
	f.IntVar(&o.maxRetries, "max-retries", 2, "resubmit a failed array task (or retry a Kubernetes index) at most this often")
	f.IntVar(&o.tasks, "tasks", 0, "number of array tasks / job indexes, i.e. shards (default: one per run, at most 1000)")
	f.IntVar(&o.cpusPerTask, "cpus-per-task", 1, "CPUs per array task or pod; each runs that many runs at once")
	f.DurationVar(&o.poll, "slurm-poll", 10*time.Second, "how often to ask squeue whether the array is done")
	f.StringVar(&o.binary, "slurm-binary", "", "fabricsim binary the tasks run (default: this one)")

	f.StringVar(&o.k8sManifest, "k8s-manifest", "", "write a Kubernetes Indexed Job running the sweep to this `FILE` and run nothing")
	f.StringVar(&o.k8sImage, "k8s-image", "fabricsim:latest", "container image with the fabricsim binary")
	f.IntVar(&o.k8sParallelism, "k8s-parallelism", 0, "pods at once (default: all indexes)")
	f.StringVar(&o.k8sPVC, "k8s-pvc", "fabricsim-sweep", "PersistentVolumeClaim holding the sweep file and --out (ReadWriteMany)")
	f.StringVar(&o.k8sMount, "k8s-mount", "/data", "where the claim is mounted in the pod; it is the working directory, so relative paths resolve inside the claim")
	f.StringVar(&o.k8sBinary, "k8s-binary", "fabricsim", "fabricsim command inside the image")
	return cmd
}

func flagError(format string, args ...any) error {
	return &Error{Msg: fmt.Sprintf(format, args...)}
}

// checkFlags rejects bad flag values and combinations before anything is read or written.
func (o *cmdOptions) checkFlags(cmd *cobra.Command) (Shard, error) {
	var sh Shard
	if o.out == "" {
		return sh, flagError("--out DIR is required: the directory for runs and results")
	}
	if o.shard != "" {
		var err error
		if sh, err = ParseShard(o.shard); err != nil {
			return sh, err
		}
	}
	modes := []string{}
	for name, on := range map[string]bool{"--slurm": o.slurm, "--k8s-manifest": o.k8sManifest != "", "--merge": o.merge, "--shard": o.shard != ""} {
		if on {
			modes = append(modes, name)
		}
	}
	if len(modes) > 1 {
		return sh, flagError("%s cannot be combined; give one", strings.Join(sortedStrings(modes), " and "))
	}
	switch {
	case cmd.Flags().Changed("jobs") && o.jobs < 1:
		return sh, flagError("--jobs %d: must be at least 1 (leave --jobs out for one run per CPU)", o.jobs)
	case o.arrayMax < 0:
		return sh, flagError("--array-max %d: must be at least 1 (or 0 for no limit)", o.arrayMax)
	case o.maxRetries < 0:
		return sh, flagError("--max-retries %d: must be 0 or more", o.maxRetries)
	case o.tasks < 0:
		return sh, flagError("--tasks %d: must be at least 1 (or 0 for one per run)", o.tasks)
	case o.cpusPerTask < 1:
		return sh, flagError("--cpus-per-task %d: must be at least 1", o.cpusPerTask)
	case o.k8sParallelism < 0:
		return sh, flagError("--k8s-parallelism %d: must be at least 1 (or 0 for all)", o.k8sParallelism)
	case o.poll <= 0:
		return sh, flagError("--slurm-poll %s: must be above 0", o.poll)
	case o.runTimeout < 0:
		return sh, flagError("--run-timeout %s: must be 0 (no limit) or more", o.runTimeout)
	}
	slurmOnly := []string{"partition", "array-max", "sbatch-arg", "slurm-dry-run", "slurm-poll", "slurm-binary"}
	for _, name := range slurmOnly {
		if cmd.Flags().Changed(name) && !o.slurm {
			return sh, flagError("--%s only applies with --slurm", name)
		}
	}
	for _, name := range []string{"k8s-image", "k8s-parallelism", "k8s-pvc", "k8s-mount", "k8s-binary"} {
		if cmd.Flags().Changed(name) && o.k8sManifest == "" {
			return sh, flagError("--%s only applies with --k8s-manifest", name)
		}
	}
	for _, name := range []string{"tasks", "cpus-per-task", "max-retries"} {
		if cmd.Flags().Changed(name) && !o.slurm && o.k8sManifest == "" {
			return sh, flagError("--%s only applies with --slurm or --k8s-manifest", name)
		}
	}
	for _, a := range o.sbatchArgs {
		if !strings.HasPrefix(a, "-") || strings.ContainsAny(a, "\n\r") {
			return sh, flagError("--sbatch-arg %q: give one sbatch option, e.g. --sbatch-arg=--time=01:00:00", a)
		}
	}
	return sh, nil
}

func sortedStrings(s []string) []string {
	out := append([]string(nil), s...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func (o *cmdOptions) run(cmd *cobra.Command, sweepPath string, newEngine func() Engine) error {
	shard, err := o.checkFlags(cmd)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()

	s, err := Load(sweepPath)
	if err != nil {
		return err
	}
	runs, err := s.Expand()
	if err != nil {
		return err
	}
	digest := Digest(runs)
	if o.digest != "" && o.digest != digest {
		return &Error{File: sweepPath, Msg: fmt.Sprintf("the sweep now expands to digest %s, not %s as when it was submitted; was the sweep file or its base edited? Submit it again", digest, o.digest)}
	}
	if o.resume {
		switch old := readManifestDigest(o.out); {
		case old == "":
			return flagError("--resume: %s holds no sweep (no sweep.json); run without --resume to start one", o.out)
		case old != digest:
			return flagError("--resume: %s holds another sweep (digest %s, this one is %s); run without --resume to run this sweep into it, reusing the runs they share", o.out, old, digest)
		}
	}
	if !o.merge {
		toCheck := shard.Select(runs)
		if err := s.Validate(newEngine(), toCheck); err != nil {
			return err
		}
	}
	// Where results go is checked before any run starts.
	if o.k8sManifest != "" {
		if err := outpath.File("--k8s-manifest", o.k8sManifest); err != nil {
			return &Error{Msg: err.Error()}
		}
	} else if err := outpath.Dir("--out", o.out); err != nil {
		return &Error{Msg: err.Error()}
	}
	switch {
	case o.merge:
		return o.doMerge(stdout, s, runs)
	case o.k8sManifest != "":
		return o.writeK8s(cmd, stdout, sweepPath, s, runs)
	case o.slurm:
		return o.runSlurm(ctx, cmd, stdout, stderr, s, runs)
	}
	var progress io.Writer
	if !o.quiet {
		progress = stderr
	}
	sum, err := RunLocal(ctx, s, runs, newEngine, LocalOptions{
		Dir: o.out, Jobs: o.jobs, Shard: shard, RunTimeout: o.runTimeout, SkipFailed: o.skipFailed, Progress: progress,
	})
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%w after %d runs finished (%d before); run the same command again to resume", ErrInterrupted, sum.OK+sum.Failed, sum.Skipped)
		}
		return err
	}
	if shard.Count > 1 {
		return o.finishShard(stdout, s, runs, shard, sum)
	}
	t := Merge(o.out, s, runs)
	if err := t.WriteFiles(o.out); err != nil {
		return fmt.Errorf("cannot write the results table: %w", err)
	}
	removeStaleTemps(o.out)
	fmt.Fprintf(stdout, "sweep %s: %d runs (%d ran now, %d finished before), %d failed; results in %s and %s\n",
		s.Name, len(runs), sum.OK+sum.Failed, sum.Skipped, t.Failed(), filepath.Join(o.out, "results.csv"), filepath.Join(o.out, "results.parquet"))
	return tableError(t, o.out)
}

// tableError is the command's error when the table is incomplete or has failed runs.
func tableError(t *Table, dir string) error {
	if len(t.Missing) > 0 {
		return fmt.Errorf("%d runs have no result yet (first: %s); run the sweep again to finish them", len(t.Missing), t.Missing[0])
	}
	if n := t.Failed(); n > 0 {
		for _, r := range t.Rows {
			if r.Status != StatusOK {
				return fmt.Errorf("%d of %d runs failed (first: run %s: %s); see %s", n, len(t.Rows), r.RunID, firstLine(r.Error), filepath.Join(dir, "results.csv"))
			}
		}
	}
	return nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// finishShard reports a shard's end; the shard that finds every shard's marker present also
// writes the results table.
func (o *cmdOptions) finishShard(stdout io.Writer, s *Sweep, runs []Run, shard Shard, sum Summary) error {
	if !sum.Marked {
		return fmt.Errorf("shard %s: %d of %d runs failed (first: %s); run the shard again to retry them", shard, sum.Failed, sum.Selected, firstLine(sum.FirstError))
	}
	digest := Digest(runs)
	for i := 0; i < shard.Count; i++ {
		if !markerDone(o.out, Shard{Index: i, Count: shard.Count}, digest) {
			fmt.Fprintf(stdout, "shard %s: %d runs ok (%d finished before); the results table is written when every shard is done (or with --merge)\n", shard, sum.Selected, sum.Skipped)
			return nil
		}
	}
	t := Merge(o.out, s, runs)
	if err := t.WriteFiles(o.out); err != nil {
		return fmt.Errorf("cannot write the results table: %w", err)
	}
	fmt.Fprintf(stdout, "shard %s: %d runs ok; every shard is done; results in %s\n", shard, sum.Selected, filepath.Join(o.out, "results.csv"))
	return nil
}

func (o *cmdOptions) doMerge(stdout io.Writer, s *Sweep, runs []Run) error {
	if _, err := os.Stat(filepath.Join(o.out, runsDir)); err != nil {
		return flagError("--merge: %s holds no runs (%v)", o.out, unwrapPathError(err))
	}
	t := Merge(o.out, s, runs)
	if err := t.WriteFiles(o.out); err != nil {
		return fmt.Errorf("cannot write the results table: %w", err)
	}
	fmt.Fprintf(stdout, "sweep %s: %d of %d runs have results, %d failed; results in %s\n", s.Name, len(t.Rows), len(runs), t.Failed(), filepath.Join(o.out, "results.csv"))
	return tableError(t, o.out)
}

// taskCount is the number of shards for --slurm and --k8s-manifest.
func (o *cmdOptions) taskCount(runs []Run) int {
	if o.tasks > 0 {
		return min(o.tasks, len(runs))
	}
	return min(len(runs), 1000)
}

// subcommand is how the binary is told to run this command (its path below the root).
func subcommand(cmd *cobra.Command) []string {
	parts := strings.Fields(cmd.CommandPath())
	if len(parts) <= 1 {
		return []string{"sweep"}
	}
	return parts[1:]
}

func (o *cmdOptions) runSlurm(ctx context.Context, cmd *cobra.Command, stdout, stderr io.Writer, s *Sweep, runs []Run) error {
	exe := o.binary
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return fmt.Errorf("--slurm: cannot find this binary (%v); give --slurm-binary", err)
		}
	}
	so := SlurmOptions{
		Dir: o.out, Executable: exe, Subcommand: subcommand(cmd), Tasks: o.taskCount(runs), CPUsPerTask: o.cpusPerTask,
		Partition: o.partition, ArrayMax: o.arrayMax, SbatchArgs: o.sbatchArgs, MaxRetries: o.maxRetries,
		Poll: o.poll, RunTimeout: o.runTimeout, Log: stderr,
	}
	if o.quiet {
		so.Log = io.Discard
	}
	if o.dryRun {
		path, err := WriteSbatch(s, runs, so)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, path)
		return nil
	}
	t, err := RunSlurm(ctx, s, runs, so)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%w; the array's finished runs are kept: run the same command again to resume", ErrInterrupted)
		}
		return err
	}
	fmt.Fprintf(stdout, "sweep %s: %d runs on Slurm, %d failed; results in %s and %s\n", s.Name, len(runs), t.Failed(), filepath.Join(o.out, "results.csv"), filepath.Join(o.out, "results.parquet"))
	return tableError(t, o.out)
}

func (o *cmdOptions) writeK8s(cmd *cobra.Command, stdout io.Writer, sweepPath string, s *Sweep, runs []Run) error {
	b, err := K8sJob(s, runs, K8sOptions{
		SweepArg: sweepPath, OutArg: o.out, Image: o.k8sImage, Binary: o.k8sBinary, Subcommand: subcommand(cmd),
		Tasks: o.taskCount(runs), Parallelism: o.k8sParallelism, CPUsPerTask: o.cpusPerTask, MaxRetries: o.maxRetries,
		PVC: o.k8sPVC, MountPath: o.k8sMount, RunTimeout: o.runTimeout,
	})
	if err != nil {
		return err
	}
	if err := writeAtomic(o.k8sManifest, b); err != nil {
		return flagError("--k8s-manifest %s: %v", o.k8sManifest, unwrapPathError(err))
	}
	fmt.Fprintln(stdout, o.k8sManifest)
	return nil
}
