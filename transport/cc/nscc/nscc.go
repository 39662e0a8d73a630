// Package nscc is Ultra Ethernet's sender-based congestion control, NSCC (network-signal-based
// congestion control of UET 1.0's congestion management, [UEC-1.0]; described in [UE-design]),
// as a plain state machine: a congestion window in bytes driven by two signals every ACK
// carries, the ECN-CE echo of the packet it acknowledges and the packet's round-trip delay above
// the base RTT. The caller feeds every ACK (the echo, the queueing delay if the ACK gives a
// sample, the bytes it newly reports received, the bytes in flight, the time); the window bounds
// the bytes in flight.
//
// The reaction is UEC's reference model in its htsim ([UEC-htsim] htsim/sim/uec.cpp,
// UecSrc::updateCwndOnAck_NSCC and what it calls), ACK by ACK:
//
//   - quick adapt: once per base RTT + target delay, if the delay exceeded 4 x target (or a loss
//     was signalled) and the bytes the receiver got in that time stay below maxwnd / 2^3, the
//     window becomes those bytes, and ECN-marked ACKs for the bytes then in flight are ignored;
//   - no CE, delay >= target: fair increase, inc += fi x acked;
//   - no CE, delay < target: proportional increase, inc += alpha x acked x (target - delay);
//     while the delay stays under 1 us for more than a window of bytes, a fast increase
//     cwnd += acked x fi_scale instead;
//   - CE, delay >= target: multiplicative decrease, at most once per base RTT, by the smoothed
//     delay: cwnd x= max(1 - gamma (avg - target) / avg, 0.5) when avg > target;
//   - CE, delay < target: nothing (a path to switch away from, for the load balancer);
//   - the increase accumulated in inc is applied as cwnd += inc / cwnd after 8 MTU of received
//     bytes or a base RTT; once per base RTT cwnd += eta as well;
//   - cwnd stays within [one MTU, maxwnd = 1.5 BDP]; a retransmitted packet takes its bytes
//     off the window.
//
// The gains scale with the network: a = BDP / (100 Gb/s x 12 us), b = target / 12 us;
// alpha = 4 MSS a b / target, fi = 5 MSS a, eta = 0.15 MSS a, fi_scale = 0.25 a, gamma 0.8
// ([UEC-htsim] UecSrc::initNsccParams). The base RTT is the smallest round trip measured (at
// first the configured one), and maxwnd follows it.
package nscc

import (
	"github.com/fabricsim/fabricsim/units"
	"github.com/fabricsim/fabricsim/yamlstrict"
)

// Reference network of the gain scaling: 100 Gb/s and 12 us ([UEC-htsim] initNsccParams).
const (
	RefRate = 100 * units.Gbps
	RefRTT  = 12 * units.Microsecond
)

// Fixed constants of the reference model ([UEC-htsim] uec.cpp initNsccParams and the
// functions named).
const (
	Gamma        = 0.8    // multiplicative_decrease's gain
	MaxMD        = 0.5    // the largest fraction one decrease removes
	DelayEWMA    = 0.0125 // update_delay's _delay_alpha
	QAGate       = 3      // quick adapt runs while achieved < maxwnd >> 3
	FastDelay    = units.Microsecond
	AdjustMTUs   = 8   // fulfill_adjustment after 8 MTU received (_adjust_bytes_threshold)
	MaxWndFactor = 1.5 // maxwnd = 1.5 BDP (initNscc)
)

// Params are NSCC's scenario knobs (under `fabric:`, kind roce, with `transport: uet`).
type Params struct {
	// TargetDelay is the target queueing delay above the base RTT (uet_target_delay); 0 takes
	// the network's base RTT, htsim's default on a fabric without packet trimming.
	TargetDelay units.Time `yaml:"uet_target_delay"`
}

// Validate checks p, naming the scenario key of the first bad field.
func (p *Params) Validate() error {
	if p.TargetDelay < 0 {
		return yamlstrict.Errorf("uet_target_delay", "%v is negative (0 takes the network's base RTT)", p.TargetDelay)
	}
	return nil
}

