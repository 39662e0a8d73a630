package compare

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/backend"
	"github.com/fabricsim/fabricsim/examples"
)

// TestDefaultScenario: the embedded default is at least 1,024 GPUs whose rails span several
// leaves (so traffic crosses the spines), and auto runs it on the flow backend because the
// packet backend is estimated above the 60 s budget. The choice is made before any simulation:
// a cancelled context returns it without running one.
func TestDefaultScenario(t *testing.T) {
	data, err := examples.Read("compare-default.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse(data, "compare-default.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	if s.Workload.GPUs < 1024 || s.Backend != backend.Auto {
		t.Errorf("default: %d GPUs on %s, want at least 1,024 on auto", s.Workload.GPUs, s.Backend)
	}
	g, err := s.Topology()
	if err != nil {
		t.Fatal(err)
	}
	if !railSpansLeaves(g) {
		t.Errorf("default: every rail on one leaf, nothing crosses the spines")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Cancelled as its simulations start (the first Progress call): the choice is made.
	r, err := Run(ctx, s, Options{Progress: func(int, int) { cancel() }})
	if !errors.Is(err, ErrInterrupted) || r == nil {
		t.Fatalf("cancelled run: %v", err)
	}
	for _, v := range r.Variants {
		reason := v.BackendReason
		if v.Backend != backend.Flow || !strings.HasPrefix(reason, "flow: estimated ") || !strings.HasSuffix(reason, "above the 60 s budget") {
			t.Errorf("%s: %s, %q; want flow above the 60 s budget", v.Variant.Name, v.Backend, reason)
		}
		// 60 s at 2.5 M events/s (1,024 hosts) is 150 M events.
		if e := estimatedEvents(t, reason); e <= 150e6 {
			t.Errorf("%s: %q: estimate within the budget", v.Variant.Name, reason)
		}
	}
}

// sibling is the default's mechanism at 32 GPUs: Mixtral-shaped experts with EP 4 inside a
// leaf and expert-data-parallel rings across the 4 leaves of each rail (radix 8, 1:1: 4
// servers per leaf with 4 uplinks, 4 spines), so the gradient rings cross the spines by ECMP
// hash on RoCE and static tables or adaptive routing on InfiniBand.
const sibling = `name: sibling
seed: 1
steps: 1
cluster: {servers: 16, gpus_per_server: 2, link_rate: 400Gbps, radix: 8, oversubscription: 1}
workload:
  kind: training
  model: {base: mixtral-8x7b, layers: 2, hidden: 1024, ffn: 2048, heads: 8, kv_heads: 8, vocab: 16000, experts: 4, top_k: 2}
  gpu: h100
  tp: 2
  dp: 16
  ep: 4
  zero: 1
  global_batch: 16
  seq_len: 2048
variants:
  - ib-ndr
  - {name: ib-ndr-static, base: ib-ndr, fabric: {adaptive_routing: false}}
  - roce-default
  - roce-pfc-only
`

// TestDefaultSiblingGap: the fabric gap of the default's mechanism, on the flow backend (the
// default's), against the packet backend's figures for the same scenario and seed (fabricsim
// compare --backend packet: ib-ndr-static 9.1 %, roce-pfc-only 13.9 % slower per step than
// ib-ndr; roce-default over four seeds, below), within 5 percentage points (docs/flow.md's validation allows
// 10 for the MoE gap). The mechanisms show in the counters: static InfiniBand routing stalls
// on credits where adaptive routing spreads the load; RoCEv2 pauses.
func TestDefaultSiblingGap(t *testing.T) {
	r := run(t, sibling, Options{Backend: backend.Flow})
	ib := variant(t, r, "ib-ndr")
	for name, packet := range map[string]float64{"ib-ndr-static": 9.1, "roce-pfc-only": 13.9} {
		gap := 100 * (variant(t, r, name).StepTime/ib.StepTime - 1)
		if math.Abs(gap-packet) > 5 {
			t.Errorf("%s %.1f %% slower than ib-ndr, packet backend %.1f %%: beyond 5 points", name, gap, packet)
		}
	}
	// roce-default's gap moves with the seed (ECMP hashes and DCQCN's mark draws) far more than
	// the tolerance on both backends: the packet backend's is 33.3, 17.9, 12.1 and 9.0 % for
	// seeds 1-4 (fabricsim compare --backend packet of this scenario with each seed), so it is
	// held as the mean over those seeds, 18.1 %. (A single seed is one draw of DCQCN's chaos: a
	// rounding-level change in the flow backend moved seed 1 from 31.5 to 26.1 % and left seeds
	// 2-4 as they were; docs/flow.md, "Merged queue entries".)
	var gap float64
	for seed := 1; seed <= 4; seed++ {
		rs := r
		if seed > 1 {
			rs = run(t, strings.Replace(sibling, "seed: 1\n", fmt.Sprintf("seed: %d\n", seed), 1), Options{Backend: backend.Flow})
		}
		gap += 100 * (variant(t, rs, "roce-default").StepTime/variant(t, rs, "ib-ndr").StepTime - 1) / 4
	}
	if packet := 18.1; math.Abs(gap-packet) > 5 {
		t.Errorf("roce-default %.1f %% slower than ib-ndr over seeds 1-4, packet backend %.1f %%: beyond 5 points", gap, packet)
	}
	if st := variant(t, r, "ib-ndr-static").CreditStall; st <= ib.CreditStall {
		t.Errorf("credit stall: static %g s, adaptive %g s; want more without adaptive routing", st, ib.CreditStall)
	}
	for _, name := range []string{"roce-default", "roce-pfc-only"} {
		if p := variant(t, r, name).Pauses; p <= 0 {
			t.Errorf("%s: no PFC pauses", name)
		}
	}
}
