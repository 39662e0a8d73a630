package tune

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/fabricsim/fabricsim/sweep"
)

// evalsDir is where evaluations are committed, one sweep record each (DIR/evals/runs/<id>.json);
// batchesDir holds each batch as `tune eval` reads it on a cluster (DIR/batches/<n>.json).
const (
	evalsDir   = "evals"
	batchesDir = "batches"
)

// SlurmOptions run each batch as a Slurm job array (sweep.RunSlurm): task i evaluates shard i of
// the batch with `fabricsim tune eval BATCH --out DIR/evals --shard i/N`.
type SlurmOptions struct {
	// Executable is the fabricsim binary the tasks run.
	Executable string
	// Subcommand selects `tune eval` (usually ["tune", "eval"]).
	Subcommand  []string
	CPUsPerTask int
	Partition   string
	SbatchArgs  []string
	MaxRetries  int
	Poll        time.Duration
	RunTimeout  time.Duration
}

// outcome is what an evaluation produced.
type outcome struct {
	ID      string
	Metrics map[string]float64
	// Err is the simulation's error when it failed (a deadlock, no progress).
	Err  string
	Wall float64
}

// evaluator runs batches of evaluations through the sweep machinery.
type evaluator struct {
	out       string // DIR
	name      string
	dir       string // the scenario's directory
	jobs      int
	newEngine func() sweep.Engine
	slurm     *SlurmOptions
	batch     int // batches run so far
	// ran counts evaluations this process ran (not found committed).
	ran int
}

// runID names an evaluation as the sweep names runs: the first 12 hex digits of the SHA-256 of
// the evaluation without its seed, then "-s" and the seed.
func runID(d evalDoc) (string, []byte, error) {
	seed := d.Seed
	d.Seed = 0
	noSeed, err := d.marshal()
	if err != nil {
		return "", nil, err
	}
	d.Seed = seed
	b, err := d.marshal()
	if err != nil {
		return "", nil, err
	}
	sum := sha256.Sum256(noSeed)
	return hex.EncodeToString(sum[:6]) + "-s" + strconv.FormatUint(seed, 10), b, nil
}

// ErrInterrupted is returned (wrapped) when the context stopped a tune: every evaluation that
// finished is committed, and the same command with --resume continues.
var ErrInterrupted = errors.New("interrupted")

// run evaluates docs (in any order, on the pool or the cluster) and returns their outcomes in
// the order of docs. Evaluations committed before, by this process or an earlier one, are not
// run again.
func (e *evaluator) run(ctx context.Context, docs []evalDoc) ([]outcome, error) {
	ids := make([]string, len(docs))
	var runs []sweep.Run
	seen := map[string]bool{}
	for i, d := range docs {
		id, b, err := runID(d)
		if err != nil {
			return nil, fmt.Errorf("cannot encode evaluation: %w", err)
		}
		ids[i] = id
		if seen[id] {
			continue // the same candidate twice in one batch runs once
		}
		seen[id] = true
		runs = append(runs, sweep.Run{ID: id, Index: len(runs), Seed: int64(d.Seed), Scenario: b})
	}
	e.batch++
	dir := filepath.Join(e.out, evalsDir)
	var todo []sweep.Run
	for _, r := range runs {
		if _, ok := sweep.ReadRecord(dir, r.ID); !ok {
			todo = append(todo, r)
		}
	}
	if len(todo) > 0 {
		s := &sweep.Sweep{Path: filepath.Join(e.out, batchesDir, fmt.Sprintf("%04d.json", e.batch)), Name: e.name, Dir: e.dir}
		var err error
		if e.slurm != nil {
			err = e.runSlurm(ctx, s, todo)
		} else {
			_, err = sweep.RunLocal(ctx, s, todo, e.newEngine, sweep.LocalOptions{Dir: dir, Jobs: e.jobs, SkipFailed: true})
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, ErrInterrupted
			}
			return nil, err
		}
		e.ran += len(todo)
	}
	out := make([]outcome, len(docs))
	for i, id := range ids {
		rec, ok := sweep.ReadRecord(dir, id)
		if !ok {
			return nil, fmt.Errorf("evaluation %s left no record in %s", id, dir)
		}
		out[i] = outcome{ID: id, Metrics: rec.Metrics, Wall: rec.WallSeconds}
		if rec.Status != sweep.StatusOK {
			out[i].Err = rec.Error
			if out[i].Err == "" {
				out[i].Err = "failed"
			}
		}
	}
	return out, nil
}