// Gains are the scaled constants shared by every sender of one network.
type Gains struct {
	Target    units.Time
	NetRTT    units.Time // adjust period (the network's base RTT)
	Alpha     float64    // bytes per byte acked per ps of delay under target (x cwnd)
	FI        float64    // fair increase, bytes per byte acked (x cwnd)
	Eta       float64    // bytes added once per adjust period
	FIScale   float64    // fast increase, bytes per byte acked
	MSS       int64      // payload of a full packet
	MinWindow int64      // one MTU of payload
}

// NewGains scales the gains to a network of the given rate and base RTT, with the target delay
// (0: the base RTT) and MSS bytes of payload per packet.
func NewGains(rate units.Rate, netRTT, target units.Time, mss int64) Gains {
	if target <= 0 {
		target = netRTT
	}
	bdp := float64(rate) / 8 * netRTT.Seconds()
	refBDP := float64(RefRate) / 8 * RefRTT.Seconds()
	a := bdp / refBDP
	b := float64(target) / float64(RefRTT)
	m := float64(mss)
	return Gains{
		Target: target, NetRTT: netRTT,
		Alpha:   4 * m * a * b / float64(target),
		FI:      5 * m * a,
		Eta:     0.15 * m * a,
		FIScale: 0.25 * a,
		MSS:     mss, MinWindow: mss,
	}
}

// Sender is one flow's NSCC state. Its zero value is not ready: call Init.
type Sender struct {
	g        *Gains
	rate     units.Rate
	cwnd     float64
	maxwnd   float64
	baseRTT  units.Time
	avgDelay float64 // smoothed queueing delay, ps

	inc       float64 // pending increase (bytes x bytes)
	received  int64   // bytes received since the last adjustment
	achieved  int64   // bytes received in the current quick-adapt period
	lastAdj   units.Time
	lastDec   units.Time
	qaEnd     units.Time
	fiCount   int64
	fastInc   bool
	toIgnore  int64 // CE-marked bytes quick adapt ignores ...
	ignored   int64 // ... and those seen since
	triggerQA bool

	// Decreases counts multiplicative decreases, QuickAdapts the quick adaptations.
	Decreases, QuickAdapts int64
}

// Init readies the sender of a flow whose NIC sends at rate over a path of base round trip
// baseRTT: maxwnd = 1.5 x rate x baseRTT, and the window starts there ([UEC-htsim] initNscc).
func (s *Sender) Init(g *Gains, rate units.Rate, baseRTT units.Time) {
	*s = Sender{g: g, rate: rate}
	s.setBase(baseRTT)
	s.cwnd = s.maxwnd
}

func (s *Sender) setBase(rtt units.Time) {
	s.baseRTT = rtt
	s.maxwnd = MaxWndFactor * float64(s.rate) / 8 * rtt.Seconds()
	if s.maxwnd < float64(s.g.MinWindow) {
		s.maxwnd = float64(s.g.MinWindow)
	}
}

// Window is the congestion window in bytes.
func (s *Sender) Window() int64 { return int64(s.cwnd) }

// MaxWindow is maxwnd; BaseRTT the smallest round trip seen; AvgDelay the smoothed delay.
func (s *Sender) MaxWindow() int64     { return int64(s.maxwnd) }
func (s *Sender) BaseRTT() units.Time  { return s.baseRTT }
func (s *Sender) AvgDelay() units.Time { return units.Time(s.avgDelay) }

// Ack is what one ACK tells the sender.
type Ack struct {
	// CE: the acknowledged packet arrived ECN-CE marked.
	CE bool
	// RTT is the round trip of the acknowledged packet, 0 when the ACK gives no sample (the
	// packet was retransmitted: which copy it acknowledges is unknown).
	RTT units.Time
	// Newly is the bytes the ACK newly reports received (cumulatively or selectively).
	Newly int64
	// InFlight is the bytes sent and not yet reported received, after this ACK.
	InFlight int64
}

