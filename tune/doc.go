// Package tune searches a fabric's settings for the user's own workload: `fabricsim tune`. On a
// compare scenario it tunes one RoCE variant (roce-default unless told otherwise) for the
// training step time or the 99th-percentile collective completion; on a run scenario it tunes
// the scenario's fabric for the 99th-percentile flow completion time or the mean slowdown.
//
// The search space (space.go) is ECN's Kmin, Kmax and Pmax, DCQCN's reaction and notification
// point parameters, PFC's dynamic alpha (or static XOFF/XON) and headroom (never below what the
// cable needs, package headroom), and QPs per connection, each over a range around the vendor
// defaults and the published production values; a scenario's tune: section adds or narrows
// ranges by the scenario's own fabric keys (section.go). Every candidate must keep the lossless
// class lossless: no drop, no PFC deadlock or watchdog flush, headroom enough for the cable
// (constraints.go); a candidate that breaks one is reported and never chosen.
//
// The optimizer is CMA-ES (gonum's optimize.CmaEsChol) over the unit cube of the ranges (log
// scales for rates, sizes and times), driven one generation at a time (cma.go): a generation is
// one batch of candidates, evaluated through package sweep's worker pool (or a Slurm job array)
// with each finished evaluation committed atomically under DIR/evals before it counts, and fed
// back in candidate order. The search therefore proposes the same candidates in the same order
// for the same scenario, seed and budget whatever --jobs is and whenever it was interrupted:
// a resumed tune replays the search, finds every evaluation already committed and continues
// where it stopped (search.go).
//
// The winner is then re-evaluated on seeds the search never used and on a second traffic mix,
// with the vendor default, the production values and (compare) InfiniBand beside it, so that the
// report shows whether its gain holds (holdout.go). Run returns a Result, written as tune.json
// (the winner's settings under the scenario's keys, which `compare`'s from_tune reads) and
// report.html. docs/tune.md documents the command.
package tune
