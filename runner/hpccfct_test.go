package runner

import (
	"testing"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/result"
	"github.com/fabricsim/fabricsim/scenario"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

// HPCC's standalone FCT (third.cc qp_finish) by hand: host0 - sw - host1 and host2 behind a
// 25 Gb/s link, 1 us links, MTU 1000. 10,000 B from host0 to host1: 10 packets, total 10,000 +
// 10 x 48 = 10,480 B; base RTT 2 x 2,000 ns + 2 x 80 ns (1,000 B at 100 Gb/s per link) =
// 4,160 ns; + 10,480 x 8e9 / 100e9 = 838.4 -> 838 ns: 4,998 ns. To host2 the bottleneck is
// 25 Gb/s: 2 x 2,000 + 80 + 320 = 4,400 ns + 3,353.6 -> 3,353 ns: 7,753 ns.
func TestHPCCStandalone(t *testing.T) {
	g := &topo.Graph{Name: "t"}
	sw := g.AddNode(topo.Switch, "sw", 1)
	g.Connect(g.AddNode(topo.Host, "host0", 0), sw, 100*units.Gbps, units.Microsecond)
	g.Connect(g.AddNode(topo.Host, "host1", 0), sw, 100*units.Gbps, units.Microsecond)
	g.Connect(g.AddNode(topo.Host, "host2", 0), sw, 25*units.Gbps, units.Microsecond)
	r, err := topo.ComputeRoutes(g)
	if err != nil {
		t.Fatal(err)
	}
	cfg := fabric.DefaultEthernet()
	cfg.MTU = 1000
	sa, err := HPCCStandalone(&scenario.Built{Graph: g, Routes: r, Fabric: cfg})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dst  int32
		want int64
	}{{1, 4998}, {2, 7753}} {
		if got := sa(&result.Message{Src: 0, Dst: c.dst, Bytes: 10000}); got != c.want {
			t.Errorf("to host%d: %d ns, want %d", c.dst, got, c.want)
		}
	}
	if _, err := HPCCStandalone(&scenario.Built{Graph: g, Fabric: cfg}); err == nil {
		t.Error("no routes accepted")
	}
}
