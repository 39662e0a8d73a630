package compare

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/fabricsim/fabricsim/backend"

	"github.com/fabricsim/fabricsim/collective"
	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/training"
	"github.com/fabricsim/fabricsim/units"
)

// TestRingPrefixMatchesCollective: a prefix of every step is collective's ring message for
// message (the prefix compiler repeats collective's schedule, so this pins it to it).
func TestRingPrefixMatchesCollective(t *testing.T) {
	s := scaleScenario(t, 64, "model: llama3-8b, tp: 8, dp: 64, global_batch: 512")
	for _, c := range []struct {
		kind  training.OpKind
		n     int
		bytes units.Size
	}{
		{training.AllReduce, 40, 25 * units.MiB},
		{training.ReduceScatter, 40, 15914 * units.KiB},
		{training.AllGather, 64, 3*units.MiB + 7},
		{training.ReduceScatter, 5, 64 * units.MiB}, // several passes per channel
	} {
		ranks := make([]int, c.n)
		for i := range ranks {
			ranks[i] = 8*i + 3 // rail 3 of every server
		}
		o := &training.Op{Kind: c.kind, Ranks: ranks, Bytes: c.bytes, Dim: "dp", Tag: "op"}
		want := &msggraph.Graph{Endpoints: 512}
		sp := s.collSpec(o)
		sp.Tag = "x"
		if _, err := collective.Compile(want, sp); err != nil {
			t.Fatal(err)
		}
		want.Msgs = want.Msgs[:len(want.Msgs)-c.n] // the done nodes
		got := &msggraph.Graph{Endpoints: 512}
		rp, err := s.compileRingPrefix(got, o, "x", 0)
		if err != nil {
			t.Fatal(err)
		}
		s.lowerToCluster(want, 0)
		if len(got.Msgs) != len(want.Msgs) || rp.k != rp.steps {
			t.Fatalf("%v n=%d: %d messages (k %d of %d), want %d", c.kind, c.n, len(got.Msgs), rp.k, rp.steps, len(want.Msgs))
		}
		for i := range got.Msgs {
			a, b := got.Msgs[i], want.Msgs[i]
			if a.Src != b.Src || a.Dst != b.Dst || a.Bytes != b.Bytes || a.Conn != b.Conn || a.Delay != b.Delay || a.Tag != b.Tag || len(a.Deps) != len(b.Deps) || len(a.Deps) == 1 && a.Deps[0] != b.Deps[0] {
				t.Fatalf("%v n=%d: message %d = %+v, want %+v", c.kind, c.n, i, a, b)
			}
		}
	}
}

// ringsAcrossSUs is a one-step compare named name, of the listed variants, whose DP rings (40
// ranks: 39 steps per reduce-scatter and all-gather pass) cross scalable units through the
// core tier of a three-tier Clos.
func ringsAcrossSUs(name, variants string) string {
	return "name: " + name + `
seed: 1
steps: 1
tokens: 1T
cluster: {servers: 40, gpus_per_server: 8, link_rate: 400Gbps, radix: 64, tiers: 3, servers_per_su: 8}
workload: {kind: training, gpu: h100, zero: 1, seq_len: 8192, model: llama3-8b, tp: 8, dp: 40, global_batch: 320}
variants: [` + variants + `]
`
}

// TestRingPrefixMatchesWholeRing runs a compare whose DP rings (40 ranks: 39 steps per
// reduce-scatter and all-gather pass) cross scalable units through the core tier, on the flow
// backend with ring prefixes and with whole rings, and checks every variant's step time and
// collective percentiles against the whole rings': the step time within 2 % and the
// collective completion percentiles within the flow backend's 10 % (measured: step -0.5 %,
// p50 -2.6 %, p99 -7.5 % on the RoCE variants, where one ring's collisions change after the
// prefix; docs/flow.md, "Ring prefixes").
func TestRingPrefixMatchesWholeRing(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	src := ringsAcrossSUs("prefix", "ib-ndr, roce-default, roce-tuned, roce-pfc-only")
	s, err := Parse([]byte(src), "prefix.yaml", ".")
	if err != nil {
		t.Fatal(err)
	}
	run := func(whole bool, workers int) *Result {
		r, err := Run(context.Background(), s, Options{Backend: backend.Flow, Fidelity: FidelityClasses, WholeCollectives: whole, Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	pre, whole := run(false, 1), run(true, 0)
	// The extrapolation is a function of the run: the same bytes with several workers.
	var out [2]bytes.Buffer
	for k, r := range []*Result{pre, run(false, 4)} {
		r.WallSeconds = 0
		for _, v := range r.Variants {
			v.SimWall = 0
		}
		if err := json.NewEncoder(&out[k]).Encode(r); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(out[0].Bytes(), out[1].Bytes()) {
		t.Error("the ring prefixes' compare differs between 1 and 4 workers")
	}
	checkReducedMatchesWhole(t, "prefix", pre, whole)
}
