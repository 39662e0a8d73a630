package fabric

import (
	"testing"

	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/result"
	"github.com/fabricsim/fabricsim/units"
)

// uetConfig is UET on RoCE-framed best-effort Ethernet: no PFC and no DCQCN (NSCC sets the
// windows), switches marking ECN with the default RED band (NSCC's network signal).
func uetConfig() Config {
	cfg := DefaultRoCE()
	cfg.Seed = 1
	cfg.Transport = TransportUET
	cfg.RoCE.DCQCN = false
	cfg.RoCE.PFC = false
	return cfg
}

// TestUETPermutation: the spraying headline with UET (UEC 1.0's packet spraying by entropy
// value, [UE-design]): a random permutation of 2 MB flows on the k = 8 fat tree (1:1, 100 Gb/s),
// where per-flow ECMP collides flows (p99 slowdown >= 3, fabric.TestRoCESprayPermutation), stays
// near the spraying bound of 1.2 when every packet carries a fresh entropy value and the receiver
// accepts any order, with no packet resent (the reordering stays under the loss threshold).
// Measured over seeds 1-6: p99 1.214-1.273, against RoCE spray + ooo's 1.118-1.142 on the same
// permutations; NSCC cuts no window here, and why UET sits 1-6 % above 1.2 is not yet found
// (docs/transports.md). The bound asserted is 1.3, so a regression beyond that range fails.
func TestUETPermutation(t *testing.T) {
	g := fatTreeK(t, 8, 100*units.Gbps, units.Microsecond)
	mg := permutationGraph(len(g.Hosts), 2*units.MB, 1)
	res := runOne(t, g, uetConfig(), mg).lastRun
	s := slowdowns(res)
	p99 := result.Percentile(s, 99)
	t.Logf("uet: slowdown p50 %.3f p99 %.3f max %.3f; drops %d, out-of-order %v, resent %v, NSCC decreases %v",
		s[len(s)/2], p99, s[len(s)-1], res.Drops, res.Counters["out_of_order_packets"], res.Counters["uet_retransmitted_packets"], res.Counters["nscc_window_decreases"])
	if p99 > 1.3 {
		t.Errorf("UET p99 slowdown %.3f: want <= 1.3 (measured 1.214 at seed 1)", p99)
	}
	if res.Counters["out_of_order_packets"] == 0 {
		t.Error("no packet arrived out of order: the entropy values did not spray")
	}
	if res.BytesRetransmitted != 0 || res.Drops != 0 {
		t.Errorf("resent %d B, dropped %d: a lossless permutation needs neither", res.BytesRetransmitted, res.Drops)
	}
}

// dropOnce is a router for a one-path topology that drops the first copy of the data packet at
// offset seq (DropNoRoute) and forwards everything else.
type dropOnce struct {
	seq     int64
	dropped bool
}

func (d *dropOnce) Route(s *Switch, pkt *Packet, hops []int32) int32 {
	if !d.dropped && pkt.Kind == Data && pkt.Seq == d.seq {
		d.dropped = true
		return -1
	}
	return hops[0]
}

