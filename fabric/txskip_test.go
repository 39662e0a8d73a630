package fabric

import (
	"fmt"
	"testing"

	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/units"
)

// TestTxSkipMatchesPlain runs scenarios with the transmit-event skip (txskip.go) and without it
// (the plain path: a transmit-done event per frame) and requires the same results: every
// message's times, the events (the skip counts the events it skipped), packet-hops, counters
// (PFC frames, ECN marks, drops), frames per port and the end time. The scenarios make the
// settle order matter: incasts that pause and resume upstream (static and dynamic XOFF), DCQCN
// with ECN, an Ethernet fabric that drops, and a run cut short by a time limit.
func TestTxSkipMatchesPlain(t *testing.T) {
	g := fatTreeK(t, 4, 100*units.Gbps, units.Microsecond)
	roce := func(mod func(c *Config)) Config {
		c := DefaultRoCE()
		mod(&c)
		return c
	}
	cases := []struct {
		name  string
		cfg   Config
		until units.Time
		pause bool // the run must pause upstream (the XOFF/XON settle paths)
	}{
		{"ethernet", DefaultEthernet(), units.MaxTime, false},
		{"roce-pfc-static", roce(func(c *Config) {
			c.RoCE.ECN, c.RoCE.DCQCN, c.RoCE.PFCThreshold = false, false, PFCStatic
		}), units.MaxTime, true},
		{"roce-pfc-dynamic", roce(func(c *Config) {
			c.RoCE.ECN, c.RoCE.DCQCN, c.RoCE.PFCThreshold, c.RoCE.PFCAlpha = false, false, PFCDynamic, 1.0/256
		}), units.MaxTime, true},
		{"roce-dcqcn", DefaultRoCE(), units.MaxTime, false},
		{"roce-pfc-until", roce(func(c *Config) {
			c.RoCE.ECN, c.RoCE.DCQCN, c.RoCE.PFCThreshold = false, false, PFCStatic
		}), 150 * units.Microsecond, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := func(skip bool) (string, uint64) {
				n := newNet(t, g, tc.cfg)
				n.txSkipOn = skip
				mg := permutationGraph(len(g.Hosts), 2*units.MB, 3)
				for i := 0; i < 8; i++ { // an 8:1 incast onto host 0
					mg.Add(msggraph.Message{Src: int32(i + 1), Dst: 0, Bytes: units.MB})
				}
				res, err := n.Run(mg, tc.until)
				if err != nil {
					t.Fatal(err)
				}
				var tx []int64
				for g := range n.ports {
					tx = append(tx, n.ports[g].TxPackets, int64(n.ports[g].BusyTime))
				}
				if tc.pause && res.Counters["pfc_pause_frames_sent"] == 0 {
					t.Errorf("skip %v: no PAUSE sent, the scenario does not test the XOFF paths", skip)
				}
				return fmt.Sprint(res.Messages, res.Events, res.PacketHops, res.EndTime, res.Counters, res.DropsByCause, res.Ports, tx), n.txSkipped
			}
			plain, none := out(false)
			skip, skipped := out(true)
			if none != 0 || skipped == 0 {
				t.Fatalf("events skipped: %d without the skip, %d with it; want 0 and some", none, skipped)
			}
			if plain != skip {
				t.Errorf("the run differs with the transmit-event skip:\nplain %s\nskip  %s", plain, skip)
			}
		})
	}
}
