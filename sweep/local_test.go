package sweep

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/fabricsim/fabricsim/sweep/internal/fakeengine"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/golden")

// readParquet returns the Parquet table's column names and rows as text; null cells are
// "<null>".
func readParquet(t testing.TB, path string) ([]string, [][]string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, c := range pf.Schema().Columns() {
		cols = append(cols, strings.Join(c, "."))
	}
	r := parquet.NewReader(pf)
	var rows [][]string
	buf := make([]parquet.Row, 8)
	for {
		n, err := r.ReadRows(buf)
		for _, row := range buf[:n] {
			var cells []string
			for _, v := range row {
				switch {
				case v.IsNull():
					cells = append(cells, "<null>")
				case v.Kind() == parquet.Double:
					cells = append(cells, formatFloat(v.Double()))
				default:
					cells = append(cells, v.String())
				}
			}
			rows = append(rows, cells)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return cols, rows
}

func newSweepDir(t testing.TB, sweep string) string {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"base.yaml": baseScenario, "sweep.yaml": sweep})
	return dir
}

// TestJobs2MatchesJobs1: a 24-run sweep gives the same table with two workers as with one.
func TestJobs2MatchesJobs1(t *testing.T) {
	dir := newSweepDir(t, sweep24)
	eng := func() Engine { return &fakeengine.Engine{SleepMin: time.Millisecond, SleepMax: 4 * time.Millisecond} }
	tables := map[string]string{}
	for _, jobs := range []string{"1", "2"} {
		out := filepath.Join(dir, "out"+jobs)
		stdout, _, err := runCommand(t, eng, "sweep", filepath.Join(dir, "sweep.yaml"), "--out", out, "--jobs", jobs)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(stdout, "24 runs (24 ran now, 0 finished before), 0 failed") {
			t.Errorf("jobs %s: summary %q", jobs, stdout)
		}
		tables[jobs] = readFile(t, filepath.Join(out, "results.csv"))
	}
	// The table's bytes depend only on the sweep (no host times): --jobs 1 and 2 write the same.
	if tables["1"] != tables["2"] {
		t.Fatalf("--jobs 2 table differs from --jobs 1:\n%s\nvs\n%s", tables["2"], tables["1"])
	}
	for _, name := range []string{"results.csv", "results.parquet", "timing.csv"} {
		if st, err := os.Stat(filepath.Join(dir, "out1", name)); err != nil || st.Mode().Perm() != 0o644 {
			t.Errorf("%s: %v, mode %v; want 0644", name, err, st.Mode().Perm())
		}
	}
	// The host time of each run is in timing.csv, one row per run.
	timing := strings.Split(strings.TrimSpace(readFile(t, filepath.Join(dir, "out1", "timing.csv"))), "\n")
	if len(timing) != 25 || timing[0] != "run_id,wall_seconds,status" {
		t.Errorf("timing.csv: %d lines, header %q; want run_id,wall_seconds,status + 24 rows", len(timing), timing[0])
	} else if f := strings.Split(timing[1], ","); len(f) != 3 || f[1] == "0.000000" || f[2] != "ok" {
		t.Errorf("timing.csv row %q: want a positive wall time and ok", timing[1])
	}
	lines := strings.Split(strings.TrimSpace(tables["1"]), "\n")
	if len(lines) != 25 {
		t.Fatalf("%d lines, want header + 24 rows", len(lines))
	}
	if lines[0] != "run_id,topology.link.rate,traffic.size,seed,fct_ns.p50,fct_ns.p99,drops,sim_time_ns,events,status,error" {
		t.Errorf("header %q", lines[0])
	}
	ids := map[string]bool{}
	var sorted []string
	for _, l := range lines[1:] {
		id := strings.Split(l, ",")[0]
		ids[id] = true
		sorted = append(sorted, id)
		if !strings.HasSuffix(l, ",ok,") {
			t.Errorf("row not ok: %s", l)
		}
	}
	if len(ids) != 24 || !sort.StringsAreSorted(sorted) {
		t.Errorf("want 24 distinct ids sorted, got %d, sorted=%v", len(ids), sort.StringsAreSorted(sorted))
	}
	// The Parquet tables hold the same cells as the CSV, and equal each other.
	cols1, rows1 := readParquet(t, filepath.Join(dir, "out1", "results.parquet"))
	_, rows2 := readParquet(t, filepath.Join(dir, "out2", "results.parquet"))
	if !reflect.DeepEqual(rows1, rows2) {
		t.Error("--jobs 2 parquet table differs from --jobs 1")
	}
	wantCols := []string{"run_id", "topology.link.rate", "traffic.size", "seed", "fct_ns.p50", "fct_ns.p99", "drops", "sim_time_ns", "events", "status", "error"}
	if !reflect.DeepEqual(cols1, wantCols) {
		t.Errorf("parquet columns %q, want %q", cols1, wantCols)
	}
	var fromParquet []string
	for _, r := range rows1 {
		fromParquet = append(fromParquet, strings.Join(r, ","))
	}
	if got := strings.Join(fromParquet, "\n"); got != strings.Join(lines[1:], "\n") {
		t.Errorf("parquet rows differ from csv rows:\n%s\nvs\n%s", got, strings.Join(lines[1:], "\n"))
	}
}

