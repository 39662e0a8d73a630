package fabric

import (
	"fmt"
	"testing"

	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/units"
)

// TestPFCDirectMatchesInterface: the per-hop path calls PFC, the ETS scheduler and RED marking
// directly (pfc.ingress: admission and the XOFF test in one call, on the ingress state found
// from the switch's first port and the packet's InPort; pfc.departed; dwrr.Pick;
// ecnRED.Enqueue), where other policies go through LinkFlowControl, Admitter, Scheduler and
// Marker (Admit, Arrived, Departed with the ingress *Port, Pick, Enqueue). Both ways must give the same run to the event: the same messages, events,
// counters, drops and per-port PFC records, on scenarios where PAUSE, XON and headroom act.
func TestPFCDirectMatchesInterface(t *testing.T) {
	type scenario struct {
		name string
		cfg  func() Config
		n    int // hosts on the star; host 0 receives
		mg   func() *msggraph.Graph
		// want: the counters that show the mechanism acted
		want []string
	}
	incast := func(senders int, size units.Size, prios ...uint8) func() *msggraph.Graph {
		return func() *msggraph.Graph {
			mg := &msggraph.Graph{Endpoints: senders + 1}
			for i := 1; i <= senders; i++ {
				var prio uint8
				if len(prios) > 0 {
					prio = prios[i%len(prios)]
				}
				mg.Add(msggraph.Message{Src: int32(i), Dst: 0, Bytes: size, Prio: prio})
			}
			return mg
		}
	}
	cases := []scenario{
		{"incast dynamic XOFF", func() Config {
			c := DefaultRoCE()
			c.RoCE.DCQCN, c.RoCE.ECN = false, false
			c.Buffer = 4 * units.MB // XOFF at 1/8 of the free pool: a few hundred KB
			return c
		}, 17, incast(16, 500*units.KB), []string{"pfc_pause_frames_sent", "pfc_resume_frames_sent"}},
		{"static XOFF, small headroom", func() Config {
			c := DefaultRoCE()
			c.RoCE.DCQCN, c.RoCE.ECN = false, false
			c.RoCE.PFCThreshold = PFCStatic
			c.RoCE.XOFF, c.RoCE.XON = 20*units.KB, 10*units.KB
			c.RoCE.Headroom = 5 * units.KB
			c.RTO = 100 * units.Microsecond
			return c
		}, 5, incast(4, 500*units.KB), []string{"pfc_pause_frames_sent", "pfc_headroom_drops"}},
		{"two lossless classes and a lossy one, DWRR, ECN and DCQCN", func() Config {
			c := DefaultRoCE()
			c.RoCE.Lossless = 1<<1 | 1<<3
			c.RoCE.Weights = [8]int{1, 1, 3, 2, 1, 1, 1, 1}
			c.BufferAlpha = 1
			c.Buffer = 4 * units.MB
			c.RTO = 100 * units.Microsecond
			return c
		}, 13, incast(12, 400*units.KB, 1, 2, 3), []string{"pfc_pause_frames_sent", "ecn_marks", "cnps_sent"}},
	}
	for _, c := range cases {
		out := func(direct bool) string {
			n := newNet(t, star(c.n, 100*units.Gbps, units.Microsecond), c.cfg())
			if n.pfc == nil || n.ets == nil || (n.ecn == nil) == n.cfg.RoCE.ECN {
				t.Fatalf("%s: PFC, ETS and ECN marking are not called directly", c.name)
			}
			for _, sw := range n.Switches {
				// The direct path finds the ingress state from the switch (Switch.base); the
				// interface path from the ingress port (and the pool through its Port.sw).
				if sw != nil && sw.base != n.portBase[sw.Node] {
					t.Fatalf("%s: switch %s keeps base %d, want %d", c.name, sw.Name, sw.base, n.portBase[sw.Node])
				}
			}
			free := make(map[*Switch]int64)
			for _, sw := range n.Switches {
				if sw != nil {
					free[sw] = sw.pool.free
				}
			}
			if !direct {
				n.pfc, n.ets, n.ecn = nil, nil, nil // through the interfaces
			}
			run(t, n, c.mg())
			res := n.lastRun
			for sw, f := range free {
				// Every packet has left: the shared pool is whole again (Switch.pool keeps its
				// free bytes, which admission and departure move by each packet's size).
				if sw.pool.free != f || sw.bufUsed != 0 {
					t.Errorf("%s: switch %s ends with %d B of its shared pool free, want %d, and %d B held", c.name, sw.Name, sw.pool.free, f, sw.bufUsed)
				}
			}
			for _, k := range c.want {
				if res.Counters[k] == 0 {
					t.Errorf("%s: %s is 0: the scenario does not exercise what it tests", c.name, k)
				}
			}
			return fmt.Sprint(res.Messages, res.Events, res.PacketHops, res.Counters, res.DropsByCause, res.Ports, n.PFCStats())
		}
		if d, i := out(true), out(false); d != i {
			t.Errorf("%s: direct calls and interface calls differ:\n%s\n%s", c.name, d, i)
		}
	}
}

// TestRouteMemoMatchesLookup: Switch.Handle takes the route Switch.Prefetch found (Packet.route)
// rather than looking it up again. With the memo and without it, a permutation with an incast
// on a k=4 fat tree (ECMP over 2 and 4 candidates), on Ethernet and on RoCE, must send every
// packet the same way: the same run, and the same frames on every port. On InfiniBand the memo
// is the subnet manager's LFT entry (ibRouter.predict), its VL set at the ingress: static and
// adaptive routing (whose data packets are not memoized).
func TestRouteMemoMatchesLookup(t *testing.T) {
	g := fatTreeK(t, 4, 100*units.Gbps, units.Microsecond)
	ib, err := DefaultInfiniBand("edr")
	if err != nil {
		t.Fatal(err)
	}
	ibAR := ib
	ibAR.IB.Adaptive = true
	for _, cfg := range []Config{DefaultEthernet(), DefaultRoCE(), ib, ibAR} {
		out := func(memo bool) (string, []int64) {
			n := newNet(t, g, cfg)
			n.noRouteMemo = !memo
			mg := permutationGraph(len(g.Hosts), 2*units.MB, 3)
			for i := 0; i < 8; i++ {
				m := msggraph.Message{Src: int32(i + 1), Dst: 0, Bytes: units.MB}
				if cfg.Kind == KindInfiniBand {
					m.Prio = uint8(i % 4) // SLs on VLs 0-3: the memoized route's VL must follow the SL
				}
				mg.Add(m)
			}
			run(t, n, mg)
			res := n.lastRun
			var tx []int64
			for g := range n.ports {
				tx = append(tx, n.ports[g].TxPackets)
			}
			return fmt.Sprint(res.Messages, res.Events, res.PacketHops, res.Counters, res.DropsByCause), tx
		}
		a, atx := out(true)
		b, btx := out(false)
		if a != b {
			t.Errorf("%s: the run differs with the route memo:\n%s\n%s", cfg.Kind, a, b)
		}
		if fmt.Sprint(atx) != fmt.Sprint(btx) {
			t.Errorf("%s: frames per port differ with the route memo:\n%v\n%v", cfg.Kind, atx, btx)
		}
	}
}
