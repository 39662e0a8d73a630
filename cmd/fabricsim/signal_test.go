package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// mainEnv, when set in the environment of this test binary, makes it run fabricsim with the
// JSON-encoded arguments instead of the tests: the signal tests start it as a subprocess, so
// that SIGINT and SIGTERM reach a real process with fabricsim's own handlers.
const mainEnv = "FABRICSIM_TEST_MAIN_ARGS"

func TestMain(m *testing.M) {
	if a := os.Getenv(mainEnv); a != "" {
		var args []string
		if err := json.Unmarshal([]byte(a), &args); err != nil {
			os.Stderr.WriteString("bad " + mainEnv + ": " + err.Error() + "\n")
			os.Exit(2)
		}
		os.Exit(execute(args))
	}
	os.Exit(m.Run())
}

// signalled is what a fabricsim subprocess did when signalled.
type signalled struct {
	code           int
	stdout, stderr string
}

// interruptWhen runs fabricsim ARGS in a subprocess (in dir), sends sig once ready says so
// (it sees each stderr line, or is polled every 50 ms with line ""), and returns the exit
// status and output. The subprocess gets two minutes, far more than any of these runs needs
// to be interrupted and to write its results.
func interruptWhen(t *testing.T, dir string, sig os.Signal, ready func(line string) bool, args ...string) signalled {
	t.Helper()
	a, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), mainEnv+"="+string(a))
	var stdout strings.Builder
	cmd.Stdout = &stdout
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	kill := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() })
	defer kill.Stop()
	var stderr strings.Builder
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(errPipe)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	sent := false
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
loop:
	for {
		line := ""
		select {
		case l, ok := <-lines:
			if !ok {
				break loop
			}
			stderr.WriteString(l + "\n")
			line = l
		case <-tick.C:
		}
		if !sent && ready(line) {
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			sent = true
		}
	}
	err = cmd.Wait()
	if !sent {
		t.Fatalf("%v ended before it was signalled (%v):\nstdout:\n%s\nstderr:\n%s", args, err, stdout.String(), stderr.String())
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return signalled{code, stdout.String(), stderr.String()}
}

func matches(re string) func(string) bool {
	r := regexp.MustCompile(re)
	return func(line string) bool { return r.MatchString(line) }
}

// smallCompare is a compare scenario of 2 variants x 10 steps, each step one packet-level run
// (fidelity full) of a fraction of a second.
const smallCompare = `name: small
steps: 10
fidelity: full
cluster: {servers: 8, gpus_per_server: 2, link_rate: 400Gbps, radix: 64}
workload:
  kind: training
  model: {base: llama3-8b, layers: 2, hidden: 1024, ffn: 4096, heads: 8, kv_heads: 8, vocab: 16000}
  gpu: h100
  tp: 2
  dp: 8
  zero: 1
  global_batch: 8
  seq_len: 2048
variants: [ib-ndr, roce-default]
`

