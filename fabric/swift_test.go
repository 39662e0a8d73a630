package fabric

import (
	"math"
	"testing"

	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/sim"
	"github.com/fabricsim/fabricsim/units"
)

// delaySampler records every microsecond the delay each Swift sender last measured.
type delaySampler struct {
	s *sampler
	d [][]units.Time
}

func (d *delaySampler) Handle(ev *sim.Event) {
	sw := d.s.n.cc.(*swiftCC)
	row := make([]units.Time, len(sw.snd))
	for i := range sw.snd {
		row[i] = sw.snd[i].Delay()
	}
	d.d = append(d.d, row)
	until := d.s.until
	d.s.until = 0 // the sampler records; this one reschedules
	d.s.Handle(ev)
	d.s.until = until
	if d.s.n.sim.Now()+d.s.period <= until {
		d.s.n.sim.After(d.s.period, d, 0, 0, nil)
	}
}

// Swift's headline ([Swift] §4, Fig. 7-8: delay held near target at high utilisation, no loss):
// on a 2:1 incast of long flows into one 100 Gb/s port the round trip each ACK measures stays
// near the target, the link stays busy, nothing is paused or dropped. The tolerance: with N
// flows each adding ai = 1 packet per RTT, the queue grows by at most N packets per RTT, and a
// decrease takes effect after at most two RTTs (one of feedback, one of the once-per-RTT
// spacing), so the delay overshoots the target by at most 2N frame times (0.66 us for N = 2 at
// 4 KB); a decrease removes at most beta x overshoot/delay of the window, which undershoots by
// no more than the overshoot plus N frames. Checked from 1 ms on: every sampled delay within
// 4N frame times (1.33 us) of the target, the mean within N frame times, utilisation >= 99 %.
func TestSwiftIncastHeadline(t *testing.T) {
	const seg = 4096
	cfg := DefaultRoCE()
	cfg.RoCE.DCQCN, cfg.RoCE.Swift = false, true
	until := 5 * units.Millisecond
	n, mg, s := twoToOne(t, cfg, 100*units.Gbps, units.Microsecond, until)
	ds := &delaySampler{s: s}
	n.sim.Schedule(0, ds, 0, 0, nil)
	res, err := n.Run(mg, until)
	if err != nil {
		t.Fatal(err)
	}
	target := n.cc.(*swiftCC).target
	frame := float64(seg + cfg.HeaderBytes + cfg.L1Overhead)
	frameTime := units.Time(frame * 8 / 100e9 * 1e12)
	const flows = 2
	from := 1000
	lo, hi, sum, cnt := units.Time(math.MaxInt64), units.Time(0), 0.0, 0
	for _, row := range ds.d[from:] {
		for _, d := range row {
			lo, hi = min(lo, d), max(hi, d)
			sum += float64(d)
			cnt++
		}
	}
	mean := units.Time(sum / float64(cnt))
	qlo, qhi := int64(math.MaxInt64), int64(0)
	for _, q := range s.q[from:] {
		qlo, qhi = min(qlo, q), max(qhi, q)
	}
	r := s.rates(from, len(s.t)-1)
	util := (r[0] + r[1]) / (100e9 * seg / frame)
	t.Logf("base RTT %v, target %v; measured delay %v..%v mean %v; queue %.1f..%.1f frames; utilisation %.4f, rates %.2f %.2f Gb/s, decreases %v",
		n.baseRTT(), target, lo, hi, mean, float64(qlo)/frame, float64(qhi)/frame, util, r[0]/1e9, r[1]/1e9, res.Counters["swift_window_decreases"])
	if tol := 4 * flows * frameTime; lo < target-tol || hi > target+tol {
		t.Errorf("delay %v..%v, want within %v of the target %v", lo, hi, tol, target)
	}
	if tol := flows * frameTime; mean < target-tol || mean > target+tol {
		t.Errorf("mean delay %v, want within %v of the target %v", mean, tol, target)
	}
	if util < 0.99 {
		t.Errorf("utilisation %.4f, want >= 0.99", util)
	}
	if res.Drops != 0 || res.Counters["pfc_pause_frames_sent"] != 0 || res.Counters["swift_window_decreases"] == 0 {
		t.Errorf("drops %d, pauses %v, decreases %v", res.Drops, res.Counters["pfc_pause_frames_sent"], res.Counters["swift_window_decreases"])
	}
}

