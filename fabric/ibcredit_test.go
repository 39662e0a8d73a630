package fabric

import (
	"math"
	"slices"
	"testing"
	"unsafe"

	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/result"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

// runIBFC runs mg on g with cfg (invariants checked), sending credit updates inline (the
// default on clean links) or, with packets set, as flow-control packets with their own
// transmit and arrival events (the path lossy and captured links take).
func runIBFC(t *testing.T, g *topo.Graph, cfg Config, mg *msggraph.Graph, packets bool) (*Network, *result.Run) {
	t.Helper()
	n := newNet(t, g, cfg)
	n.fc.(*ibCredits).packetFC = packets
	res, err := n.Run(mg, units.MaxTime)
	if err != nil {
		t.Fatal(err)
	}
	return n, res
}

// portTotals sums every port's transmit counters.
func portTotals(n *Network) (pkts, bytes int64, busy units.Time) {
	for g := range n.ports {
		p := &n.ports[g]
		pkts += p.TxPackets
		bytes += p.TxBytes
		busy += p.BusyTime
	}
	return
}

// TestIBInlineCreditsMatchPackets: inline credit updates keep the credit loop's wire timing
// (6 B serialized on the reverse link at the next packet boundary, then the link's delay), so
// credit-limited scenarios finish as with flow-control packets: a flow limited by a small
// buffer, a 32-to-1 incast and two VLs through a congested link, each flow within 0.01 % (ties
// at equal timestamps may resolve differently, nothing else), the same flow-control frames
// counted, with far fewer events.
func TestIBInlineCreditsMatchPackets(t *testing.T) {
	type scenario struct {
		name string
		g    *topo.Graph
		cfg  Config
		mg   *msggraph.Graph
	}
	var cases []scenario
	for _, c := range creditLimitedCases {
		cfg := ibConfig(t, "hdr")
		cfg.IB.VLBuffer = units.Size(c.pkts * ibBlocks(4096+26) * IBBlock)
		mg := &msggraph.Graph{Endpoints: 2}
		mg.Add(msggraph.Message{Src: 0, Dst: 1, Bytes: 8 * units.MB})
		cases = append(cases, scenario{"credit-limited " + c.rate.String(), line(1, c.rate, c.prop), cfg, mg})
	}
	{
		g := fatTreeK(t, 8, 400*units.Gbps, 500*units.Nanosecond)
		mg := &msggraph.Graph{Endpoints: len(g.Hosts)}
		for s := 1; s <= 32; s++ {
			mg.Add(msggraph.Message{Src: int32(s), Dst: 0, Bytes: units.MB})
		}
		cases = append(cases, scenario{"incast", g, ibConfig(t, "ndr"), mg})
	}
	{
		cfg := ibConfig(t, "edr")
		cfg.IB.SetDefaultVLs(2)
		cfg.IB.VLBuffer = 16 * units.KiB
		cases = append(cases, scenario{"two VLs", twoSwitch(100*units.Gbps, 100*units.Gbps, 500*units.Nanosecond), cfg, congestionGraph(4*units.MB, 2*units.MB, 1)})
	}
	for _, c := range cases {
		pn, pres := runIBFC(t, c.g, c.cfg, c.mg, true)
		in, ires := runIBFC(t, c.g, c.cfg, c.mg, false)
		for i := range pres.Messages {
			pf, inf := pres.Messages[i].FCT(), ires.Messages[i].FCT()
			if d := math.Abs(float64(inf-pf)) / float64(pf); d > 1e-4 {
				t.Errorf("%s: message %d FCT %v inline, %v with flow-control packets", c.name, i, inf, pf)
			}
		}
		if a, b := ires.Counters["ib_fc_packets"], pres.Counters["ib_fc_packets"]; math.Abs(a-b) > 1e-3*b {
			t.Errorf("%s: %v flow-control frames inline, %v packets", c.name, a, b)
		}
		if a, b := ires.Counters["ib_credit_stall_ns"], pres.Counters["ib_credit_stall_ns"]; math.Abs(a-b) > 1e-3*b {
			t.Errorf("%s: credit stall %v ns inline, %v ns with packets", c.name, a, b)
		}
		// The frames count as transmitted on their port and as packet hops, as packets do.
		near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-3*b }
		pp, pb, pbusy := portTotals(pn)
		ip, ib, ibusy := portTotals(in)
		if !near(float64(ires.PacketHops), float64(pres.PacketHops)) || !near(float64(ip), float64(pp)) || !near(float64(ib), float64(pb)) || !near(float64(ibusy), float64(pbusy)) {
			t.Errorf("%s: %d hops; ports sent %d frames, %d B, busy %v inline; %d hops; %d, %d B, %v with packets",
				c.name, ires.PacketHops, ip, ib, ibusy, pres.PacketHops, pp, pb, pbusy)
		}
		if float64(ires.Events) > 0.7*float64(pres.Events) {
			t.Errorf("%s: %d events inline, %d with packets", c.name, ires.Events, pres.Events)
		}
		t.Logf("%s: events %d -> %d inline; %v flow-control frames", c.name, pres.Events, ires.Events, ires.Counters["ib_fc_packets"])
	}
}

