package flow_test

import (
	"testing"

	"github.com/fabricsim/fabricsim/collective"
	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/flow"
	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

// TestPerFlowARRuleRailPlane: the spread rule (arflows.go) forms families on validation rows 17
// and 18 (the 1,024-GPU jitter example's EP all-to-all and expert-DP reduce-scatter classes on
// one rail plane, whose leaves' parallel uplinks differ: the mismatch factor 1.25), where the packet
// backend is 11 and 38 % slower than the pooled bundles (docs/flow.md, "The spread rule on a rail
// plane"); and keeps the pooled bundles on the same EP all-to-all on a 96-NIC plane (8 leaves,
// two links from each to each of 2 spines: no mismatch, the spread term 0.9 %), where the pooled
// bundles are within 1.6 % of the packet backend's completion (the same section).
func TestPerFlowARRuleRailPlane(t *testing.T) {
	for _, c := range []struct {
		name     string
		build    func(testing.TB) (*topo.Graph, fabric.Config, *msggraph.Graph)
		families bool
	}{
		{"row 17", railPlane3to1(true), true},
		{"row 18", railPlane3to1(false), true},
		{"EP all-to-all, 96 NICs", epPlane96, false},
	} {
		g, cfg, mg := c.build(t)
		rule, err := flow.Run(g, nil, cfg, mg, flow.Options{})
		if err != nil {
			t.Fatal(err)
		}
		ref := flow.Options{PooledAR: true}
		if c.families {
			ref = flow.Options{PerFlowAREverywhere: true}
		}
		want, err := flow.Run(g, nil, cfg, mg, ref)
		if err != nil {
			t.Fatal(err)
		}
		for i := range want.Messages {
			if want.Messages[i].Finish != rule.Messages[i].Finish {
				t.Fatalf("%s: message %d: %+v gives %v, the rule %v", c.name, i, ref, want.Messages[i].Finish, rule.Messages[i].Finish)
			}
		}
	}
}

// epPlane96 is railPlane3to1(true)'s EP all-to-all (6 groups of 16) on a 96-NIC plane: 8 leaves of
// 12 NICs, two uplinks from each leaf to each of 2 spines.
func epPlane96(t testing.TB) (*topo.Graph, fabric.Config, *msggraph.Graph) {
	g, err := topo.Clos(topo.ClosSpec{Servers: 96, NICsPerServer: 1, RailOptimized: true, Radix: 16, Oversubscription: []float64{3},
		NIC:       topo.LinkSpec{Rate: 400 * units.Gbps, Latency: 100 * units.Nanosecond},
		LeafSpine: topo.LinkSpec{Rate: 400 * units.Gbps, Latency: 150 * units.Nanosecond}})
	if err != nil {
		t.Fatal(err)
	}
	var specs []collective.Spec
	for j := int32(0); j < 6; j++ {
		var ranks []int32
		for i := int32(0); i < 16; i++ {
			ranks = append(ranks, 16*j+i)
		}
		specs = append(specs, collective.Spec{Op: collective.AllToAll, Ranks: ranks, Bytes: 4 * units.MiB, Channels: 2})
	}
	return g, ibNDR(t, true), compile(t, 96, specs...)
}