// TestGoldenResults pins the table format: go test ./sweep -run Golden -update rewrites it.
func TestGoldenResults(t *testing.T) {
	dir := newSweepDir(t, `name: golden
base_file: base.yaml
axes:
  - field: fabric.ecn
    name: ecn
    values: [{kmin: 10KB, kmax: 100KB}, {kmin: 20KB, kmax: 200KB}]
  - field: fabric.mtu
    from: 1024
    to: 4096
    factor: 4
seeds: [1, 2]
metrics: [fct_ns.p99, goodput_gbps, not_reported]
`)
	out := filepath.Join(dir, "out")
	if _, _, err := runCommand(t, func() Engine { return &fakeengine.Engine{} }, "sweep", filepath.Join(dir, "sweep.yaml"), "--out", out, "--jobs", "2"); err != nil {
		t.Fatal(err)
	}
	got := readFile(t, filepath.Join(out, "results.csv"))
	golden := filepath.Join("testdata", "golden", "results.csv")
	if *update {
		if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want := readFile(t, golden)
	if got != want {
		t.Errorf("results.csv differs from %s (run with -update if intended):\n%s", golden, got)
	}
	_, rows := readParquet(t, filepath.Join(out, "results.parquet"))
	if len(rows) != 8 || rows[0][6] != "<null>" {
		t.Errorf("parquet: %d rows, first %q; want 8 rows with not_reported null", len(rows), rows[0])
	}
}

// TestFailedRunsAreRecordedAndRetried: failing runs are committed as failed without stopping
// the others, the command fails, and a re-run runs only those runs again.
func TestFailedRunsAreRecordedAndRetried(t *testing.T) {
	dir := newSweepDir(t, sweep24)
	out := filepath.Join(dir, "out")
	log := filepath.Join(dir, "runs.log")
	failing := func() Engine { return &fakeengine.Engine{FailAlways: "traffic.size=4MB", Log: log} }
	_, _, err := runCommand(t, failing, "sweep", filepath.Join(dir, "sweep.yaml"), "--out", out, "--jobs", "2")
	if err == nil || !strings.Contains(err.Error(), "6 of 24 runs failed (first: run ") || !strings.Contains(err.Error(), ": fake failure for 4MB); see "+filepath.Join(out, "results.csv")) {
		t.Fatalf("error %v, want 6 of 24 runs failed", err)
	}
	csv := readFile(t, filepath.Join(out, "results.csv"))
	if n := strings.Count(csv, ",failed,fake failure for 4MB\n"); n != 6 {
		t.Errorf("%d failed rows, want 6:\n%s", n, csv)
	}
	if n := strings.Count(csv, ",ok,\n"); n != 18 {
		t.Errorf("%d ok rows, want 18", n)
	}
	// Failed rows have no metrics.
	for _, l := range strings.Split(csv, "\n") {
		if strings.Contains(l, ",failed,") && !strings.Contains(l, ",,,,,") {
			t.Errorf("failed row has metrics: %s", l)
		}
	}
	if n := strings.Count(readFile(t, log), "start "); n != 24 {
		t.Errorf("first pass started %d runs, want 24", n)
	}
	os.Remove(log)
	ok := func() Engine { return &fakeengine.Engine{Log: log} }
	stdout, _, err := runCommand(t, ok, "sweep", filepath.Join(dir, "sweep.yaml"), "--out", out, "--resume")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout, "24 runs (6 ran now, 18 finished before), 0 failed") {
		t.Errorf("re-run summary %q", stdout)
	}
	if n := strings.Count(readFile(t, log), "start "); n != 6 {
		t.Errorf("re-run started %d runs, want the 6 failed ones", n)
	}
	// A third run has nothing to do.
	os.Remove(log)
	if _, _, err := runCommand(t, ok, "sweep", filepath.Join(dir, "sweep.yaml"), "--out", out); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(log); !os.IsNotExist(err) {
		t.Errorf("a finished sweep ran runs again")
	}
}