// TestIBInlineCreditsEvents: the k=8 fat tree permutation of BenchmarkFatTreePermutationIBK8
// (EDR, 1 us links, 2 MB flows) needs far fewer events with inline credit updates than with a
// transmit and an arrival event per flow-control packet, with the same FCTs but for ties (the
// permutation is congested, so a tie resolved the other way moves single flows a little; the
// mean and the slowest flow stay put).
func TestIBInlineCreditsEvents(t *testing.T) {
	g := fatTreeK(t, 8, 100*units.Gbps, units.Microsecond)
	mg := permutationGraph(len(g.Hosts), 2*units.MB, 1)
	cfg := ibConfig(t, "edr")
	_, pres := runIBFC(t, g, cfg, mg, true)
	_, ires := runIBFC(t, g, cfg, mg, false)
	if ires.Drops != 0 || pres.Drops != 0 {
		t.Fatalf("drops: %d inline, %d with packets", ires.Drops, pres.Drops)
	}
	if float64(ires.Events) > 0.65*float64(pres.Events) {
		t.Errorf("%d events inline, %d with flow-control packets: want at most 65 %%", ires.Events, pres.Events)
	}
	pf, inf := fcts(pres), fcts(ires)
	mean := func(s []float64) float64 {
		var sum float64
		for _, v := range s {
			sum += v
		}
		return sum / float64(len(s))
	}
	if pm, im := mean(pf), mean(inf); math.Abs(im-pm)/pm > 1e-3 {
		t.Errorf("mean FCT %.3f us inline, %.3f us with packets", im/1e6, pm/1e6)
	}
	if pmax, imax := pf[len(pf)-1], inf[len(inf)-1]; math.Abs(imax-pmax)/pmax > 5e-3 {
		t.Errorf("slowest FCT %.3f us inline, %.3f us with packets", imax/1e6, pmax/1e6)
	}
	if a, b := ires.Counters["ib_fc_packets"], pres.Counters["ib_fc_packets"]; math.Abs(a-b) > 0.01*b {
		t.Errorf("%v flow-control frames inline, %v packets", a, b)
	}
	t.Logf("k=8 permutation: %d events with flow-control packets, %d inline (%.1f %%); mean FCT %.3f -> %.3f us, max %.3f -> %.3f us; %v -> %v flow-control frames",
		pres.Events, ires.Events, 100*float64(ires.Events)/float64(pres.Events), mean(pf)/1e6, mean(inf)/1e6, pf[len(pf)-1]/1e6, inf[len(inf)-1]/1e6,
		pres.Counters["ib_fc_packets"], ires.Counters["ib_fc_packets"])
}