// batchFile is a batch as DIR/batches/<n>.json holds it for `tune eval`.
type batchFile struct {
	Name string     `json:"name"`
	Dir  string     `json:"dir"`
	Runs []batchRun `json:"runs"`
}

type batchRun struct {
	ID   string `json:"id"`
	Seed int64  `json:"seed"`
	Eval string `json:"eval"`
}

func (e *evaluator) runSlurm(ctx context.Context, s *sweep.Sweep, runs []sweep.Run) error {
	bf := batchFile{Name: s.Name, Dir: s.Dir}
	for _, r := range runs {
		bf.Runs = append(bf.Runs, batchRun{ID: r.ID, Seed: r.Seed, Eval: string(r.Scenario)})
	}
	b, err := json.MarshalIndent(bf, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(s.Path), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(s.Path, append(b, '\n'), 0o644); err != nil {
		return err
	}
	so := e.slurm
	tasks := len(runs)
	if tasks > 1000 {
		tasks = 1000
	}
	_, err = sweep.RunSlurm(ctx, s, runs, sweep.SlurmOptions{
		Dir: filepath.Join(e.out, evalsDir), Executable: so.Executable, Subcommand: so.Subcommand,
		Tasks: tasks, CPUsPerTask: so.CPUsPerTask, Partition: so.Partition, SbatchArgs: so.SbatchArgs,
		MaxRetries: so.MaxRetries, Poll: so.Poll, RunTimeout: so.RunTimeout,
	})
	return err
}

// LoadBatch reads a batch file written for a Slurm array and returns what `tune eval` runs:
// the sweep of it and its runs, sorted as the driver sorted them.
func LoadBatch(path string) (*sweep.Sweep, []sweep.Run, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	var bf batchFile
	if err := json.Unmarshal(b, &bf); err != nil {
		return nil, nil, fmt.Errorf("%s: not a tune batch: %v", path, err)
	}
	s := &sweep.Sweep{Path: path, Name: bf.Name, Dir: bf.Dir}
	var runs []sweep.Run
	for i, r := range bf.Runs {
		runs = append(runs, sweep.Run{ID: r.ID, Index: i, Seed: r.Seed, Scenario: []byte(r.Eval)})
	}
	return s, runs, nil
}

// EvalBatch runs shard sh of the batch file at path into the evaluations directory out, jobs at
// a time: what a Slurm array task of a tune runs (`fabricsim tune eval`). digest, when set, must
// be the batch's (sweep.Digest), so that a task never runs a batch rewritten since submission.
// An evaluation that fails is committed as failed and not retried (a deadlock stays one).
func EvalBatch(ctx context.Context, path, out string, sh sweep.Shard, jobs int, digest string, runTimeout time.Duration, newEngine func() sweep.Engine) (sweep.Summary, error) {
	s, runs, err := LoadBatch(path)
	if err != nil {
		return sweep.Summary{}, err
	}
	if digest != "" && sweep.Digest(runs) != digest {
		return sweep.Summary{}, fmt.Errorf("%s has digest %s, not %s as when it was submitted", path, sweep.Digest(runs), digest)
	}
	if newEngine == nil {
		newEngine = func() sweep.Engine { return Engine{} }
	}
	return sweep.RunLocal(ctx, s, runs, newEngine, sweep.LocalOptions{Dir: out, Jobs: jobs, Shard: sh, RunTimeout: runTimeout, SkipFailed: true})
}
