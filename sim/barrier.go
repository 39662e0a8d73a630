package sim

import (
	"os"
	"runtime"
	"sync/atomic"
	"time"
)

// The Group's hand-offs between the coordinator and the workers (two a window when the owner
// exchanges state between windows: the window, then the exchange) wait by spinning before
// they sleep. A goroutine blocked on a channel parks its thread (a futex sleep) when it has
// nothing else to run, and the next hand-off then waits for the kernel to wake a thread on the
// idle core, tens of microseconds, twice a window, where an InfiniBand window at k=16 holds
// about 0.8 ms of work a partition (docs/architecture.md, "The parallel engine"). A waiter
// that spins sees the other side's atomic write within a cache-line transfer.
//
// A waiter spins only when there are at least as many Ps (GOMAXPROCS) as partitions, so that
// it never holds the P the goroutine it waits for needs, and for at most its spin budget: twice
// the last budget (up to SpinWait) after a wait that the spin caught, half of it after one it
// did not (the other side's thread was descheduled, on a loaded machine, or the window was
// uneven), so that on a machine with more runnable threads than cores the waiting soon sleeps
// almost at once, as a channel's would. The results do not depend on any of this, only the
// waiting does.

// SpinWait is the longest a Group's waiter spins before it sleeps; 0 sleeps at once. The
// environment variable FABRICSIM_SPIN (a Go duration, "0" or "100us") sets it at start, for
// measuring; a value that does not parse leaves the default.
var SpinWait = spinDefault()

func spinDefault() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("FABRICSIM_SPIN")); err == nil && d >= 0 {
		return d
	}
	return 100 * time.Microsecond
}

// minSpin is the least budget a waiter keeps after waits the spin did not catch, so that it
// notices when they start being caught again.
const minSpin = 2 * time.Microsecond

// waiter is one goroutine's place to wait: sleeping is set while it may be blocked on wake.
type waiter struct {
	sleeping atomic.Bool
	wake     chan struct{} // a token: buffered, one
	max      time.Duration // the spin budget when spinning pays (0: never spin)
	spin     time.Duration // the current budget
	// spun and slept count the waits that the spin caught and those that slept.
	spun, slept uint64
	_           [64]byte // keep other goroutines' words off its line
}

// newWaiter returns a waiter for a Group of parts partitions.
func newWaiter(parts int) *waiter {
	w := &waiter{wake: make(chan struct{}, 1)}
	if runtime.GOMAXPROCS(0) >= parts {
		w.max, w.spin = SpinWait, SpinWait
	}
	return w
}

// await returns once c reaches at least target, spinning for up to the budget first.
func (w *waiter) await(c *atomic.Uint64, target uint64) {
	if c.Load() >= target {
		return
	}
	if w.spin > 0 {
		start := time.Now()
		for i := 1; ; i++ {
			if c.Load() >= target {
				w.spun++
				w.spin = min(2*w.spin, w.max)
				return
			}
			if i&127 == 0 && time.Since(start) > w.spin {
				break
			}
		}
		w.spin = max(w.spin/2, minSpin)
	}
	w.slept++
	for {
		// Announce the sleep, then look again: a signaller writes its counter, then reads
		// sleeping (both sequentially consistent), so one of the two sees the other's write.
		w.sleeping.Store(true)
		if c.Load() >= target {
			w.sleeping.Store(false)
			return
		}
		<-w.wake
		w.sleeping.Store(false)
		if c.Load() >= target {
			return
		}
	}
}

// signal wakes w if it sleeps (after the caller's counter write). A token left from a wake-up
// the waiter did not need only makes its next sleep look at its counter once more.
func (w *waiter) signal() {
	if w.sleeping.Load() {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}
