package flow

import (
	"math"

	"github.com/fabricsim/fabricsim/transport/ibcc"
	"github.com/fabricsim/fabricsim/units"
)

// ibCCModel is InfiniBand congestion control (IBA annex A10) on the fluid network, with the packet
// backend's per-QP state machine (package transport/ibcc) and its switch rule (fabric/ibcc.go):
//   - a data packet joining an egress queue whose VL holds more than the threshold is marked
//     FECN, one in MarkingRate+1 of them, unless the port lacks credits (a victim of congestion
//     further down; marked only with the victim mask): a port throttled to a fraction of its
//     rate marks that fraction of its packets;
//   - the receiving HCA returns a BECN for every FECN; each raises the QP's CCT index, which
//     falls by one every CCTI timer;
//   - the QP waits the table's delay CCT[CCTI] between the starts of its packets, so it sends at
//     most a packet per max(its serialization, that delay).
type ibCCModel struct {
	e       *engine
	p       *ibcc.Params
	thresh  float64
	every   float64
	victims bool
	st      []ibFlow
	pktTime float64 // a full packet's wire time at each host's rate is computed per flow

	marked, sent, received float64
}

type ibFlow struct {
	qp    ibcc.QP
	fecn  float64     // marked packets not yet notified (fractional)
	becns []becnBatch // notifications on their way back, by arrival
	on    bool
}

type becnBatch struct {
	at units.Time
	n  int
}

func newIBCC(e *engine) (*ibCCModel, error) {
	c := &e.cfg.IB.CC
	p := &ibcc.Params{CCTIIncrease: c.CCTIIncrease, CCTILimit: c.CCTILimit, CCTIMin: c.CCTIMin, CCTITimer: c.CCTITimer, Table: c.Table}
	if len(p.Table) == 0 {
		p.Table = ibcc.LinearTable(c.CCTILimit+1, c.TableStep)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &ibCCModel{e: e, p: p, thresh: float64(c.Threshold), every: float64(c.MarkingRate + 1), victims: c.VictimMask}, nil
}

func (m *ibCCModel) start(fid int32, t units.Time) {
	for int(fid) >= len(m.st) {
		m.st = append(m.st, ibFlow{})
	}
	s := &m.st[fid]
	b := s.becns[:0]
	*s = ibFlow{on: true, becns: b}
	s.qp.Reset(m.p, t)
}

func (m *ibCCModel) end(fid int32) { m.st[fid].on = false }

func (m *ibCCModel) rate(fid int32) float64 {
	e := m.e
	s := &m.st[fid]
	f := &e.flows[fid]
	line := e.hostSt[f.src].rate
	d := s.qp.Delay(m.p, e.now).Seconds()
	if d <= 0 {
		return line
	}
	pkt := e.ideal.maxWire
	return pkt / math.Max(pkt/line, d)
}

func (m *ibCCModel) enqueued(fid, r int32, q *fifo, amt float64) {
	e := m.e
	if q.left <= m.thresh {
		return
	}
	k := amt / e.ideal.maxWire / m.every
	if !m.victims {
		// A port that cannot send for lack of credits is a victim, not the root: a packet
		// joining its queue is marked only if the port has credits then, which a port throttled
		// to a fraction of its rate has for that fraction of the time.
		if tau := e.fc.tau; tau > 0 {
			k *= min(1, e.rc[int(r)*e.nc+int(e.flows[fid].cls)].allow/(e.net.res[r].rate*tau))
		}
	}
	m.st[fid].fecn += k
	m.marked += k
	if k > 0 && e.red.copied(e.flows[fid].msg) {
		e.red.broken = true // the counters are not kept per component
	}
}

func (m *ibCCModel) afterStep(tEnd units.Time, tau float64) bool {
	e := m.e
	busy := false
	for _, fid := range e.hot {
		s := &m.st[fid]
		f := &e.flows[fid]
		k := 0
		for ; k < len(s.becns) && s.becns[k].at <= tEnd; k++ {
			for range s.becns[k].n {
				s.qp.BECN(m.p, s.becns[k].at)
			}
			m.received += float64(s.becns[k].n)
		}
		s.becns = append(s.becns[:0], s.becns[k:]...)
		if n := math.Floor(s.fecn); n >= 1 {
			s.fecn -= n
			m.sent += n
			// The marked packets reach the receiver after the queues and the path's latency; the
			// notifications return over the path's latency.
			s.becns = append(s.becns, becnBatch{at: tEnd + e.queueDelay(fid) + 2*f.lat, n: int(n)})
		}
		s.qp.Advance(m.p, tEnd)
		if s.qp.CCTI > m.p.CCTIMin || len(s.becns) > 0 {
			busy = true
		}
	}
	return busy
}

func (m *ibCCModel) report(c map[string]float64) {
	c["ib_fecn_marked"] = math.Round(m.marked)
	c["ib_becn_sent"] = m.sent
	c["ib_becn_received"] = m.received
	var top int
	for i := range m.st {
		top = max(top, m.st[i].qp.CCTI)
	}
	c["ib_ccti_max_final"] = float64(top)
}

func (m *ibCCModel) steady(fid int32) bool {
	s := &m.st[fid]
	s.qp.Advance(m.p, m.e.now)
	return s.qp.CCTI <= m.p.CCTIMin && len(s.becns) == 0 && s.fecn < 1
}
