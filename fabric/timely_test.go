package fabric

import (
	"slices"
	"testing"

	"github.com/fabricsim/fabricsim/units"
)

// TIMELY's headline ([TIMELY] abstract and evaluation: the RTT held low, near T_low, at high throughput, from
// RTT gradients alone), on the paper's own scale: a 2:1 incast of long flows into one 10 Gb/s
// port with the paper's settings (T_low 50 us, T_high 500 us, 16 KB segments). Both flows start
// at line rate, the queue builds, the gradient cuts them; from 100 ms on (steady state), over
// every completion event's RTT:
//   - the median below T_low (the RTT sits at the low end of the band, not at T_high);
//   - the 99th percentile within T_low + 26 us: once the RTT passes T_low with a rising gradient
//     every completion cuts, and a cut takes effect after the segment already released (a
//     segment per flow, 2 x 16 KB at 10 Gb/s = 26 us of queue) — the band's top, T_high, is
//     never approached;
//   - the link at least 90 % busy (the paper's "near line rate": TIMELY's cuts empty the queue
//     now and then, which is what it trades for the low RTT), no pause, no drop.
func TestTimelyIncastHeadline(t *testing.T) {
	cfg := DefaultRoCE()
	cfg.RoCE.DCQCN, cfg.RoCE.Timely = false, true
	const line = 10 * units.Gbps
	until := 200 * units.Millisecond
	n, mg, s := twoToOne(t, cfg, line, units.Millisecond, until)
	var rtts []units.Time
	n.cc.(*timelyCC).trace = func(f *Flow, rtt units.Time) { rtts = append(rtts, rtt) }
	n.sim.Schedule(0, s, 0, 0, nil)
	res, err := n.Run(mg, until)
	if err != nil {
		t.Fatal(err)
	}
	from := 100
	r := s.rates(from, len(s.t)-1)
	seg := float64(cfg.MTU)
	frame := seg + float64(cfg.HeaderBytes+cfg.L1Overhead)
	util := (r[0] + r[1]) / (float64(line) * seg / frame)
	half := rtts[len(rtts)/2:]
	sorted := append([]units.Time(nil), half...)
	slices.Sort(sorted)
	p := func(q float64) units.Time { return sorted[int(q*float64(len(sorted)-1))] }
	t.Logf("completions %d; RTT p50 %v p90 %v p99 %v max %v; utilisation %.4f (%.2f %.2f Gb/s), decreases %v",
		len(rtts), p(0.5), p(0.9), p(0.99), p(1), util, r[0]/1e9, r[1]/1e9, res.Counters["timely_rate_decreases"])
	tp := cfg.RoCE.TimelyParams
	if p(0.5) >= tp.TLow {
		t.Errorf("median RTT %v, want below T_low %v", p(0.5), tp.TLow)
	}
	if hi := tp.TLow + 2*line.TransmitTime(tp.Segment); p(0.99) > hi {
		t.Errorf("99th percentile RTT %v, want at most T_low + 2 segments at line rate = %v", p(0.99), hi)
	}
	if util < 0.9 {
		t.Errorf("utilisation %.4f, want >= 0.90", util)
	}
	if res.Drops != 0 || res.Counters["pfc_pause_frames_sent"] != 0 || res.Counters["timely_rate_decreases"] == 0 {
		t.Errorf("drops %d, pauses %v, decreases %v", res.Drops, res.Counters["pfc_pause_frames_sent"], res.Counters["timely_rate_decreases"])
	}
}
