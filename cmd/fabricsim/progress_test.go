package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// runStderr executes the CLI in-process and returns its exit code and stderr alone.
func runStderr(t *testing.T, args ...string) (int, string) {
	t.Helper()
	root := newRoot()
	var out, errw bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errw)
	root.SetArgs(args)
	err := root.Execute()
	code := exitOK
	if err != nil {
		code = exitUsage
		if ee, ok := err.(*exitError); ok {
			code = ee.code
		}
		t.Logf("error: %v", err)
	}
	return code, errw.String()
}

// TestProgressLines: stderr that is not a terminal (here a buffer) gets plain progress lines,
// one per change with --progress-every 0 (the default period is 5 s), ending at the total;
// --quiet prints none. For compare (4 variants x 1 step on the analytic backend, class by
// class), run (the built-in k=8 permutation: 1.4 M events, a report every 2^18) and
// nccl-tests (1M..4M: 3 rows).
func TestProgressLines(t *testing.T) {
	for _, c := range []struct {
		name  string
		args  []string
		first string // the first line's start
		last  *regexp.Regexp
	}{
		{"compare", []string{"compare", "--backend", "analytic", "--steps", "1", "--out", ""}, "compare: 0/",
			regexp.MustCompile(`^compare: (\d+)/(\d+) simulations, [0-9.]+m?s elapsed$`)},
		{"run", []string{"run"}, "run: ",
			regexp.MustCompile(`^run: (\d+)/(\d+) messages, t=\S+ simulated, [0-9.]+m?s elapsed$`)},
		{"nccl-tests", []string{"nccl-tests", "all_reduce_perf", "-b", "1M", "-e", "4M", "-f", "2", "-g", "2"}, "nccl-tests: 0/3 rows",
			regexp.MustCompile(`^nccl-tests: (\d+)/(\d+) rows, [0-9.]+m?s elapsed$`)},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, stderr := runStderr(t, append(c.args, "--progress-every", "0")...)
			if code != 0 {
				t.Fatalf("exit %d:\n%s", code, stderr)
			}
			var lines []string
			for _, l := range strings.Split(stderr, "\n") {
				if strings.HasPrefix(l, c.name+": ") {
					lines = append(lines, l)
				}
			}
			if len(lines) < 2 || !strings.HasPrefix(lines[0], c.first) {
				t.Fatalf("progress lines:\n%s", stderr)
			}
			m := c.last.FindStringSubmatch(lines[len(lines)-1])
			if m == nil || m[1] != m[2] {
				t.Errorf("last progress line %q, want the total done", lines[len(lines)-1])
			}
			if strings.ContainsAny(stderr, "\r\033") {
				t.Errorf("terminal control characters on a non-terminal:\n%q", stderr)
			}
			code, stderr = runStderr(t, append(c.args, "--progress-every", "0", "--quiet")...)
			if code != 0 || strings.Contains(stderr, c.name+": ") {
				t.Errorf("--quiet: exit %d, stderr:\n%s", code, stderr)
			}
		})
	}
}
