package dcqcn

import (
	"math"
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/units"
)

const us = units.Microsecond

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// The paper's walk at 40 Gb/s, message by message ([DCQCN] §3.2).
func TestRPPaperSequence(t *testing.T) {
	p := Paper()
	line := 40 * units.Gbps
	var r RP
	r.Init(&p, line, 0)
	if a := r.OnSent(1<<30, 0); a.Rate != line || a.Stage != None {
		t.Fatalf("at line rate sending changes nothing, got %+v", a)
	}
	// First CNP: alpha 1, so RC halves; RT clamps to the old RC; alpha stays (1-g)+g = 1.
	a := r.OnCNP(10 * us)
	if a.Rate != 20*units.Gbps || !near(r.RT, 40e9) || !near(r.Alpha, 1) || a.ArmTimer != 65*us {
		t.Fatalf("first CNP: %+v RT %g alpha %g", a, r.RT, r.Alpha)
	}
	// Second CNP right away (the paper cuts on every CNP): RT = 20G, RC = 10G.
	a = r.OnCNP(11 * us)
	if a.Rate != 10*units.Gbps || !near(r.RT, 20e9) || a.ArmTimer != 66*us {
		t.Fatalf("second CNP: %+v RT %g", a, r.RT)
	}
	// A stale timer (armed for 65us) does nothing.
	if a := r.OnTimer(65 * us); a.ArmTimer != 0 || a.Stage != None || a.Rate != 10*units.Gbps {
		t.Fatalf("stale timer acted: %+v", a)
	}
	// F = 5 timer events of fast recovery: RC halves its distance to RT each time.
	now := 66 * us
	rc := 10e9
	for i := 1; i <= 5; i++ {
		a = r.OnTimer(now)
		rc = (20e9 + rc) / 2
		if a.Stage != FastRecovery || !near(r.RC, rc) || a.ArmTimer != now+p.IncreaseTimer {
			t.Fatalf("FR step %d: %+v RC %g want %g", i, a, r.RC, rc)
		}
		now += p.IncreaseTimer
	}
	// The sixth timer event: T = 6 > F, B = 0: additive increase by R_AI = 40 Mb/s.
	a = r.OnTimer(now)
	rc = (20.04e9 + rc) / 2
	if a.Stage != Additive || !near(r.RT, 20.04e9) || !near(r.RC, rc) {
		t.Fatalf("AI: %+v RT %g RC %g want %g", a, r.RT, r.RC, rc)
	}
	now += p.IncreaseTimer
	// Push the byte counter past F too: B = 6 (6 x 10 MB), then hyper increase on the timer:
	// T = 7, B = 6, RT += (min(7,6)-5) x R_HAI.
	for i := 0; i < 6; i++ {
		a = r.OnSent(int64(p.ByteCounter), now)
		if a.Stage == None {
			t.Fatalf("byte counter event %d missing", i)
		}
	}
	if r.B != 6 {
		t.Fatalf("B = %d, want 6", r.B)
	}
	rt := r.RT
	a = r.OnTimer(now)
	if a.Stage != Hyper || !near(r.RT, rt+float64(p.HAI)) {
		t.Fatalf("hyper: %+v RT %g want %g", a, r.RT, rt+float64(p.HAI))
	}
}

// Alpha decays by (1-g) per K without a CNP; a CNP then adds g.
func TestRPAlphaTimer(t *testing.T) {
	p := Paper()
	var r RP
	r.Init(&p, 40*units.Gbps, 0)
	r.OnCNP(0) // alpha = 1, timer restarts at 0
	if got, want := r.AlphaAt(3*p.AlphaTimer+us), math.Pow(1-p.G, 3); !near(got, want) {
		t.Fatalf("alpha after 3K: %g want %g", got, want)
	}
	r.OnCNP(3*p.AlphaTimer + us)
	want := (1-p.G)*math.Pow(1-p.G, 3) + p.G
	if !near(r.Alpha, want) {
		t.Fatalf("alpha after CNP: %g want %g", r.Alpha, want)
	}
	// The decrease used alpha before the update: RC = RC_prev x (1 - alpha/2).
}

