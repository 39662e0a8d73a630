package fabric

import (
	"testing"

	"github.com/fabricsim/fabricsim/result"
	"github.com/fabricsim/fabricsim/units"
)

// TestRoCESprayPermutation: the headline of RoCE with adaptive routing and out-of-order
// placement (NVIDIA Spectrum-X: per-packet adaptive routing in the switch, the ConnectX/
// BlueField NIC placing packets in host memory in arrival order, [Spectrum-X], [NVIDIA-OOO]).
// On a 1:1 fat tree a random permutation needs no link twice, but per-flow ECMP hashing
// collides flows on shared uplinks (p99 slowdown >= 3x: three or four flows share one uplink);
// spraying every packet over the equal-cost next hops with a receiver that accepts any order
// keeps p99 <= 1.2x. Spraying with the in-order go-back-N receiver instead NAKs the reordered
// packets and resends; it must do worse than with out-of-order placement.
func TestRoCESprayPermutation(t *testing.T) {
	g := fatTreeK(t, 8, 100*units.Gbps, units.Microsecond)
	mg := permutationGraph(len(g.Hosts), 2*units.MB, 1)
	var p99 [3]float64
	for i, c := range []struct {
		routing   Routing
		transport Transport
	}{{RoutingECMP, TransportGoBackN}, {RoutingSpray, TransportReorder}, {RoutingSpray, TransportGoBackN}} {
		cfg := DefaultRoCE()
		cfg.Seed = 1
		cfg.Routing = c.routing
		cfg.Transport = c.transport
		res := runOne(t, g, cfg, mg).lastRun
		s := slowdowns(res)
		p99[i] = result.Percentile(s, 99)
		t.Logf("%s/%s: slowdown p50 %.3f p99 %.3f max %.3f; drops %d, NAKs %d, timeouts %d, out-of-order %v, pauses %v",
			c.routing, c.transport, s[len(s)/2], p99[i], s[len(s)-1], res.Drops, res.NAKs, res.Timeouts, res.Counters["out_of_order_packets"], res.Counters["pfc_pauses_sent"])
	}
	if p99[0] < 3 {
		t.Errorf("ECMP p99 slowdown %.3f: want >= 3 (hash collisions on a 1:1 fat tree)", p99[0])
	}
	if p99[1] > 1.2 {
		t.Errorf("spray + out-of-order placement p99 slowdown %.3f: want <= 1.2", p99[1])
	}
	if !(p99[2] > p99[1]) {
		t.Errorf("spray with the in-order receiver p99 %.3f, with out-of-order placement %.3f: want worse", p99[2], p99[1])
	}
}
