package fabric

import (
	"testing"

	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/sim"
	"github.com/fabricsim/fabricsim/units"
)

// hostDelaySampler records every period the host delay flow 0's Swift sender last saw.
type hostDelaySampler struct {
	n      *Network
	period units.Time
	until  units.Time
	d      []units.Time
}

func (h *hostDelaySampler) Handle(*sim.Event) {
	if sw := h.n.cc.(*swiftCC); len(sw.snd) > 0 {
		h.d = append(h.d, sw.snd[0].HostDelay())
	}
	if h.n.sim.Now()+h.period <= h.until {
		h.n.sim.After(h.period, h, 0, 0, nil)
	}
}

// Swift's endpoint window ([Swift] §3.3: the delay a packet spends at the receiving host is
// endpoint congestion, kept apart from the fabric's). One long flow into a slow receiver that
// drains at 50 Gb/s on a 100 Gb/s link (fault slow_receiver): the queue is in the receiving
// NIC, the switch's stays empty. Without swift_endpoint_target the fabric window takes the host
// delay for fabric delay and cuts (a fabric cut with an empty fabric queue); with it, 5 us, the
// fabric window never cuts, the endpoint window does, and from 2.5 ms on the host delay each
// ACK reports averages the endpoint target within one frame time at the drain rate and never
// exceeds it by more than four (Swift's headline tolerance for one flow: it adds a packet per
// RTT for up to two RTTs before a cut acts); both carry the drain rate (full frames) with no
// pause.
func TestSwiftEndpointTarget(t *testing.T) {
	const drain = 50 * units.Gbps
	for _, et := range []units.Time{0, 5 * units.Microsecond} {
		cfg := DefaultRoCE()
		cfg.RoCE.DCQCN, cfg.RoCE.Swift = false, true
		cfg.RoCE.SwiftParams.EndpointTarget = et
		g := line(1, 100*units.Gbps, units.Microsecond)
		cfg.Faults = FaultPlan{Faults: []Fault{{Kind: FaultSlowReceiver, Node: g.Hosts[1], Rate: drain}}, Recovery: DefaultFaultRecovery()}
		n := newNet(t, g, cfg)
		mg := &msggraph.Graph{Endpoints: 2}
		mg.Add(msggraph.Message{Src: 0, Dst: 1, Bytes: 400 * units.MB})
		until := 5 * units.Millisecond
		s := &sampler{n: n, period: 10 * units.Microsecond, until: until, port: n.Switches[1].Ports[1], prio: 3}
		hs := &hostDelaySampler{n: n, period: units.Microsecond, until: until}
		n.sim.Schedule(0, s, 0, 0, nil)
		n.sim.Schedule(0, hs, 0, 0, nil)
		res, err := n.Run(mg, until)
		if err != nil {
			t.Fatal(err)
		}
		var qmax int64
		for _, q := range s.q {
			qmax = max(qmax, q)
		}
		frame := float64(int(cfg.MTU) + cfg.HeaderBytes)
		rate := s.rates(len(s.t)/2, len(s.t)-1)[0]
		fabric, endpoint := res.Counters["swift_window_decreases"], res.Counters["swift_endpoint_decreases"]
		if et == 0 {
			t.Logf("no endpoint window: %v fabric decreases, switch queue max %d B, %.2f Gb/s", fabric, qmax, rate/1e9)
			if fabric == 0 || qmax != 0 {
				t.Errorf("no endpoint window: %v fabric decreases with the switch queue at most %d B; want cuts with an empty fabric", fabric, qmax)
			}
		} else {
			frameTime := drain.TransmitTime(units.Size(frame))
			var sum float64
			var hi units.Time
			half := hs.d[len(hs.d)/2:]
			for _, d := range half {
				sum += float64(d)
				hi = max(hi, d)
			}
			mean := units.Time(sum / float64(len(half)))
			t.Logf("endpoint target %v: %v fabric, %v endpoint decreases; host delay mean %v max %v (frame time %v); %.2f Gb/s",
				et, fabric, endpoint, mean, hi, frameTime, rate/1e9)
			if fabric != 0 || endpoint == 0 {
				t.Errorf("endpoint window: %v fabric and %v endpoint decreases; want none and some", fabric, endpoint)
			}
			if mean < et-frameTime || mean > et+frameTime || hi > et+4*frameTime {
				t.Errorf("host delay mean %v max %v, want the mean within %v of %v and the max within 4 frame times", mean, hi, frameTime, et)
			}
		}
		if want := float64(drain) * float64(cfg.MTU) / frame; rate < 0.99*want || res.Counters["pfc_pause_frames_sent"] != 0 {
			t.Errorf("endpoint target %v: %.2f Gb/s, want the drain rate's payload %.2f; pauses %v", et, rate/1e9, want/1e9, res.Counters["pfc_pause_frames_sent"])
		}
	}
}
