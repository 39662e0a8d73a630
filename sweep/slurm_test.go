package sweep

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fabricsim/fabricsim/internal/fakeslurm"
	"github.com/fabricsim/fabricsim/sweep/internal/fakeengine"
)

func TestArraySpec(t *testing.T) {
	tests := []struct {
		idx  []int
		max  int
		rng  bool
		want string
	}{
		{[]int{0, 23}, 4, true, "0-23%4"},
		{[]int{0, 0}, 0, true, "0"},
		{[]int{0, 1, 2, 3, 7, 9, 10}, 0, false, "0-3,7,9-10"},
		{[]int{5}, 2, false, "5%2"},
	}
	for _, tc := range tests {
		if got := arraySpec(tc.idx, tc.max, tc.rng); got != tc.want {
			t.Errorf("arraySpec(%v, %d, %v) = %q, want %q", tc.idx, tc.max, tc.rng, got, tc.want)
		}
	}
}

// TestSbatchDryRun: --slurm-dry-run writes only the job script (and the directory layout),
// prints its path, and the script holds the array, the options and the task command.
func TestSbatchDryRun(t *testing.T) {
	dir := newSweepDir(t, sweep24)
	out := filepath.Join(dir, "out")
	stdout, _, err := runCommand(t, func() Engine { return &fakeengine.Engine{} }, "sweep", filepath.Join(dir, "sweep.yaml"), "--out", out,
		"--slurm", "--slurm-dry-run", "--tasks", "6", "--array-max", "4", "--cpus-per-task", "2", "--partition", "gpu",
		"--sbatch-arg=--time=01:00:00", "--sbatch-arg", "--account=fabric", "--slurm-binary", "/opt/fabricsim/bin/fabricsim", "--run-timeout", "90m")
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(out, "sweep.sbatch")
	if strings.TrimSpace(stdout) != script {
		t.Errorf("printed %q, want the script path %s", stdout, script)
	}
	s, _ := Load(filepath.Join(dir, "sweep.yaml"))
	runs, _ := s.Expand()
	got := strings.ReplaceAll(readFile(t, script), dir, "DIR")
	got = strings.ReplaceAll(got, Digest(runs), "DIGEST")
	want := `#!/bin/bash
# Slurm job array for fabricsim sweep "rate vs size": 24 runs in 6 shards, written by --slurm.
# Task i runs shard i/6 and, once all its runs are ok, commits DIR/out/shards/i.done.
# DIR/out must be on a filesystem that every node shares.
#SBATCH --job-name=fabricsim-rate-vs-size
#SBATCH --array=0-5%4
#SBATCH --cpus-per-task=2
#SBATCH --output=DIR/out/slurm/%A_%a.out
#SBATCH --partition=gpu
#SBATCH --time=01:00:00
#SBATCH --account=fabric
exec /opt/fabricsim/bin/fabricsim sweep DIR/sweep.yaml --out DIR/out --shard "${SLURM_ARRAY_TASK_ID}/6" --jobs 2 --sweep-digest DIGEST --run-timeout 1h30m0s
`
	if got != want {
		t.Errorf("script:\n%s\nwant:\n%s", got, want)
	}
	entries, _ := os.ReadDir(filepath.Join(out, "runs"))
	if len(entries) != 0 {
		t.Errorf("a dry run ran %d runs", len(entries))
	}
}

// TestSlurmResubmitsFailedTasks drives the Slurm backend against stand-in commands: a task
// whose run fails once is resubmitted alone, and the merged table equals a local sweep's.
func TestSlurmResubmitsFailedTasks(t *testing.T) {
	if testing.Short() {
		t.Skip("starts subprocesses; skipped in -short")
	}
	state := fakeslurm.Install(t)
	dir := newSweepDir(t, sweep24)
	sweep := filepath.Join(dir, "sweep.yaml")
	ref := filepath.Join(dir, "ref")
	if _, _, err := runCommand(t, func() Engine { return &fakeengine.Engine{} }, "sweep", sweep, "--out", ref); err != nil {
		t.Fatal(err)
	}
	// The job script runs the test binary as fabricsim; its fake engine fails the first 4MB
	// run it meets.
	t.Setenv(helperEnv, "1")
	t.Setenv("FAKESIM_FAIL_ONCE", "traffic.size=4MB")
	t.Setenv("FAKESIM_MARKER_DIR", dir)
	out := filepath.Join(dir, "out")
	stdout, stderr, err := runCommand(t, func() Engine { return &fakeengine.Engine{} }, "sweep", sweep, "--out", out,
		"--slurm", "--tasks", "4", "--array-max", "2", "--slurm-poll", "50ms", "--slurm-binary", os.Args[0])
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "24 runs on Slurm, 0 failed") {
		t.Errorf("stdout %q", stdout)
	}
	if n := strings.Count(stderr, "failed (no "+out+"/shards/"); n != 1 || !strings.Contains(stderr, "resubmitting (retry 1 of 2)") {
		t.Errorf("want one task resubmitted once; log:\n%s", stderr)
	}
	submissions := strings.Split(strings.TrimSpace(readFile(t, filepath.Join(state, "sbatch.log"))), "\n")
	if len(submissions) != 2 || !strings.HasPrefix(submissions[0], "--parsable --array=0-3%2 ") || strings.Count(submissions[1], ",") != 0 {
		t.Errorf("sbatch calls %q; want all four tasks then the one failed task", submissions)
	}
	got := readFile(t, filepath.Join(out, "results.csv"))
	want := readFile(t, filepath.Join(ref, "results.csv"))
	if got != want {
		t.Errorf("Slurm table differs from the local one:\n%s\nvs\n%s", got, want)
	}
	for i := 0; i < 4; i++ {
		if _, err := os.Stat(markerPath(out, i)); err != nil {
			t.Errorf("shard %d has no marker: %v", i, err)
		}
	}
}

// TestSlurmGivesUp: a task that always fails is retried --max-retries times, then its runs
// appear as failed in the table and the command fails.
func TestSlurmGivesUp(t *testing.T) {
	if testing.Short() {
		t.Skip("starts subprocesses; skipped in -short")
	}
	state := fakeslurm.Install(t)
	dir := newSweepDir(t, sweep24)
	t.Setenv(helperEnv, "1")
	t.Setenv("FAKESIM_FAIL_ALWAYS", "traffic.size=8MB")
	out := filepath.Join(dir, "out")
	start := time.Now()
	_, stderr, err := runCommand(t, func() Engine { return &fakeengine.Engine{} }, "sweep", filepath.Join(dir, "sweep.yaml"), "--out", out,
		"--slurm", "--tasks", "2", "--max-retries", "1", "--slurm-poll", "50ms", "--slurm-binary", os.Args[0])
	if err == nil || !strings.Contains(err.Error(), "6 of 24 runs failed (first: run ") {
		t.Fatalf("error %v, want 6 of 24 runs failed\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "giving up after 1 retries") {
		t.Errorf("log:\n%s", stderr)
	}
	if n := len(strings.Split(strings.TrimSpace(readFile(t, filepath.Join(state, "sbatch.log"))), "\n")); n != 2 {
		t.Errorf("%d submissions, want 2 (the first and one retry)", n)
	}
	if n := strings.Count(readFile(t, filepath.Join(out, "results.csv")), ",failed,fake failure for 8MB"); n != 6 {
		t.Errorf("%d failed rows, want 6", n)
	}
	t.Logf("took %s", time.Since(start))
}
