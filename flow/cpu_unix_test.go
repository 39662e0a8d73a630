//go:build unix

package flow

import "syscall"

// cpuSeconds is the process's user + system CPU time so far (getrusage(2)), for benchmarks
// that report CPU beside wall time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
