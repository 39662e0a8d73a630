package backend

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// TestRunPercent: the GOGC that gives a live heap L room for max(H, L) before the next
// collection is 100 max(H, L) / L (the collector's goal is L (1 + GOGC/100)).
func TestRunPercent(t *testing.T) {
	const mb = 1 << 20
	for _, c := range []struct {
		live, headroom uint64
		want           int
	}{
		{40 * mb, 64 * mb, 160}, // the k=16 permutation's heap: goal 104 MB
		{16 * mb, 64 * mb, 400},
		{64 * mb, 64 * mb, 100}, // from here on, the default
		{1 << 30, 64 * mb, 100},
		{0, 64 * mb, 100}, // unknown live heap: the default
	} {
		if got := runPercent(c.live, c.headroom); got != c.want {
			t.Errorf("runPercent(%d, %d) = %d, want %d", c.live, c.headroom, got, c.want)
		}
	}
}

// TestGCForRunRestores: the setting is the run's alone, and a user's GOGC is left alone.
func TestGCForRunRestores(t *testing.T) {
	goGC123(t)
	restore := gcForRun(1 << 40) // far above any test's heap: a large percent
	during := debug.SetGCPercent(-1)
	debug.SetGCPercent(during) // put back what the read took out
	if during <= 123 {
		t.Errorf("during the run GOGC = %d, want above 123", during)
	}
	restore()
	if got := debug.SetGCPercent(100); got != 123 {
		t.Errorf("after the run GOGC = %d, want 123 restored", got)
	}
	t.Setenv("GOGC", "50")
	debug.SetGCPercent(50)
	gcForRun(1 << 40)()
	if got := debug.SetGCPercent(100); got != 50 {
		t.Errorf("with GOGC=50 set by the user GOGC = %d, want 50 left alone", got)
	}
}

// TestGCForRunOnePass: the first collection after gcForRun puts the previous GOGC back.
func TestGCForRunOnePass(t *testing.T) {
	goGC123(t)
	restore := gcForRun(1 << 40)
	defer restore()
	runtime.GC() // the collection that ends the pass; its finalizer runs on another goroutine
	for i := 0; i < 1000; i++ {
		runtime.Gosched()
		time.Sleep(time.Millisecond)
		got := debug.SetGCPercent(-1)
		debug.SetGCPercent(got)
		if got == 123 {
			return
		}
	}
	t.Error("GOGC not put back to 123 after the first collection")
}

// TestGCForRunOneHolder: a second run in the same process leaves the first one's setting alone,
// so the first one's restore puts back the setting from before both.
func TestGCForRunOneHolder(t *testing.T) {
	goGC123(t)
	first := gcForRun(1 << 40)
	second := gcForRun(1 << 40)
	second()
	first()
	if got := debug.SetGCPercent(100); got != 123 {
		t.Errorf("after both runs GOGC = %d, want 123", got)
	}
}

// goGC123 clears the user's GOGC and GOMEMLIMIT for the test and sets GOGC to 123, which the
// tests then expect back; the GOGC before the test is put back at its end.
func goGC123(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	prev := debug.SetGCPercent(123)
	t.Cleanup(func() { debug.SetGCPercent(prev) })
}
