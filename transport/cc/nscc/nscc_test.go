package nscc

import (
	"math"
	"testing"

	"github.com/fabricsim/fabricsim/units"
)

const us = units.Microsecond

// The reference network itself (100 Gb/s, 12 us, target = base RTT): every scaling factor is 1,
// so the gains are htsim's unscaled ones ([UEC-htsim] initNsccParams).
func refSender(t *testing.T) (*Sender, *Gains) {
	g := NewGains(100*units.Gbps, 12*us, 0, 4096)
	var s Sender
	s.Init(&g, 100*units.Gbps, 12*us)
	return &s, &g
}

func TestGainsAtReference(t *testing.T) {
	g := NewGains(100*units.Gbps, 12*us, 0, 4096)
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"target", float64(g.Target), float64(12 * us)},
		{"alpha", g.Alpha, 4 * 4096 / float64(12*us)},
		{"fi", g.FI, 5 * 4096},
		{"eta", g.Eta, 0.15 * 4096},
		{"fi_scale", g.FIScale, 0.25},
	} {
		if math.Abs(c.got-c.want) > 1e-9*math.Abs(c.want) {
			t.Errorf("%s = %g, want %g", c.name, c.got, c.want)
		}
	}
	// At 400 Gb/s and 6 us with a 3 us target: a = 400*6 / (100*12) = 2, b = 3/12.
	g4 := NewGains(400*units.Gbps, 6*us, 3*us, 4096)
	if want := 4 * 4096 * 2 * 0.25 / float64(3*us); math.Abs(g4.Alpha-want) > 1e-12 {
		t.Errorf("alpha at 400G/6us/3us = %g, want %g", g4.Alpha, want)
	}
	if g4.FI != 5*4096*2 || g4.FIScale != 0.5 {
		t.Errorf("fi %g fi_scale %g, want %d and 0.5", g4.FI, g4.FIScale, 5*4096*2)
	}
}

func TestInitWindowIsMaxwnd(t *testing.T) {
	s, _ := refSender(t)
	// 1.5 x 12.5 GB/s x 12 us = 225,000 B.
	if s.Window() != 225000 || s.MaxWindow() != 225000 {
		t.Fatalf("window %d, maxwnd %d: want 225000 (1.5 BDP)", s.Window(), s.MaxWindow())
	}
}

// An ACK without CE at the target delay: fair increase inc += fi x acked, applied as inc / cwnd
// once the adjust period has passed, plus eta.
func TestFairIncrease(t *testing.T) {
	s, _ := refSender(t)
	s.OnRetransmit(125000) // cwnd 100,000: room below maxwnd
	if s.Window() != 100000 {
		t.Fatalf("after a 125,000 B loss window %d, want 100000", s.Window())
	}
	s.OnAck(Ack{RTT: 24 * us, Newly: 4096, InFlight: 50000}, 100*us)
	// inc = 20480 x 4096 = 83,886,080; cwnd = 100,000 + 83,886,080 / 100,000 + 614.4.
	want := 100000 + 83886080.0/100000 + 614.4
	if got := s.cwnd; math.Abs(got-want) > 1e-6 {
		t.Errorf("window %.3f, want %.3f", got, want)
	}
	// The unmarked sample at the target moves the smoothed delay by 1/80 of it.
	if got, want := s.AvgDelay(), units.Time(0.0125*float64(12*us)); got != want {
		t.Errorf("avg delay %v, want %v", got, want)
	}
}

// Under the target: proportional increase alpha x acked x (target - delay), held in inc until
// the adjustment (8 MTU received or the adjust period).
func TestProportionalIncrease(t *testing.T) {
	s, _ := refSender(t)
	s.OnRetransmit(125000)
	s.OnAck(Ack{RTT: 24 * us, Newly: 4096}, 100*us) // adjusts (first period), as above
	base := s.cwnd
	s.OnAck(Ack{RTT: 15 * us, Newly: 4096}, 101*us) // delay 3 us
	// inc = 4 x 4096 / 12us x 4096 x 9us = 3 x 4096^2 = 50,331,648, not yet applied.
	if s.inc != 50331648 || s.cwnd != base {
		t.Fatalf("inc %.1f cwnd %.3f: want inc 50331648 and cwnd unchanged %.3f", s.inc, s.cwnd, base)
	}
	for i := 0; i < 7; i++ { // received reaches 8 x 4096 + ...: the 8th ACK exceeds 8 MTU
		s.OnAck(Ack{RTT: 15 * us, Newly: 4096}, 102*us)
	}
	if s.cwnd != base || s.inc != 8*50331648 {
		t.Fatalf("after 8 ACKs of 4096 B (not above 8 MTU) cwnd %.3f inc %.0f", s.cwnd, s.inc)
	}
	s.OnAck(Ack{RTT: 15 * us, Newly: 4096}, 103*us)
	want := base + 9*50331648/base
	if math.Abs(s.cwnd-want) > 1e-6 || s.inc != 0 {
		t.Errorf("after the 9th ACK cwnd %.3f inc %.0f, want %.3f and 0", s.cwnd, s.inc, want)
	}
}

