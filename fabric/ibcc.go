package fabric

import (
	"github.com/fabricsim/fabricsim/result"
	"github.com/fabricsim/fabricsim/transport/ibcc"
)

// InfiniBand congestion control ([IBA] Annex A10). The switch side is ibMarker: a
// data packet queued at an egress port whose VL already holds more than the threshold gets FECN,
// one in MarkingRate+1 of them. Only the root of congestion marks: a port whose VL lacks credits
// is a victim of congestion further down and marks only with the victim mask set. The receiving
// HCA answers each FECN with a congestion notification carrying BECN (NIC.SendCNP); the sending
// HCA's per-QP state machine (transport/ibcc) raises its CCT index and spaces the QP's packets
// by the table's injection delay (Flow.Gap).

type ibMarker struct {
	fc        *ibCredits
	threshold int64
	every     int64
	victims   bool
	marked    int64
}

func (m *ibMarker) Enqueue(out *Port, pkt *Packet) {
	if pkt.Kind != Data {
		return
	}
	vl := pkt.Prio
	if out.q[vl].bytes <= m.threshold {
		return
	}
	if !m.victims && m.fc.Credits(out, int(vl)) < ibBlocks(out.q[vl].peek().Size) {
		return // credit-starved: a victim, not the root
	}
	st := m.fc.state(out)
	st.marks++
	if st.marks%m.every == 0 {
		pkt.Mark |= MarkFECN
		m.marked++
		if b := m.fc.n.bins; b != nil {
			b.mark(m.fc.n.sim.Now())
		}
	}
}

func (m *ibMarker) Report(res *result.Run) { res.Counters["ib_fecn_marked"] = float64(m.marked) }

// ibCC is the HCA side of IB CC.
type ibCC struct {
	n     *Network
	p     *ibcc.Params
	qps   []ibcc.QP // by flow ID
	becns int64
	cnps  int64
}

func (c *ibCC) qp(f *Flow) *ibcc.QP {
	if len(c.qps) < len(c.n.flows) {
		c.qps = append(c.qps, make([]ibcc.QP, len(c.n.flows)-len(c.qps))...)
	}
	return &c.qps[f.id]
}

func (c *ibCC) Start(f *Flow) { c.qp(f).Reset(c.p, c.n.sim.Now()) }

// Sent spaces the QP's next packet by the delay its current index selects.
func (c *ibCC) Sent(f *Flow, pkt *Packet) {
	now := c.n.sim.Now()
	d := c.qp(f).Delay(c.p, now)
	f.Gap = d
	f.nextSend = now + d
}

// Received: the notification point returns a BECN for every FECN.
func (c *ibCC) Received(rx *NIC, f *Flow, pkt *Packet) {
	if pkt.Mark&MarkFECN != 0 {
		c.cnps++
		rx.SendCNP(f)
	}
}

// Notified: a BECN raises the QP's index.
func (c *ibCC) Notified(f *Flow, pkt *Packet) {
	c.becns++
	c.qp(f).BECN(c.p, c.n.sim.Now())
}

func (c *ibCC) Report(res *result.Run) {
	res.Counters["ib_becn_sent"] = float64(c.cnps)
	res.Counters["ib_becn_received"] = float64(c.becns)
	var top int
	for i := range c.qps {
		top = max(top, c.qps[i].CCTI)
	}
	res.Counters["ib_ccti_max_final"] = float64(top)
}
