// Package fakeslurm gives tests stand-ins for Slurm's sbatch, squeue and scancel, so that the job
// arrays of `fabricsim sweep --slurm` and `fabricsim tune --slurm` run on one machine.
package fakeslurm

import (
	"os"
	"path/filepath"
	"testing"
)

// Install puts sbatch, squeue and scancel stand-ins first on PATH for the rest of the test:
// sbatch starts each array task of the script in the background (SLURM_ARRAY_JOB_ID and
// SLURM_ARRAY_TASK_ID set, output where #SBATCH --output says; its exit status lands in
// STATE/JOB.TASK.exit) and prints "JOB;fake" as --parsable does; squeue lists the tasks whose exit
// file is still missing, and fails for a job it does not know as Slurm's does; scancel only
// logs. It returns STATE, the directory where sbatch logs its arguments (sbatch.log) and scancel
// its own (scancel.log).
func Install(t testing.TB) string {
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
		"scancel": "#!/bin/bash\necho \"$@\" >> " + state + "/scancel.log\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return state
}
