package backend

import (
	"testing"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

// TestNodeLatency: topo.Node.Latency replaces the fabric's switch latency in the packet backend
// (0 keeps it, negative means none). One 64-byte-payload packet host -> switch -> host at
// 100 Gb/s: FCT = 2 x serialization + 2 x 1 us propagation + the switch's latency.
func TestNodeLatency(t *testing.T) {
	cfg := fabric.DefaultEthernet()
	cfg.SwitchLatency = 500 * units.Nanosecond
	for _, tc := range []struct {
		node, want units.Time
	}{
		{0, 500 * units.Nanosecond},
		{150 * units.Nanosecond, 150 * units.Nanosecond},
		{-1, 0},
	} {
		g := &topo.Graph{Name: "two"}
		a := g.AddNode(topo.Host, "a", 0)
		b := g.AddNode(topo.Host, "b", 0)
		s := g.AddNode(topo.Switch, "s", 1)
		g.Nodes[s].Latency = tc.node
		g.Connect(a, s, 100*units.Gbps, units.Microsecond)
		g.Connect(b, s, 100*units.Gbps, units.Microsecond)
		r, err := topo.ComputeRoutes(g)
		if err != nil {
			t.Fatal(err)
		}
		net, err := fabric.New(g, r, cfg)
		if err != nil {
			t.Fatal(err)
		}
		mg := &msggraph.Graph{Endpoints: 2}
		mg.Add(msggraph.Message{Src: 0, Dst: 1, Bytes: 64})
		res, err := net.Run(mg, units.MaxTime)
		if err != nil {
			t.Fatal(err)
		}
		ser := (100 * units.Gbps).TransmitTime(units.Size(64 + cfg.HeaderBytes + cfg.L1Overhead))
		if want := 2*ser + 2*units.Microsecond + tc.want; res.SimTime != want {
			t.Errorf("node latency %v: FCT %v, want %v", tc.node, res.SimTime, want)
		}
	}
}
