package fabric

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/ibsm"
	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/result"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

func ibConfig(t testing.TB, gen string) Config {
	t.Helper()
	c, err := DefaultInfiniBand(gen)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// ibClosedForm is the FCT of one flow alone on `links` equal links with IB framing: 26 B of
// LRH+BTH+ICRC+VCRC per packet, 16 B more (RETH) on the first, no L1 overhead or minimum frame;
// store-and-forward of the largest packet at each later hop (for equal-rate stages the pipeline
// finishes at sum + (stages-1) x max), propagation on every link, latency at every switch.
func ibClosedForm(bytes int64, mtu, header, first int, links int, rate units.Rate, prop, swLat units.Time) units.Time {
	var total, most int64
	for sent := int64(0); sent < bytes; {
		p := min(bytes-sent, int64(mtu))
		w := p + int64(header)
		if sent == 0 {
			w += int64(first)
		}
		sent += p
		total += w
		most = max(most, w)
	}
	bitsPerPs := float64(rate) / 1e12
	return units.Time(float64(total*8)/bitsPerPs+float64(int64(links-1)*most*8)/bitsPerPs) + units.Time(links)*prop + units.Time(links-1)*swLat
}

// TestIBSingleFlowClosedForm: one flow alone on a path of 1..3 switches finishes exactly when
// the closed form with IB framing says (within 1 ns), for every generation's rate and switch
// latency, several sizes around the MTU and two MTUs. ACKs are coalesced to the last packet so
// that the flow is alone: each ACK's credit update would otherwise take 6 B of the data link
// (TestIBReverseCreditsShareTheLink).
func TestIBSingleFlowClosedForm(t *testing.T) {
	for _, gen := range IBGenerations {
		for _, switches := range []int{1, 3} {
			for _, mtu := range []units.Size{2048, 4096} {
				for _, size := range []units.Size{1, 2048, 4097, 1 * units.MB, 3*units.MB + 5} {
					cfg := ibConfig(t, gen.Name)
					cfg.MTU = mtu
					cfg.AckEvery = 1 << 30
					prop := 300 * units.Nanosecond
					g := line(switches, gen.Rate, prop)
					mg := &msggraph.Graph{Endpoints: 2}
					mg.Add(msggraph.Message{Src: 0, Dst: 1, Bytes: size, Start: 3 * units.Microsecond})
					n := runOne(t, g, cfg, mg)
					m := n.lastRun.Messages[0]
					want := ibClosedForm(int64(size), int(mtu), 26, 16, switches+1, gen.Rate, prop, gen.SwitchLatency)
					if d := m.FCT() - want; d < -units.Nanosecond || d > units.Nanosecond {
						t.Errorf("%s, %d switches, mtu %d, %d B: FCT %v, closed form %v", gen.Name, switches, mtu, size, m.FCT(), want)
					}
					if m.IdealFCT != m.FCT() {
						t.Errorf("%s: ideal FCT %v != simulated alone %v", gen.Name, m.IdealFCT, m.FCT())
					}
					if c := n.lastRun.Counters["ib_credit_stall_ns"]; c != 0 {
						t.Errorf("%s: %v ns of credit stall on an idle path", gen.Name, c)
					}
				}
			}
		}
	}
}

// TestIBReverseCreditsShareTheLink: with an ACK per packet, every ACK that leaves the switch
// frees a block there, and the 6-byte flow-control packet returning it rides the data link:
// the flow finishes later than the closed form by at most 6 B at line rate per ACK.
func TestIBReverseCreditsShareTheLink(t *testing.T) {
	cfg := ibConfig(t, "ndr")
	g := line(1, 400*units.Gbps, 300*units.Nanosecond)
	mg := &msggraph.Graph{Endpoints: 2}
	mg.Add(msggraph.Message{Src: 0, Dst: 1, Bytes: 2 * units.MB})
	n := runOne(t, g, cfg, mg)
	m := n.lastRun.Messages[0]
	pkts := int64((2*units.MB + 4095) / 4096)
	fc := (400 * units.Gbps).TransmitTime(IBFCPacketBytes)
	extra := m.FCT() - ibClosedForm(int64(2*units.MB), 4096, 26, 16, 2, 400*units.Gbps, 300*units.Nanosecond, 140*units.Nanosecond)
	if extra < 0 || extra > units.Time(pkts)*fc+units.Nanosecond {
		t.Errorf("FCT exceeds the closed form by %v; %d ACK credit updates of %v each bound it", extra, pkts, fc)
	}
	t.Logf("2 MB at 400G, ACK per packet: %v over the closed form (%d ACKs x %v = %v at most)", extra, pkts, fc, units.Time(pkts)*fc)
}

// creditLimitedCases are single flows over one switch whose VL buffer (pkts packets) is much
// less than rate x credit round trip.
var creditLimitedCases = []struct {
	rate units.Rate
	prop units.Time
	pkts int64
}{{100 * units.Gbps, units.Microsecond, 4}, {400 * units.Gbps, 2 * units.Microsecond, 8}, {200 * units.Gbps, 500 * units.Nanosecond, 3}}

// TestIBCreditLimitedThroughput: with a switch VL buffer of 4 packets, much less than the rate x
// credit round trip, one flow moves one buffer per credit round trip. The round trip of a packet's
// credits: its serialization at the host, propagation and switch latency to the switch, its
// serialization out of the switch (its blocks are freed when it has left), the 6-byte
// flow-control packet's serialization and its propagation back: 2T + 2 prop + swlat + T_fc.
func TestIBCreditLimitedThroughput(t *testing.T) {
	for _, c := range creditLimitedCases {
		cfg := ibConfig(t, "hdr")
		frame := int32(4096 + 26)
		blocks := ibBlocks(frame)
		cfg.IB.VLBuffer = units.Size(c.pkts * blocks * IBBlock)
		g := line(1, c.rate, c.prop)
		size := int64(8 * units.MB)
		mg := &msggraph.Graph{Endpoints: 2}
		mg.Add(msggraph.Message{Src: 0, Dst: 1, Bytes: units.Size(size)})
		n := runOne(t, g, cfg, mg)
		m := n.lastRun.Messages[0]
		T := c.rate.TransmitTime(units.Size(frame))
		rtt := 2*T + 2*c.prop + cfg.SwitchLatency + c.rate.TransmitTime(IBFCPacketBytes)
		if c.pkts*int64(T) >= int64(rtt) {
			t.Fatalf("test setup: %d packets cover the %v round trip; not credit-limited", c.pkts, rtt)
		}
		got := float64(size) * 8 / m.FCT().Seconds()                   // payload bit/s
		bufRate := float64(int64(cfg.IB.VLBuffer)) * 8 / rtt.Seconds() // buffer / credit RTT
		pktRate := float64(c.pkts*4096) * 8 / rtt.Seconds()            // whole packets' payload / RTT
		if e := math.Abs(got-bufRate) / bufRate; e > 0.02 {
			t.Errorf("%v, %v links, %d-packet buffer: %.2f Gb/s, buffer/RTT %.2f Gb/s (%.2f%% off)", c.rate, c.prop, c.pkts, got/1e9, bufRate/1e9, 100*e)
		}
		if e := math.Abs(got-pktRate) / pktRate; e > 0.005 {
			t.Errorf("%v: %.3f Gb/s, whole packets per RTT %.3f Gb/s", c.rate, got/1e9, pktRate/1e9)
		}
		if n.lastRun.Counters["ib_credit_stall_ns"] == 0 {
			t.Errorf("%v: a credit-limited flow reports no credit stall", c.rate)
		}
		t.Logf("%v, %v links, buffer %d B: %.2f Gb/s; buffer/RTT(%v) %.2f Gb/s; stalled %.0f us at host0",
			c.rate, c.prop, cfg.IB.VLBuffer, got/1e9, rtt, bufRate/1e9, n.lastRun.Counters["ib_credit_stall_ns.host0.port0.vl0"]/1e3)
	}
}

func fatTreeK(t testing.TB, k int, rate units.Rate, lat units.Time) *topo.Graph {
	g, err := topo.FatTree(k, topo.LinkSpec{Rate: rate, Latency: lat})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func wireBytes(size int64, cfg *Config) int64 {
	var w int64
	for sent := int64(0); sent < size; {
		p := min(size-sent, int64(cfg.MTU))
		_, wire := cfg.frame(int(p), cfg.HeaderBytes)
		if sent == 0 {
			wire += int32(cfg.FirstHeaderExtra)
		}
		w += int64(wire)
		sent += p
	}
	return w
}

// TestIBIncast32: 32 senders into one NDR host on the k=8 fat tree: credits back the congestion
// up the tree instead of dropping, and the receiver's link never idles, so the last flow ends
// within 2 % of the line-rate bound (every sender's wire bytes through the one 400G link).
func TestIBIncast32(t *testing.T) {
	cfg := ibConfig(t, "ndr")
	g := fatTreeK(t, 8, 400*units.Gbps, 500*units.Nanosecond)
	mg := &msggraph.Graph{Endpoints: len(g.Hosts)}
	size := int64(units.MB)
	for s := 1; s <= 32; s++ {
		mg.Add(msggraph.Message{Src: int32(s), Dst: 0, Bytes: units.Size(size)})
	}
	n := runOne(t, g, cfg, mg)
	res := n.lastRun
	if res.Drops != 0 {
		t.Fatalf("%d drops on a credit-based fabric", res.Drops)
	}
	var last units.Time
	for _, m := range res.Messages {
		last = max(last, m.Finish)
	}
	bound := (400 * units.Gbps).TransmitTime(units.Size(32 * wireBytes(size, &cfg)))
	if last < bound || float64(last) > 1.02*float64(bound) {
		t.Errorf("last flow done at %v, line-rate bound %v (%.3fx)", last, bound, float64(last)/float64(bound))
	}
	t.Logf("32-to-1 incast, 1 MB each, NDR: last flow %v, bound %v (+%.2f%%), drops 0, credit stall %.1f us total, max VL buffer %.0f B",
		last, bound, 100*(float64(last)/float64(bound)-1), res.Counters["ib_credit_stall_ns"]/1e3, res.Counters["ib_max_vl_buffer_bytes"])
}

func slowdowns(res *result.Run) []float64 {
	var s []float64
	for _, m := range res.Messages {
		if m.Bytes > 0 {
			s = append(s, float64(m.FCT())/float64(m.IdealFCT))
		}
	}
	sort.Float64s(s)
	return s
}

func fcts(res *result.Run) []float64 {
	var s []float64
	for _, m := range res.Messages {
		if m.Bytes > 0 {
			s = append(s, float64(m.FCT()))
		}
	}
	sort.Float64s(s)
	return s
}

// TestIBShiftDModK: on the k=8 fat tree the shift permutation i -> i+32 routed by D-mod-K puts
// one flow on every link (ibsm.TestDModKShiftIsContentionFree), so every flow runs at line rate:
// FCT within 1 % of the flow alone. The same traffic hashed by ECMP on the generic Ethernet
// fabric collides on uplinks.
func TestIBShiftDModK(t *testing.T) {
	const k = 8
	g := fatTreeK(t, k, 400*units.Gbps, 500*units.Nanosecond)
	H := len(g.Hosts)
	mg := &msggraph.Graph{Endpoints: H}
	for i := 0; i < H; i++ {
		mg.Add(msggraph.Message{Src: int32(i), Dst: int32((i + 32) % H), Bytes: units.MB})
	}
	cfg := ibConfig(t, "ndr")
	cfg.IB.Routing = "dmodk"
	ib := runOne(t, g, cfg, mg).lastRun
	sIB := slowdowns(ib)
	if worst := sIB[len(sIB)-1]; worst > 1.01 {
		t.Errorf("D-mod-K shift: worst slowdown %.4f, want every flow within 1%% of line rate", worst)
	}
	eth := DefaultEthernet()
	eth.SwitchLatency = cfg.SwitchLatency
	e := runOne(t, g, eth, mg).lastRun
	sE := slowdowns(e)
	collided := 0
	for _, s := range sE {
		if s > 1.1 {
			collided++
		}
	}
	if collided == 0 {
		t.Errorf("ECMP routed the shift without a collision: the comparison shows nothing")
	}
	t.Logf("shift i->i+32, k=8, 1 MB at 400G: InfiniBand D-mod-K slowdown p50 %.4f max %.4f; Ethernet ECMP p50 %.3f p99 %.3f max %.3f, %d of %d flows >1.1x (drops %d)",
		sIB[len(sIB)/2], sIB[len(sIB)-1], sE[len(sE)/2], result.Percentile(sE, 99), sE[len(sE)-1], collided, H, e.Drops)
}

// TestIBAdaptiveRouting: on a random permutation static D-mod-K tables collide; adaptive routing
// moves packets to idle uplinks per packet and lowers the p99 FCT. Packets then arrive out of
// order and the receiver counts them.
func TestIBAdaptiveRouting(t *testing.T) {
	g := fatTreeK(t, 8, 400*units.Gbps, 500*units.Nanosecond)
	mg := permutationGraph(len(g.Hosts), units.MB, 7)
	var p99 [2]float64
	var runs [2]*result.Run
	for i, ar := range []bool{false, true} {
		cfg := ibConfig(t, "ndr")
		cfg.IB.Routing = "dmodk"
		cfg.IB.Adaptive = ar
		res := runOne(t, g, cfg, mg).lastRun
		if res.Drops != 0 {
			t.Fatalf("adaptive=%v: %d drops", ar, res.Drops)
		}
		p99[i] = result.Percentile(fcts(res), 99)
		runs[i] = res
	}
	if !(p99[1] < p99[0]) {
		t.Errorf("p99 FCT with adaptive routing %.1f us, static %.1f us: want strictly lower", p99[1]/1e6, p99[0]/1e6)
	}
	if runs[1].Counters["ib_ar_deviations"] == 0 || runs[1].Counters["ib_reordered_packets"] == 0 {
		t.Errorf("adaptive routing never deviated (%v) or reordered nothing (%v)", runs[1].Counters["ib_ar_deviations"], runs[1].Counters["out_of_order_packets"])
	}
	if runs[0].Counters["out_of_order_packets"] != 0 || runs[1].Timeouts != 0 || runs[1].NAKs != 0 {
		t.Errorf("static routing reordered %v packets; adaptive had %d timeouts %d NAKs", runs[0].Counters["out_of_order_packets"], runs[1].Timeouts, runs[1].NAKs)
	}
	t.Logf("random permutation k=8, 1 MB at 400G: p99 FCT static D-mod-K %.2f us, adaptive %.2f us; AR decisions %.0f, deviations %.0f, reordered packets %.0f",
		p99[0]/1e6, p99[1]/1e6, runs[1].Counters["ib_ar_decisions"], runs[1].Counters["ib_ar_deviations"], runs[1].Counters["out_of_order_packets"])
}

// twoSwitch builds hosts a0..a3 on switch s1, hosts r and v on switch s2, and one s1-s2 link of
// rate mid: host indices a0..a3 = 0..3, r = 4, v = 5.
func twoSwitch(host, mid units.Rate, lat units.Time) *topo.Graph {
	g := &topo.Graph{Name: "two-switch"}
	s1 := g.AddNode(topo.Switch, "s1", 1)
	s2 := g.AddNode(topo.Switch, "s2", 1)
	for i := 0; i < 4; i++ {
		h := g.AddNode(topo.Host, fmt.Sprintf("a%d", i), 0)
		g.Connect(h, s1, host, lat)
	}
	for _, name := range []string{"r", "v"} {
		h := g.AddNode(topo.Host, name, 0)
		g.Connect(h, s2, host, lat)
	}
	g.Connect(s1, s2, mid, lat)
	return g
}

// congestionGraph: a0..a2 send incast to r on SL 0 (from t=0), a3 sends a victim flow to v on SL
// victimSL, all through the s1-s2 link.
func congestionGraph(size, victim units.Size, victimSL uint8) *msggraph.Graph {
	mg := &msggraph.Graph{Endpoints: 6}
	mg.Add(msggraph.Message{Src: 3, Dst: 5, Bytes: victim, Prio: victimSL, Start: 20 * units.Microsecond})
	for s := int32(0); s < 3; s++ {
		mg.Add(msggraph.Message{Src: s, Dst: 4, Bytes: size})
	}
	return mg
}

// TestIBVLIsolation: an incast on VL0 backs up through s1 into the s1-s2 link's VL0 credits. A
// victim flow on its own VL1 through the same ports keeps its credits: with a 400G middle link
// it runs at line rate; on one shared VL it is stuck behind the incast (congestion spreading).
// With a 100G middle link and arbitration weights VL0:VL1 = 64:128 the victim gets exactly its
// 2/3 share (2 packets per turn against 1). The generic Ethernet fabric (one class, tail drop)
// is shown for comparison.
func TestIBVLIsolation(t *testing.T) {
	victim := 4 * units.MB
	run := func(cfg Config, mid units.Rate, sl uint8) (float64, *result.Run) {
		g := twoSwitch(100*units.Gbps, mid, 500*units.Nanosecond)
		res := runOne(t, g, cfg, congestionGraph(8*units.MB, victim, sl)).lastRun
		m := res.Messages[0]
		return float64(m.FCT()) / float64(m.IdealFCT), res
	}
	two := ibConfig(t, "edr")
	two.IB.SetDefaultVLs(2)
	own, _ := run(two, 400*units.Gbps, 1)
	if own > 1.01 {
		t.Errorf("victim on its own VL: slowdown %.4f, want line rate within 1%%", own)
	}
	shared, _ := run(two, 400*units.Gbps, 0)
	if shared < 1.5 {
		t.Errorf("victim sharing the incast's VL: slowdown %.3f; congestion spreading should slow it well beyond 1.5", shared)
	}
	eth := DefaultEthernet()
	eth.SwitchLatency = two.SwitchLatency
	ethSlow, ethRes := run(eth, 400*units.Gbps, 0)
	// RoCE with PFC only (no ECN/DCQCN): incast and victim on the one lossless priority.
	roce := DefaultRoCE()
	roce.SwitchLatency = two.SwitchLatency
	roce.RoCE.ECN, roce.RoCE.DCQCN = false, false
	pfcSlow, _ := run(roce, 400*units.Gbps, 0)
	if pfcSlow < 1.2 {
		t.Errorf("victim sharing the incast's PFC priority on RoCE: slowdown %.3f; PFC should spread the congestion to it", pfcSlow)
	}

	weighted := two
	weighted.IB.ArbLow = []VLWeight{{0, 64}, {1, 128}}
	_, res := run(weighted, 100*units.Gbps, 1)
	m := res.Messages[0]
	got := float64(victim) * 8 / m.FCT().Seconds()
	share := 2.0 / 3 * 100e9 * 4096 / (4096 + 26)
	if e := math.Abs(got-share) / share; e > 0.02 {
		t.Errorf("victim on VL1 with weight 128 against 64: %.2f Gb/s, its 2/3 share is %.2f Gb/s (%.1f%% off)", got/1e9, share/1e9, 100*e)
	}
	t.Logf("victim slowdown (400G middle link): own VL %.4f, shared VL %.3f; RoCE one PFC priority %.3f; generic Ethernet one class %.3f (%d drops); 100G middle link, weights 64:128: victim %.2f Gb/s, share %.2f Gb/s",
		own, shared, pfcSlow, ethSlow, ethRes.Drops, got/1e9, share/1e9)
}

// TestIBCCReducesVictimSlowdown: the same incast and victim on one VL; with IB CC the incast's
// root port marks FECN, the senders back off by the CCT delay, the switch buffers drain and the
// victim's credits come back.
func TestIBCCReducesVictimSlowdown(t *testing.T) {
	var slow [2]float64
	var res [2]*result.Run
	for i, on := range []bool{false, true} {
		cfg := ibConfig(t, "edr")
		cfg.IB.CC.Enabled = on
		g := twoSwitch(100*units.Gbps, 400*units.Gbps, 500*units.Nanosecond)
		r := runOne(t, g, cfg, congestionGraph(8*units.MB, 4*units.MB, 0)).lastRun
		m := r.Messages[0]
		slow[i] = float64(m.FCT()) / float64(m.IdealFCT)
		res[i] = r
	}
	if !(slow[1] < slow[0]) {
		t.Errorf("victim slowdown with IB CC %.3f, without %.3f: want lower", slow[1], slow[0])
	}
	if res[1].Counters["ib_fecn_marked"] == 0 || res[1].Counters["ib_becn_received"] == 0 {
		t.Errorf("IB CC on but no FECN (%v) or BECN (%v)", res[1].Counters["ib_fecn_marked"], res[1].Counters["ib_becn_received"])
	}
	var incastOff, incastOn units.Time
	for j := 1; j < 4; j++ {
		incastOff = max(incastOff, res[0].Messages[j].Finish)
		incastOn = max(incastOn, res[1].Messages[j].Finish)
	}
	t.Logf("victim slowdown: IB CC off %.3f, on %.3f; incast done at %v off, %v on; FECN %v, BECN %v",
		slow[0], slow[1], incastOff, incastOn, res[1].Counters["ib_fecn_marked"], res[1].Counters["ib_becn_received"])
}

// randomFabric builds a random irregular switch graph (spanning tree plus extra links) with 1..3
// hosts per switch and random link rates and latencies.
func randomFabric(rng *rand.Rand) *topo.Graph {
	g := &topo.Graph{Name: "random"}
	n := 2 + rng.IntN(6)
	rates := []units.Rate{100 * units.Gbps, 200 * units.Gbps, 400 * units.Gbps}
	lat := func() units.Time { return units.Time(50+rng.IntN(1000)) * units.Nanosecond }
	sw := make([]topo.NodeID, n)
	for i := range sw {
		sw[i] = g.AddNode(topo.Switch, fmt.Sprintf("sw%d", i), 1)
		if i > 0 {
			g.Connect(sw[i], sw[rng.IntN(i)], rates[rng.IntN(3)], lat())
		}
	}
	for e := rng.IntN(n); e > 0; e-- {
		if a, b := rng.IntN(n), rng.IntN(n); a != b {
			g.Connect(sw[a], sw[b], rates[rng.IntN(3)], lat())
		}
	}
	for i := range sw {
		for h := 1 + rng.IntN(3); h > 0; h-- {
			hn := g.AddNode(topo.Host, fmt.Sprintf("h%d_%d", i, h), 0)
			g.Connect(hn, sw[i], rates[rng.IntN(3)], lat())
		}
	}
	return g
}

// TestIBNeverDrops: over random irregular topologies (up*/down* routing, deadlock free) and
// k=4 fat trees (any engine), random
// traffic on random SLs, small random buffers, adaptive routing on or off and IB CC on or off,
// the fabric never drops a packet and every message completes, with every invariant checked as
// it runs (credits never negative or above the window, receive buffers never overrun, bytes
// conserved).
func TestIBNeverDrops(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 0))
	for iter := 0; iter < 40; iter++ {
		g := randomFabric(rng)
		cfg := ibConfig(t, []string{"edr", "hdr", "ndr", "xdr"}[rng.IntN(4)])
		cfg.IB.Routing = "updown"
		if iter%4 == 3 { // a fat tree, where every engine is deadlock free
			g = fatTreeK(t, 4, []units.Rate{100 * units.Gbps, 400 * units.Gbps}[rng.IntN(2)], units.Time(100+rng.IntN(900))*units.Nanosecond)
			cfg.IB.Routing = ibsm.Engines[rng.IntN(3)]
		}
		cfg.IB.SetDefaultVLs(1 + rng.IntN(3))
		cfg.MTU = units.Size(256 << rng.IntN(5))
		cfg.IB.VLBuffer = units.Size((int64(cfg.MTU)+42)/IBBlock+1+int64(rng.IntN(40))) * IBBlock
		cfg.IB.Adaptive = rng.IntN(2) == 0
		cfg.IB.CC.Enabled = rng.IntN(2) == 0
		cfg.Seed = uint64(iter)
		H := len(g.Hosts)
		mg := &msggraph.Graph{Endpoints: H}
		for m := 5 + rng.IntN(40); m > 0; m-- {
			s, d := rng.IntN(H), rng.IntN(H)
			if s == d {
				continue
			}
			mg.Add(msggraph.Message{Src: int32(s), Dst: int32(d), Bytes: units.Size(1 + rng.IntN(300_000)),
				Start: units.Time(rng.IntN(20)) * units.Microsecond, Prio: uint8(rng.IntN(16))})
		}
		n := runOne(t, g, cfg, mg)
		res := n.lastRun
		if res.Drops != 0 {
			t.Fatalf("iteration %d: %d drops %v", iter, res.Drops, res.DropsByCause)
		}
		for _, m := range res.Messages {
			if m.Finish == 0 {
				t.Fatalf("iteration %d: message %d unfinished", iter, m.ID)
			}
		}
	}
}

