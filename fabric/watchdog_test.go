package fabric

import (
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/units"
)

// The no-progress watchdog judges an interval only when packets were already in the network at
// its start: traffic that starts at 2 s (the convention of HPCC's sample mix/flow.txt) or just
// before a check boundary is not stopped as "no progress" before its first byte can arrive. The
// flow alone on a line must then finish at its closed-form FCT after its start.
func TestNoProgressWatchdogCountsFromTraffic(t *testing.T) {
	ib, err := DefaultInfiniBand("ndr")
	if err != nil {
		t.Fatal(err)
	}
	fabrics := map[string]Config{"ethernet": DefaultEthernet(), "roce": DefaultRoCE(), "infiniband": ib}
	for name, cfg := range fabrics {
		if cfg.NoProgress != 100*units.Millisecond {
			t.Fatalf("%s: default no_progress %v; the start times below are chosen around 100ms checks", name, cfg.NoProgress)
		}
		for _, start := range []units.Time{
			0,
			2 * units.Second,                         // HPCC mix/flow.txt
			99 * units.Millisecond,                   // 1 ms before the first check
			100*units.Millisecond - units.Nanosecond, // first packet still on the wire at the check
			2*units.Second - 100*units.Nanosecond,    // just before a later check
			100 * units.Millisecond,                  // on a check
		} {
			// Two 10us links: the first byte needs more than 20us, so a start within 20us of a check
			// has packets in the network and nothing delivered when the check runs.
			g := line(1, 100*units.Gbps, 10*units.Microsecond)
			mg := &msggraph.Graph{Endpoints: 2}
			mg.Add(msggraph.Message{Src: 0, Dst: 1, Bytes: 4 * units.MB, Start: start})
			n := newNet(t, g, cfg)
			res, err := n.Run(mg, units.MaxTime)
			if err != nil {
				t.Errorf("%s, start %v: %v", name, start, err)
				continue
			}
			m := res.Messages[0]
			if m.Start != start || m.Finish <= start {
				t.Errorf("%s, start %v: message ran %v..%v", name, start, m.Start, m.Finish)
			}
			if name == "ethernet" {
				want := closedForm(int64(4*units.MB), int(cfg.MTU), cfg.HeaderBytes, cfg.L1Overhead, cfg.MinFrame, 2, 100*units.Gbps, 10*units.Microsecond, cfg.SwitchLatency)
				if d := m.FCT() - want; d < -units.Nanosecond || d > units.Nanosecond {
					t.Errorf("%s, start %v: FCT %v, closed form %v", name, start, m.FCT(), want)
				}
			}
		}
	}
}

// A real standstill that begins late is still stopped: the PFC deadlock of
// TestPFCDeadlockReported started at 2 s is reported within two check intervals of its start.
func TestNoProgressWatchdogLateDeadlock(t *testing.T) {
	g, rt := ring()
	cfg := DefaultRoCE()
	cfg.RoCE.DCQCN, cfg.RoCE.ECN = false, false
	cfg.RoCE.PFCThreshold = PFCStatic
	cfg.RoCE.XOFF, cfg.RoCE.XON = 40*units.KB, 20*units.KB
	cfg.NoProgress = 500 * units.Microsecond
	n := newNet(t, g, cfg)
	n.SetRouter(rt)
	mg := &msggraph.Graph{Endpoints: 3}
	start := 2 * units.Second
	for i := int32(0); i < 3; i++ {
		mg.Add(msggraph.Message{Src: i, Dst: (i + 2) % 3, Bytes: 20 * units.MB, Start: start})
	}
	res, err := n.Run(mg, 3*units.Second)
	if err == nil {
		t.Fatalf("no deadlock reported; finished at %v", res.SimTime)
	}
	if !strings.Contains(err.Error(), "PFC deadlock on priority 3") {
		t.Fatalf("not reported as a PFC deadlock: %v", err)
	}
	// The deadlock forms within a few round trips; the report comes at most two intervals later.
	if now := n.sim.Now(); now > start+units.Millisecond+2*cfg.NoProgress {
		t.Errorf("deadlock reported at %v, want by %v", now, start+units.Millisecond+2*cfg.NoProgress)
	}
}
