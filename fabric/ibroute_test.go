package fabric

import (
	"slices"
	"testing"

	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

// TestIBRouteRowsMatchPort: the router's LFT rows (ibRouter.lft, which predict reads for the
// route memo) give every switch's Tables.Port entry toward every host, and with them the runs
// of TestIBCheckMatchesBlocked's fabrics (a k=4 fat tree, a permutation and an 8-to-1 incast
// on SLs 0-3, 8 KiB VL buffers; with adaptive routing) are the same as with Tables.Port
// (rowsOf nil) and with the generic prefetch in place of prefetchIB: the same messages,
// events, packet-hops and counters, the same frames and busy time per port.
func TestIBRouteRowsMatchPort(t *testing.T) {
	g := fatTreeK(t, 4, 100*units.Gbps, units.Microsecond)
	base := ibConfig(t, "edr")
	base.IB.VLBuffer = 8 * units.KiB
	n := newNet(t, g, base)
	r := n.ibRouter
	rows := 0
	for i := range g.Nodes {
		if g.Nodes[i].Kind != topo.Switch {
			continue
		}
		if r.rows[i] != nil {
			rows++
		}
		for d := range g.Hosts {
			if a, b := r.lft(topo.NodeID(i), int32(d)), r.t.Port(topo.NodeID(i), d); a != b {
				t.Fatalf("%s -> host %d: row %d, Tables.Port %d", g.Nodes[i].Name, d, a, b)
			}
		}
	}
	if rows != len(g.Nodes)-len(g.Hosts) {
		t.Fatalf("%d of %d switches have a row", rows, len(g.Nodes)-len(g.Hosts))
	}
	ar := base
	ar.IB.Adaptive = true
	for _, c := range []struct {
		name string
		cfg  Config
	}{{"small buffers", base}, {"adaptive", ar}} {
		a, atx, _ := ibCreditRun(t, g, c.cfg, func(*Network) {})
		for _, v := range []struct {
			name string
			set  func(*Network)
		}{
			{"Tables.Port", func(n *Network) { n.ibRouter.rowsOf = nil }},
			{"the generic prefetch", func(n *Network) { n.sim.SetPrefetcher(prefetch) }},
		} {
			b, btx, _ := ibCreditRun(t, g, c.cfg, v.set)
			if a != b {
				t.Errorf("%s: the run differs with %s:\n%s\n%s", c.name, v.name, a, b)
			}
			if !slices.Equal(atx, btx) {
				t.Errorf("%s: frames or busy time per port differ with %s", c.name, v.name)
			}
		}
	}
}
