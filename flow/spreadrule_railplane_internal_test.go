package flow

import (
	"testing"

	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

// TestARMismatch: the spread rule's mismatch factor (arMismatch) on the rail plane of
// examples/compare-jitter-moe-1024.yaml (128 NICs, 11 radix-16 leaves at 3:1, 3 spines; leaf j's
// four uplinks go two to spine j mod 3, one to each other). Four NICs of leaf 0 each send 1 MB
// to one of four NICs of leaf 1: leaf 0 balancing its own uplinks puts half the QPs on spine 0,
// which has one of leaf 1's four links, a share of 1/2 - 1/4 beyond (factor 1.25); the
// destinations' four links can ask the four links into leaf 1 for all of their rate (rho 1), and
// every QP of leaf 0 goes to leaf 1 (no spread term): the estimate is exactly 1.25. To leaf 3
// (the same turn as leaf 0: two links from spine 0) the shares match the links: 1.
func TestARMismatch(t *testing.T) {
	g, err := topo.Clos(topo.ClosSpec{Servers: 128, NICsPerServer: 1, RailOptimized: true, Radix: 16, Oversubscription: []float64{3},
		NIC:       topo.LinkSpec{Rate: 400 * units.Gbps, Latency: 100 * units.Nanosecond},
		LeafSpine: topo.LinkSpec{Rate: 400 * units.Gbps, Latency: 150 * units.Nanosecond}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := adaptiveNDR(t)
	for _, c := range []struct {
		leaf int32
		want float64
	}{{1, 1.25}, {3, 1}} {
		mg := &msggraph.Graph{Endpoints: len(g.Hosts)}
		for i := int32(0); i < 4; i++ {
			mg.Add(msggraph.Message{Src: i, Dst: 12*c.leaf + i, Bytes: units.MB})
		}
		e, err := newEngine(g, nil, cfg, mg, Options{PooledAR: true})
		if err != nil {
			t.Fatal(err)
		}
		if got := e.arOverload(mg); got != c.want {
			t.Errorf("leaf 0 to leaf %d: estimate %v, want %v", c.leaf, got, c.want)
		}
	}
}
