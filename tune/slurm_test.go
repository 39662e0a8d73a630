package tune

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fabricsim/fabricsim/internal/fakeslurm"
)

// --slurm: every batch is a job array whose tasks (this test binary acting as `fabricsim tune
// eval`) commit the evaluations on the shared directory; the result is the same tune.json as a
// local tune's, and each generation was one submission.
func TestSlurmBatches(t *testing.T) {
	if testing.Short() {
		t.Skip("starts subprocesses; skipped in -short")
	}
	state := fakeslurm.Install(t)
	dir := t.TempDir()
	path := writeScenario(t, dir, "budget: 15")
	ref := filepath.Join(dir, "ref")
	runFake(t, path, ref, 2, 0)
	t.Setenv(helperEnv, "1")
	p, err := Load(path, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	o := fakeOptions(out, 1, 0, "")
	o.Slurm = &SlurmOptions{Executable: os.Args[0], Subcommand: []string{"tune", "eval"}, CPUsPerTask: 1, MaxRetries: 1, Poll: 20 * time.Millisecond}
	r, err := Run(context.Background(), p, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.WriteFiles(out); err != nil {
		t.Fatal(err)
	}
	if got, want := readFile(t, filepath.Join(out, "tune.json")), readFile(t, filepath.Join(ref, "tune.json")); got != want {
		t.Errorf("tune.json on Slurm differs from the local one:\n%s", firstDiff(got, want))
	}
	// Batches: the start points with InfiniBand (3), generation 1 (12), the one candidate of
	// generation 2 the budget leaves (1), the checks (up to 2 x 4, fewer when the winner is a
	// start point): one array each, one task per evaluation.
	subs := strings.Split(strings.TrimSpace(readFile(t, filepath.Join(state, "sbatch.log"))), "\n")
	var arrays []string
	for _, s := range subs {
		arrays = append(arrays, strings.Fields(s)[1])
	}
	got := strings.Join(arrays, " ")
	if !strings.HasPrefix(got, "--array=0-2 --array=0-11 --array=0 --array=0-") || len(arrays) != 4 {
		t.Errorf("submissions %q, want one array per batch: 3, 12, 1 and the checks' tasks", got)
	}
	if n, u := len(records(t, out)), uniqueEvaluations(t, filepath.Join(out, "tune.json")); n != u || n < 3+12+1+2 {
		t.Errorf("%d evaluation records for %d distinct evaluations", n, u)
	}
	if _, err := os.Stat(filepath.Join(out, evalsDir, "shards", "0.done")); err != nil {
		t.Errorf("no shard marker: %v", err)
	}
}
