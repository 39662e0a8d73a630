package tune

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeSlurm installs sbatch, squeue and scancel stand-ins on PATH: sbatch starts each array task
// of the script in the background (SLURM_ARRAY_TASK_ID set, output where #SBATCH --output says)
// and squeue lists the tasks whose exit file is still missing. It returns the directory where
// sbatch logs its calls.
func fakeSlurm(t *testing.T) string {
	t.Helper()
	bin, state := t.TempDir(), t.TempDir()
	files := map[string]string{
		"sbatch": `#!/bin/bash
set -eu
state=` + state + `
for a in "$@"; do
  case $a in
    --array=*) arr=${a#--array=} ;;
    --parsable) ;;
    *) script=$a ;;
  esac
done
arr=${arr%%\%*}
job=$(( $(cat $state/next 2>/dev/null || echo 100) + 1 ))
echo $job > $state/next
echo "$@" >> $state/sbatch.log
IFS=, read -ra parts <<< "$arr"
: > $state/$job.idx
for p in "${parts[@]}"; do
  if [[ $p == *-* ]]; then
    for ((i=${p%-*}; i<=${p#*-}; i++)); do echo $i >> $state/$job.idx; done
  else
    echo $p >> $state/$job.idx
  fi
done
out=$(sed -n 's/^#SBATCH --output=//p' "$script")
while read -r i; do
  o=${out//%A/$job}; o=${o//%a/$i}
  ( rc=0; SLURM_ARRAY_JOB_ID=$job SLURM_ARRAY_TASK_ID=$i bash "$script" > "$o" 2>&1 || rc=$?; echo $rc > $state/$job.$i.exit ) </dev/null >/dev/null 2>&1 &
done < $state/$job.idx
echo "$job;fake"
`,
		"squeue": `#!/bin/bash
state=` + state + `
for a in "$@"; do case $a in --jobs=*) job=${a#--jobs=} ;; esac; done
if [ ! -f $state/$job.idx ]; then echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1; fi
while read -r i; do [ -f $state/$job.$i.exit ] || echo "${job}_$i RUNNING"; done < $state/$job.idx
`,
		"scancel": "#!/bin/bash\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return state
}

// --slurm: every batch is a job array whose tasks (this test binary acting as `fabricsim tune
// eval`) commit the evaluations on the shared directory; the result is the same tune.json as a
// local tune's, and each generation was one submission.
func TestSlurmBatches(t *testing.T) {
	if testing.Short() {
		t.Skip("starts subprocesses; skipped in -short")
	}
	state := fakeSlurm(t)
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