type panicky struct {
	fakeengine.Engine
	calls atomic.Int32
}

func (p *panicky) Run(ctx context.Context, y []byte, name, dir string) (map[string]float64, error) {
	if p.calls.Add(1) == 2 {
		panic("queue above buffer")
	}
	return p.Engine.Run(ctx, y, name, dir)
}

// TestEnginePanicFailsOneRun: a panicking run is recorded as failed; the others finish.
func TestEnginePanicFailsOneRun(t *testing.T) {
	dir := newSweepDir(t, sweep24)
	s, err := Load(filepath.Join(dir, "sweep.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	runs, err := s.Expand()
	if err != nil {
		t.Fatal(err)
	}
	eng := &panicky{}
	out := filepath.Join(dir, "out")
	sum, err := RunLocal(context.Background(), s, runs, func() Engine { return eng }, LocalOptions{Dir: out, Jobs: 1})
	if err != nil {
		t.Fatal(err)
	}
	if sum.OK != 23 || sum.Failed != 1 || !strings.Contains(sum.FirstError, ": panic: queue above buffer\n") {
		t.Errorf("summary %+v", sum)
	}
	rec, ok := ReadRecord(out, runs[1].ID)
	if !ok || rec.Status != StatusFailed || !strings.HasPrefix(rec.Error, "panic: queue above buffer\ngoroutine ") {
		t.Errorf("record of the panicking run: %+v", rec)
	}
}

// TestCancelledRunsAreNotRecorded: cancelling a sweep abandons runs in flight uncommitted.
func TestCancelledRunsAreNotRecorded(t *testing.T) {
	dir := newSweepDir(t, sweep24)
	s, _ := Load(filepath.Join(dir, "sweep.yaml"))
	runs, _ := s.Expand()
	out := filepath.Join(dir, "out")
	// The sweep is cancelled when the third run has finished (not after a wall-clock time, which
	// a loaded machine may spend before any run ends): the runs finished before are committed,
	// the third and the one in flight beside it are not.
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	stop := errors.New("stopped by the test")
	var finished atomic.Int32
	eng := func() Engine {
		return cancelAfter{Engine: &fakeengine.Engine{SleepMin: 20 * time.Millisecond, SleepMax: 21 * time.Millisecond},
			finished: &finished, after: 3, cancel: func() { cancel(stop) }}
	}
	sum, err := RunLocal(ctx, s, runs, eng, LocalOptions{Dir: out, Jobs: 2})
	if !errors.Is(err, stop) {
		t.Fatalf("error %v, want the test's cancellation", err)
	}
	entries, _ := os.ReadDir(filepath.Join(out, "runs"))
	var committed int
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") {
			committed++
		}
	}
	if committed != sum.OK || sum.Failed != 0 || committed == 0 || committed >= 24 {
		t.Errorf("%d records committed, summary %+v; want 0 < ok == committed < 24 and no failures", committed, sum)
	}
}

// cancelAfter runs its Engine and cancels the sweep when the after-th run has finished.
type cancelAfter struct {
	*fakeengine.Engine
	finished *atomic.Int32
	after    int32
	cancel   func()
}

