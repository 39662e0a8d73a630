package ibcc

import (
	"testing"

	"github.com/fabricsim/fabricsim/units"
)

const us = units.Microsecond

func params() *Params {
	return &Params{CCTIIncrease: 2, CCTILimit: 10, CCTIMin: 1, CCTITimer: 10 * us, Table: LinearTable(16, 100*units.Nanosecond)}
}

// TestSequence drives one QP event by event and checks the index and delay after each.
func TestSequence(t *testing.T) {
	p := params()
	var q QP
	q.Reset(p, 3*us)
	steps := []struct {
		what  string
		at    units.Time
		becn  bool
		ccti  int
		delay units.Time
	}{
		{"start at ccti_min", 3 * us, false, 1, 100 * units.Nanosecond},
		{"BECN +2", 4 * us, true, 3, 300 * units.Nanosecond},
		{"BECN +2", 5 * us, true, 5, 500 * units.Nanosecond},
		{"before the tick at 10us", 9999 * units.Nanosecond, false, 5, 500 * units.Nanosecond},
		{"tick at 10us: -1", 10 * us, false, 4, 400 * units.Nanosecond},
		{"same period: no change", 19 * us, false, 4, 400 * units.Nanosecond},
		{"BECN after tick at 20us: 4-1+2", 21 * us, true, 5, 500 * units.Nanosecond},
		{"3 BECNs saturate at ccti_limit", 22 * us, true, 7, 700 * units.Nanosecond},
		{"", 22 * us, true, 9, 900 * units.Nanosecond},
		{"", 22 * us, true, 10, 1000 * units.Nanosecond},
		{"limit holds", 23 * us, true, 10, 1000 * units.Nanosecond},
		{"ticks at 30..80us: 6 decrements", 85 * us, false, 4, 400 * units.Nanosecond},
		{"long idle: floor at ccti_min", 10 * units.Millisecond, false, 1, 100 * units.Nanosecond},
	}
	for i, s := range steps {
		if s.becn {
			q.BECN(p, s.at)
		}
		d := q.Delay(p, s.at)
		if q.CCTI != s.ccti || d != s.delay {
			t.Fatalf("step %d (%s) at %v: ccti %d delay %v, want %d %v", i, s.what, s.at, q.CCTI, d, s.ccti, s.delay)
		}
	}
	if q.BECNs != 7 {
		t.Errorf("BECNs %d, want 7", q.BECNs)
	}
}

// TestLazyTimerEqualsTicking: applying the timer lazily at arbitrary instants gives the same
// index as ticking at every period, for every start index and every query time up to 30 periods.
func TestLazyTimerEqualsTicking(t *testing.T) {
	p := params()
	for start := 0; start <= p.CCTILimit; start++ {
		for k := int64(0); k < 30; k++ {
			now := units.Time(k)*p.CCTITimer + 7*units.Nanosecond
			var lazy, ticked QP
			lazy.Reset(p, 0)
			ticked.Reset(p, 0)
			lazy.CCTI, ticked.CCTI = start, start
			for j := int64(1); j <= k; j++ {
				ticked.Advance(p, units.Time(j)*p.CCTITimer)
			}
			lazy.Advance(p, now)
			want := start
			if start > p.CCTIMin {
				want = max(p.CCTIMin, start-int(k))
			}
			if lazy.CCTI != ticked.CCTI || lazy.CCTI != want {
				t.Fatalf("start %d, %d periods: lazy %d ticked %d, want %d", start, k, lazy.CCTI, ticked.CCTI, want)
			}
		}
	}
}

// TestTimeNeverRewinds: an earlier now than already applied changes nothing.
func TestTimeNeverRewinds(t *testing.T) {
	p := params()
	var q QP
	q.Reset(p, 0)
	q.BECN(p, 0)
	q.BECN(p, 0)
	q.Advance(p, 50*us)
	c := q.CCTI
	q.Advance(p, 20*us)
	if q.CCTI != c {
		t.Errorf("index moved from %d to %d going back in time", c, q.CCTI)
	}
}

func TestValidate(t *testing.T) {
	good := params()
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		mod  func(*Params)
	}{
		{"empty table", func(p *Params) { p.Table = nil }},
		{"limit beyond table", func(p *Params) { p.CCTILimit = 16 }},
		{"negative limit", func(p *Params) { p.CCTILimit = -1 }},
		{"min above limit", func(p *Params) { p.CCTIMin = 11 }},
		{"zero increase", func(p *Params) { p.CCTIIncrease = 0 }},
		{"zero timer", func(p *Params) { p.CCTITimer = 0 }},
		{"negative entry", func(p *Params) { p.Table = []units.Time{0, -1, 2, 3, 4, 5, 6, 7, 8, 9, 10} }},
	} {
		p := *params()
		c.mod(&p)
		if p.Validate() == nil {
			t.Errorf("%s: accepted", c.name)
		}
	}
}
