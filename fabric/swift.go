package fabric

import (
	"github.com/fabricsim/fabricsim/result"
	"github.com/fabricsim/fabricsim/transport/cc/swift"
	"github.com/fabricsim/fabricsim/units"
)

// Swift windows on RoCE (`swift: true`, [Swift]): the sender stamps each data packet with its
// send time (carried in the packet's Sack word, which a go-back-N data packet does not use), the
// receiver echoes the stamp on the ACK the packet causes, and the sender's Swift state machine
// (transport/cc/swift) turns the round trip it measures into a window that bounds the flow's
// bytes in flight. No switch support is needed (no ECN, no INT). Flows send at line rate while
// the window allows; below one packet (swift_min_cwnd < 1) a flow keeps one packet in flight and
// is paced, the next packet pacing_delay = rtt / cwnd after the last ([Swift] §3.4), a delay
// kept once set (as htsim's pacer keeps it) and dropped when the window regrows to a packet.

// swiftCC runs a Swift sender per QP; ACKs reach it through Acked (ackObserver).
type swiftCC struct {
	*roce
	p         swift.Params
	target    units.Time // the resolved base target
	snd       []swift.Sender
	last      []int64 // the cumulative ACK each flow's sender last saw
	decreases int64
	// endpointDecreases counts the endpoint window's decreases (swift_endpoint_target).
	endpointDecreases int64
}

// swiftQueueing is the queueing delay the default base target allows above the fabric's base
// round trip: our choice (the paper's targets are set for Google's fabric and NICs), a few
// frames' worth at 100-400 Gb/s.
const swiftQueueing = 10 * units.Microsecond

func newSwift(r *roce) *swiftCC {
	s := &swiftCC{roce: r, p: r.cfg.SwiftParams, target: r.cfg.SwiftParams.BaseTarget}
	if s.target == 0 {
		s.target = r.n.baseRTT() + swiftQueueing
	}
	return s
}

// Start gives f the window of one base round trip at its NIC's line rate (an RDMA sender starts
// at line rate), as ceiling (max_cwnd) the line rate times the base target (the window that
// alone brings the delay to the target), and one MTU of payload as its segment.
func (s *swiftCC) Start(f *Flow) {
	if nf := len(s.n.flows); len(s.snd) < nf {
		s.snd = append(s.snd, make([]swift.Sender, nf-len(s.snd))...)
		s.last = append(s.last, make([]int64, nf-len(s.last))...)
	}
	rate := s.n.NICs[f.src].Port.Rate
	bdp, top := int64(rate.BytesIn(s.n.baseRTT())), int64(rate.BytesIn(s.target))
	hops := max(s.n.routes.Hops(s.n.g.Hosts[f.src], int(f.dst))-1, 0) // switches: links - 1
	s.snd[f.id].Init(&s.p, s.target, hops, bdp, top, int64(s.n.cfg.MTU))
	s.last[f.id] = 0
	f.Rate = 0
}

// Sent stamps the data packet with its send time (+1, so that 0 means "no stamp") and, while
// the window is below a packet, holds the flow for the pacing delay.
func (s *swiftCC) Sent(f *Flow, pkt *Packet) {
	now := s.n.sim.Now()
	pkt.Sack = int64(now) + 1
	if d := s.snd[f.id].PacingDelay(); d > 0 {
		f.nextSend = now + d
	}
}

func (s *swiftCC) Received(rx *NIC, f *Flow, pkt *Packet) {}
func (s *swiftCC) Notified(f *Flow, pkt *Packet)          {}

// window is the flow's congestion window ([Swift] Algorithm 1), at least a byte: below a packet
// the flow may have one packet in flight.
func (s *swiftCC) window(f *Flow) int64 { return max(s.snd[f.id].Window(), 1) }

// Acked feeds an ACK to f's sender: the delay since the echoed stamp and the bytes it newly
// acknowledges.
func (s *swiftCC) Acked(f *Flow, pkt *Packet) {
	if f.snd.Done() || pkt.Sack == 0 {
		return
	}
	now := s.n.sim.Now()
	acked := max(pkt.Seq-s.last[f.id], 0)
	s.last[f.id] = max(s.last[f.id], pkt.Seq)
	var host units.Time
	if s.p.EndpointTarget > 0 {
		host = units.Time(pkt.Payload) * units.Nanosecond
	}
	sd := &s.snd[f.id]
	d0, e0 := sd.Decreases, sd.EndpointDecreases
	sd.OnAckHost(now-units.Time(pkt.Sack-1), host, acked, now)
	s.decreases += sd.Decreases - d0
	s.endpointDecreases += sd.EndpointDecreases - e0
	if f.nextSend > now && s.snd[f.id].PacingDelay() == 0 {
		f.nextSend = now // a packet's window again: back to window mode (the NIC is kicked)
	}
}

func (s *swiftCC) Report(res *result.Run) {
	res.Counters["swift_window_decreases"] = float64(s.decreases)
	if s.p.EndpointTarget > 0 {
		res.Counters["swift_endpoint_decreases"] = float64(s.endpointDecreases)
	}
}

// hostDelayNs is how long the data packet being handed to the transport waited in the NIC's
// receive buffer, in ns: the host delay of [Swift] §3.3, which only a slow receiver (fault
// slow_receiver, slowrx.go) has here; the ACK carries it in its Payload word (0 on an ACK).
func (c *NIC) hostDelayNs() int32 {
	if c.rx == nil {
		return 0
	}
	return int32(min(c.rx.waited/units.Nanosecond, 1<<31-1))
}
