package backend

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/fabricsim/fabricsim/analytic"
	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

func TestParse(t *testing.T) {
	for _, name := range []string{"packet", "analytic", "flow", "auto"} {
		if n, err := Parse(name); err != nil || string(n) != name {
			t.Errorf("Parse(%q) = %q, %v", name, n, err)
		}
	}
	if got := Names(); !slices.Equal(got, []Name{Packet, Flow, Analytic, Auto}) {
		t.Errorf("Names() = %v", got)
	}
	for _, bad := range []string{"", "fluid", "Packet"} {
		_, err := Parse(bad)
		if err == nil || !strings.Contains(err.Error(), "want packet, flow, analytic or auto") {
			t.Errorf("Parse(%q): %v, want an error naming the valid backends", bad, err)
		}
	}
	if _, err := Run(context.Background(), "fluid", &Job{}); err == nil || !strings.Contains(err.Error(), "want packet, flow, analytic or auto") {
		t.Errorf("Run on an unknown backend: %v", err)
	}
}

// twoHosts is host a -> switch -> host b, 100 Gb/s links of 1 us.
func twoHosts(t testing.TB) *Network {
	t.Helper()
	g := &topo.Graph{Name: "two"}
	a := g.AddNode(topo.Host, "a", 0)
	b := g.AddNode(topo.Host, "b", 0)
	s := g.AddNode(topo.Switch, "s", 1)
	g.Connect(a, s, 100*units.Gbps, units.Microsecond)
	g.Connect(b, s, 100*units.Gbps, units.Microsecond)
	return NewNetwork(g, nil)
}

