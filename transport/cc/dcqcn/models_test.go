package dcqcn

import (
	"math"
	"testing"

	"github.com/fabricsim/fabricsim/units"
)

const ns = units.Nanosecond

// HPCC's ns-3 DCQCN, event by event (rdma-hw.cc @9f4be2a9ead8: cnp_received_mlx,
// UpdateAlphaMlx, CheckRateDecreaseMlx, RateIncEventTimerMlx), with run.py's dcqcn values at
// 100 Gb/s line rate: g 1/256, alpha timer 1 us, decrease interval 4 us, RP timer 300 us, F 1,
// R_AI 5 Mb/s, clamp target off. Rates are integers truncated at every step as DataRate does.
func TestNS3Sequence(t *testing.T) {
	p := NS3()
	line := 100 * units.Gbps
	var r NS3RP
	r.Init(&p, line)
	g := 1.0 / 256
	// The first CNP cuts nothing: alpha = 1, the check is armed 4 us + 1 ns later and the rate
	// is RateOnFirstCnp (1) x the rate.
	a := r.OnCNP(0)
	if a.Rate != line || a.ArmTimer != 4*us+ns || r.Alpha(0) != 1 {
		t.Fatalf("first CNP: %+v alpha %g", a, r.Alpha(0))
	}
	// A second CNP at 2 us: the ticks at 1 and 2 us decay alpha (no CNP in them), then the flag.
	r.OnCNP(2 * us)
	alpha := (1 - g) * (1 - g)
	if !near(r.Alpha(2*us), alpha) {
		t.Fatalf("alpha at 2us %g want %g", r.Alpha(2*us), alpha)
	}
	// The check at 4 us + 1 ns: ticks at 3 us (flag set: +g) and 4 us, then the cut; the
	// target stays (clamp off, no increase since the last cut: rpTimeStage 0).
	alpha = ((1-g)*alpha + g) * (1 - g)
	a = r.OnTimer(4*us + ns)
	rc := uint64(float64(100e9) * (1 - alpha/2))
	if uint64(a.Rate) != rc || r.RT != 100e9 || a.ArmTimer != 304*us+ns || r.Cuts() != 1 {
		t.Fatalf("first cut: %+v RC %d want %d RT %d", a, r.RC, rc, r.RT)
	}
	// No CNP since: the checks that follow do nothing, and none is armed (only the flag arms
	// one). The RP timer at 304 us + 1 ns: stage 0 < F, fast recovery: rate/2 + target/2.
	a = r.OnTimer(304*us + ns)
	rc = rc/2 + 50e9
	if a.Stage != FastRecovery || r.RC != rc || r.Stage != 1 || a.ArmTimer != 604*us+ns {
		t.Fatalf("fast recovery: %+v RC %d want %d", a, r.RC, rc)
	}
	// At 604 us + 1 ns stage == F: additive increase, target + 5 Mb/s clamped to the line.
	a = r.OnTimer(604*us + ns)
	rc = rc/2 + 50e9
	if a.Stage != Additive || r.RC != rc || r.RT != 100e9 || r.Stage != 2 {
		t.Fatalf("additive: %+v RC %d want %d RT %d", a, r.RC, rc, r.RT)
	}
	// CNPs at 701 and 703 us fall in one decrease interval: one check, at the grid point
	// 4 us + 1 ns + 175 x 4 us = 704 us + 1 ns, cuts once. Clamp target is off, but an increase
	// happened since the last cut (stage 2), so the target is clamped to the rate.
	r.OnCNP(701 * us)
	a = r.OnCNP(703 * us)
	if a.ArmTimer != 704*us+ns {
		t.Fatalf("check armed at %v, want 704us+1ns", a.ArmTimer)
	}
	before := r.RC
	alphaAt := r.Alpha(704*us + ns)
	a = r.OnTimer(704*us + ns)
	want := uint64(float64(before) * (1 - alphaAt/2))
	if r.RT != before || r.RC != want || r.Cuts() != 2 || r.Stage != 0 {
		t.Fatalf("second cut: RT %d want %d, RC %d want %d, cuts %d", r.RT, before, r.RC, want, r.Cuts())
	}
	// No byte counter.
	if a := r.OnSent(1<<30, 705*us); a.Stage != None || r.RC != want {
		t.Fatalf("ns-3 has no byte counter: %+v", a)
	}
	// The hyper stage adds R_HAI once per event (not x (stage - F)): run the timer to stage 3.
	now := 704*us + ns + p.IncreaseTimer
	for i := 0; i < 3; i++ {
		rt := r.RT
		a = r.OnTimer(now)
		if i == 2 && (a.Stage != Hyper || r.RT != min(rt+uint64(p.HAI), 100e9)) {
			t.Fatalf("hyper: %+v RT %d from %d", a, r.RT, rt)
		}
		now += p.IncreaseTimer
	}
	// The floor: with MinRate at the current rate, a cut leaves the rate there.
	p.MinRate = r.Rate()
	r.OnCNP(now)
	r.OnTimer(r.cutAt)
	if r.Rate() != p.MinRate || r.Cuts() != 3 {
		t.Fatalf("rate %v, want the %v floor", r.Rate(), p.MinRate)
	}
}