// TestIBDeterministic: the same scenario and seed give identical results, adaptive routing and
// IB CC included.
func TestIBDeterministic(t *testing.T) {
	g := fatTreeK(t, 4, 200*units.Gbps, 300*units.Nanosecond)
	mg := permutationGraph(len(g.Hosts), 500*units.KB, 3)
	var prev *result.Run
	for i := 0; i < 2; i++ {
		cfg := ibConfig(t, "hdr")
		cfg.IB.Adaptive = true
		cfg.IB.CC.Enabled = true
		res := runOne(t, g, cfg, mg).lastRun
		if prev != nil {
			for j := range res.Messages {
				if res.Messages[j] != prev.Messages[j] {
					t.Fatalf("message %d differs between runs: %+v vs %+v", j, res.Messages[j], prev.Messages[j])
				}
			}
			if res.Events != prev.Events || fmt.Sprint(res.Counters) != fmt.Sprint(prev.Counters) {
				t.Fatalf("events or counters differ between runs")
			}
		}
		prev = res
	}
}

// TestIBArbitrationHighLimit: with VL1 in the high-priority table and VL0 in the low one, a
// VL_HIGH_LIMIT of 0 lets one low-priority packet through after every high-priority packet, so
// two saturating flows share the link 1:1; with 255 (unlimited) the high VL takes all of it
// until it is done.
func TestIBArbitrationHighLimit(t *testing.T) {
	for _, c := range []struct {
		limit    int
		wantLowR float64 // low flow's share of the link while both send
	}{{0, 0.5}, {255, 0}} {
		cfg := ibConfig(t, "edr")
		cfg.IB.SetDefaultVLs(2)
		cfg.IB.ArbHigh = []VLWeight{{1, 255}}
		cfg.IB.ArbLow = []VLWeight{{0, 255}}
		cfg.IB.HighLimit = c.limit
		g := twoSwitch(100*units.Gbps, 100*units.Gbps, 300*units.Nanosecond)
		mg := &msggraph.Graph{Endpoints: 6}
		mg.Add(msggraph.Message{Src: 0, Dst: 4, Bytes: 4 * units.MB, Prio: 0})
		mg.Add(msggraph.Message{Src: 1, Dst: 5, Bytes: 4 * units.MB, Prio: 1})
		res := runOne(t, g, cfg, mg).lastRun
		lo, hi := res.Messages[0], res.Messages[1]
		// While both send, the high flow gets 1 - share of the link: its FCT is its ideal / (1-share).
		hiSlow := float64(hi.FCT()) / float64(hi.IdealFCT)
		want := 1 / (1 - c.wantLowR)
		if math.Abs(hiSlow-want)/want > 0.02 {
			t.Errorf("high limit %d: high-priority flow slowdown %.3f, want %.3f", c.limit, hiSlow, want)
		}
		t.Logf("VL_HIGH_LIMIT %d: high flow slowdown %.3f, low flow slowdown %.3f", c.limit, hiSlow, float64(lo.FCT())/float64(lo.IdealFCT))
	}
}