// TestUETSelectiveRetransmission: one data packet of a 4 MB flow is lost. UET's receiver keeps
// every later packet and SACKs it; once uet_ooo_threshold packets beyond the gap are SACKed the
// sender resends the lost packet alone: exactly one packet's payload is retransmitted, without a
// timeout or a NAK. Go-back-N on the same loss resends everything it had sent beyond the gap.
func TestUETSelectiveRetransmission(t *testing.T) {
	const lost = 100 * 4096
	for _, c := range []struct {
		name string
		cfg  Config
	}{{"uet", uetConfig()}, {"gbn", DefaultRoCE()}} {
		g := line(1, 100*units.Gbps, units.Microsecond)
		n := newNet(t, g, c.cfg)
		n.SetRouter(&dropOnce{seq: lost})
		mg := &msggraph.Graph{Endpoints: 2}
		mg.Add(msggraph.Message{Src: 0, Dst: 1, Bytes: 4 * units.MB})
		res, err := n.Run(mg, units.MaxTime)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: resent %d B, drops %d, NAKs %d, timeouts %d, out of order %v, threshold %d packets", c.name, res.BytesRetransmitted, res.Drops, res.NAKs, res.Timeouts, res.Counters["out_of_order_packets"], n.rc.OOOThreshold)
		if res.Drops != 1 || res.Messages[0].Finish == 0 {
			t.Fatalf("%s: drops %d, finished %v: want the one drop and the flow complete", c.name, res.Drops, res.Messages[0].Finish)
		}
		switch c.name {
		case "uet":
			if res.BytesRetransmitted != 4096 || res.Timeouts != 0 || res.NAKs != 0 {
				t.Errorf("uet: resent %d B with %d timeouts and %d NAKs: want exactly the lost 4096 B, no timeout, no NAK", res.BytesRetransmitted, res.Timeouts, res.NAKs)
			}
		case "gbn":
			if res.BytesRetransmitted <= 4096 || res.NAKs == 0 {
				t.Errorf("go-back-N resent %d B after %d NAKs: want more than the lost packet", res.BytesRetransmitted, res.NAKs)
			}
		}
	}
}