// ConnectX's documented RP ([ConnectX-DCQCN]) with its firmware defaults at 100 Gb/s.
func TestConnectXSequence(t *testing.T) {
	p := ConnectX()
	line := 100 * units.Gbps
	var r ConnectXRP
	r.Init(&p, line, 0)
	g := p.G
	// The first CNP sets alpha to initial_alpha_value and starts the 4 us grid; the cut waits
	// for the next boundary.
	a := r.OnCNP(0)
	if a.Rate != line || a.ArmTimer != 4*us || r.Alpha(0) != 1023.0/1024 {
		t.Fatalf("first CNP: %+v", a)
	}
	// At 4 us: four alpha ticks without a CNP (1, 2, 3, 4 us), then the cut by alpha/2
	// (rpg_min_dec_fac 50 % does not bind); no clamp (the target stays at the line).
	alpha := 1023.0 / 1024 * math.Pow(1-g, 4)
	a = r.OnTimer(4 * us)
	rc := 100e9 * (1 - alpha/2)
	if !near(r.RC, rc) || r.RT != 100e9 || a.ArmTimer != 304*us || r.Cuts() != 1 {
		t.Fatalf("cut: %+v RC %g want %g RT %g", a, r.RC, rc, r.RT)
	}
	// rpg_byte_reset 32767 B: one byte event, fast recovery (T = 0, B = 1 <= F).
	if a = r.OnSent(32766, 10*us); a.Stage != None {
		t.Fatalf("byte event early: %+v", a)
	}
	a = r.OnSent(1, 10*us)
	rc = (100e9 + rc) / 2
	if a.Stage != FastRecovery || !near(r.RC, rc) {
		t.Fatalf("byte event: %+v RC %g want %g", a, r.RC, rc)
	}
	// A CNP now: the cut waits for the boundary at 12 us. The last increase came from the byte
	// counter, so clamp_tgt_rate_after_time_inc does not clamp: the target stays at the line.
	if a = r.OnCNP(10 * us); a.ArmTimer != 12*us || !near(r.RC, rc) {
		t.Fatalf("CNP at 10us: %+v", a)
	}
	alpha = r.Alpha(12 * us)
	r.OnTimer(12 * us)
	rc *= 1 - alpha/2
	if !near(r.RC, rc) || r.RT != 100e9 {
		t.Fatalf("second cut: RC %g want %g RT %g", r.RC, rc, r.RT)
	}
	// The timer (300 us after the cut) is an increase by the timer; a CNP at 313 us is cut at
	// 316 us, and this time the target is clamped to the rate.
	r.OnTimer(312 * us)
	before := r.RC
	r.OnCNP(313 * us)
	r.OnTimer(316 * us)
	if r.RT != before || r.Cuts() != 3 {
		t.Fatalf("clamp after a timer increase: RT %g want %g", r.RT, before)
	}
}

// The paper's RP cuts on the CNP itself; the other two models cut at the next check.
func TestModelsCutTiming(t *testing.T) {
	for _, c := range []struct {
		m    Model
		p    Params
		cutT units.Time
	}{{ModelPaper, ConnectX(), 0}, {ModelConnectX, ConnectX(), 4 * us}, {ModelNS3, NS3(), 4*us + ns}} {
		r := NewReactor(c.m, &c.p, 100*units.Gbps, 0)
		a := r.OnCNP(0)
		cut := a.Rate < 100*units.Gbps
		if (c.cutT == 0) != cut {
			t.Errorf("%s: cut on the CNP %v", c.m, cut)
		}
		if c.cutT > 0 {
			if a.ArmTimer != c.cutT {
				t.Errorf("%s: check armed at %v, want %v", c.m, a.ArmTimer, c.cutT)
			}
			if a = r.OnTimer(c.cutT); a.Rate >= 100*units.Gbps || r.Cuts() != 1 {
				t.Errorf("%s: no cut at the check: %+v", c.m, a)
			}
		}
	}
}

func TestModelNames(t *testing.T) {
	var m Model
	if err := m.UnmarshalText([]byte("ns3")); err != nil || m != ModelNS3 {
		t.Fatal(err)
	}
	if err := m.UnmarshalText([]byte("timely")); err == nil {
		t.Fatal("unknown model accepted")
	}
	if u := ModelNS3.Unused(); len(u) != 4 || u[1] != "dcqcn_byte_counter" {
		t.Fatalf("ns3 unused keys %v", u)
	}
	for _, m := range Models {
		p, err := Preset(string(m))
		if err != nil || p.Validate() != nil {
			t.Errorf("model %s has no valid preset of its name: %v", m, err)
		}
	}
}