func (c cancelAfter) Run(ctx context.Context, data []byte, name, dir string) (map[string]float64, error) {
	m, err := c.Engine.Run(ctx, data, name, dir)
	if err == nil && c.finished.Add(1) == c.after {
		c.cancel()
	}
	return m, err
}

// TestShardsMakeTheSameTable: three shards run one after another into one directory: the
// last one writes the table, which equals the unsharded sweep's.
func TestShardsMakeTheSameTable(t *testing.T) {
	dir := newSweepDir(t, sweep24)
	eng := func() Engine { return &fakeengine.Engine{} }
	sweep := filepath.Join(dir, "sweep.yaml")
	if _, _, err := runCommand(t, eng, "sweep", sweep, "--out", filepath.Join(dir, "all")); err != nil {
		t.Fatal(err)
	}
	sharded := filepath.Join(dir, "sharded")
	counts := 0
	for i := 0; i < 3; i++ {
		stdout, _, err := runCommand(t, eng, "sweep", sweep, "--out", sharded, "--shard", fmt.Sprintf("%d/3", i))
		if err != nil {
			t.Fatal(err)
		}
		if i < 2 && !strings.Contains(stdout, "runs ok (0 finished before); the results table is written when every shard is done") {
			t.Errorf("shard %d: %q", i, stdout)
		}
		if i == 2 && !strings.Contains(stdout, "every shard is done") {
			t.Errorf("last shard: %q", stdout)
		}
		entries, _ := os.ReadDir(filepath.Join(sharded, "runs"))
		if len(entries)-counts != 8 {
			t.Errorf("shard %d committed %d runs, want 8", i, len(entries)-counts)
		}
		counts = len(entries)
	}
	a := readFile(t, filepath.Join(dir, "all", "results.csv"))
	b := readFile(t, filepath.Join(sharded, "results.csv"))
	if a != b {
		t.Errorf("sharded table differs:\n%s\nvs\n%s", b, a)
	}
	// --merge rebuilds the same table.
	os.Remove(filepath.Join(sharded, "results.csv"))
	if _, _, err := runCommand(t, eng, "sweep", sweep, "--out", sharded, "--merge"); err != nil {
		t.Fatal(err)
	}
	if c := readFile(t, filepath.Join(sharded, "results.csv")); c != a {
		t.Errorf("--merge table differs")
	}
}

// TestEditedSweepFailsDigestCheck: a task refuses to run a sweep that changed since
// submission.
func TestEditedSweepFailsDigestCheck(t *testing.T) {
	dir := newSweepDir(t, sweep24)
	_, _, err := runCommand(t, func() Engine { return &fakeengine.Engine{} }, "sweep", filepath.Join(dir, "sweep.yaml"), "--out", filepath.Join(dir, "out"), "--shard", "0/2", "--sweep-digest", "0123456789abcdef")
	if err == nil || !strings.Contains(err.Error(), "sweep.yaml: the sweep now expands to digest ") || !strings.Contains(err.Error(), ", not 0123456789abcdef as when it was submitted") {
		t.Errorf("error %v", err)
	}
}

// BenchmarkSweep24 runs a 24-run sweep of a CPU-bound fake engine (about 2^16 SHA-256 blocks
// per run) with one and two workers; with two free cores jobs=2 takes about half as long.
func BenchmarkSweep24(b *testing.B) {
	dir := newSweepDir(b, sweep24)
	s, err := Load(filepath.Join(dir, "sweep.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	runs, err := s.Expand()
	if err != nil {
		b.Fatal(err)
	}
	for _, jobs := range []int{1, 2} {
		b.Run(fmt.Sprintf("jobs=%d", jobs), func(b *testing.B) {
			eng := func() Engine { return &fakeengine.Engine{Spin: 1 << 16} }
			for i := 0; i < b.N; i++ {
				out := filepath.Join(b.TempDir(), "out")
				if _, err := RunLocal(context.Background(), s, runs, eng, LocalOptions{Dir: out, Jobs: jobs}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(runs)*b.N)/b.Elapsed().Seconds(), "runs/s")
		})
	}
}
