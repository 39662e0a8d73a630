package fabric

import (
	"testing"

	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

// hpcc_multi_rate on a parking lot, where it matters: a long flow host0 -> host3 crosses two
// 100 Gb/s bottlenecks (sw0 -> sw1 and sw1 -> host3), each shared with one short flow (host1 ->
// host2, host4 -> host3). From 0.1 ms to 5 ms both variants keep each bottleneck at least 90 %
// busy with its payload (eta 95 % of the wire). They share it differently: with one rate the
// long flow reacts to the larger U of its two hops, which each short flow loads alone, and gets
// less than either short flow (measured 26.7 against 65.0 Gb/s); with a rate per hop each of
// its references is cut only by its own hop, and it gets more than each short flow
// (measured 51.6 against 40.4 and 40.3 Gb/s). The orderings are asserted; neither is max-min (50 each).
func TestHPCCMultiRateParkingLot(t *testing.T) {
	for _, multi := range []bool{false, true} {
		g := &topo.Graph{Name: "parking"}
		rate, lat := 100*units.Gbps, units.Microsecond
		var h [5]topo.NodeID
		for i := range h {
			h[i] = g.AddNode(topo.Host, "host"+string(rune('0'+i)), 0)
		}
		s0 := g.AddNode(topo.Switch, "sw0", 1)
		s1 := g.AddNode(topo.Switch, "sw1", 1)
		g.Connect(h[0], s0, rate, lat)
		g.Connect(h[1], s0, rate, lat)
		g.Connect(s0, s1, rate, lat)
		for _, x := range h[2:] {
			g.Connect(x, s1, rate, lat)
		}
		cfg := DefaultRoCE()
		cfg.RoCE.DCQCN, cfg.RoCE.INT, cfg.RoCE.HPCC = false, true, true
		cfg.RoCE.HPCCParams.MultiRate = multi
		n := newNet(t, g, cfg)
		mg := &msggraph.Graph{Endpoints: 5}
		mg.Add(msggraph.Message{Src: 0, Dst: 3, Bytes: 400 * units.MB}) // both bottlenecks
		mg.Add(msggraph.Message{Src: 1, Dst: 2, Bytes: 400 * units.MB}) // sw0 -> sw1
		mg.Add(msggraph.Message{Src: 4, Dst: 3, Bytes: 400 * units.MB}) // sw1 -> host3
		s := &sampler{n: n, period: 100 * units.Microsecond, until: 5 * units.Millisecond}
		n.sim.Schedule(0, s, 0, 0, nil)
		res, err := n.Run(mg, 5*units.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		r := s.rates(1, len(s.t)-1)
		long, short1, short2 := r[0], r[1], r[2]
		t.Logf("multi_rate %v: long %.2f, short %.2f %.2f Gb/s; updates %v", multi, long/1e9, short1/1e9, short2/1e9, res.Counters["hpcc_rate_updates"])
		if long+short1 < 0.9*100e9 || long+short2 < 0.9*100e9 {
			t.Errorf("multi_rate %v: bottlenecks carry %.2f and %.2f Gb/s, want >= 90", multi, (long+short1)/1e9, (long+short2)/1e9)
		}
		if longest := long >= max(short1, short2); longest != multi || (!multi && long >= min(short1, short2)) {
			t.Errorf("multi_rate %v: long flow %.2f Gb/s against short flows %.2f, %.2f", multi, long/1e9, short1/1e9, short2/1e9)
		}
		if res.Drops != 0 || res.Counters["pfc_pause_frames_sent"] != 0 {
			t.Errorf("drops %d, pauses %v", res.Drops, res.Counters["pfc_pause_frames_sent"])
		}
	}
}
