package timely

import (
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/units"
)

const us = units.Microsecond

// TestAlgorithm1 drives one sender completion by completion through [TIMELY] Algorithm 1 with
// the paper's settings (alpha 0.875, beta 0.8, T_low 50 us, T_high 500 us, minRTT 20 us, delta
// 0: line rate / 1000 = 10 Mb/s) on a 10 Gb/s NIC, each value computed by hand (rates in b/s, truncated):
//
//	1: 1000 us, first event, rtt_diff 0: above T_high, x (1 - 0.8 (1 - 500/1000)) = x 0.6: 6 Gb/s
//	2:  900 us, new diff -100, rtt_diff 0.875 x -100 = -87.5 us; above T_high: x (1 - 0.8 x 4/9)
//	3:  100 us, new diff -800, rtt_diff 0.125 x -87.5 + 0.875 x -800 = -710.94 us, g < 0: + delta
//	4:   40 us, below T_low: + delta (the gradient -7.07 is not looked at)
//	5:   40 us, below T_low: + delta
//	6:   60 us, new diff +20, rtt_diff 0.125 x -17.671 + 0.875 x 20 = 15.291 us, g = 0.76456:
//	     x (1 - 0.8 x 0.76456) = x 0.38835
//	7-10: 55 us, g = -0.123, -0.0154, -0.0019, -0.00024: + delta each (four in a row)
//	11:  55 us, the fifth event of g <= 0 in a row: HAI, + 5 delta
//	12: 2000 us, g = +85 but above T_high first: x (1 - 0.8 x 0.75) = x 0.4
func TestAlgorithm1(t *testing.T) {
	p := Defaults()
	var s Sender
	s.Init(&p, 10*units.Gbps)
	for i, c := range []struct {
		rtt  units.Time
		step Step
		rate units.Rate
	}{
		{1000 * us, AboveTHigh, 6000000000},
		{900 * us, AboveTHigh, 3866666666},
		{100 * us, GradientAI, 3876666666},
		{40 * us, BelowTLow, 3886666666},
		{40 * us, BelowTLow, 3896666666},
		{60 * us, GradientMD, 1513288004},
		{55 * us, GradientAI, 1523288004},
		{55 * us, GradientAI, 1533288004},
		{55 * us, GradientAI, 1543288004},
		{55 * us, GradientAI, 1553288004},
		{55 * us, GradientHAI, 1603288004},
		{2000 * us, AboveTHigh, 641315201},
	} {
		if got := s.OnCompletion(c.rtt); got != c.step || s.Rate() != c.rate {
			t.Errorf("completion %d (RTT %v): %v, rate %d b/s; want %v, %d b/s", i+1, c.rtt, got, s.Rate(), c.step, c.rate)
		}
	}
	if s.Decreases != 4 {
		t.Errorf("decreases %d, want 4", s.Decreases)
	}
}

// TestHAIRun: HAI needs five completion events in a row of gradient <= 0; a decrease ends the
// run (hand-computed gradients: 1000 us then 100 us x4 give -39.4, -4.92, -0.615, -0.077; 101 us
// gives +0.034, a decrease; 100 us x5 then -0.039 .. -0.00001), and events below T_low whose
// gradient is <= 0 count toward it (1000, 45, 45 us: -41.6, -5.2; 50 us: new diff +5, rtt_diff
// 0.125 x -104.5 + 0.875 x 5 = -8.69 us).
func TestHAIRun(t *testing.T) {
	p := Defaults()
	for _, c := range []struct {
		rtts []units.Time
		want []Step
	}{
		{[]units.Time{1000, 100, 100, 100, 100, 101, 100, 100, 100, 100, 100},
			[]Step{AboveTHigh, GradientAI, GradientAI, GradientAI, GradientAI, GradientMD, GradientAI, GradientAI, GradientAI, GradientAI, GradientHAI}},
		{[]units.Time{1000, 45, 45, 50, 50, 50},
			[]Step{AboveTHigh, BelowTLow, BelowTLow, GradientAI, GradientAI, GradientHAI}},
	} {
		var s Sender
		s.Init(&p, 10*units.Gbps)
		for i, rtt := range c.rtts {
			if got := s.OnCompletion(rtt * us); got != c.want[i] {
				t.Errorf("RTTs %v, event %d: %v (gradient %.5f), want %v", c.rtts, i+1, got, s.Gradient(), c.want[i])
			}
		}
	}
}

// TestBounds: the rate never exceeds the line rate, and a decrease factor at or below 0 leaves
// the minimum rate.
func TestBounds(t *testing.T) {
	p := Defaults()
	var s Sender
	s.Init(&p, 10*units.Gbps)
	s.OnCompletion(10 * us)
	if s.Rate() != 10*units.Gbps {
		t.Errorf("rate %v above the line rate after an increase", s.Rate())
	}
	s.OnCompletion(60 * us) // new diff 50 us: rtt_diff 43.75 us, g = 2.19: 1 - 0.8 x 2.19 < 0
	if s.Rate() != p.MinRate {
		t.Errorf("rate %v after a factor below 0, want the minimum %v", s.Rate(), p.MinRate)
	}
}

func TestValidate(t *testing.T) {
	for _, c := range []struct {
		edit func(*Params)
		key  string
	}{
		{func(p *Params) { p.Alpha = 0 }, "timely_alpha"},
		{func(p *Params) { p.Beta = 1.5 }, "timely_beta"},
		{func(p *Params) { p.TLow = 0 }, "timely_t_low"},
		{func(p *Params) { p.THigh = p.TLow }, "timely_t_high"},
		{func(p *Params) { p.MinRTT = 0 }, "timely_min_rtt"},
		{func(p *Params) { p.Delta = -1 }, "timely_delta"},
		{func(p *Params) { p.MinRate = -1 }, "timely_min_rate"},
		{func(p *Params) { p.Segment = 0 }, "timely_segment"},
	} {
		p := Defaults()
		c.edit(&p)
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), c.key) {
			t.Errorf("want an error naming %s, got %v", c.key, err)
		}
	}
	p := Defaults()
	if err := p.Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
}
