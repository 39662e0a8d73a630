package flow

import (
	"errors"
	"testing"

	"github.com/fabricsim/fabricsim/units"
)

// TestProgressEvery checks the interval rule of Options.Progress (progressEvery): 4,096 steps up
// to 1,024 messages, inversely proportional above (32,768 messages, the 131,072-GPU pipeline
// class: 128), never under 64.
func TestProgressEvery(t *testing.T) {
	for _, c := range []struct {
		msgs int
		want int64
	}{{0, 4096}, {10, 4096}, {1024, 4096}, {2048, 2048}, {32768, 128}, {65536, 64}, {1 << 20, 64}} {
		if got := progressEvery(c.msgs, 0); got != c.want {
			t.Errorf("progressEvery(%d) = %d, want %d", c.msgs, got, c.want)
		}
	}
}

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
	const every = 50 // the fixture's 24 messages would get 4,096; the run takes 264 steps
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
