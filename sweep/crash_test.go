package sweep

import (
	"encoding/json"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fabricsim/fabricsim/sweep/internal/fakeengine"
)

// helperCommand returns the test binary set up to run `fabricsim ARGS...` on the fake engine.
func helperCommand(t testing.TB, env []string, args ...string) *exec.Cmd {
	t.Helper()
	a, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=1", helperArgs+"="+string(a))
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

// countRecords counts committed record files.
func countRecords(out string) int {
	entries, _ := os.ReadDir(filepath.Join(out, "runs"))
	n := 0
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".tmp-") {
			n++
		}
	}
	return n
}

// snapshotRecords reads every committed record file; a file that does not parse fails the test.
func snapshotRecords(t *testing.T, out string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(out, "runs"))
	if os.IsNotExist(err) {
		return map[string]string{}
	}
	if err != nil {
		t.Fatal(err)
	}
	snap := map[string]string{}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".tmp-") {
			continue // an uncommitted write cut short by the kill
		}
		id := strings.TrimSuffix(e.Name(), ".json")
		if _, ok := ReadRecord(out, id); !ok {
			t.Fatalf("record %s does not parse after a kill: %q", e.Name(), readFile(t, filepath.Join(out, "runs", e.Name())))
		}
		snap[id] = readFile(t, filepath.Join(out, "runs", e.Name()))
	}
	return snap
}

// TestKillAndResume kills a sweep running in a subprocess with SIGKILL at random moments,
// five times, then lets it finish: every run appears once, no committed result is lost or
// rewritten (so no finished run ran twice), and the table equals an uninterrupted sweep's.
func TestKillAndResume(t *testing.T) {
	if testing.Short() {
		t.Skip("kills subprocesses; skipped in -short")
	}
	dir := newSweepDir(t, sweep24)
	sweep := filepath.Join(dir, "sweep.yaml")
	env := []string{"FAKESIM_SLEEP_MS=20-50", "FAKESIM_LOG=" + filepath.Join(dir, "runs.log")}

	ref := filepath.Join(dir, "ref")
	if _, _, err := runCommand(t, func() Engine { return &fakeengine.Engine{} }, "sweep", sweep, "--out", ref, "--jobs", "2"); err != nil {
		t.Fatal(err)
	}
	want := readFile(t, filepath.Join(ref, "results.csv"))

	out := filepath.Join(dir, "out")
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	t.Logf("kill delays from seed %d", seed)
	seen := map[string]string{}
	partial := 0
	for kill := 0; kill < 5; kill++ {
		cmd := helperCommand(t, env, "sweep", sweep, "--out", out, "--jobs", "2", "--quiet")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Kill at a random moment after at least one more run committed, so that every kill
		// lands mid-sweep however loaded the machine is.
		begin := time.Now()
		for countRecords(out) <= len(seen) && time.Since(begin) < 20*time.Second {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(time.Duration(rng.Intn(40)) * time.Millisecond)
		delay := time.Since(begin)
		cmd.Process.Kill()
		cmd.Wait()
		snap := snapshotRecords(t, out)
		for id, content := range seen {
			if snap[id] != content {
				t.Fatalf("kill %d (after %s): committed record %s changed or vanished:\nbefore %s\nafter %s", kill, delay, id, content, snap[id])
			}
		}
		if len(snap) > len(seen) && len(snap) < 24 {
			partial++
		}
		t.Logf("kill %d after %s: %d of 24 runs committed", kill, delay, len(snap))
		seen = snap
	}
	if partial == 0 {
		t.Errorf("no kill landed while runs were being committed; the test proved nothing")
	}
	cmd := helperCommand(t, env, "sweep", sweep, "--out", out, "--jobs", "2", "--quiet")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("resumed sweep: %v\n%s", err, b)
	}
	snap := snapshotRecords(t, out)
	if len(snap) != 24 {
		t.Fatalf("%d records after resuming, want 24", len(snap))
	}
	for id, content := range seen {
		if snap[id] != content {
			t.Errorf("record %s committed before the last kill was rewritten by the resumed sweep", id)
		}
	}
	got := readFile(t, filepath.Join(out, "results.csv"))
	if got != want {
		t.Errorf("table after kills and resume differs from an uninterrupted sweep's:\n%s\nvs\n%s", got, want)
	}
	if rows := strings.Count(got, "\n") - 1; rows != 24 {
		t.Errorf("%d rows, want 24", rows)
	}
	entries, _ := os.ReadDir(filepath.Join(out, "runs"))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".tmp-") {
			t.Errorf("temporary file %s left behind after the sweep finished", e.Name())
		}
	}
}
