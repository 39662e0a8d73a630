package compare

import (
	"context"
	"fmt"
	"math"
	"os"
	"testing"

	"github.com/fabricsim/fabricsim/backend"
	"github.com/fabricsim/fabricsim/examples"
	"github.com/fabricsim/fabricsim/msggraph"
)

// TestRingTailOneRail is the default compare's RoCE tail at 128 NICs: the expert-data-parallel
// reduce-scatter class of examples/compare-default.yaml (26 MB, rings of 16 GPUs 8 servers apart
// across the four leaves of a rail) restricted to rail 0's 8 rings, on the whole 1,024-GPU
// topology, roce-default, for the compare's three network seeds of its first steps (1, 7920,
// 15839). The packet backend runs it in about a second of CPU per seed and draw (FLOW_VALIDATE=1
// reruns it and prints the figures). The flow backend's slowest ring, the mean over its first
// four draw streams, is within the 10 % of the packet backend's (the mean over its first
// eight) at every seed (measured: -1.0, -1.8 and -4.3 %; it was 6-14 % short before paced flows
// were marked packet by packet: docs/flow.md, "Limits", a ring's backlog after a stall), and its
// mean ring over the seeds; one seed's mean ring is not (7920: +11.2 %).
func TestRingTailOneRail(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	data, err := examples.Read("compare-default.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse(data, "compare-default.yaml", "../examples")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := s.Plan()
	if err != nil {
		t.Fatal(err)
	}
	cls, _, _ := s.classes(plan)
	var c *class
	for _, x := range cls {
		if x.Key == "reduce-scatter/edp/stage0/26214400" {
			c = x
		}
	}
	if c == nil {
		t.Fatal("compare-default.yaml has no 26 MB expert-data-parallel reduce-scatter")
	}
	g := &msggraph.Graph{Endpoints: plan.GPUs}
	var ranges [][2]int
	for gi, o := range c.example {
		if o.Ranks[0]%s.Cluster.GPUsPerServer != 0 {
			continue // rail 0 only
		}
		from := len(g.Msgs)
		if _, err := s.compileOp(g, o, nil, fmt.Sprintf("g%d", gi), false); err != nil {
			t.Fatal(err)
		}
		ranges = append(ranges, [2]int{from, len(g.Msgs)})
	}
	if len(ranges) != 8 {
		t.Fatalf("%d rings on rail 0, want 8", len(ranges))
	}
	var v *Variant
	for _, x := range s.Variants {
		if x.Name == "roce-default" {
			v = x
		}
	}
	topo, err := s.Topology()
	if err != nil {
		t.Fatal(err)
	}
	net := backend.NewNetwork(topo, nil)
	// Mean and slowest ring completion (us) per seed: recorded on the packet backend, on the flow
	// backend.
	seeds := []uint64{1, 7920, 15839}
	packet := [][2]float64{{1020.3, 1525.8}, {752.4, 1349.4}, {772.2, 1256.9}}
	flow := [][2]float64{{1009.5, 1509.9}, {836.5, 1324.6}, {760.6, 1203.1}}
	live := os.Getenv("FLOW_VALIDATE") != ""
	figures := func(name backend.Name, seed uint64) [2]float64 {
		// The flow backend's figures are means over its first four draw streams: one stream's
		// slowest ring moves by up to 10 % between streams (docs/flow.md, "Limits"). The packet
		// backend's over its first eight: its slowest ring moves as much between draws (seed
		// 15839: 1,182.5-1,390.1 us), and its draw 0 alone, the reference until the flow
		// backend's marks came to be on frames' first bytes (issue 20), was 1,365.9 us against
		// a mean of 1,256.9.
		draws := uint64(8)
		if name == backend.Flow {
			draws = 4
		}
		var f [2]float64
		for draw := uint64(0); draw < draws; draw++ {
			r, err := runClass(context.Background(), name, net, v.Fabric, seed, draw, g, ranges, false, nil, msgWeights{}, backend.FlowOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var slowest float64
			for _, d := range r.Dur {
				f[0] += d.Microseconds() / float64(len(r.Dur)) / float64(draws)
				slowest = max(slowest, d.Microseconds())
			}
			f[1] += slowest / float64(draws)
		}
		return f
	}
	var pkt, got [2]float64
	for i, seed := range seeds {
		p := packet[i]
		if live {
			p = figures(backend.Packet, seed)
		}
		f := figures(backend.Flow, seed)
		t.Logf("seed %d: mean ring %.1f us on packet, %.1f on flow (%+.1f %%); slowest %.1f, %.1f (%+.1f %%)",
			seed, p[0], f[0], 100*(f[0]/p[0]-1), p[1], f[1], 100*(f[1]/p[1]-1))
		if e := f[1]/p[1] - 1; math.Abs(e) > 0.10 {
			t.Errorf("seed %d: slowest ring %.1f us, packet backend %.1f us: %+.1f %%, beyond 10 %%", seed, f[1], p[1], 100*e)
		}
		for k := range f {
			if math.Abs(f[k]-flow[i][k]) > 0.02*flow[i][k] {
				t.Errorf("seed %d: %s ring %.1f us, recorded %.1f us: the flow backend changed; refresh the figures (FLOW_VALIDATE=1)", seed, [2]string{"mean", "slowest"}[k], f[k], flow[i][k])
			}
			pkt[k] += p[k] / float64(len(seeds))
			got[k] += f[k] / float64(len(seeds))
		}
	}
	t.Logf("over the seeds: mean ring %+.1f %%, slowest ring %+.1f %%", 100*(got[0]/pkt[0]-1), 100*(got[1]/pkt[1]-1))
	if e := got[0]/pkt[0] - 1; math.Abs(e) > 0.10 {
		t.Errorf("mean ring completion %.1f us, packet backend %.1f us: %+.1f %%, beyond 10 %%", got[0], pkt[0], 100*e)
	}
}