// Swift's pacing below one packet ([Swift] §3.4: with more flows than the bandwidth-delay
// product holds packets, a window that stops at one packet keeps a standing queue of the
// excess; below one packet Swift paces instead). A 32:1 incast of long flows into one 10 Gb/s
// port, whose base round trip holds 5.5 frames: with swift_min_cwnd 1 (no pacing) every flow
// keeps a packet in flight, so the queue holds at least 32 - 5.5 frames and the delay is at
// least base RTT + 26.5 frame times (107.1 us; within one frame time, the store-and-forward
// accounting of a round trip); with swift_min_cwnd 0.001 the mean delay over the second half
// of 20 ms drops below base RTT + half that queueing. Both keep the port at least 97 % busy,
// with no pause.
func TestSwiftPacingIncast(t *testing.T) {
	const senders = 32
	const line = 10 * units.Gbps
	var floor units.Time
	for _, minCwnd := range []float64{1, 0.001} {
		cfg := DefaultRoCE()
		cfg.RoCE.DCQCN, cfg.RoCE.Swift = false, true
		cfg.RoCE.SwiftParams.MinCwnd = minCwnd
		n := newNet(t, star(senders+1, line, units.Microsecond), cfg)
		mg := &msggraph.Graph{Endpoints: senders + 1}
		for i := 1; i <= senders; i++ {
			mg.Add(msggraph.Message{Src: int32(i), Dst: 0, Bytes: 100 * units.MB})
		}
		until := 20 * units.Millisecond
		s := &sampler{n: n, period: 10 * units.Microsecond, until: until, port: n.Switches[0].Ports[0], prio: 3}
		ds := &delaySampler{s: s}
		n.sim.Schedule(0, ds, 0, 0, nil)
		res, err := n.Run(mg, until)
		if err != nil {
			t.Fatal(err)
		}
		frame := float64(int(cfg.MTU) + cfg.HeaderBytes + cfg.L1Overhead)
		frameTime := line.TransmitTime(units.Size(frame))
		base := n.baseRTT()
		bdp := float64(base) / float64(frameTime) // frames the base round trip holds
		floor = base + units.Time((senders-bdp)*float64(frameTime))
		from := len(ds.d) / 2
		var sum float64
		var cnt int
		for _, row := range ds.d[from:] {
			for _, d := range row {
				sum += float64(d)
				cnt++
			}
		}
		mean := units.Time(sum / float64(cnt))
		tot := 0.0
		for _, x := range s.rates(from, len(s.t)-1) {
			tot += x
		}
		util := tot / (float64(line) * float64(cfg.MTU) / frame)
		t.Logf("min_cwnd %g: base RTT %v (%.2f frames), target %v; mean delay %v against the one-packet floor %v; utilisation %.4f; decreases %v",
			minCwnd, base, bdp, n.cc.(*swiftCC).target, mean, floor, util, res.Counters["swift_window_decreases"])
		if minCwnd == 1 && mean < floor-frameTime {
			t.Errorf("min_cwnd 1: mean delay %v below the floor %v - a frame time", mean, floor)
		}
		if half := base + (floor-base)/2; minCwnd < 1 && mean > half {
			t.Errorf("paced: mean delay %v, want below base + half the floor's queueing = %v", mean, half)
		}
		if util < 0.97 || res.Counters["pfc_pause_frames_sent"] != 0 {
			t.Errorf("min_cwnd %g: utilisation %.4f, pauses %v", minCwnd, util, res.Counters["pfc_pause_frames_sent"])
		}
	}
}
