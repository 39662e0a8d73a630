package sweep

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// SlurmOptions configure RunSlurm and WriteSbatch.
type SlurmOptions struct {
	// Dir is the output directory, on a filesystem every node shares.
	Dir string
	// Executable is the fabricsim binary the tasks run and Subcommand the words that select
	// this command (usually ["sweep"]).
	Executable string
	Subcommand []string
	// Tasks is the number of array tasks (shards); CPUsPerTask the CPUs each asks for and the
	// runs it runs at once.
	Tasks, CPUsPerTask int
	// Partition, when set, is the partition to submit to.
	Partition string
	// ArrayMax limits how many tasks run at once (the %K of --array); 0 is no limit.
	ArrayMax int
	// SbatchArgs are extra sbatch options written as #SBATCH lines.
	SbatchArgs []string
	// MaxRetries bounds how often one task is resubmitted after it failed.
	MaxRetries int
	// Poll is how often squeue is asked whether the array has left the queue.
	Poll time.Duration
	// RunTimeout is passed to the tasks as --run-timeout.
	RunTimeout time.Duration
	// Log receives progress lines; nil discards them.
	Log io.Writer
	// Sbatch, Squeue and Scancel are the commands to use; empty means the usual names.
	Sbatch, Squeue, Scancel string
}