// OnAck applies one ACK at now (updateCwndOnAck_NSCC).
func (s *Sender) OnAck(a Ack, now units.Time) {
	s.achieved += a.Newly
	s.received += a.Newly
	s.ignored += a.Newly
	delay := units.Time(s.avgDelay)
	if a.RTT > 0 {
		if a.RTT < s.baseRTT {
			s.setBase(a.RTT)
		}
		if a.RTT >= s.baseRTT {
			delay = a.RTT - s.baseRTT
			s.updateDelay(delay, a.CE)
		}
	}
	if s.quickAdapt(false, a.CE, delay, a.InFlight, now) {
		return
	}
	g := s.g
	switch {
	case !a.CE && delay >= g.Target:
		s.inc += g.FI * float64(a.Newly) // fair increase
	case !a.CE:
		if !s.fastIncrease(a.Newly, delay) { // proportional increase
			s.inc += g.Alpha * float64(a.Newly) * float64(g.Target-delay)
		}
	case delay >= g.Target:
		s.decrease(now)
	}
	s.bound()
	if s.received > AdjustMTUs*g.MSS || now-s.lastAdj > g.NetRTT {
		s.cwnd += s.inc / s.cwnd
		if now-s.lastAdj >= g.NetRTT {
			s.cwnd += g.Eta
			s.lastAdj = now
		}
		s.inc, s.received = 0, 0
	}
	s.bound()
}

// updateDelay smooths the queueing delay (update_delay): an unmarked sample above the target
// pulls the average toward a quarter of the base RTT instead of toward itself.
func (s *Sender) updateDelay(delay units.Time, ce bool) {
	x := float64(delay)
	if !ce && delay > s.g.Target {
		x = float64(s.baseRTT) / 4
	}
	s.avgDelay = DelayEWMA*x + (1-DelayEWMA)*s.avgDelay
}

// fastIncrease grows the window by acked x fi_scale while the delay has stayed under 1 us for
// more than a window of bytes (fast_increase); it reports whether it did.
func (s *Sender) fastIncrease(acked int64, delay units.Time) bool {
	if delay < FastDelay {
		s.fiCount += acked
		if float64(s.fiCount) > s.cwnd || s.fastInc {
			s.cwnd += float64(acked) * s.g.FIScale
			s.fastInc = true
			return true
		}
	} else {
		s.fiCount = 0
	}
	s.fastInc = false
	return false
}

// decrease is the multiplicative decrease by the smoothed delay, at most once per base RTT.
func (s *Sender) decrease(now units.Time) {
	s.fastInc, s.fiCount = false, 0
	avg := s.avgDelay
	if avg > float64(s.g.Target) && now-s.lastDec > s.baseRTT {
		s.cwnd *= max(1-Gamma*(avg-float64(s.g.Target))/avg, 1-MaxMD)
		s.cwnd = max(s.cwnd, float64(s.g.MinWindow))
		s.lastDec = now
		s.Decreases++
	}
}

// quickAdapt is the reaction to heavy congestion or loss (quick_adapt); it reports that the
// ACK is used up (adapted, or a CE echo being ignored).
func (s *Sender) quickAdapt(loss, ce bool, delay units.Time, inFlight int64, now units.Time) bool {
	done := false
	if s.ignored < s.toIgnore && ce {
		done = true
	} else if now > s.qaEnd {
		if s.qaEnd != 0 && (s.triggerQA || loss || float64(delay) > 4*float64(s.g.Target)) &&
			float64(s.achieved) < s.maxwnd/(1<<QAGate) {
			s.cwnd = max(float64(s.achieved), float64(s.g.MinWindow))
			s.toIgnore, s.ignored = inFlight, 0
			s.triggerQA = false
			s.QuickAdapts++
			done = true
		}
		s.achieved = 0
		s.qaEnd = now + s.baseRTT + s.g.Target
	}
	if done {
		s.inc, s.received = 0, 0
	}
	return done
}

// OnRetransmit takes a packet of bytes declared lost off the window
// (mark_packet_for_retransmission).
func (s *Sender) OnRetransmit(bytes int64) {
	s.cwnd = max(s.cwnd-float64(bytes), float64(s.g.MinWindow))
}

func (s *Sender) bound() {
	s.cwnd = min(max(s.cwnd, float64(s.g.MinWindow)), s.maxwnd)
}
