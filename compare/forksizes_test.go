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
// control), and roce-default, whose do not (DCQCN times its CNPs with the path latency, which
// differs with the size: flow/fork.go, twin.start), one step.
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
	var out [2][]byte
	var forked [2]int64
	for i, noFork := range []bool{false, true} {
		before, _ := flow.ForkCounts()
		r := run(Options{NoForkSizes: noFork})
		after, _ := flow.ForkCounts()
		forked[i] = after - before
		r.WallSeconds = 0
		for _, v := range r.Variants {
			v.SimWall = 0
		}
		out[i], _ = json.Marshal(r)
	}
	if !bytes.Equal(out[0], out[1]) {
		t.Errorf("the compare with the smaller runs forked differs from the one with both sizes run")
	}
	if forked[0] == 0 || forked[1] != 0 {
		t.Errorf("%d smaller runs forked (with NoForkSizes %d); want some, and none", forked[0], forked[1])
	}
	t.Logf("%d smaller runs forked", forked[0])
}