// ConnectX: CNPs within the 4 us decrease period are ignored; a cut never goes below 50 %;
// the rate never goes below 1 Mb/s.
func TestRPConnectXLimits(t *testing.T) {
	p := ConnectX()
	var r RP
	r.Init(&p, 100*units.Gbps, 0)
	r.OnCNP(0)
	rc := r.RC
	if want := 100e9 * (1 - 1023.0/1024/2); !near(rc, want) {
		t.Fatalf("first cut: %g want %g", rc, want)
	}
	if a := r.OnCNP(3 * us); !near(r.RC, rc) || a.ArmTimer != 0 || r.Decreases != 1 {
		t.Fatalf("CNP inside the decrease period acted: %+v", a)
	}
	r.OnCNP(4 * us)
	if r.Decreases != 2 {
		t.Fatal("CNP after the decrease period ignored")
	}
	r.Alpha = 1.9 // a cut of 95 % is bounded to 50 % (only reachable by a forced alpha)
	before := r.RC
	r.OnCNP(8 * us)
	if !near(r.RC, before*0.5) {
		t.Fatalf("min decrease factor: %g want %g", r.RC, before*0.5)
	}
	for i := 0; i < 200; i++ {
		r.OnCNP(units.Time(12+4*i) * us)
	}
	if r.Rate() != units.Mbps {
		t.Fatalf("rate %v, want the 1 Mb/s floor", r.Rate())
	}
	// ConnectX's byte counter: one increase event every 32767 B.
	r.OnSent(32766, time(900))
	if r.B != 0 {
		t.Fatal("byte event before B bytes")
	}
	r.OnSent(1, time(900))
	if r.B != 1 || r.Increases == 0 {
		t.Fatal("no byte event at B bytes")
	}
}

func time(u int) units.Time { return units.Time(u) * us }

// Recovery ends at line rate, and then the timer stops.
func TestRPRecoversToLine(t *testing.T) {
	p := Paper()
	line := 40 * units.Gbps
	var r RP
	r.Init(&p, line, 0)
	a := r.OnCNP(0)
	for i := 0; i < 1000 && a.ArmTimer != 0; i++ {
		a = r.OnTimer(a.ArmTimer)
	}
	if !r.AtLine() || a.Rate != line || a.ArmTimer != 0 {
		t.Fatalf("not back at line rate: %+v RT %g", a, r.RT)
	}
}

func TestNPRateLimit(t *testing.T) {
	p := ConnectX() // 4 us between CNPs
	var np NP
	steps := []struct {
		at   units.Time
		ce   bool
		want bool
	}{
		{0, false, false}, {0, true, true}, {2 * us, true, false}, {3 * us, false, false},
		{4 * us, true, true}, {7 * us, true, false}, {8 * us, true, true},
	}
	for i, s := range steps {
		if got := np.OnPacket(s.ce, s.at, &p); got != s.want {
			t.Errorf("step %d at %v ce=%v: CNP %v, want %v", i, s.at, s.ce, got, s.want)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, c := range []struct {
		edit func(*Params)
		want string
	}{
		{func(p *Params) { p.G = 0 }, "dcqcn_g"},
		{func(p *Params) { p.G = 1.5 }, "dcqcn_g"},
		{func(p *Params) { p.AlphaTimer = 0 }, "dcqcn_alpha_timer"},
		{func(p *Params) { p.IncreaseTimer = 0 }, "dcqcn_increase_timer"},
		{func(p *Params) { p.ByteCounter = 0 }, "dcqcn_byte_counter"},
		{func(p *Params) { p.MinRate = 0 }, "dcqcn_min_rate"},
		{func(p *Params) { p.MinDecFactor = 1 }, "dcqcn_min_dec_factor"},
		{func(p *Params) { p.AlphaInit = 2 }, "dcqcn_alpha_init"},
	} {
		p := ConnectX()
		c.edit(&p)
		err := p.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want error naming %s, got %v", c.want, err)
		}
	}
	for _, name := range []string{"paper", "connectx"} {
		p, err := Preset(name)
		if err != nil || p.Validate() != nil {
			t.Errorf("preset %s: %v %v", name, err, p.Validate())
		}
	}
	if _, err := Preset("bogus"); err == nil {
		t.Error("unknown preset accepted")
	}
}
