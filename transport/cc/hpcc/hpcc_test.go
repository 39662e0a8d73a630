package hpcc

import (
	"math"
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/units"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// [HPCC] Algorithm 1 as ns-3's UpdateRateHp runs it, ACK by ACK, at 100 Gb/s with T = 10 us,
// eta 0.95, R_AI 40 Mb/s: one hop that sends at line rate with 50 KB queued (u = 1 + 50 KB x
// 8 / (100 Gb/s x 10 us) = 1.4), every 5 us.
func TestSenderSequence(t *testing.T) {
	p := Defaults()
	p.AI = 40 * units.Mbps
	var s Sender
	line := 100 * units.Gbps
	s.Init(&p, line, 10*units.Microsecond)
	hop := func(us int64, q int64) []Hop {
		return []Hop{{TS: units.Time(us) * units.Microsecond, TxBytes: us * 12500, QLen: q, Rate: line}}
	}
	// The first ACK only records the hops; the commit point is the next byte to send.
	if s.OnAck(4096, 40960, hop(0, 50000)) || s.Rate != 100e9 {
		t.Fatal("first ACK changed the rate")
	}
	// Past 40960: a commit. U = 1.4 x 5/10 = 0.7, k = 0.737 < 1, stage 0 < 5: additive, capped
	// at the line.
	s.OnAck(50000, 100000, hop(5, 50000))
	if !near(s.U, 0.7) || s.Rate != 100e9 || s.Ref != 100e9 || s.Stage != 1 || s.Commits != 1 {
		t.Fatalf("commit 1: U %g rate %g ref %g stage %d", s.U, s.Rate, s.Ref, s.Stage)
	}
	// Below 100000: fast react. U = (0.7 x 5 + 1.4 x 5)/10 = 1.05, k = 1.105: multiplicative
	// from the reference, which does not move.
	s.OnAck(60000, 110000, hop(10, 50000))
	want := 100e9/(1.05/0.95) + 40e6
	if !near(s.U, 1.05) || !near(s.Rate, want) || s.Ref != 100e9 || s.Stage != 1 {
		t.Fatalf("fast react: U %g rate %g want %g ref %g", s.U, s.Rate, want, s.Ref)
	}
	// Past 100000: the queue is gone (min of the two samples: 0), u = 1.0, U = 1.025: a
	// multiplicative commit from the reference, stage back to 0.
	s.OnAck(120000, 200000, hop(15, 0))
	want = 100e9/(1.025/0.95) + 40e6
	if !near(s.U, 1.025) || !near(s.Rate, want) || !near(s.Ref, want) || s.Stage != 0 {
		t.Fatalf("commit 2: U %g rate %g want %g stage %d", s.U, s.Rate, want, s.Stage)
	}
	// An idle hop (u = 0 from now): additive steps until MaxStage, then a multiplicative one
	// that, with k < 1, raises the rate (here to the line).
	ts, tx := int64(15), int64(15*12500)
	seq := int64(200000)
	for i := 1; i <= 6; i++ {
		ts += 10
		seq += 100000
		ref := s.Ref
		s.OnAck(seq, seq+1, []Hop{{TS: units.Time(ts) * units.Microsecond, TxBytes: tx, Rate: line}})
		if i <= 5 && (s.Stage != i || !near(s.Rate, min(ref+40e6, 100e9))) {
			t.Fatalf("AI step %d: stage %d rate %g from %g", i, s.Stage, s.Rate, ref)
		}
		if i == 6 && (s.Stage != 0 || s.Rate != 100e9) {
			t.Fatalf("MI after MaxStage: stage %d rate %g", s.Stage, s.Rate)
		}
	}
	if w := s.Window(); w != 125000 {
		t.Fatalf("window at line rate %d, want 100 Gb/s x 10 us = 125000 B", w)
	}
}

// TestMultiRate drives the per-hop variant (ns-3 MULTI_RATE 1) ACK by ACK at 100 Gb/s, T = 10
// us, eta 0.95, R_AI 40 Mb/s, on a two-hop path, with the single-rate sender beside it. Hop 0
// sends at line rate with 50 KB queued (u = 1.4) until its queue empties (u = 1.0) and then
// idles (u = 0); hop 1 sends at half rate (u = 0.5) and then at line rate with no queue (u =
// 1.0). Values by hand:
//
//	ACK 2 (commit, +5 us): U_0 = 0.7, U_1 = 0.25, both k < 1: R_i + R_AI, capped: 100 Gb/s
//	ACK 3 (fast react, +5 us): U_0 = 1.05: 100/(1.05/0.95) + 0.04 = 90.516 Gb/s; U_1 = 0.375
//	ACK 4 (commit, +5 us): U_0 = 1.025: R_0 = 100/(1.025/0.95) + 0.04 = 92.723 Gb/s; R_1 = 100
//	ACK 5 (commit, +10 us = T): U_0 = 0, additive: 92.763 Gb/s; U_1 = 1.0: 100/(1/0.95) + 0.04 =
//	      95.04 Gb/s; the flow takes 92.763 Gb/s, where the single rate cuts its one reference,
//	      92.723/(1/0.95) + 0.04 = 88.127 Gb/s, by the largest U.
func TestMultiRate(t *testing.T) {
	line := 100 * units.Gbps
	type rec struct {
		us, tx0, q0, tx1 int64
	}
	recs := []rec{{0, 0, 50000, 0}, {5, 5 * 12500, 50000, 5 * 6250}, {10, 10 * 12500, 50000, 10 * 6250},
		{15, 15 * 12500, 0, 15 * 6250}, {25, 15 * 12500, 0, 15*6250 + 10*12500}}
	acks := [][2]int64{{4096, 40960}, {50000, 100000}, {60000, 110000}, {120000, 200000}, {210000, 300000}}
	wantMulti := []float64{100e9, 100e9, 90516190476.19046, 92722926829.2683, 92762926829.2683}
	wantSingle := []float64{100e9, 100e9, 90516190476.19046, 92722926829.2683, 88126780487.80489}
	for _, multi := range []bool{true, false} {
		p := Defaults()
		p.AI, p.MultiRate = 40*units.Mbps, multi
		var s Sender
		s.Init(&p, line, 10*units.Microsecond)
		want := wantSingle
		if multi {
			want = wantMulti
		}
		for i, r := range recs {
			hops := []Hop{
				{TS: units.Time(r.us) * units.Microsecond, TxBytes: r.tx0, QLen: r.q0, Rate: line},
				{TS: units.Time(r.us) * units.Microsecond, TxBytes: r.tx1, Rate: line},
			}
			s.OnAck(acks[i][0], acks[i][1], hops)
			if !near(s.Rate, want[i]) {
				t.Errorf("multi %v, ACK %d: rate %.6g, want %.6g", multi, i+1, s.Rate, want[i])
			}
		}
		if multi && (!near(s.HopRef[0], 92762926829.2683) || !near(s.HopRef[1], 95.04e9) || s.HopStage[0] != 1 || s.HopStage[1] != 0) {
			t.Errorf("per-hop state: refs %v, stages %v", s.HopRef[:2], s.HopStage[:2])
		}
	}
}

func TestValidate(t *testing.T) {
	for _, c := range []struct {
		edit func(*Params)
		key  string
	}{
		{func(p *Params) { p.Eta = 0 }, "hpcc_eta"},
		{func(p *Params) { p.MaxStage = -1 }, "hpcc_max_stage"},
		{func(p *Params) { p.MinRate = 0 }, "hpcc_min_rate"},
		{func(p *Params) { p.BaseRTT = -1 }, "hpcc_base_rtt"},
	} {
		p := Defaults()
		c.edit(&p)
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), c.key) {
			t.Errorf("%s: %v", c.key, err)
		}
	}
	p := Defaults()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
}