// ring5 joins 5 switches in a cycle, one host each (host i on switch i).
func ring5(rate units.Rate, lat units.Time) *topo.Graph {
	g := &topo.Graph{Name: "ring5"}
	var sw []topo.NodeID
	for i := 0; i < 5; i++ {
		sw = append(sw, g.AddNode(topo.Switch, fmt.Sprintf("sw%d", i), 1))
	}
	for i := range sw {
		g.Connect(sw[i], sw[(i+1)%5], rate, lat)
	}
	for i := range sw {
		h := g.AddNode(topo.Host, fmt.Sprintf("host%d", i), 0)
		g.Connect(h, sw[i], rate, lat)
	}
	return g
}

// TestIBCreditDeadlock: on a ring of 5 switches min-hop routes host i -> host i+2 clockwise, and
// the five clockwise links' buffers wait on each other (the dependency cycle ibsm finds): with
// credits the fabric deadlocks and the watchdog names it. Up*/down* routing breaks the cycle and
// every flow completes.
func TestIBCreditDeadlock(t *testing.T) {
	mg := &msggraph.Graph{Endpoints: 5}
	for i := int32(0); i < 5; i++ {
		mg.Add(msggraph.Message{Src: i, Dst: (i + 2) % 5, Bytes: 4 * units.MB})
	}
	for _, engine := range []ibsm.Engine{ibsm.MinHop, ibsm.UpDown} {
		g := ring5(100*units.Gbps, 500*units.Nanosecond)
		r, _ := topo.ComputeRoutes(g)
		cfg := ibConfig(t, "edr")
		cfg.IB.Routing = engine
		cfg.IB.VLBuffer = 16 * units.KiB
		cfg.NoProgress = units.Millisecond
		cfg.Check = true
		n, err := New(g, r, cfg)
		if err != nil {
			t.Fatal(err)
		}
		_, err = n.Run(mg, units.MaxTime)
		switch engine {
		case "minhop":
			if err == nil || !strings.Contains(err.Error(), "credit deadlock") {
				t.Errorf("minhop on a ring: error %v, want a credit deadlock", err)
			} else {
				t.Logf("minhop: %v", err)
			}
		default:
			if err != nil {
				t.Errorf("updown on a ring: %v", err)
			}
		}
	}
}

