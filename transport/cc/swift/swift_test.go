package swift

import (
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/units"
)

const us = units.Microsecond

// TestAlgorithm1 drives one sender ACK by ACK through [Swift] Algorithm 1 with values computed
// by hand: mss 1000 B, window 10 packets, base target 18 us + 2 hops x 1 us = 20 us, ai 1,
// beta 0.8, max_mdf 0.5.
func TestAlgorithm1(t *testing.T) {
	p := Defaults()
	p.HopScaling = us
	var s Sender
	s.Init(&p, 18*us, 2, 10000, 10000, 1000)
	for i, c := range []struct {
		at, delay units.Time
		acked     int64
		decreased bool
		window    int64
		why       string
	}{
		{100 * us, 25 * us, 1000, true, 8400, "25 us >= 20 us, first decrease: 1 - 0.8 x 5/25 = 0.84"},
		{110 * us, 30 * us, 1000, false, 8400, "10 us since the decrease < rtt 25 us: no second decrease"},
		{120 * us, 15 * us, 1000, false, 8519, "15 us < 20 us: + ai x 1 / 8.4 packets = 8519.05 B"},
		{131 * us, 100 * us, 1000, true, 4259, "31 us >= rtt 15 us: 1 - 0.8 x 80/100 = 0.36 < 1 - max_mdf: x 0.5 = 4259.5 B"},
		{132 * us, 100 * us, 1000, false, 4259, "1 us since the decrease < rtt 100 us"},
		{240 * us, 19 * us, 3000, false, 4259 + 704, "19 us < 20 us: + 3 packets / 4.2595 = 0.70430 packets"},
	} {
		if got := s.OnAck(c.delay, c.acked, c.at); got != c.decreased || s.Window() != c.window {
			t.Errorf("ACK %d (%s): decreased %v, window %d B; want %v, %d B", i, c.why, got, s.Window(), c.decreased, c.window)
		}
	}
	if s.Decreases != 2 {
		t.Errorf("decreases %d, want 2", s.Decreases)
	}
}

// TestBounds: the window never exceeds its initial ceiling nor goes below one packet.
func TestBounds(t *testing.T) {
	p := Defaults()
	var s Sender
	s.Init(&p, 20*us, 0, 2000, 2000, 1000)
	s.OnAck(10*us, 1000, us)
	if s.Window() != 2000 {
		t.Errorf("window %d above the 2000 B ceiling", s.Window())
	}
	for i := range 10 {
		s.OnAck(1000*us, 1000, units.Time(i)*10000*us)
	}
	if s.Window() != 1000 {
		t.Errorf("window %d after ten deep cuts, want the one-packet floor 1000", s.Window())
	}
}

// TestPacing drives the window below one packet ([Swift] §3.4, Algorithm 1: pacing_delay = rtt /
// cwnd below one packet) with hand-computed values: mss 1000 B, target 20 us, min_cwnd 0.01
// packet, starting at one packet.
func TestPacing(t *testing.T) {
	p := Defaults()
	p.MinCwnd = 0.01
	var s Sender
	s.Init(&p, 20*us, 0, 1000, 10000, 1000)
	for i, c := range []struct {
		at, delay units.Time
		window    int64
		pacing    units.Time
		why       string
	}{
		{0, 0, 1000, 0, "one packet: window mode"},
		{100 * us, 100 * us, 500, 200 * us, "1 - 0.8 x 80/100 = 0.36 < 0.5: x 0.5 = 500 B; 100 us x 1000/500"},
		{300 * us, 100 * us, 250, 400 * us, "200 us since the decrease >= rtt: x 0.5 = 250 B; 100 us x 4"},
		{700 * us, 10 * us, 1250, 0, "10 us < 20 us below a packet: + ai x 1 packet = 1250 B: window mode"},
		{800 * us, 1000 * us, 625, 1600 * us, "x 0.5: 625 B; 1000 us x 1000/625"},
	} {
		if c.at > 0 {
			s.OnAck(c.delay, 1000, c.at)
		}
		if s.Window() != c.window || s.PacingDelay() != c.pacing {
			t.Errorf("ACK %d (%s): window %d B, pacing %v; want %d B, %v", i, c.why, s.Window(), s.PacingDelay(), c.window, c.pacing)
		}
	}
	for i := range 20 {
		s.OnAck(1000*us, 1000, 2000*us+units.Time(i)*2000*us)
	}
	if s.Window() != 10 || s.PacingDelay() != 100*1000*us {
		t.Errorf("after 20 cuts: window %d B, pacing %v; want the 0.01-packet floor 10 B, 1000 us x 100", s.Window(), s.PacingDelay())
	}
}

