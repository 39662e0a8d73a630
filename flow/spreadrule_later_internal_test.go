package flow

import (
	"testing"

	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

// TestARLaterMismatch: the spread rule at later stages (arLaterOverload) on the fabric of
// examples/compare-shared-1024.yaml (128 servers of 8 NICs, rail-optimized, radix-16 switches
// at 3:1: 11 pods of 4 spines, a leaf one link to each of its pod's spines; spine j of pod p has
// 2, 2, 1, 1, 1, 1 links to the six cores of plane j, the pair of cores with two turning with
// p mod 3). The 96 NICs of pod 0 (leaf 0 of each rail) each send 1 MB to the NIC in the same
// place in pod 1: a leaf balancing its uplinks puts a quarter of every QP on each spine (no
// mismatch at the first choice: one link to each spine, every QP of a leaf to one leaf, so no
// spread term), and spine j, balancing its core links, puts 2/8 of its bytes on each of cores j_0
// and j_1, which have 1/8 of the links into pod 1's spine j each: a share of 2 x 1/8 beyond
// (factor 1.25); the destinations ask pod 1's spine j for 96 x 1/4 NIC rates over its 8 links
// (rho 3): the estimate is exactly 1.25, and the run forms families with every switch choosing
// per flow by next switch (4 spines x 6 cores: 24 members; every stage per link: 40). To pod 3
// (the same turn as pod 0) the links match: 1, pooled.
func TestARLaterMismatch(t *testing.T) {
	g, err := topo.Clos(topo.ClosSpec{Servers: 128, NICsPerServer: 8, RailOptimized: true, Radix: 16, Oversubscription: []float64{3, 0},
		NIC:       topo.LinkSpec{Rate: 400 * units.Gbps, Latency: 100 * units.Nanosecond},
		LeafSpine: topo.LinkSpec{Rate: 400 * units.Gbps, Latency: 150 * units.Nanosecond},
		SpineCore: topo.LinkSpec{Rate: 400 * units.Gbps, Latency: 150 * units.Nanosecond}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := adaptiveNDR(t)
	for _, c := range []struct {
		pod     int32
		want    float64
		members int
	}{{1, 1.25, 24}, {3, 1, 0}} {
		mg := &msggraph.Graph{Endpoints: len(g.Hosts)}
		for s := int32(0); s < 12; s++ { // servers 0-11 (leaf 0 of every rail) to 12 c.pod on
			for r := int32(0); r < 8; r++ {
				mg.Add(msggraph.Message{Src: 8*s + r, Dst: 8*(12*c.pod+s) + r, Bytes: units.MB})
			}
		}
		e, err := newEngine(g, nil, cfg, mg, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := e.arOverload(mg); got != c.want {
			t.Errorf("pod 0 to pod %d: estimate %v, want %v", c.pod, got, c.want)
		}
		if c.members == 0 {
			if e.ar != nil {
				t.Errorf("pod 0 to pod %d: families formed, want the pooled bundles", c.pod)
			}
			continue
		}
		if e.ar == nil || e.ar.first || !e.ar.bySwitch {
			t.Fatalf("pod 0 to pod %d: want families choosing by next switch at every stage", c.pod)
		}
		if s := e.arShapeOf(0, 8*12*c.pod); s == nil || len(s.paths) != c.members {
			t.Errorf("pod 0 to pod %d: family of %v, want %d members", c.pod, s, c.members)
		}
		a, err := newEngine(g, nil, cfg, mg, Options{PerFlowARAllStages: true})
		if err != nil {
			t.Fatal(err)
		}
		if a.ar == nil || a.ar.bySwitch {
			t.Fatalf("pod 0 to pod %d, every stage per link: want its families", c.pod)
		}
		if s := a.arShapeOf(0, 8*12*c.pod); s == nil || len(s.paths) != 40 {
			t.Errorf("pod 0 to pod %d, every stage per link: family of %v, want 40 members", c.pod, s)
		}
	}
}