// TestIBCapturedPortSendsPackets: a captured port keeps the flow-control packet path, so its
// capture holds every frame it transmitted, credit updates included, while the ports that are
// not captured send theirs inline; the flows finish as without the capture.
func TestIBCapturedPortSendsPackets(t *testing.T) {
	cfg := ibConfig(t, "hdr")
	cfg.IB.VLBuffer = units.Size(4 * ibBlocks(4096+26) * IBBlock)
	g := line(1, 100*units.Gbps, units.Microsecond)
	mg := &msggraph.Graph{Endpoints: 2}
	mg.Add(msggraph.Message{Src: 0, Dst: 1, Bytes: units.MB})
	mg.Add(msggraph.Message{Src: 1, Dst: 0, Bytes: units.MB})
	_, plain := runIBFC(t, g, cfg, mg, false)

	n := newNet(t, g, cfg)
	c, err := n.EnableCapture(t.TempDir(), "host1:0,sw0:0", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	res, err := n.Run(mg, units.MaxTime)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	files := c.Files() // node order: sw0, host1
	if len(files) != 2 {
		t.Fatalf("files %v", files)
	}
	for i, p := range []*Port{n.Switches[1].Ports[0], n.NICs[1].Port} {
		if got := checkFile(t, files[i]).Packets; int64(got) != p.TxPackets {
			t.Errorf("%s holds %d frames, the port sent %d", files[i], got, p.TxPackets)
		}
	}
	if res.Counters["ib_fc_packets"] != plain.Counters["ib_fc_packets"] {
		t.Errorf("%v flow-control frames with the capture, %v without", res.Counters["ib_fc_packets"], plain.Counters["ib_fc_packets"])
	}
	for i := range res.Messages {
		a, b := res.Messages[i].FCT(), plain.Messages[i].FCT()
		if d := math.Abs(float64(a-b)) / float64(b); d > 1e-4 {
			t.Errorf("message %d: FCT %v captured, %v not", i, a, b)
		}
	}
}

// TestIBPortLayout pins the cache-line layout the per-packet path relies on: the fields every
// packet through a port reads fill exactly the first 64 bytes of its credit state, the
// arbitration state the second line and what returning credits upstream reads the third.
func TestIBPortLayout(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the layout is tuned for 64-bit platforms")
	}
	if off := unsafe.Offsetof(ibPort{}.arb); off != 64 {
		t.Fatalf("ibPort's hot fields take %d bytes, want 64", off)
	}
	if off := unsafe.Offsetof(ibPort{}.capBlocks); off != 128 {
		t.Fatalf("ibPort's credit-return line starts at %d, want 128", off)
	}
	if end := unsafe.Offsetof(ibPort{}.fcOrder) + IBMaxVLs; end > 192 {
		t.Fatalf("ibPort's credit-return line ends at %d, past the third line", end)
	}
	// Each VL's state is one whole line (ports are 64-byte multiples in a page-aligned array).
	if off, size, vl := unsafe.Offsetof(ibPort{}.v), unsafe.Sizeof(ibPort{}), unsafe.Sizeof(ibVL{}); off%64 != 0 || size%64 != 0 || vl != 64 {
		t.Fatalf("ibPort.v at offset %d, ibPort %d bytes, ibVL %d bytes: want multiples of 64", off, size, vl)
	}
}

// countingScheduler wraps a scheduler and counts its calls.
type countingScheduler struct {
	Scheduler
	calls int
}

func (c *countingScheduler) Pick(p *Port) int { c.calls++; return c.Scheduler.Pick(p) }

