package dctcp

import (
	"math"
	"testing"
)

// The sender ACK by ACK against [DCTCP] §3.1's equations, the expected values computed by hand
// from them: alpha starts at 1; a window of 10 segments of 1000 B, 3 of them marked.
func TestSenderEquations(t *testing.T) {
	p := Defaults()
	var s Sender
	s.Init(&p, 10000, 1000)
	next := int64(10000) // the first window's ten segments are sent
	// Segment 1 (unmarked) ends window 0 (winEnd 0): alpha = (1-g) x 1 + g x 0/1000; window
	// 1 now runs to 10000. Congestion avoidance: cwnd += 1000 x 1000 / 10000.
	steps := []struct {
		ack   int64
		ece   bool
		cut   bool
		alpha float64
		cwnd  float64
	}{
		{1000, false, false, 15.0 / 16, 10100},
		// A mark: cut by alpha/2 at once (eq. 2): 10100 x (1 - 15/32).
		{2000, true, true, 15.0 / 16, 10100 * (1 - 15.0/32)},
		// A second mark in the same window: no second cut, no growth.
		{3000, true, false, 15.0 / 16, 10100 * (1 - 15.0/32)},
	}
	for i, st := range steps {
		if cut := s.OnAck(st.ack, 1000, st.ece, next); cut != st.cut {
			t.Errorf("ack %d: cut %v, want %v", i, cut, st.cut)
		}
		if math.Abs(s.Alpha()-st.alpha) > 1e-12 || math.Abs(s.cwnd-st.cwnd) > 1e-9 {
			t.Errorf("ack %d: alpha %g cwnd %g, want %g %g", i, s.Alpha(), s.cwnd, st.alpha, st.cwnd)
		}
	}
	// The rest of window 1: segments 4..10, one more marked (3 of 9 since the window began).
	cw := s.cwnd
	for seq := int64(4000); seq <= 10000; seq += 1000 {
		ece := seq == 5000
		s.OnAck(seq, 1000, ece, 20000)
		if !ece {
			cw += 1000 * 1000 / cw
		}
	}
	if s.Alpha() != 15.0/16 || math.Abs(s.cwnd-cw) > 1e-9 {
		t.Fatalf("inside window 1: alpha %g cwnd %g, want 15/16 %g", s.Alpha(), s.cwnd, cw)
	}
	// The marked ACK past 10000 counts in window 1 and closes it: F = 4000/10000 (segments 2,
	// 3, 5 and this one of 2..11); alpha = (1-g) x 15/16 + g x 0.4; the cut window (cwrEnd
	// 10000) is over, so the mark cuts by the new alpha.
	s.OnAck(11000, 1000, true, 20000)
	want := (1-G)*15.0/16 + G*0.4
	if math.Abs(s.Alpha()-want) > 1e-12 {
		t.Errorf("alpha after window 1: %g, want %g", s.Alpha(), want)
	}
	if s.Cuts != 2 || math.Abs(s.cwnd-cw*(1-want/2)) > 1e-9 {
		t.Errorf("cuts %d cwnd %g, want 2 and %g", s.Cuts, s.cwnd, cw*(1-want/2))
	}
}

// With every byte marked alpha converges to 1 and with none to 0, geometrically at rate (1-g)
// per window (eq. 1): after n windows unmarked, alpha = (1-g)^n.
func TestAlphaDecay(t *testing.T) {
	p := Defaults()
	var s Sender
	s.Init(&p, 4000, 1000)
	seq := int64(0)
	for w := 1; w <= 40; w++ {
		seq += 1000
		s.OnAck(seq, 1000, false, seq) // each ACK closes the window opened by the last
	}
	if want := math.Pow(1-G, 40); math.Abs(s.Alpha()-want) > 1e-12 {
		t.Errorf("alpha after 40 unmarked windows %g, want (15/16)^40 = %g", s.Alpha(), want)
	}
	if s.Cuts != 0 {
		t.Errorf("%d cuts without a mark", s.Cuts)
	}
}

// The window never falls below one segment however often it is cut.
func TestFloor(t *testing.T) {
	p := Defaults()
	var s Sender
	s.Init(&p, 1, 1000)
	if s.Window() != 1000 {
		t.Fatalf("window %d, want one segment", s.Window())
	}
	for seq := int64(1000); seq < 100000; seq += 1000 {
		s.OnAck(seq, 1000, true, seq)
	}
	if s.Window() < 1000 {
		t.Errorf("window %d below one segment", s.Window())
	}
}

func TestValidate(t *testing.T) {
	for _, g := range []float64{0, -1, 1.5} {
		p := Params{G: g}
		if p.Validate() == nil {
			t.Errorf("g %g accepted", g)
		}
	}
	p := Defaults()
	if err := p.Validate(); err != nil {
		t.Error(err)
	}
}