// TestIBLossyLinks: corrupted packets take their credits with them; the FCTBS carried by the
// periodic flow-control packets resynchronizes the receiver, so credits never leak away and
// go-back-N recovers the data: every message completes, and the only drops are corruption.
func TestIBLossyLinks(t *testing.T) {
	g := line(2, 200*units.Gbps, 300*units.Nanosecond)
	for i := range g.Links {
		g.Links[i].ErrorRate = 0.01
	}
	cfg := ibConfig(t, "hdr")
	cfg.IB.VLBuffer = 32 * units.KiB
	cfg.RTO = 50 * units.Microsecond
	mg := &msggraph.Graph{Endpoints: 2}
	mg.Add(msggraph.Message{Src: 0, Dst: 1, Bytes: 4 * units.MB})
	mg.Add(msggraph.Message{Src: 1, Dst: 0, Bytes: 4 * units.MB})
	res := runOne(t, g, cfg, mg).lastRun
	if res.Drops == 0 || res.Drops != res.DropsByCause["corrupt"] {
		t.Errorf("drops %d by cause %v: want corruption drops only", res.Drops, res.DropsByCause)
	}
	for _, m := range res.Messages {
		if m.Finish == 0 {
			t.Errorf("message %d did not complete", m.ID)
		}
	}
	t.Logf("1%% corruption on every link: %d drops, %d B retransmitted, FCTs %v and %v", res.Drops, res.BytesRetransmitted, res.Messages[0].FCT(), res.Messages[1].FCT())
}

