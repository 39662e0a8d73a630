// Package ibcc is InfiniBand congestion control (IBA vol. 1, annex A10) at the source channel
// adapter, as a state machine without I/O: a per-QP index into a congestion control table (CCT)
// rises by CCTIIncrease on every BECN, up to CCTILimit, and falls by one every CCTITimer toward
// CCTIMin; the table entry at the index is the inter-packet delay the QP inserts after each
// packet it injects. The fabric feeds it BECNs and the clock and reads the delay back.
//
// The timer runs free (ticks at every multiple of CCTITimer since time zero, as the per-port/SL
// timer of the annex does) and is applied lazily: Advance(now) performs every tick up to now, so
// no timer event is needed and the result is identical to ticking each period.
package ibcc

import (
	"fmt"

	"github.com/fabricsim/fabricsim/units"
)

// Params are the CA's congestion-control settings (annex A10 CongestionControlTable and
// CACongestionSetting attributes).
type Params struct {
	// CCTIIncrease is added to a QP's index per BECN received.
	CCTIIncrease int
	// CCTILimit is the highest index (the table has CCTILimit+1 usable entries).
	CCTILimit int
	// CCTIMin is the floor the timer decays the index to.
	CCTIMin int
	// CCTITimer is the decay period: every period the index falls by one.
	CCTITimer units.Time
	// Table is the CCT: Table[i] is the injection delay at index i. Table[0] is normally 0.
	Table []units.Time
}

// LinearTable returns a CCT of n entries whose entry i is i x step (est.: the annex encodes each
// entry as a 14-bit multiplier and 2-bit shift of an implementation-defined unit; a linear ramp
// is the common choice, [IBA] Annex A10, est.).
func LinearTable(n int, step units.Time) []units.Time {
	t := make([]units.Time, n)
	for i := range t {
		t[i] = units.Time(i) * step
	}
	return t
}

// Validate checks that the parameters describe a usable table.
func (p *Params) Validate() error {
	switch {
	case len(p.Table) == 0:
		return fmt.Errorf("ibcc: the congestion control table is empty")
	case p.CCTILimit < 0 || p.CCTILimit >= len(p.Table):
		return fmt.Errorf("ibcc: ccti_limit %d outside the table's 0..%d", p.CCTILimit, len(p.Table)-1)
	case p.CCTIMin < 0 || p.CCTIMin > p.CCTILimit:
		return fmt.Errorf("ibcc: ccti_min %d outside 0..ccti_limit %d", p.CCTIMin, p.CCTILimit)
	case p.CCTIIncrease < 1:
		return fmt.Errorf("ibcc: ccti_increase must be at least 1, got %d", p.CCTIIncrease)
	case p.CCTITimer <= 0:
		return fmt.Errorf("ibcc: ccti_timer must be positive")
	}
	for i, d := range p.Table {
		if d < 0 {
			return fmt.Errorf("ibcc: table entry %d is negative (%v)", i, d)
		}
	}
	return nil
}

// QP is one queue pair's congestion state. The zero value is a QP at index 0 that has seen
// nothing; call Reset to start it at CCTIMin.
type QP struct {
	// CCTI is the current table index.
	CCTI int
	// BECNs counts notifications received.
	BECNs int64
	// tick is the last timer period applied (now / CCTITimer).
	tick int64
}

// Reset starts the QP at CCTIMin at time now.
func (q *QP) Reset(p *Params, now units.Time) {
	*q = QP{CCTI: p.CCTIMin, tick: int64(now / p.CCTITimer)}
}

// Advance applies the timer ticks that fell in (last call, now]: one decrement each, not below
// CCTIMin.
func (q *QP) Advance(p *Params, now units.Time) {
	t := int64(now / p.CCTITimer)
	if t <= q.tick {
		return
	}
	dec := t - q.tick
	q.tick = t
	if q.CCTI <= p.CCTIMin {
		return
	}
	if dec >= int64(q.CCTI-p.CCTIMin) {
		q.CCTI = p.CCTIMin
		return
	}
	q.CCTI -= int(dec)
}

// BECN records a backward congestion notification received at now: the timer catches up, then
// the index rises by CCTIIncrease, capped at CCTILimit.
func (q *QP) BECN(p *Params, now units.Time) {
	q.Advance(p, now)
	q.BECNs++
	q.CCTI = min(q.CCTI+p.CCTIIncrease, p.CCTILimit)
}

// Delay returns the injection delay in force at now (the timer catches up first).
func (q *QP) Delay(p *Params, now units.Time) units.Time {
	q.Advance(p, now)
	return p.Table[q.CCTI]
}
