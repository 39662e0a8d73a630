// Package dctcp is the DCTCP sender (Alizadeh et al., "Data Center TCP (DCTCP)", SIGCOMM 2010)
// as a plain state machine: a congestion window in bytes that reacts to the fraction of
// acknowledged bytes whose packets were ECN-marked. The caller feeds every ACK (the bytes it
// newly acknowledges, whether it echoes a mark, the sender's next sequence); the window bounds
// the bytes in flight. The switch half is step marking at K (ECN with Kmin = Kmax = K, Pmax 1,
// [DCTCP] §3.1); the receiver half is the ECN echo on the ACK of each marked packet.
//
// The equations ([DCTCP] §3.1):
//   - alpha <- (1 - g) alpha + g F once per window of data, F the fraction of the bytes
//     acknowledged in that window that carried a mark (eq. 1);
//   - on an echoed mark, at most once per window: cwnd <- cwnd x (1 - alpha/2) (eq. 2);
//   - otherwise the window grows as TCP's congestion avoidance: one MSS per window of data.
//
// A window of data is the bytes sent when it began: it ends when an ACK passes the sequence
// that was next to send then (as Linux's tcp_dctcp.c tracks it with snd_nxt; the paper says
// "approximately one RTT"). RDMA senders start at line rate, so the machine starts in
// congestion avoidance with the window the caller gives (fabric: line rate x base RTT), not in
// slow start, and alpha at 1 (Linux's dctcp_alpha_on_init default, the most cautious first cut).
package dctcp

import (
	"github.com/fabricsim/fabricsim/yamlstrict"
)

// G is DCTCP's EWMA gain, 1/16 ([DCTCP] §3.4: g = 1/16 in all experiments).
const G = 1.0 / 16

// Params are DCTCP's knobs; each `yaml` tag is its scenario key (under `fabric:`, kind roce).
type Params struct {
	// G is the EWMA gain g (dctcp_g; 1/16, [DCTCP] §3.4).
	G float64 `yaml:"dctcp_g"`
}

// Defaults are the paper's.
func Defaults() Params { return Params{G: G} }

// Validate checks p, naming the scenario key of the first bad field.
func (p *Params) Validate() error {
	if !(p.G > 0 && p.G <= 1) {
		return yamlstrict.Errorf("dctcp_g", "%g outside (0,1] (the paper's 1/16 = 0.0625)", p.G)
	}
	return nil
}

// Sender is one flow's DCTCP state.
type Sender struct {
	g     float64
	mss   int64
	cwnd  float64 // bytes
	alpha float64

	winEnd       int64 // the window of data in progress ends when an ACK passes this sequence
	acked, marks int64 // bytes acknowledged in it, and of those the marked ones
	cwrEnd       int64 // no further cut until an ACK passes this sequence (once per window)
	cut          bool  // a cut happened and cwrEnd is armed

	Cuts int64 // window cuts so far
}

// Init starts a flow with window cwnd bytes (at least one mss) and segments of mss payload.
func (s *Sender) Init(p *Params, cwnd, mss int64) {
	*s = Sender{g: p.G, mss: mss, cwnd: float64(max(cwnd, mss)), alpha: 1}
}

// Window is the most bytes the flow may have in flight.
func (s *Sender) Window() int64 { return int64(s.cwnd) }

// Alpha is the current estimate of the fraction of marked bytes.
func (s *Sender) Alpha() float64 { return s.alpha }

// OnAck takes an ACK that acknowledges ackedBytes new bytes up to sequence ack, echoing a mark
// when ece, with next the sender's next new sequence. It returns whether the window was cut.
func (s *Sender) OnAck(ack, ackedBytes int64, ece bool, next int64) bool {
	s.acked += ackedBytes
	if ece {
		s.marks += ackedBytes
	}
	// Eq. (1), once per window of data.
	if ack > s.winEnd {
		if s.acked > 0 {
			f := float64(s.marks) / float64(s.acked)
			s.alpha = (1-s.g)*s.alpha + s.g*f
		}
		s.acked, s.marks, s.winEnd = 0, 0, next
	}
	if s.cut && ack > s.cwrEnd {
		s.cut = false
	}
	if ece && !s.cut {
		// Eq. (2): at most once per window.
		s.cwnd = max(s.cwnd*(1-s.alpha/2), float64(s.mss))
		s.cut, s.cwrEnd = true, next
		s.Cuts++
		return true
	}
	if !ece && ackedBytes > 0 {
		// Congestion avoidance: one MSS per window's worth of acknowledged bytes.
		s.cwnd += float64(s.mss) * float64(ackedBytes) / s.cwnd
	}
	return false
}