// TestIBHooksReplaceable: InfiniBand's credits, arbiter and router are called directly on the
// per-hop path, but a scheduler installed with SetScheduler still replaces the arbiter.
func TestIBHooksReplaceable(t *testing.T) {
	g := line(1, 100*units.Gbps, units.Microsecond)
	n := newNet(t, g, ibConfig(t, "hdr"))
	c := &countingScheduler{Scheduler: n.sched}
	n.SetScheduler(c)
	mg := &msggraph.Graph{Endpoints: 2}
	mg.Add(msggraph.Message{Src: 0, Dst: 1, Bytes: units.MB})
	if _, err := n.Run(mg, units.MaxTime); err != nil {
		t.Fatal(err)
	}
	// At least one pick per data packet (the switch port it leaves by).
	if pkts := int(units.MB / 4096); c.calls < pkts {
		t.Fatalf("installed scheduler called %d times, want at least %d (one per packet)", c.calls, pkts)
	}
}

// TestPortIndexFindsIBState: one index finds a port everywhere: its gidx is its place in the
// network's port array, node by node from portBase, and finds its own credit state.
func TestPortIndexFindsIBState(t *testing.T) {
	n := newNet(t, fatTreeK(t, 4, 100*units.Gbps, units.Microsecond), ibConfig(t, "hdr"))
	f := n.ibfc
	count := 0
	for i := range n.g.Nodes {
		for p := range n.g.Nodes[i].Ports {
			port := n.Ports(int32(i))[p]
			if port.Owner != topo.NodeID(i) || port.Index != int32(p) || port.gidx != n.portBase[i]+int32(p) ||
				n.port(port.gidx) != port || n.portOf(topo.NodeID(i), int32(p)) != port || f.state(port).port != port {
				t.Fatalf("%s port %d: gidx %d does not find it (or its credit state)", n.g.Nodes[i].Name, p, port.gidx)
			}
			count++
		}
	}
	if count != len(f.ports) || count != len(n.ports) {
		t.Fatalf("%d ports, %d in the array, %d credit states", count, len(n.ports), len(f.ports))
	}
}

// TestSendOneMatchesQueue: sendOne, an idle port's lone inline update sent without the queue,
// runs the same as queueing it and flushFC (queueFC), and Departed without --check's reports
// the same as departedChecked: the same messages, events, packet-hops and counters, the same
// frames and busy time per port, on three InfiniBand fabrics (a k=4 fat tree with a
// permutation and an 8-to-1 incast on SLs 0-3 and 8 KiB VL buffers; with adaptive routing; on
// one VL with 64 KiB buffers). Each case sends updates both ways (some through sendOne, some
// queued behind a packet) and stalls on credits, so that sendOne's wake-up of a waiting peer is
// exercised.
func TestSendOneMatchesQueue(t *testing.T) {
	g := fatTreeK(t, 4, 100*units.Gbps, units.Microsecond)
	base := ibConfig(t, "edr")
	base.IB.VLBuffer = 8 * units.KiB
	ar := base
	ar.IB.Adaptive = true
	one := ibConfig(t, "edr")
	one.IB.SetDefaultVLs(1)
	one.IB.VLBuffer = 64 * units.KiB
	for _, c := range []struct {
		name string
		cfg  Config
	}{{"small buffers", base}, {"adaptive", ar}, {"one VL", one}} {
		out := func(queue, check bool) (string, []int64, float64) {
			return ibCreditRun(t, g, c.cfg, func(n *Network) { n.ibfc.queueFC, n.ibfc.check = queue, check })
		}
		a, atx, stall := out(true, true) // the queue for every update, Departed with the reports
		if stall == 0 {
			t.Errorf("%s: no credit stall: the case does not exercise the wake-up path", c.name)
		}
		for _, v := range []struct {
			name         string
			queue, check bool
		}{{"sendOne", false, true}, {"sendOne, Departed unchecked", false, false}, {"queue, Departed unchecked", true, false}} {
			b, btx, _ := out(v.queue, v.check)
			if a != b {
				t.Errorf("%s: the run differs with %s:\n%s\n%s", c.name, v.name, a, b)
			}
			if !slices.Equal(atx, btx) {
				t.Errorf("%s: frames or busy time per port differ with %s", c.name, v.name)
			}
		}
	}
}
