package sweep

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestSlurmIntegration runs a sweep on a real Slurm cluster: the one already running here, or
// a one-node cluster that it starts (and stops) with scripts/slurm-single-node.sh. One run
// fails the first time, so its task is resubmitted; the merged table must equal a local
// sweep's. Without sbatch the test skips, except under CI=true, where it fails.
func TestSlurmIntegration(t *testing.T) {
	if _, err := exec.LookPath("sbatch"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("sbatch is not on PATH but CI=true: .ci/run must install Slurm (DEBIAN_FRONTEND=noninteractive apt-get install -y slurmctld slurmd slurm-client munge) so that this test runs")
		}
		t.Skip("sbatch is not on PATH; install slurmctld slurmd slurm-client munge to run the Slurm integration test")
	}
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("needs a Slurm cluster; skipped in -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	if !slurmUp() {
		script, err := filepath.Abs(filepath.Join("..", "scripts", "slurm-single-node.sh"))
		if err != nil {
			t.Fatal(err)
		}
		if b, err := exec.CommandContext(ctx, "bash", script, "start").CombinedOutput(); err != nil {
			t.Fatalf("starting a one-node Slurm cluster: %v\n%s", err, b)
		}
		t.Cleanup(func() {
			if b, err := exec.Command("bash", script, "stop").CombinedOutput(); err != nil {
				t.Errorf("stopping the Slurm cluster: %v\n%s", err, b)
			}
		})
		if !slurmUp() {
			t.Fatal("the one-node Slurm cluster started but sinfo shows no usable node")
		}
	}

	dir := t.TempDir()
	fakesim := filepath.Join(dir, "fakesim")
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if b, err := exec.CommandContext(ctx, gobin, "build", "-o", fakesim, "./testdata/fakesim").CombinedOutput(); err != nil {
		t.Fatalf("building the fake simulator: %v\n%s", err, b)
	}
	writeFiles(t, dir, map[string]string{"base.yaml": baseScenario, "sweep.yaml": `name: slurm integration
base_file: base.yaml
axes:
  - field: topology.link.rate
    values: [100Gbps, 400Gbps]
  - field: traffic.size
    values: [1MB, 4MB, 16MB]
seeds: 2
`})
	sweep := filepath.Join(dir, "sweep.yaml")
	env := append(os.Environ(), "FAKESIM_FAIL_ONCE=traffic.size=4MB", "FAKESIM_MARKER_DIR="+dir, "FAKESIM_SLEEP_MS=50-100")
	run := func(args ...string) (string, string) {
		t.Helper()
		cmd := exec.CommandContext(ctx, fakesim, args...)
		cmd.Env = env
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("fakesim %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out.String(), errb.String())
		}
		return out.String(), errb.String()
	}
	out := filepath.Join(dir, "out")
	start := time.Now()
	stdout, stderr := run("sweep", sweep, "--out", out, "--slurm", "--tasks", "4", "--array-max", "2", "--cpus-per-task", "1", "--slurm-poll", "500ms", "--max-retries", "2")
	t.Logf("Slurm sweep took %s\n%s%s", time.Since(start), stderr, stdout)
	if !strings.Contains(stdout, "12 runs on Slurm, 0 failed") {
		t.Errorf("stdout %q", stdout)
	}
	if strings.Count(stderr, "resubmitting (retry 1 of 2)") != 1 || !strings.Contains(stderr, "slurm: submitted job ") {
		t.Errorf("want exactly one task resubmitted once; log:\n%s", stderr)
	}
	logs, _ := filepath.Glob(filepath.Join(out, "slurm", "*.out"))
	if len(logs) != 5 {
		t.Errorf("%d task logs, want 5 (4 tasks and one retry): %v", len(logs), logs)
	}

	// The marker exists now, so the local sweep does not fail; its table is the reference.
	ref := filepath.Join(dir, "ref")
	run("sweep", sweep, "--out", ref, "--jobs", "2")
	got := readFile(t, filepath.Join(out, "results.csv"))
	want := readFile(t, filepath.Join(ref, "results.csv"))
	if got != want {
		t.Errorf("Slurm table differs from the local one:\n%s\nvs\n%s", got, want)
	}
	if rows := strings.Count(got, "\n") - 1; rows != 12 {
		t.Errorf("%d rows, want 12", rows)
	}
}

// slurmUp reports whether sinfo answers and shows a node that can take jobs.
func slurmUp() bool {
	out, err := exec.Command("sinfo", "--noheader", "--format=%T").Output()
	if err != nil {
		return false
	}
	for _, st := range strings.Fields(string(out)) {
		switch strings.TrimRight(st, "*~#!%$@^-") {
		case "idle", "mixed", "allocated", "completing":
			return true
		}
	}
	return false
}