// Delay under 1 us for more than a window of bytes: fast increase, cwnd += acked x fi_scale per
// ACK, instead of the proportional term.
func TestFastIncrease(t *testing.T) {
	s, _ := refSender(t)
	s.OnRetransmit(225000 - 8192) // cwnd = 8192 (two packets)
	// At 5 us no adjustment period has passed (and 12 KB is under 8 MTU): inc only collects.
	s.OnAck(Ack{RTT: 12*us + 500, Newly: 4096}, 5*us)
	s.OnAck(Ack{RTT: 12*us + 500, Newly: 4096}, 5*us+1)
	if s.fastInc || s.cwnd != 8192 {
		t.Fatalf("after 8192 B under 1 us: fast increase %v cwnd %.1f, want off and 8192", s.fastInc, s.cwnd)
	}
	s.OnAck(Ack{RTT: 12*us + 500, Newly: 4096}, 5*us+2) // fiCount 12288 > cwnd 8192
	if !s.fastInc || s.cwnd != 8192+1024 {
		t.Errorf("fast increase: on %v cwnd %.1f, want 9216 (+ 4096 x 0.25)", s.fastInc, s.cwnd)
	}
	s.OnAck(Ack{RTT: 12*us + 2*us, Newly: 4096}, 5*us+3) // 2 us: over 1 us, stops
	if s.fastInc || s.fiCount != 0 {
		t.Errorf("fast increase still on after a 2 us sample")
	}
}

// CE with the delay at or above the target: multiplicative decrease by the smoothed delay,
// cwnd x= max(1 - 0.8 (avg - target) / avg, 0.5), at most once per base RTT.
func TestMultiplicativeDecrease(t *testing.T) {
	s, _ := refSender(t)
	now := 100 * us
	avg := 0.0
	n := 0
	for ; avg <= float64(12*us); n++ {
		now += 100 // 100 ps apart: no adjustment period passes
		w := s.cwnd
		s.OnAck(Ack{CE: true, RTT: 48 * us, Newly: 4096}, now) // delay 36 us
		avg = DelayEWMA*float64(36*us) + (1-DelayEWMA)*avg
		if avg <= float64(12*us) && s.cwnd < w {
			t.Fatalf("ACK %d: decrease with avg %.0f ps below the target", n, avg)
		}
	}
	if n != 33 {
		t.Errorf("the average passed 12 us after %d CE ACKs, want 33 (1 - 0.9875^n > 1/3)", n)
	}
	if s.Decreases != 1 {
		t.Fatalf("%d decreases, want 1", s.Decreases)
	}
	want := 225000 * (1 - Gamma*(avg-float64(12*us))/avg)
	if math.Abs(s.cwnd-want) > 1e-6*want {
		t.Errorf("after the decrease cwnd %.1f, want %.1f", s.cwnd, want)
	}
	w := s.cwnd
	s.OnAck(Ack{CE: true, RTT: 48 * us, Newly: 4096}, now+11*us)
	if s.Decreases != 1 || s.cwnd != w {
		t.Errorf("a second decrease within the base RTT")
	}
	// A CE echo under the target changes nothing (only the path).
	s2, _ := refSender(t)
	s2.OnRetransmit(100000)
	s2.OnAck(Ack{CE: true, RTT: 13 * us, Newly: 4096}, 5*us)
	if s2.cwnd != 125000 {
		t.Errorf("CE under the target: cwnd %.1f, want 125000", s2.cwnd)
	}
}

// Quick adapt: a delay above 4 x target once a quick-adapt period (base RTT + target) has
// passed, with fewer bytes received than maxwnd / 8 in it: the window becomes those bytes, and
// CE echoes for the bytes then in flight are ignored.
func TestQuickAdapt(t *testing.T) {
	s, _ := refSender(t)
	s.OnAck(Ack{RTT: 13 * us, Newly: 4096, InFlight: 100000}, 100*us) // opens the period to 124 us
	s.OnAck(Ack{RTT: 70 * us, Newly: 8192, InFlight: 90000}, 120*us)  // inside it: no quick adapt
	if s.QuickAdapts != 0 {
		t.Fatal("quick adapt inside the period")
	}
	s.OnAck(Ack{RTT: 70 * us, Newly: 4096, InFlight: 80000}, 125*us) // delay 58 us > 48 us
	// achieved since the period began: 8192 + 4096 = 12,288 < 225,000 / 8.
	if s.QuickAdapts != 1 || s.Window() != 12288 {
		t.Fatalf("quick adapts %d window %d, want 1 and 12288", s.QuickAdapts, s.Window())
	}
	s.OnAck(Ack{CE: true, RTT: 70 * us, Newly: 4096, InFlight: 76000}, 200*us)
	if s.Window() != 12288 || s.Decreases != 0 {
		t.Errorf("a CE echo within the ignored bytes changed the window to %d", s.Window())
	}
}

// The window stays within [one MTU, maxwnd], and a smaller RTT sample lowers the base RTT and
// maxwnd with it.
func TestBoundsAndBaseRTT(t *testing.T) {
	s, _ := refSender(t)
	s.OnRetransmit(1 << 30)
	if s.Window() != 4096 {
		t.Errorf("window %d after a huge loss, want one MTU 4096", s.Window())
	}
	s.OnAck(Ack{RTT: 8 * us, Newly: 4096}, 100*us)
	if s.BaseRTT() != 8*us || s.MaxWindow() != 150000 {
		t.Errorf("base RTT %v maxwnd %d after an 8 us sample, want 8us and 150000", s.BaseRTT(), s.MaxWindow())
	}
}