// TestCompareSIGINT: Ctrl-C once the first of 20 simulations has finished prints the table
// with the finished steps, writes compare.json and report.html that say which variants are
// unfinished, and exits 130.
func TestCompareSIGINT(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a packet-level compare in a subprocess")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "small.yaml"), []byte(smallCompare), 0o644); err != nil {
		t.Fatal(err)
	}
	r := interruptWhen(t, dir, os.Interrupt, matches(`^compare: [1-9][0-9]*/20 simulations`),
		"compare", "small.yaml", "--out", "out", "--progress-every", "0")
	if r.code != exitInterrupted {
		t.Fatalf("exit %d, want 130\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"variant", "ib-ndr", "interrupted: figures are over the finished steps only; unfinished:", "wrote out/compare.json"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "fabricsim: compare interrupted: ") {
		t.Errorf("stderr does not say it was interrupted:\n%s", r.stderr)
	}
	data, err := os.ReadFile(filepath.Join(dir, "out", "compare.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Interrupted bool `json:"interrupted"`
		Variants    []struct {
			StepsFinished int  `json:"steps_finished"`
			Unfinished    bool `json:"unfinished"`
		} `json:"variants"`
	}
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	finished, unfinished := 0, 0
	for _, v := range res.Variants {
		finished += v.StepsFinished
		if v.Unfinished {
			unfinished++
		}
	}
	// The signal came once at least one of the 20 (variant, step) simulations had finished,
	// and stopped the run long before the last.
	if !res.Interrupted || len(res.Variants) != 2 || finished < 1 || finished >= 20 || unfinished < 1 {
		t.Errorf("compare.json: interrupted %v, %d variants, %d steps finished, %d unfinished variants", res.Interrupted, len(res.Variants), finished, unfinished)
	}
	if html, err := os.ReadFile(filepath.Join(dir, "out", "report.html")); err != nil || !strings.Contains(string(html), "Interrupted: every figure is over the finished steps only") {
		t.Errorf("report.html does not say it is partial (%v)", err)
	}
}

// TestNCCLTestsSIGTERM: SIGTERM (the stop of Slurm and Kubernetes) during an nccl-tests sweep
// prints the rows that finished, says the table is incomplete, and exits 130.
func TestNCCLTestsSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("runs packet-level collectives in a subprocess")
	}
	r := interruptWhen(t, t.TempDir(), syscall.SIGTERM, matches(`^nccl-tests: [1-9][0-9]*/11 rows`),
		"nccl-tests", "all_reduce_perf", "-b", "1M", "-e", "1G", "-f", "2", "-g", "8", "--nodes", "2", "--fabric", "infiniband", "--progress-every", "0")
	if r.code != exitInterrupted {
		t.Fatalf("exit %d, want 130\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	rows := regexp.MustCompile(`(?m)^\s+\d+\s+\d+\s+float\s+sum`).FindAllString(r.stdout, -1)
	if len(rows) < 1 || len(rows) >= 11 || !strings.Contains(r.stdout, "1048576") {
		t.Errorf("%d rows printed, want the finished ones (1 to 10, from 1 MiB):\n%s", len(rows), r.stdout)
	}
	if want := regexp.MustCompile(`# Interrupted: \d+ of 11 rows not run`); !want.MatchString(r.stdout) {
		t.Errorf("table does not say it is incomplete:\n%s", r.stdout)
	}
}

// TestRunSIGINT: Ctrl-C during `run` writes the partial outputs, prints the summary of what
// finished, and exits 130.
func TestRunSIGINT(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the k=16 permutation in a subprocess")
	}
	dir := t.TempDir()
	scen, _ := filepath.Abs("../../examples/permutation-k16.yaml")
	r := interruptWhen(t, dir, os.Interrupt, matches(`^run: \d+/1024 messages, t=`), "run", scen, "--out", "out", "--progress-every", "0")
	if r.code != exitInterrupted {
		t.Fatalf("exit %d, want 130\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if !regexp.MustCompile(`finished  \d+/1024 flows`).MatchString(r.stdout) || !strings.Contains(r.stderr, "partial results written") {
		t.Errorf("no partial summary:\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
	for _, f := range []string{"summary.json", "flows.csv", "ports.csv"} {
		if _, err := os.Stat(filepath.Join(dir, "out", f)); err != nil {
			t.Errorf("%s not written: %v", f, err)
		}
	}
}

// TestSweepSIGINT: Ctrl-C during a sweep exits 130 (not 1) and keeps the runs that finished.
func TestSweepSIGINT(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a sweep in a subprocess")
	}
	dir := t.TempDir()
	sw, _ := filepath.Abs("../../examples/sweep-small.yaml")
	committed := func(string) bool {
		entries, _ := os.ReadDir(filepath.Join(dir, "out", "runs"))
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".json") && !strings.HasPrefix(e.Name(), ".tmp-") {
				return true
			}
		}
		return false
	}
	r := interruptWhen(t, dir, os.Interrupt, committed, "sweep", sw, "--out", "out", "--jobs", "1", "--quiet")
	if r.code != exitInterrupted {
		t.Fatalf("exit %d, want 130\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "interrupted after") || !committed("") {
		t.Errorf("finished runs not kept or not reported:\n%s", r.stderr)
	}
}