func (o *SlurmOptions) defaults() {
	if o.Sbatch == "" {
		o.Sbatch = "sbatch"
	}
	if o.Squeue == "" {
		o.Squeue = "squeue"
	}
	if o.Scancel == "" {
		o.Scancel = "scancel"
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Poll <= 0 {
		o.Poll = 10 * time.Second
	}
	if len(o.Subcommand) == 0 {
		o.Subcommand = []string{"sweep"}
	}
	if o.CPUsPerTask < 1 {
		o.CPUsPerTask = 1
	}
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_./:=@%+-]+$`)

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// jobName makes a Slurm job name (or a Kubernetes name part) from the sweep's name.
func jobName(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
	}
	out := strings.Trim(b.String(), "-")
	if len(out) > 30 {
		out = strings.TrimRight(out[:30], "-")
	}
	if out == "" {
		out = "sweep"
	}
	return out
}

// SbatchScript returns the job array script: task i runs shard i of Tasks.
func SbatchScript(s *Sweep, runs []Run, o SlurmOptions) (string, error) {
	o.defaults()
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return "", err
	}
	if strings.ContainsAny(dir, " \t\n\"'%\\") {
		return "", flagError("--out %q: a Slurm #SBATCH line cannot hold this path (it has whitespace, a quote, %% or \\); choose another directory", dir)
	}
	sweepFile, err := filepath.Abs(s.Path)
	if err != nil {
		return "", err
	}
	if o.Tasks < 1 || o.Tasks > len(runs) {
		return "", flagError("--tasks %d: must be from 1 to the number of runs, %d", o.Tasks, len(runs))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "#!/bin/bash\n")
	fmt.Fprintf(&b, "# Slurm job array for fabricsim sweep %q: %d runs in %d shards, written by --slurm.\n", s.Name, len(runs), o.Tasks)
	fmt.Fprintf(&b, "# Task i runs shard i/%d and, once all its runs are ok, commits %s/shards/i.done.\n", o.Tasks, dir)
	fmt.Fprintf(&b, "# %s must be on a filesystem that every node shares.\n", dir)
	fmt.Fprintf(&b, "#SBATCH --job-name=fabricsim-%s\n", jobName(s.Name))
	fmt.Fprintf(&b, "#SBATCH --array=%s\n", arraySpec([]int{0, o.Tasks - 1}, o.ArrayMax, true))
	fmt.Fprintf(&b, "#SBATCH --cpus-per-task=%d\n", o.CPUsPerTask)
	fmt.Fprintf(&b, "#SBATCH --output=%s/slurm/%%A_%%a.out\n", dir)
	if o.Partition != "" {
		fmt.Fprintf(&b, "#SBATCH --partition=%s\n", o.Partition)
	}
	for _, a := range o.SbatchArgs {
		fmt.Fprintf(&b, "#SBATCH %s\n", a)
	}
	cmd := []string{shellQuote(o.Executable)}
	for _, w := range o.Subcommand {
		cmd = append(cmd, shellQuote(w))
	}
	cmd = append(cmd, shellQuote(sweepFile), "--out", shellQuote(dir),
		fmt.Sprintf(`--shard "${SLURM_ARRAY_TASK_ID}/%d"`, o.Tasks),
		"--jobs", strconv.Itoa(o.CPUsPerTask), "--sweep-digest", Digest(runs))
	if o.RunTimeout > 0 {
		cmd = append(cmd, "--run-timeout", o.RunTimeout.String())
	}
	fmt.Fprintf(&b, "exec %s\n", strings.Join(cmd, " "))
	return b.String(), nil
}

// arraySpec formats task indexes for --array: a range when asRange, else a list with runs
// of consecutive indexes joined ("0-3,7,9-10"); then %max when max > 0.
func arraySpec(idx []int, max int, asRange bool) string {
	var parts []string
	if asRange {
		parts = []string{fmt.Sprintf("%d-%d", idx[0], idx[1])}
		if idx[0] == idx[1] {
			parts = []string{strconv.Itoa(idx[0])}
		}
	} else {
		for i := 0; i < len(idx); {
			j := i
			for j+1 < len(idx) && idx[j+1] == idx[j]+1 {
				j++
			}
			if j == i {
				parts = append(parts, strconv.Itoa(idx[i]))
			} else {
				parts = append(parts, fmt.Sprintf("%d-%d", idx[i], idx[j]))
			}
			i = j + 1
		}
	}
	spec := strings.Join(parts, ",")
	if max > 0 {
		spec += "%" + strconv.Itoa(max)
	}
	return spec
}

// WriteSbatch prepares DIR (sweep.json, runs/, slurm/) and commits DIR/sweep.sbatch.
func WriteSbatch(s *Sweep, runs []Run, o SlurmOptions) (string, error) {
	script, err := SbatchScript(s, runs, o)
	if err != nil {
		return "", err
	}
	if err := prepareDir(o.Dir, s, runs); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Join(o.Dir, "slurm"), 0o755); err != nil {
		return "", err
	}
	path, err := filepath.Abs(filepath.Join(o.Dir, "sweep.sbatch"))
	if err != nil {
		return "", err
	}
	if err := writeAtomic(path, []byte(script)); err != nil {
		return "", err
	}
	return path, nil
}

// RunSlurm submits the sweep as a job array, waits for it by polling squeue, resubmits the
// tasks that left the queue without their completion marker (at most MaxRetries times each),
// and then merges all records into the results table. It does not use sacct, which needs
// accounting. Shards whose marker is already present (from an earlier submission of the same
// sweep) are not submitted again.
func RunSlurm(ctx context.Context, s *Sweep, runs []Run, o SlurmOptions) (*Table, error) {
	o.defaults()
	script, err := WriteSbatch(s, runs, o)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(o.Log, "slurm: wrote %s (%d runs in %d tasks)\n", script, len(runs), o.Tasks)
	digest := Digest(runs)
	var pending []int
	for i := 0; i < o.Tasks; i++ {
		if !markerDone(o.Dir, Shard{Index: i, Count: o.Tasks}, digest) {
			pending = append(pending, i)
		}
	}
	if done := o.Tasks - len(pending); done > 0 {
		fmt.Fprintf(o.Log, "slurm: %d of %d tasks finished in an earlier submission\n", done, o.Tasks)
	}
	tries := make([]int, o.Tasks)
	var gaveUp []int
	for len(pending) > 0 {
		job, err := o.submit(ctx, script, pending)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(o.Log, "slurm: submitted job %s (tasks %s)\n", job, arraySpec(pending, 0, false))
		if err := o.wait(ctx, job); err != nil {
			if ctx.Err() != nil {
				// Take the array down with us; its finished runs stay committed.
				exec.Command(o.Scancel, job).Run()
				fmt.Fprintf(o.Log, "slurm: interrupted; cancelled job %s\n", job)
			}
			return nil, err
		}
		var retry []int
		for _, i := range pending {
			if markerDone(o.Dir, Shard{Index: i, Count: o.Tasks}, digest) {
				continue
			}
			tries[i]++
			logPath := filepath.Join(o.Dir, "slurm", fmt.Sprintf("%s_%d.out", job, i))
			if tries[i] > o.MaxRetries {
				fmt.Fprintf(o.Log, "slurm: task %d failed again (no %s; log %s); giving up after %d retries\n", i, markerPath(o.Dir, i), logPath, o.MaxRetries)
				gaveUp = append(gaveUp, i)
				continue
			}
			fmt.Fprintf(o.Log, "slurm: task %d failed (no %s; log %s); resubmitting (retry %d of %d)\n", i, markerPath(o.Dir, i), logPath, tries[i], o.MaxRetries)
			retry = append(retry, i)
		}
		pending = retry
	}
	t := Merge(o.Dir, s, runs)
	if err := t.WriteFiles(o.Dir); err != nil {
		return nil, fmt.Errorf("cannot write the results table: %w", err)
	}
	removeStaleTemps(o.Dir)
	if len(gaveUp) > 0 {
		fmt.Fprintf(o.Log, "slurm: tasks %s did not finish; their failed runs are in the table\n", arraySpec(gaveUp, 0, false))
	}
	return t, nil
}

// jobID reads sbatch --parsable output: "123" or "123;cluster".
var jobID = regexp.MustCompile(`^([0-9]+)(;\S+)?$`)

func (o *SlurmOptions) submit(ctx context.Context, script string, tasks []int) (string, error) {
	var out, errb bytes.Buffer
	c := exec.CommandContext(ctx, o.Sbatch, "--parsable", "--array="+arraySpec(tasks, o.ArrayMax, false), script)
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Run(); err != nil {
		return "", fmt.Errorf("sbatch %s: %v: %s", script, err, strings.TrimSpace(errb.String()))
	}
	m := jobID.FindStringSubmatch(strings.TrimSpace(out.String()))
	if m == nil {
		return "", fmt.Errorf("sbatch %s: unexpected output %q (expected a job id)", script, strings.TrimSpace(out.String()))
	}
	return m[1], nil
}

// maxSqueueFailures is how many squeue calls in a row may fail (slurmctld restarting, say)
// before the wait gives up.
const maxSqueueFailures = 30

// wait polls squeue until no task of the job is pending, running or completing.
func (o *SlurmOptions) wait(ctx context.Context, job string) error {
	failures := 0
	delay := min(o.Poll, time.Second)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		delay = o.Poll
		var out, errb bytes.Buffer
		c := exec.CommandContext(ctx, o.Squeue, "--noheader", "--array", "--jobs="+job, "--format=%i %T")
		c.Stdout, c.Stderr = &out, &errb
		err := c.Run()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		switch {
		case err == nil && strings.TrimSpace(out.String()) == "":
			return nil
		case err == nil:
			failures = 0
		case strings.Contains(errb.String(), "Invalid job id"):
			// The job has left slurmctld's memory altogether.
			return nil
		default:
			failures++
			var ee *exec.ExitError
			if failures >= maxSqueueFailures || !errors.As(err, &ee) {
				return fmt.Errorf("squeue for job %s: %v: %s", job, err, strings.TrimSpace(errb.String()))
			}
		}
	}
}
