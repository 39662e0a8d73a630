package sweep

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"time"
)

// LocalOptions configure RunLocal.
type LocalOptions struct {
	// Dir is the output directory.
	Dir string
	// Jobs is how many runs go at once; 0 means runtime.NumCPU().
	Jobs int
	// Shard selects part of the runs; the zero value selects all.
	Shard Shard
	// RunTimeout fails a run that takes longer; 0 means no limit.
	RunTimeout time.Duration
	// SkipFailed leaves runs that failed before alone instead of running them again.
	SkipFailed bool
	// Progress receives a progress bar (a terminal) or periodic lines; nil for none.
	Progress io.Writer
	// ProgressInterval spaces the plain progress lines; 0 means 10 s.
	ProgressInterval time.Duration
}

// Summary counts what RunLocal did.
type Summary struct {
	// Selected is how many runs the shard holds; Skipped of them had finished before.
	Selected, Skipped int
	// OK and Failed count the runs finished now.
	OK, Failed int
	// FirstError is the error of the first run that failed now.
	FirstError string
	// Marked is true when a sharded run wrote its shard's completion marker.
	Marked bool
}

// RunLocal runs the selected runs that have not finished yet on a pool of local workers, each
// with its own Engine, and commits each result as DIR/runs/<id>.json before counting it. A
// failed run is committed with its error and does not stop the others; it runs again next
// time unless SkipFailed. When ctx is cancelled the runs in flight are abandoned uncommitted
// and RunLocal returns ctx's error. A sharded run (any Shard given, 0/1 included: a one-task
// array) whose runs all end ok writes DIR/shards/<i>.done.
func RunLocal(ctx context.Context, s *Sweep, runs []Run, newEngine func() Engine, opts LocalOptions) (Summary, error) {
	var sum Summary
	if err := prepareDir(opts.Dir, s, runs); err != nil {
		return sum, err
	}
	selected := opts.Shard.Select(runs)
	sum.Selected = len(selected)
	var todo []Run
	for _, r := range selected {
		if rec, ok := ReadRecord(opts.Dir, r.ID); ok && (rec.Status == StatusOK || opts.SkipFailed) {
			sum.Skipped++
			continue
		}
		todo = append(todo, r)
	}
	jobs := opts.Jobs
	if jobs <= 0 {
		jobs = runtime.NumCPU()
	}
	jobs = min(jobs, max(len(todo), 1))
	interval := opts.ProgressInterval
	if interval <= 0 {
		interval = 10 * time.Second
	}
	prog := newProgress(opts.Progress, len(todo), sum.Skipped, interval)

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	host, _ := os.Hostname()
	work := make(chan Run)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := 0; w < jobs; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			eng := newEngine()
			for r := range work {
				rec, ok := runOne(ctx, eng, s, r, opts.RunTimeout)
				if !ok {
					continue // cancelled: the run did not finish, so it is not recorded
				}
				rec.Host = host
				if err := commitRecord(opts.Dir, rec); err != nil {
					cancel(fmt.Errorf("cannot commit run %s: %w", r.ID, err))
					continue
				}
				mu.Lock()
				if rec.Status == StatusOK {
					sum.OK++
				} else {
					sum.Failed++
					if sum.FirstError == "" {
						sum.FirstError = fmt.Sprintf("run %s %s: %s", r.ID, s.describe(r), rec.Error)
					}
				}
				mu.Unlock()
				prog.done(rec.Status != StatusOK)
			}
		}()
	}
feed:
	for _, r := range todo {
		select {
		case work <- r:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	prog.finish()
	if err := context.Cause(ctx); err != nil {
		return sum, err
	}
	if opts.Shard.Count >= 1 && sum.Failed == 0 {
		// Runs skipped as failed-before keep the shard unfinished.
		for _, r := range selected {
			if rec, ok := ReadRecord(opts.Dir, r.ID); !ok || rec.Status != StatusOK {
				return sum, nil
			}
		}
		if err := writeMarker(opts.Dir, opts.Shard, Digest(runs), len(selected)); err != nil {
			return sum, fmt.Errorf("cannot write shard marker: %w", err)
		}
		sum.Marked = true
	}
	return sum, nil
}

// runOne runs r and returns its record; ok is false when ctx was cancelled meanwhile. A panic
// in the Engine fails the run, not the sweep.
func runOne(ctx context.Context, eng Engine, s *Sweep, r Run, timeout time.Duration) (rec Record, ok bool) {
	rec = Record{RunID: r.ID, Seed: r.Seed, Axes: map[string]string{}, Scenario: string(r.Scenario)}
	for a, l := range r.Labels {
		rec.Axes[s.Axes[a].Column] = l
	}
	if ctx.Err() != nil {
		return rec, false
	}
	runCtx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	rec.Started = time.Now().UTC()
	metrics, err := func() (m map[string]float64, err error) {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("panic: %v\n%s", p, debug.Stack())
			}
		}()
		return eng.Run(runCtx, r.Scenario, s.RunName(r), s.Dir)
	}()
	rec.Finished = time.Now().UTC()
	rec.WallSeconds = rec.Finished.Sub(rec.Started).Seconds()
	if ctx.Err() != nil {
		return rec, false
	}
	switch {
	case err == nil:
		rec.Status, rec.Metrics = StatusOK, metrics
	case timeout > 0 && runCtx.Err() != nil:
		rec.Status, rec.Error = StatusFailed, fmt.Sprintf("run took longer than --run-timeout %s: %v", timeout, err)
	default:
		rec.Status, rec.Error = StatusFailed, err.Error()
	}
	if rec.Metrics == nil {
		rec.Metrics = map[string]float64{}
	}
	return rec, true
}