// TestIBIdealFollowsTables: under up*/down* on the 5-ring (root sw0) host4 -> host2 may not go
// sw4 -> sw3 -> sw2 (down, then up) and takes sw4 -> sw0 -> sw1 -> sw2 instead: 5 links, not 4.
// A flow alone finishes at the closed form for that path, and its ideal FCT follows the tables.
func TestIBIdealFollowsTables(t *testing.T) {
	g := ring5(200*units.Gbps, 400*units.Nanosecond)
	cfg := ibConfig(t, "hdr")
	cfg.IB.Routing = "updown"
	cfg.AckEvery = 1 << 30
	mg := &msggraph.Graph{Endpoints: 5}
	mg.Add(msggraph.Message{Src: 4, Dst: 2, Bytes: units.MB})
	m := runOne(t, g, cfg, mg).lastRun.Messages[0]
	want := ibClosedForm(int64(units.MB), 4096, 26, 16, 5, 200*units.Gbps, 400*units.Nanosecond, cfg.SwitchLatency)
	if d := m.FCT() - want; d < -units.Nanosecond || d > units.Nanosecond || m.IdealFCT != m.FCT() {
		t.Errorf("FCT %v, ideal %v, closed form over 5 links %v", m.FCT(), m.IdealFCT, want)
	}
}