// TestUETIncast: NSCC on an N:1 incast of long flows into one 100 Gb/s port (RED marking from
// 400 KB, the default band). The windows start at maxwnd = 1.5 x the base RTT's bytes, so
// without a signal the queue would hold N x 1.5 BDP minus the BDP the wire holds. Two flows stay
// below the marking band: the queue is exactly that bound (window conservation), the port busy.
// Eight flows would queue 11 BDP (888 KB in frames), inside the band: the CE echoes with the delay above the
// target cut the windows, and the queue stays below where RED starts marking plus a window's
// bytes while the port stays busy.
func TestUETIncast(t *testing.T) {
	for _, senders := range []int{2, 8} {
		cfg := uetConfig()
		g := star(senders+1, 100*units.Gbps, units.Microsecond)
		n := newNet(t, g, cfg)
		mg := &msggraph.Graph{Endpoints: senders + 1}
		for i := 1; i <= senders; i++ {
			mg.Add(msggraph.Message{Src: int32(i), Dst: 0, Bytes: 64 * units.MB})
		}
		s := &sampler{n: n, period: 10 * units.Microsecond, until: 4 * units.Millisecond, port: n.Switches[0].Ports[0], prio: 3}
		n.sim.Schedule(0, s, 0, 0, nil)
		res, err := n.Run(mg, 4*units.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		var qmax, qsum int64
		for _, q := range s.q[100:] {
			qmax = max(qmax, q)
			qsum += q
		}
		r := s.rates(100, 400)
		var sum float64
		for _, x := range r {
			sum += x
		}
		util := sum / 100e9
		base := n.baseRTT()
		bdp := int64((100 * units.Gbps).BytesIn(base))
		t.Logf("%d:1 after 1 ms: queue max %d B mean %d B (base RTT %v = %d B), utilisation %.3f, rates %.1f Gb/s, decreases %v, quick adapts %v, marks %v, drops %d",
			senders, qmax, qsum/int64(len(s.q[100:])), base, bdp, util, r[0]/1e9, res.Counters["nscc_window_decreases"], res.Counters["nscc_quick_adapts"], res.Counters["ecn_marks"], res.Drops)
		// Without a signal: every window full (maxwnd payload, in 4162 B frames per 4096),
		// less what the wire holds.
		frames := float64(senders) * 1.5 * float64(bdp) * (4096 + 66) / 4096
		open := int64(frames) - bdp
		mean := qsum / int64(len(s.q[100:]))
		if util < 0.975 || res.Drops != 0 {
			t.Errorf("%d:1: utilisation %.3f (full frames allow 0.9795), drops %d", senders, util, res.Drops)
		}
		switch senders {
		case 2:
			if qmax > open+4162 || res.Counters["ecn_marks"] != 0 {
				t.Errorf("2:1: queue max %d B, above the windows' %d B + a frame (or marked: %v)", qmax, open, res.Counters["ecn_marks"])
			}
		case 8:
			if mean > 6*open/10 || res.Counters["nscc_window_decreases"]+res.Counters["nscc_quick_adapts"] == 0 {
				t.Errorf("8:1: mean queue %d B, want <= 60%% of the open-loop %d B, with NSCC reacting", mean, open)
			}
		}
	}
}

// TestUETRandomLoss: UET on a lossy fabric (random_loss 1e-3 on every link, the k = 4 fat-tree
// permutation of 2 MB flows): every flow completes without a NAK, and every data byte lost was
// sent again (what the receiver lacked can only come from a retransmission), but not much more:
// a packet is resent once uet_ooo_threshold SACKed packets lie above it, so packets merely
// overtaken on other paths are not (measured 1.28 x the lost data; resending every unSACKed
// packet below the highest SACK, as a first version did, sent 16 x). A loss near a flow's end,
// with fewer than uet_ooo_threshold packets after it, waits for the timeout.
func TestUETRandomLoss(t *testing.T) {
	g := fatTreeK(t, 4, 100*units.Gbps, units.Microsecond)
	mg := permutationGraph(len(g.Hosts), 2*units.MB, 1)
	cfg := uetConfig()
	cfg.RoCE.RandomLoss = 1e-3
	n := runOne(t, g, cfg, mg)
	res := n.lastRun
	s := slowdowns(res)
	t.Logf("p50 %.3f p99 %.3f; drops %d (%d B of data), resent %d B, timeouts %d, NAKs %d",
		s[len(s)/2], result.Percentile(s, 99), res.Drops, n.dataDropped, res.BytesRetransmitted, res.Timeouts, res.NAKs)
	for _, m := range res.Messages {
		if m.Bytes > 0 && m.Finish == 0 {
			t.Fatalf("message %d unfinished", m.ID)
		}
	}
	if res.Drops == 0 || n.dataDropped == 0 || res.NAKs != 0 || res.BytesRetransmitted < n.dataDropped || res.BytesRetransmitted > 2*n.dataDropped {
		t.Errorf("drops %d (%d B data), NAKs %d, resent %d B: want drops, no NAK, the lost data resent and at most twice it", res.Drops, n.dataDropped, res.NAKs, res.BytesRetransmitted)
	}
}

// TestUETREPS: recycled entropy (uet_load_balance: reps, [REPS]) against oblivious spraying on
// the leaf-spine with one 25 Gb/s uplink (fabric.TestSprayLeastQueue's case), four 2 MB flows
// across. Oblivious spraying sends a quarter of every flow through the slow uplink: the last
// flow ends near 4 T (T: one flow's wire time at 100 Gb/s), and packets held there long enough
// are declared lost and resent. REPS reuses only entropy values whose ACK came back without CE,
// so the values that hashed onto the marked slow uplink drop out: the flows finish no sooner
// than the 325 Gb/s of uplinks allow (1.23 T) and well before oblivious spraying's 3 T.
func TestUETREPS(t *testing.T) {
	mg, T := fourAcross()
	var last [2]units.Time
	for i, lb := range []UETLoadBalance{UETOblivious, UETREPS} {
		cfg := uetConfig()
		cfg.RoCE.UETLoadBalance = lb
		res := runOne(t, degradedLeafSpine(), cfg, mg).lastRun
		for _, m := range res.Messages {
			last[i] = max(last[i], m.FCT())
		}
		t.Logf("%s: last FCT %v = %.2f T; ECN marks %v, drops %d, resent %d B", lb, last[i], float64(last[i])/float64(T), res.Counters["ecn_marks"], res.Drops, res.BytesRetransmitted)
	}
	if float64(last[0]) < 3*float64(T) {
		t.Errorf("oblivious: last FCT %.2f T, want >= 3 T", float64(last[0])/float64(T))
	}
	if float64(last[1]) < 400.0/325*float64(T) || float64(last[1]) > 2*float64(T) {
		t.Errorf("REPS: last FCT %.2f T, want between 1.23 T and 2 T", float64(last[1])/float64(T))
	}
}
