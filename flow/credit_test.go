package flow

import (
	"testing"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

// An InfiniBand VL may have at most 2048 blocks (128 KiB) outstanding per credit round trip (IBA
// vol. 1 §7.9): two 400G flows that meet on an 800G link with 500 ns cables and 140 ns switches
// get 128 KiB per round trip between them, not 800G. The round trip (fabric/ibcredit.go): the
// packet's 41.2 ns at 800G, 500 ns + 140 ns to the leaf, 82.4 ns on the leaf's 400G egress before
// the credits are returned, 6 B of flow-control frame, 500 ns + 140 ns back: 1,403.7 ns, a
// window of 93.4 GB/s, so each flow runs at 46.7 of its 50 GB/s. A flow alone is not limited.
// The flow backend's completion time is that closed form, and within 3 % of the packet
// backend's (whose round trip is longer by the queueing of the 800G bursts at the 400G egresses
// and of the flow-control frames behind data).
func TestCreditWindowLimitsFastLinks(t *testing.T) {
	g, err := topo.LeafSpine(topo.LeafSpineSpec{Leaves: 2, Spines: 1, HostsPerLeaf: 4,
		Host:   topo.LinkSpec{Rate: 400 * units.Gbps, Latency: 500 * units.Nanosecond},
		Uplink: topo.LinkSpec{Rate: 800 * units.Gbps, Latency: 500 * units.Nanosecond}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := topo.ComputeRoutes(g)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := fabric.DefaultInfiniBand("ndr")
	if err != nil {
		t.Fatal(err)
	}
	const size = 4 * units.MiB
	wire := float64(size) / 4096 * (4096 + 26) // full packets of 4096 B + 26 B of headers
	ser := func(rate units.Rate, b float64) float64 { return b / (float64(rate) / 8) }
	lat := units.Nanosecond
	rtt := ser(800*units.Gbps, 4122) + float64(640*lat)/1e12 + ser(400*units.Gbps, 4122) +
		ser(800*units.Gbps, fabric.IBFCPacketBytes) + float64(640*lat)/1e12
	window := float64(fabric.IBMaxCreditWindow*fabric.IBBlock) / rtt
	for _, c := range []struct {
		flows int
		rate  float64 // bytes/s each flow is held to
	}{{1, 50e9}, {2, window / 2}} {
		mg := &msggraph.Graph{Endpoints: len(g.Hosts)}
		for i := 0; i < c.flows; i++ {
			mg.Add(msggraph.Message{Src: int32(i), Dst: int32(4 + i), Bytes: size, Conn: int32(i)})
		}
		fr, err := Run(g, r, cfg, mg, Options{Check: true})
		if err != nil {
			t.Fatal(err)
		}
		pr := packetOn(t, g, r, cfg, mg)
		// The path's latency and the store-and-forward of the first packet come on top of the
		// bytes at the flow's rate: the lone flow's ideal FCT less its bytes at line rate.
		extra := fr.Messages[0].IdealFCT.Seconds() - wire/50e9
		want := wire/c.rate + extra
		got := fr.SimTime.Seconds()
		if d := got/want - 1; d < -0.002 || d > 0.002 {
			t.Errorf("%d flows: flow backend %.2f us, closed form %.2f us (%+.2f %%)", c.flows, got*1e6, want*1e6, 100*d)
		}
		if d := got/pr.SimTime.Seconds() - 1; d < -0.03 || d > 0.03 {
			t.Errorf("%d flows: flow backend %.2f us, packet backend %.2f us (%+.1f %%)", c.flows, got*1e6, pr.SimTime.Microseconds(), 100*d)
		}
	}
}
