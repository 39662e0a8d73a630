//go:build !unix

package flow

// cpuSeconds is not measured where getrusage(2) is missing: benchmarks report wall time only.
func cpuSeconds() float64 { return 0 }
