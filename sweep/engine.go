package sweep

import "context"

// Engine is what a sweep needs from the simulator. The sweep command asks its factory for one
// Engine per worker, so an Engine need not be safe for concurrent use.
type Engine interface {
	// Validate loads a resolved scenario (YAML bytes; name is used in error messages, dir
	// resolves relative file paths) strictly and returns an error naming line and field if it
	// is invalid (e.g. unknown key, wrong unit).
	Validate(yaml []byte, name, dir string) error
	// Run runs it and returns the summary metrics (flat, dotted names such as "fct_ns.p99",
	// "drops", "sim_time_ns", "events").
	Run(ctx context.Context, yaml []byte, name, dir string) (map[string]float64, error)
}

// DefaultMetrics are the summary metrics collected when a sweep file has no metrics key:
// flow completion time median and tail, drops, simulated time and the event count.
var DefaultMetrics = []string{"fct_ns.p50", "fct_ns.p99", "drops", "sim_time_ns", "events"}
