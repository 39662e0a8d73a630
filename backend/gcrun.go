package backend

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// RunHeadroom is how far the heap may grow, from what the set-up left live, before the first
// collection inside a packet run that owns its process (PacketOptions.OwnProcess). The engine
// allocates most of its state as the run goes (queues, events, per-flow records): a k=16
// permutation starts its run with about 5 MB live and ends it with about 47 MB, collected two
// or three times on the way with the default GOGC, each time on a partition's core when it runs
// on two threads (docs/architecture.md, "Work per window"). 128 MB leaves those collections
// out of such runs.
const RunHeadroom = 128 << 20

// gcForRun sets the collector for one packet run that owns the process: one collection now,
// after the set-up, then a GOGC that lets the heap grow by max(headroom, live heap) before the
// next (live the heap this collection left), so never less room than the default GOGC of 100.
// It is a single pass: the first collection after it puts the previous GOGC back (a finalizer
// on an object dropped at once runs after that collection), so a run whose heap outgrows the
// headroom is collected as by default from there on, and its peak is at most the default's or
// the set-up's live heap plus the headroom. Where the user set GOGC or GOMEMLIMIT it does
// nothing: theirs is the policy. It returns what restores the previous setting at the run's
// end. Results do not depend on it: the collector moves no simulated state.
func gcForRun(headroom uint64) (restore func()) {
	if headroom == 0 || os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	if !gcRunActive.CompareAndSwap(false, true) {
		return func() {} // another run of the process holds it (tests run `run` side by side)
	}
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	var live uint64
	if s[0].Value.Kind() == metrics.KindUint64 {
		live = s[0].Value.Uint64()
	}
	prev := debug.SetGCPercent(runPercent(live, headroom))
	once := new(gcPass)
	runtime.SetFinalizer(once, func(*gcPass) { debug.SetGCPercent(prev) })
	return func() {
		debug.SetGCPercent(prev)
		gcRunActive.Store(false)
	}
}

// gcRunActive is set while a run holds gcForRun's setting, so that two runs in one process do
// not restore each other's.
var gcRunActive atomic.Bool

// gcPass is the object whose finalizer ends gcForRun's pass (large enough not to be batched
// with other tiny allocations, which would delay its finalizer).
type gcPass struct{ _ [2]*int }

// runPercent is the GOGC that lets a heap of live bytes grow by max(headroom, live) before the
// next collection: at least 100 (the default), and 100 where the live heap is unknown.
func runPercent(live, headroom uint64) int {
	if live == 0 || live >= headroom {
		return 100
	}
	p := headroom * 100 / live
	if p > 1<<20 {
		p = 1 << 20
	}
	return int(p)
}
