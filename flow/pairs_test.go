package flow

import (
	"fmt"
	"math"
	"testing"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

// unevenCore is two pods of a three-tier Clos, each one leaf of 4 hosts with 4 links to the pod's
// one spine, the spines' 4 uplinks spread over 3 cores: pod A's as up[0] (links to cores 0, 1,
// 2), pod B's as up[1]. Every host of A sends size bytes to a host of B (a permutation); links
// are 400 Gb/s with 100 ns cables. InfiniBand NDR with adaptive routing.
func unevenCore(t testing.TB, up [2][3]int, size units.Size) (*topo.Graph, fabric.Config, *msggraph.Graph) {
	const rate, lat = 400 * units.Gbps, 100 * units.Nanosecond
	g := &topo.Graph{Name: "uneven-core"}
	var cores [3]topo.NodeID
	for c := range cores {
		cores[c] = g.AddNode(topo.Switch, fmt.Sprintf("core%d", c), 3)
	}
	for pod := 0; pod < 2; pod++ {
		spine := g.AddNode(topo.Switch, fmt.Sprintf("spine%d", pod), 2)
		leaf := g.AddNode(topo.Switch, fmt.Sprintf("leaf%d", pod), 1)
		for h := 0; h < 4; h++ {
			g.Connect(g.AddNode(topo.Host, fmt.Sprintf("host%d", pod*4+h), 0), leaf, rate, lat)
			g.Connect(leaf, spine, rate, lat)
		}
		for c, k := range up[pod] {
			for range k {
				g.Connect(spine, cores[c], rate, lat)
			}
		}
	}
	cfg := adaptiveNDR(t)
	mg := &msggraph.Graph{Endpoints: 8}
	for h := int32(0); h < 4; h++ {
		mg.Add(msggraph.Message{Src: h, Dst: 4 + h, Bytes: size})
	}
	return g, cfg, mg
}

// TestPairCapacityUnevenCore holds the core tier of adaptive routing to what its wiring carries
// between two spines: spine A's uplinks spread 2, 1, 1 over three cores and spine B's 1, 2, 1
// carry at most min(2,1) + min(1,2) + min(1,1) = 3 links' worth from A to B, not the 4 that
// pooling each stage's links gives (a byte that climbs to core 0 must descend on core 0's one
// link to B). Four 400G flows from A to B then share 3 x 400G: each 64 MiB flow takes
// 64 MiB x (4096+26)/4096 / 37.5 GB/s = 1.802 ms, against 1.352 ms at 50 GB/s where the
// cores are even (both spines 2, 1, 1: 4 links). The run's end is within 1 % of those (latency
// and the step add microseconds), and within 1 % of the packet backend's, whose switches pick
// per packet the port with the least queued among those with credits (fabric/ibroute.go):
// 1.8072 and 1.3544 ms at this commit (the flow backend 1.8048 and 1.3524 ms; before the pair
// constraint it gave 1.3524 ms for both).
func TestPairCapacityUnevenCore(t *testing.T) {
	const size = 64 * units.MiB
	wire := float64(size) / 4096 * (4096 + 26)
	for _, c := range []struct {
		name  string
		up    [2][3]int
		links float64 // the pair capacity, in links
	}{
		{"uneven", [2][3]int{{2, 1, 1}, {1, 2, 1}}, 3},
		{"even", [2][3]int{{2, 1, 1}, {2, 1, 1}}, 4},
	} {
		g, cfg, mg := unevenCore(t, c.up, size)
		rt, err := topo.ComputeRoutes(g)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Run(g, rt, cfg, mg, Options{Check: true})
		if err != nil {
			t.Fatal(err)
		}
		var end units.Time
		for _, m := range res.Messages {
			end = max(end, m.Finish)
		}
		want := wire / (c.links * 50e9 / 4) // each flow a quarter of the pair's links
		if got := end.Seconds(); math.Abs(got/want-1) > 0.01 {
			t.Errorf("%s: the flows end at %.4f ms, want %.4f ms (%.0f links of 400G shared by 4)", c.name, got*1e3, want*1e3, c.links)
		}
		pr := packetOn(t, g, rt, cfg, mg)
		var pend units.Time
		for _, m := range pr.Messages {
			pend = max(pend, m.Finish)
		}
		if d := end.Seconds()/pend.Seconds() - 1; math.Abs(d) > 0.01 {
			t.Errorf("%s: flow backend %.4f ms, packet backend %.4f ms (%+.2f %%)", c.name, end.Seconds()*1e3, pend.Seconds()*1e3, 100*d)
		}
	}
}
