package runner

import (
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/fabric"
)

// TestExamplesParallelGolden runs the `fabricsim run` examples with 2, 3 and 4 packet-engine
// threads (with --check) and compares every output with the sequential run's golden hashes
// (testdata/examples.sha256, which TestExamplesGolden checks with one thread): the parallel
// engine must give the same bytes for every thread count. An example the engine keeps
// sequential (Parallel says why) is run with 2 threads only, to check that it falls back; the
// Ethernet permutations and leaf-spine example must really be partitioned.
func TestExamplesParallelGolden(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the examples take about a minute with 2, 3 and 4 threads")
	}
	want := goldenHashes(t)
	mustSplit := map[string]bool{"permutation-k8.yaml": true, "permutation-k16.yaml": true, "leaf-spine-2to1.yaml": true, "ib-permutation-k16.yaml": true, "ib-permutation-ar.yaml": true, "ib-incast-32.yaml": true}
	parallel := map[string]bool{}
	for _, threads := range []int{2, 3, 4} {
		var cur string
		split := map[string]fabric.ParallelInfo{}
		opt := Options{Check: true, Threads: threads, Parallel: func(i fabric.ParallelInfo) { split[cur] = i }}
		got := exampleHashes(t, opt, func(name string) bool {
			cur = name
			return threads == 2 || parallel[name]
		})
		for k, h := range got {
			if want[k] != h {
				t.Errorf("%d threads: %s differs from the sequential run's golden hash", threads, k)
			}
		}
		for name, i := range split {
			if i.Partitions > 1 {
				parallel[name] = true
				t.Logf("%d threads: %s: %s; %d windows, %d events (%.0f a window), %d handed over", threads, name, i.Reason, i.Windows, i.Events, float64(i.Events)/float64(max(i.Windows, 1)), i.HandedOver)
			} else if threads == 2 {
				t.Logf("%d threads: %s sequential: %s", threads, name, i.Reason)
			}
		}
		for name := range mustSplit {
			if i := split[name]; i.Partitions < 2 || !strings.Contains(i.Reason, "partitions") {
				t.Errorf("%d threads: %s ran in %d partitions (%s), want at least 2", threads, name, i.Partitions, i.Reason)
			}
		}
	}
}
