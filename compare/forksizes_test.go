package compare

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/fabricsim/fabricsim/flow"
)

// TestForkSizesMatchPlain: a compare that forks its congested classes' smaller runs from their
// larger ones (simulateSizes, flow.RunForked) gives the same bytes as one that runs the two sizes
// one after the other (Options.NoForkSizes): the 2,048-GPU shape of TestTwoSizeSendsMatchWhole2048
// (every RoCE pipeline class congested) with roce-pfc-only, whose classes fork (no congestion
// control), and roce-default, whose fork too (DCQCN's CNPs are timed with the first packet's path
// latency, the same at both sizes: flow/fork.go, twin.start), one step. Five of its pairs are
// doubled where their pauses spread (pausesSpread: four of roce-default's, one of
// roce-pfc-only's); by default the run at twice a pair's sizes is forked from the pair's larger
// run and finished where the pair is doubled (simulateSizes' larger), with Options.NoForkDoubled
// run from its start: the same bytes all three ways.
func TestForkSizesMatchPlain(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	src := `name: fork2048
seed: 1
steps: 1
tokens: 1T
fidelity: classes
cluster: {servers: 256, gpus_per_server: 8, link_rate: 400Gbps, radix: 64, tiers: 3, servers_per_su: 32}
workload: {kind: training, gpu: h100, zero: 1, seq_len: 8192, model: llama3-70b, tp: 8, pp: 8, dp: 32, micro_batch: 1, global_batch: 256}
variants: [roce-pfc-only, roce-default]
`
	s, err := Parse([]byte(src), "fork2048.yaml", ".")
	if err != nil {
		t.Fatal(err)
	}
	run := flowRunner(t, s)
	ways := []struct {
		name string
		opt  Options
	}{{"default", Options{}}, {"NoForkDoubled", Options{NoForkDoubled: true}}, {"NoForkSizes", Options{NoForkSizes: true}}}
	var out [3][]byte
	var forked, started, doubled [3]int64
	for i, w := range ways {
		before, _ := flow.ForkCounts()
		s0, d0 := doubledStarted.Load(), doubledForked.Load()
		r := run(w.opt)
		after, _ := flow.ForkCounts()
		forked[i], started[i], doubled[i] = after-before, doubledStarted.Load()-s0, doubledForked.Load()-d0
		r.WallSeconds = 0
		for _, v := range r.Variants {
			v.SimWall = 0
		}
		out[i], _ = json.Marshal(r)
		if i > 0 && !bytes.Equal(out[0], out[i]) {
			t.Errorf("the compare by default differs from the one with %s", w.name)
		}
		t.Logf("%s: %d smaller runs forked; %d pairs started beside their doubled size, %d of them doubled", w.name, forked[i], started[i], doubled[i])
	}
	if forked[0] == 0 || forked[1] == 0 || forked[2] != 0 {
		t.Errorf("smaller runs forked %v (default, NoForkDoubled, NoForkSizes); want some, some, none", forked)
	}
	if doubled[0] == 0 || started[1] != 0 || started[2] != 0 {
		t.Errorf("doubled pairs' larger runs forked %v, started %v; want some by default, none started otherwise", doubled, started)
	}
}
