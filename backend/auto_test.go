package backend

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/units"
)

// TestEstimateJob: on twoHosts (a - switch - b: 2 links each way) with a 4096-byte MTU, a 1 MiB
// message is 256 packets of 2 hops, a 4097-byte one 2 packets; a zero-byte node and a message to
// itself cross nothing. Packets 258, packet-hops 516, events 4 x 516 = 2,064.
func TestEstimateJob(t *testing.T) {
	g := &msggraph.Graph{Endpoints: 2}
	first := g.Add(msggraph.Message{Src: 0, Dst: 1, Bytes: units.MiB})
	g.Add(msggraph.Message{Src: 1, Dst: 0, Bytes: 4097, Deps: []msggraph.ID{first}})
	g.Add(msggraph.Message{Src: 1, Dst: 1, Bytes: units.MiB})
	g.Add(msggraph.Message{Src: 0, Dst: 1})
	cfg := fabric.DefaultEthernet()
	if cfg.MTU != 4096 {
		t.Fatalf("default MTU %v, the test assumes 4096", cfg.MTU)
	}
	e, err := EstimateJob(&Job{Work: g, Net: twoHosts(t), Fabric: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if e.Packets != 258 || e.PacketHops != 516 || e.Events() != 2064 {
		t.Errorf("estimate %+v, events %v; want 258 packets, 516 packet-hops, 2064 events", e, e.Events())
	}
	// 2,064 events on 2 hosts at 10 M/s: 206.4 us.
	if got, want := e.CPU(), 206400*time.Nanosecond; got != want {
		t.Errorf("CPU %v, want %v", got, want)
	}
}

// TestPacketRate: the calibrated rate is 10 M events/s up to 64 hosts, 7.07 M at 128, 2.5 M at
// 1,024 (1/sqrt(hosts)), and an estimate prices each job at the rate of the hosts it touches.
func TestPacketRate(t *testing.T) {
	for _, c := range []struct {
		hosts int
		want  float64
	}{{0, 10e6}, {2, 10e6}, {64, 10e6}, {128, 2.5e6 * math.Sqrt(8)}, {1024, 2.5e6}, {4096, 1.25e6}} {
		if got := PacketEventsPerSecond(c.hosts); math.Abs(got-c.want) > 1 {
			t.Errorf("PacketEventsPerSecond(%d) = %g, want %g", c.hosts, got, c.want)
		}
	}
	a, b := Estimate{PacketHops: 1, Seconds: 2}, Estimate{PacketHops: 3, Seconds: 5}
	if s := a.Add(b); s.PacketHops != 4 || s.Seconds != 7 {
		t.Errorf("%+v + %+v = %+v", a, b, s)
	}
}

// TestChoose: the rule's arithmetic. 60 s is exactly the default budget, so packet; a
// nanosecond more is above it, so flow. 310 s are above a 5-minute budget and within 6 minutes.
func TestChoose(t *testing.T) {
	for _, c := range []struct {
		hops   float64
		secs   float64
		budget time.Duration
		want   Name
		reason string
	}{
		{45e6, 60, 0, Packet, "packet: estimated 180 M packet events, about 60 s on the packet backend, within the 60 s budget"},
		{45e6, 60 + 1e-9, 0, Flow, "flow: estimated 180 M packet events, about 60 s on the packet backend, above the 60 s budget"},
		{232.5e6, 310, 5 * time.Minute, Flow, "flow: estimated 930 M packet events, about 310 s on the packet backend, above the 300 s budget"},
		{232.5e6, 310, 6 * time.Minute, Packet, "packet: estimated 930 M packet events, about 310 s on the packet backend, within the 360 s budget"},
		{250e3, 0.33, 1500 * time.Millisecond, Packet, "packet: estimated 1 M packet events, about 0.33 s on the packet backend, within the 1.5s budget"},
	} {
		got, err := Choose(Estimate{PacketHops: c.hops, Seconds: c.secs}, c.budget)
		if err != nil || got.Backend != c.want || got.Reason != c.reason {
			t.Errorf("Choose(%v packet-hops, %v) = %+v, %v; want %s, %q", c.hops, c.budget, got, err, c.want, c.reason)
		}
	}
	if _, err := Choose(Estimate{}, -time.Second); err == nil || !strings.Contains(err.Error(), "want a positive duration") {
		t.Errorf("negative budget: %v", err)
	}
}

// TestAutoRuns: auto runs the backend it chooses and says why. The 1 MiB message of
// TestEstimateJob is 2,048 events, 205 us on one core: packet within a second, flow within a
// microsecond's budget; the two backends agree on its completion within 2 %.
func TestAutoRuns(t *testing.T) {
	g := &msggraph.Graph{Endpoints: 2}
	g.Add(msggraph.Message{Src: 0, Dst: 1, Bytes: units.MiB})
	var fin [2]units.Time
	for i, c := range []struct {
		budget time.Duration
		want   Name
	}{{time.Second, Packet}, {time.Microsecond, Flow}} {
		j := &Job{Work: g, Net: twoHosts(t), Fabric: fabric.DefaultEthernet(), Auto: AutoOptions{Budget: c.budget}}
		res, err := Run(context.Background(), Auto, j)
		if err != nil {
			t.Fatal(err)
		}
		if res.Backend != string(c.want) || !strings.HasPrefix(res.BackendReason, string(c.want)+": estimated 2.05 k packet events") {
			t.Errorf("budget %v: ran %s (%q), want %s", c.budget, res.Backend, res.BackendReason, c.want)
		}
		fin[i] = res.Messages[0].Finish
	}
	if d := float64(fin[1]-fin[0]) / float64(fin[0]); d > 0.02 || d < -0.02 {
		t.Errorf("packet %v, flow %v: differ by %.1f %%", fin[0], fin[1], 100*d)
	}
}

// TestAutoPacketOnly: a job the flow backend does not model (an ECN marking point or a DCQCN
// model only the packet backend has, a PFC storm) runs on the packet backend under auto even when
// its estimate is far above the budget, and the reason names what forced it.
func TestAutoPacketOnly(t *testing.T) {
	g := &msggraph.Graph{Endpoints: 2}
	g.Add(msggraph.Message{Src: 0, Dst: 1, Bytes: units.MiB})
	roce := fabric.DefaultRoCE()
	roce.RoCE.ECNMark = fabric.ECNMarkDequeue
	storm := fabric.DefaultRoCE()
	storm.Faults.Faults = []fabric.Fault{{Kind: fabric.FaultPFCStorm, At: units.Second}}
	for _, c := range []struct {
		name string
		cfg  fabric.Config
		why  string
	}{
		{"ecn_mark dequeue", roce, "ecn_mark"},
		{"a PFC storm", storm, "pfc_storm"},
	} {
		if why := PacketOnly(&c.cfg); !strings.Contains(why, c.why) {
			t.Errorf("%s: PacketOnly %q, want it to name %q", c.name, why, c.why)
		}
		e := Estimate{PacketHops: 1e12, Seconds: 1e12 * EventsPerPacketHop / PacketEventsPerSecondMax}
		if got := ChoosePacket(PacketOnly(&c.cfg), e); got.Backend != Packet || !strings.Contains(got.Reason, c.why) {
			t.Errorf("%s: %+v", c.name, got)
		}
	}
	plain := fabric.DefaultRoCE()
	if why := PacketOnly(&plain); why != "" {
		t.Errorf("default RoCE: PacketOnly %q, want none (the flow backend models it)", why)
	}
	// A link failure runs on the flow backend too: auto decides by size.
	linkDown := fabric.DefaultRoCE()
	linkDown.Faults.Faults = []fabric.Fault{{Kind: fabric.FaultLinkDown, At: units.Second}}
	if why := PacketOnly(&linkDown); why != "" {
		t.Errorf("a link failure: PacketOnly %q, want none (the flow backend models it)", why)
	}
}