// TestAnalyticResult: the analytic backend fills result.Run with the alpha-beta times of its
// path model. A lone 1 MiB message over two 100 Gb/s hops takes latency + bytes / payload rate:
// 2 x 1 us propagation + 500 ns switch + one full frame's serialization on the link that is not
// the bottleneck (4096 + 62 + 20 B at 100 Gb/s), at 100 Gb/s x 4096/4178 of payload. A message
// that depends on it and waits 2 us starts 2 us after its finish.
func TestAnalyticResult(t *testing.T) {
	net := twoHosts(t)
	cfg := fabric.DefaultEthernet()
	g := &msggraph.Graph{Endpoints: 2}
	first := g.Add(msggraph.Message{Src: 0, Dst: 1, Bytes: units.MiB, Tag: "first"})
	g.Add(msggraph.Message{Src: 1, Dst: 0, Bytes: units.MiB, Delay: 2 * units.Microsecond, Deps: []msggraph.ID{first}})
	res, err := Run(context.Background(), Analytic, &Job{Scenario: "two", Work: g, Net: net, Fabric: cfg, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	payload := units.Rate(int64(100*units.Gbps) * 4096 / 4178)
	lat := 2*units.Microsecond + 500*units.Nanosecond + (100 * units.Gbps).TransmitTime(4178)
	fct := lat + payload.TransmitTime(units.MiB)
	m0, m1 := res.Messages[0], res.Messages[1]
	near := func(a, b units.Time) bool { return a-b <= 1 && b-a <= 1 } // the fluid model rounds to 1 ps
	if m0.Start != 0 || !near(m0.Finish, fct) || m0.IdealFCT != fct {
		t.Errorf("first message: start %v finish %v ideal %v, want 0, %v, %v", m0.Start, m0.Finish, m0.IdealFCT, fct, fct)
	}
	if m1.Start != m0.Finish+2*units.Microsecond || !near(m1.Finish, m1.Start+fct) {
		t.Errorf("second message: start %v finish %v, want %v and %v", m1.Start, m1.Finish, m0.Finish+2*units.Microsecond, m1.Start+fct)
	}
	if res.SimTime != m1.Finish || res.Backend != "analytic" || res.Scenario != "two" || res.Seed != 7 {
		t.Errorf("run: sim time %v backend %q scenario %q seed %d", res.SimTime, res.Backend, res.Scenario, res.Seed)
	}
	if res.BytesDelivered != 2*int64(units.MiB) || res.Counters != nil || len(res.Omitted) != 0 {
		t.Errorf("delivered %d B, counters %v, omitted %v; want 2 MiB, none, none", res.BytesDelivered, res.Counters, res.Omitted)
	}
	// Stopped halfway through the second message: the first is done, the second is not, and the
	// run ended at Until.
	until := m1.Start + fct/2
	cut, err := Run(context.Background(), Analytic, &Job{Work: g, Net: net, Fabric: cfg, Until: until})
	if err != nil {
		t.Fatal(err)
	}
	if c := cut.Messages; c[0].Finish != m0.Finish || c[1].Done() || c[1].Start != m1.Start || cut.SimTime != m0.Finish || cut.EndTime != until {
		t.Errorf("until %v: finishes %v %v, start %v, sim time %v, end %v", until, c[0].Finish, c[1].Finish, c[1].Start, cut.SimTime, cut.EndTime)
	}
	// The packet backend on the same job: the same schema, the same message times within the
	// ACK and pipelining details the fluid model leaves out (2 %).
	pres, err := Run(context.Background(), Packet, &Job{Scenario: "two", Work: g, Net: net, Fabric: cfg, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	for i := range pres.Messages {
		p, a := pres.Messages[i], res.Messages[i]
		if d := float64(p.FCT()-a.FCT()) / float64(a.FCT()); d > 0.02 || d < -0.02 {
			t.Errorf("message %d: packet FCT %v, analytic %v", i, p.FCT(), a.FCT())
		}
	}
	if pres.Counters == nil || pres.PacketScale != 1 {
		t.Errorf("packet run: counters %v, packet scale %d", pres.Counters, pres.PacketScale)
	}
}

func TestAnalyticOmits(t *testing.T) {
	roce := fabric.DefaultRoCE()
	pfcOnly := roce
	pfcOnly.RoCE.ECN, pfcOnly.RoCE.DCQCN = false, false
	ib, err := fabric.DefaultInfiniBand("ndr")
	if err != nil {
		t.Fatal(err)
	}
	ibcc := ib
	ibcc.IB.CC.Enabled, ibcc.IB.Adaptive = true, true
	spray := fabric.DefaultEthernet()
	spray.Routing = "spray"
	for _, tc := range []struct {
		name string
		cfg  fabric.Config
		want []string
	}{
		{"ethernet", fabric.DefaultEthernet(), nil},
		{"roce", roce, []string{"PFC", "ECN marking", "DCQCN congestion control"}},
		{"roce pfc only", pfcOnly, []string{"PFC"}},
		{"infiniband", ib, []string{"credit-based flow control"}},
		{"infiniband cc ar", ibcc, []string{"credit-based flow control", "IB congestion control", "adaptive routing"}},
		{"spray", spray, []string{"packet spraying"}},
	} {
		if got := AnalyticOmits(tc.cfg); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// permutationJob is 16 hosts of a k=4 fat tree each sending 16 MiB to the next: about 1.6 M
// events on the packet backend, several calls of Progress.
func permutationJob(t testing.TB) *Job {
	g, err := topo.FatTree(4, topo.LinkSpec{Rate: 100 * units.Gbps, Latency: units.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	w := &msggraph.Graph{Endpoints: 16}
	for i := int32(0); i < 16; i++ {
		w.Add(msggraph.Message{Src: i, Dst: (i + 1) % 16, Bytes: 16 * units.MiB})
	}
	return &Job{Work: w, Net: NewNetwork(g, nil), Fabric: fabric.DefaultEthernet(), Seed: 1}
}

// TestPacketInterrupt: cancelling the context stops a packet run at its next progress point with
// the messages done so far and an error that is ErrInterrupted and the context's cause.
func TestPacketInterrupt(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	j := permutationJob(t)
	calls := 0
	j.Progress = func(now units.Time, done, total int) {
		calls++
		if total != 16 || now <= 0 {
			t.Errorf("progress at %v: %d of %d", now, done, total)
		}
		cancel()
	}
	res, err := Run(ctx, Packet, j)
	if !errors.Is(err, ErrInterrupted) || !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want an interrupt caused by the cancel", err)
	}
	if res == nil || calls != 1 {
		t.Fatalf("result %v after %d progress calls, want a partial result after 1", res, calls)
	}
	if s := res.Summary(); s.Unfinished == 0 || res.Events < progressEvery || res.Events > progressEvery+1 {
		t.Errorf("%d of %d messages unfinished after %d events; want some, stopped at event %d", s.Unfinished, s.Flows, res.Events, progressEvery)
	}
}

// cancelAfter is an analytic network that cancels its context after n latency lookups, i.e. in
// the middle of a run.
type cancelAfter struct {
	analytic.Uniform
	n      int
	cancel context.CancelFunc
}

func (c *cancelAfter) Latency(src, dst int32) units.Time {
	if c.n--; c.n == 0 {
		c.cancel()
	}
	return c.Uniform.Latency(src, dst)
}

// TestAnalyticInterrupt: the analytic backend stops too, with the messages done before.
func TestAnalyticInterrupt(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A chain of 20,000 messages: one completes per step of the fluid model.
	w := &msggraph.Graph{Endpoints: 2}
	prev := w.Add(msggraph.Message{Src: 0, Dst: 1, Bytes: 1000})
	for i := 1; i < 20000; i++ {
		prev = w.Add(msggraph.Message{Src: 0, Dst: 1, Bytes: 1000, Deps: []msggraph.ID{prev}})
	}
	net := &cancelAfter{Uniform: analytic.Uniform{Lat: units.Microsecond, BW: 100 * units.Gbps}, n: 1000, cancel: cancel}
	res, err := Run(ctx, Analytic, &Job{Work: w, Net: twoHosts(t), Fabric: fabric.DefaultEthernet(), Analytic: AnalyticOptions{Network: net}})
	if !errors.Is(err, ErrInterrupted) || res == nil {
		t.Fatalf("error %v, result %v: want an interrupt with a partial result", err, res)
	}
	s := res.Summary()
	if done := s.Flows - s.Unfinished; done < 999 || done > 1000+ctxEveryAnalytic {
		t.Errorf("%d messages done when interrupted after the 1000th; want 999 .. %d", done, 1000+ctxEveryAnalytic)
	}
}

// ctxEveryAnalytic bounds how many more messages of a chain complete after the cancel: the
// analytic engine looks at its context every 4096 steps, and a chain takes three per message.
const ctxEveryAnalytic = 4096

// TestNetworkRoutesOnce: a network's routes are computed on first use, once, whoever asks.
func TestNetworkRoutesOnce(t *testing.T) {
	n := twoHosts(t)
	got := make([]any, 8)
	var wg sync.WaitGroup
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := n.Routes()
			if err != nil {
				t.Error(err)
			}
			got[i] = r
		}()
	}
	wg.Wait()
	for i := range got {
		if got[i] != got[0] || got[0] == nil {
			t.Fatalf("Routes() returned different tables: %p and %p", got[i], got[0])
		}
	}
}
