package sim

import (
	"os"
	"runtime"
	"sync/atomic"
	"time"
)

// The Group's hand-offs between the coordinator and the workers (one a window, or two when the
// owner's exchange between windows cannot run with the next window) wait by spinning before
// they sleep. A goroutine blocked on a channel parks its thread (a futex sleep) when it has
// nothing else to run, and the next hand-off then waits for the kernel to wake a thread on the
// idle core; worse, the goroutine that wakes may be resumed on the other core, or the idle core
// may have run something else meanwhile, so the partition's next window starts with cold
// caches. With two cores to itself, a k=16 InfiniBand window took 0.81 ms of work a partition
// after a sleeping hand-off and 0.48 ms after a spinning one (medians; docs/architecture.md,
// "Sleeping hand-offs"). A waiter that spins sees the other side's atomic write within a cache-line
// transfer and keeps its core.
//
// A waiter spins only when there are at least as many Ps (GOMAXPROCS) as partitions, so that
// it never holds the P the goroutine it waits for needs, and for at most its spin budget. The
// budget follows the waits: after a wait that outlasted the budget and slept, it becomes twice
// that wait when the wait was within SpinWait (a spin that long would have caught it: the
// windows are uneven by more than the budget), and half the budget when it was longer (the
// other side's thread was descheduled, as on a machine with more runnable threads than cores,
// where the waiting then soon sleeps almost at once, as a channel's would). A wait the spin
// catches leaves the budget as it is. (It used to double after a caught wait and halve after
// any other; on idle cores, once a few uneven windows had halved it below the typical wait,
// every wait slept and the budget never grew back.) The results do not depend on any of this,
// only the waiting does.

// SpinWait is the longest a Group's waiter spins before it sleeps; 0 sleeps at once. The
// environment variable FABRICSIM_SPIN (a Go duration, "0" or "100us") sets it at start, for
// measuring; a value that does not parse leaves the default.
var SpinWait = spinDefault()

func spinDefault() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("FABRICSIM_SPIN")); err == nil && d >= 0 {
		return d
	}
	return 2 * time.Millisecond
}

// minSpin is the least budget a waiter keeps after waits longer than SpinWait.
const minSpin = 2 * time.Microsecond

// waiter is one goroutine's place to wait: sleeping is set while it may be blocked on wake.
type waiter struct {
	sleeping atomic.Bool
	wake     chan struct{} // a token: buffered, one
	max      time.Duration // the spin budget when spinning pays (0: never spin)
	spin     time.Duration // the current budget
	// spun and slept count the waits that the spin caught and those that slept; waited sums
	// the wall time of every wait that did not find its count already reached.
	spun, slept uint64
	waited      time.Duration
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
	start := time.Now()
	if w.spin > 0 {
		for i := 1; ; i++ {
			if c.Load() >= target {
				w.spun++
				w.waited += time.Since(start)
				return
			}
			if i&127 == 0 && time.Since(start) > w.spin {
				break
			}
		}
	}
	w.slept++
	w.sleep(c, target)
	d := time.Since(start)
	w.waited += d
	if w.max > 0 {
		w.spin = w.budget(d)
	}
}

// budget is the spin budget after a wait of d that slept.
func (w *waiter) budget(d time.Duration) time.Duration {
	if d <= w.max {
		return min(2*d, w.max)
	}
	return max(w.spin/2, minSpin)
}

// sleep blocks until c reaches at least target.
func (w *waiter) sleep(c *atomic.Uint64, target uint64) {
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
