package sweep

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Layout of an output directory:
//
//	DIR/sweep.json          what the sweep expands to (written before any run starts)
//	DIR/runs/<id>.json      one committed Record per finished run
//	DIR/shards/<i>.done     a shard's completion marker (all its runs ok)
//	DIR/results.csv         the results table, rebuilt from DIR/runs
//	DIR/results.parquet     the same table as Parquet
//	DIR/timing.csv          run_id,wall_seconds,status: the host time of each run
//	DIR/sweep.sbatch        the Slurm job array script (--slurm)
//	DIR/slurm/              Slurm task logs
const (
	runsDir   = "runs"
	shardsDir = "shards"
)

// Run statuses.
const (
	StatusOK     = "ok"
	StatusFailed = "failed"
)

// A Record is what a finished run leaves in DIR/runs/<id>.json.
type Record struct {
	RunID       string             `json:"run_id"`
	Seed        int64              `json:"seed"`
	Axes        map[string]string  `json:"axes"`
	Status      string             `json:"status"`
	Error       string             `json:"error,omitempty"`
	Metrics     map[string]float64 `json:"-"`
	WallSeconds float64            `json:"wall_seconds"`
	Started     time.Time          `json:"started"`
	Finished    time.Time          `json:"finished"`
	Host        string             `json:"host,omitempty"`
	Scenario    string             `json:"scenario"`
}

// MarshalJSON writes non-finite metrics as the strings "NaN", "+Inf" and "-Inf".
func (r Record) MarshalJSON() ([]byte, error) {
	type plain Record
	out := struct {
		plain
		Metrics map[string]any `json:"metrics"`
	}{plain: plain(r), Metrics: map[string]any{}}
	for k, v := range r.Metrics {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			out.Metrics[k] = strconv.FormatFloat(v, 'g', -1, 64)
		} else {
			out.Metrics[k] = v
		}
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (r *Record) UnmarshalJSON(b []byte) error {
	type plain Record
	var in struct {
		plain
		Metrics map[string]any `json:"metrics"`
	}
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	*r = Record(in.plain)
	r.Metrics = map[string]float64{}
	for k, v := range in.Metrics {
		switch x := v.(type) {
		case float64:
			r.Metrics[k] = x
		case string:
			f, err := strconv.ParseFloat(x, 64)
			if err != nil {
				return fmt.Errorf("metric %q: %q is not a number", k, x)
			}
			r.Metrics[k] = f
		default:
			return fmt.Errorf("metric %q: %v is not a number", k, v)
		}
	}
	return nil
}

// writeAtomic commits data as path: it writes a temporary file in the same directory, syncs
// it, renames it over path and syncs the directory, so that after a crash path holds either
// the old content or the new, never a torn mix, and a committed file survives power loss.
func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	err = f.Chmod(0o644) // os.CreateTemp makes 0600; results are for everyone who can read DIR
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	// Some filesystems (and all of Windows) cannot sync a directory; the rename still stands.
	if errors.Is(err, os.ErrInvalid) || errors.Is(err, fs.ErrPermission) {
		return nil
	}
	return err
}

func recordPath(dir, id string) string { return filepath.Join(dir, runsDir, id+".json") }

// commitRecord makes a finished run count.
func commitRecord(dir string, rec Record) error {
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(recordPath(dir, rec.RunID), append(b, '\n'))
}

// ReadRecord reads a run's committed record; ok is false when there is none (or it cannot be
// read, in which case the run counts as not finished and runs again).
func ReadRecord(dir, id string) (rec Record, ok bool) {
	b, err := os.ReadFile(recordPath(dir, id))
	if err != nil {
		return Record{}, false
	}
	if err := json.Unmarshal(b, &rec); err != nil || rec.RunID != id {
		return Record{}, false
	}
	return rec, true
}

// Manifest is DIR/sweep.json: what the sweep in DIR expands to.
type Manifest struct {
	Sweep   string        `json:"sweep"`
	Digest  string        `json:"digest"`
	Axes    []string      `json:"axes"`
	Metrics []string      `json:"metrics"`
	Runs    []ManifestRun `json:"runs"`
}

// ManifestRun is one run in the manifest.
type ManifestRun struct {
	ID     string   `json:"id"`
	Seed   int64    `json:"seed"`
	Values []string `json:"values"`
}

func (s *Sweep) manifest(runs []Run) Manifest {
	m := Manifest{Sweep: s.Path, Digest: Digest(runs), Metrics: s.Metrics}
	for _, a := range s.Axes {
		m.Axes = append(m.Axes, a.Column)
	}
	for _, r := range runs {
		m.Runs = append(m.Runs, ManifestRun{ID: r.ID, Seed: r.Seed, Values: r.Labels})
	}
	return m
}

// prepareDir creates DIR and its runs directory and commits DIR/sweep.json. It leaves the
// manifest alone when it already says the same, so concurrent shards do not rewrite it.
func prepareDir(dir string, s *Sweep, runs []Run) error {
	if err := os.MkdirAll(filepath.Join(dir, runsDir), 0o755); err != nil {
		return fmt.Errorf("--out %s: %v", dir, unwrapPathError(err))
	}
	b, err := json.MarshalIndent(s.manifest(runs), "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	path := filepath.Join(dir, "sweep.json")
	if old, err := os.ReadFile(path); err == nil && string(old) == string(b) {
		return nil
	}
	if err := writeAtomic(path, b); err != nil {
		return fmt.Errorf("--out %s: %v", dir, err)
	}
	return nil
}

// readManifestDigest returns the digest in DIR/sweep.json, or "" when there is none.
func readManifestDigest(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "sweep.json"))
	if err != nil {
		return ""
	}
	var m Manifest
	if json.Unmarshal(b, &m) != nil {
		return ""
	}
	return m.Digest
}

// A shardMarker is DIR/shards/<i>.done: every run of shard i of n is committed with status ok.
type shardMarker struct {
	Shard  string    `json:"shard"`
	Digest string    `json:"digest"`
	Runs   int       `json:"runs"`
	Host   string    `json:"host,omitempty"`
	Time   time.Time `json:"time"`
}

func markerPath(dir string, i int) string {
	return filepath.Join(dir, shardsDir, strconv.Itoa(i)+".done")
}

func writeMarker(dir string, sh Shard, digest string, runs int) error {
	if err := os.MkdirAll(filepath.Join(dir, shardsDir), 0o755); err != nil {
		return err
	}
	host, _ := os.Hostname()
	b, err := json.MarshalIndent(shardMarker{Shard: sh.String(), Digest: digest, Runs: runs, Host: host, Time: time.Now().UTC()}, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(markerPath(dir, sh.Index), append(b, '\n'))
}

// markerDone reports whether shard sh of the sweep with this digest has its marker.
func markerDone(dir string, sh Shard, digest string) bool {
	b, err := os.ReadFile(markerPath(dir, sh.Index))
	if err != nil {
		return false
	}
	var m shardMarker
	return json.Unmarshal(b, &m) == nil && m.Shard == sh.String() && m.Digest == digest
}

// removeStaleTemps deletes temporary files that killed writers left in DIR/runs. Only call it
// when no other process writes to DIR.
func removeStaleTemps(dir string) {
	for _, sub := range []string{runsDir, shardsDir, "."} {
		entries, _ := os.ReadDir(filepath.Join(dir, sub))
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".tmp-") {
				os.Remove(filepath.Join(dir, sub, e.Name()))
			}
		}
	}
}
