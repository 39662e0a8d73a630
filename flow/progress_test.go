package flow

import (
	"errors"
	"testing"
	"time"

	"github.com/fabricsim/fabricsim/units"
)

// TestProgressStopsRun checks that a run whose Progress callback returns false stops with
// ErrStopped at that call: the steps it took are one interval's, not the whole run's (the
// incast fixture with DCQCN, 264 steps, the interval set to 50; without the symmetry reduction,
// whose broken run would start a second engine and count again).
func TestProgressStopsRun(t *testing.T) {
	roce, _, _, incasts := railFixtures(t)
	g, mg := incasts(t)
	whole, err := Run(g, nil, roce(true), mg, Options{NoSymmetry: true})
	if err != nil {
		t.Fatal(err)
	}
	total := int64(whole.Counters["flow_steps"])
	const every = 50 // the run takes 264 steps
	if total <= 2*every {
		t.Fatalf("the fixture runs %d steps, too few to see a stop after %d", total, every)
	}
	calls := 0
	g, mg = incasts(t)
	res, err := Run(g, nil, roce(true), mg, Options{NoSymmetry: true, progressSteps: every, Progress: func(units.Time, int, int) bool {
		calls++
		return calls < 2
	}})
	if !errors.Is(err, ErrStopped) {
		t.Fatalf("Progress returned false: err %v, want ErrStopped", err)
	}
	if res == nil {
		t.Fatal("a stopped run returned no results")
	}
	// The first call comes at the first step, the second one interval later.
	if got := int64(res.Counters["flow_steps"]); got > every+1 || got < every-1 {
		t.Errorf("stopped after %d of %d steps, want about %d (one interval)", got, total, every)
	}
}

// TestNextProgressN checks how the interval follows the host time its steps took: cut to 20 ms
// worth above 50 ms (not under 1 step), doubled under 10 ms (not over 4,096), kept between.
func TestNextProgressN(t *testing.T) {
	for _, c := range []struct {
		n    int64
		d    time.Duration
		want int64
	}{
		{128, 2 * time.Second, 1}, {1, time.Second, 1}, {64, 13 * time.Second, 1}, {100, 100 * time.Millisecond, 20}, {128, time.Millisecond, 256},
		{4096, time.Microsecond, 4096}, {3000, time.Microsecond, 4096}, {128, 20 * time.Millisecond, 128},
		{128, 50 * time.Millisecond, 128}, {128, 10 * time.Millisecond, 128},
	} {
		if got := nextProgressN(c.n, c.d); got != c.want {
			t.Errorf("nextProgressN(%d, %v) = %d, want %d", c.n, c.d, got, c.want)
		}
	}
}