// TestEndpointWindow: with swift_endpoint_target the host delay drives its own window ([Swift]
// §3.3) and the fabric window sees the rest of the delay. Hand-computed: mss 1000 B, both windows
// from 10 packets, fabric target 20 us, endpoint target 5 us.
func TestEndpointWindow(t *testing.T) {
	p := Defaults()
	p.EndpointTarget = 5 * us
	var s Sender
	s.Init(&p, 20*us, 0, 10000, 100000, 1000)
	for i, c := range []struct {
		at, delay, host units.Time
		window          int64
		why             string
	}{
		{100 * us, 30 * us, 12 * us, 5333, "fabric 18 < 20 us: 10100 B; host 12 >= 5 us: x (1 - 0.8 x 7/12) = 5333.3 B"},
		{110 * us, 30 * us, 12 * us, 5333, "10 us since the endpoint decrease < rtt 30 us; fabric + 1/10.1 packet = 10199.0 B"},
		{140 * us, 26 * us, 2 * us, 5520, "fabric 24 >= 20 us: x (1 - 0.8 x 4/24) = 8839.1 B; host 2 < 5 us: + 1/5.333 packet = 5520.8 B"},
	} {
		s.OnAckHost(c.delay, c.host, 1000, c.at)
		if s.Window() != c.window {
			t.Errorf("ACK %d (%s): window %d B, want %d B", i+1, c.why, s.Window(), c.window)
		}
	}
	if s.Decreases != 1 || s.EndpointDecreases != 1 || int64(s.cwnd) != 8839 {
		t.Errorf("fabric window %.1f B, decreases %d fabric, %d endpoint; want 8839, 1, 1", s.cwnd, s.Decreases, s.EndpointDecreases)
	}
}

// TestFlowScaling checks [Swift] §3.2's flow-scaled target: alpha = fs_range / (1/sqrt(0.1) -
// 1/sqrt(100)) = 3.265543 us for fs_range 10 us, beta' = -alpha/10: 0 at 100 packets, 2.938989
// us at 1 packet, 1.306217 us at 4 packets (picoseconds truncated).
func TestFlowScaling(t *testing.T) {
	p := Defaults()
	p.FSRange = 10 * us
	for _, c := range []struct {
		cwnd int64
		want units.Time
	}{{100000, 20 * us}, {1000, 20*us + 2938988}, {4000, 20*us + 1306217}, {400000, 20 * us}} {
		var s Sender
		s.Init(&p, 20*us, 0, c.cwnd, c.cwnd, 1000)
		if got := s.Target(); got != c.want {
			t.Errorf("window %d B: target %v, want %v", c.cwnd, got, c.want)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, c := range []struct {
		edit func(*Params)
		key  string
	}{
		{func(p *Params) { p.Beta = 0 }, "swift_beta"},
		{func(p *Params) { p.MaxMDF = 1 }, "swift_max_mdf"},
		{func(p *Params) { p.AI = 0 }, "swift_ai"},
		{func(p *Params) { p.BaseTarget = -1 }, "swift_base_target"},
		{func(p *Params) { p.FSRange = -1 }, "swift_fs_range"},
		{func(p *Params) { p.HopScaling = -1 }, "swift_hop_scaling"},
		{func(p *Params) { p.MinCwnd = 0 }, "swift_min_cwnd"},
		{func(p *Params) { p.EndpointTarget = -1 }, "swift_endpoint_target"},
		{func(p *Params) { p.MinCwnd = 1.5 }, "swift_min_cwnd"},
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
