// Package swift is the Swift sender (Kumar et al., "Swift: Delay is Simple and Effective for
// Congestion Control in the Datacenter", SIGCOMM 2020) as a plain state machine: a congestion
// window in bytes driven by the round-trip delay each ACK measures (the sender stamps each data
// packet, the ACK echoes the stamp). The caller feeds every ACK (the delay, the bytes it newly
// acknowledges, the time); the window bounds the bytes in flight.
//
// The reaction ([Swift] Algorithm 1):
//   - delay < target: additive increase, cwnd += ai x num_acked / cwnd (in packets; ai x
//     num_acked when cwnd < 1 packet);
//   - otherwise, at most once per RTT (now - t_last_decrease >= rtt):
//     cwnd *= max(1 - beta (delay - target) / delay, 1 - max_mdf);
//   - cwnd clamped to [min_cwnd, max_cwnd].
//
// The target ([Swift] §3.1-3.2): base_target + hops x h (topology scaling) + flow scaling
// max(0, min(alpha / sqrt(cwnd) + beta', fs_range)), alpha = fs_range / (1/sqrt(fs_min_cwnd) -
// 1/sqrt(fs_max_cwnd)), beta' = -alpha / sqrt(fs_max_cwnd) (cwnd in packets). This is the
// fabric window; with swift_endpoint_target set, Swift's endpoint window (§3.3) is kept too: the
// caller passes the part of the delay spent at the receiving host (OnAckHost), the fabric
// window reacts to the rest, the endpoint window to that part against its own target, and the
// flow is bounded by the smaller.
// The window does not go below min_cwnd (swift_min_cwnd packets; default 1). Below one packet
// Swift paces ([Swift] §3.4, Algorithm 1's last lines): the flow keeps one packet in flight and
// sends the next pacing_delay = rtt / cwnd (cwnd in packets) after the last; PacingDelay
// returns it (0 at or above one packet).
package swift

import (
	"math"

	"github.com/fabricsim/fabricsim/units"
	"github.com/fabricsim/fabricsim/yamlstrict"
)

// Flow-scaling range bounds in packets ([Swift] §3.2 names fs_min_cwnd and fs_max_cwnd; these
// are the values used in Broadcom/csg-htsim's Swift model, sim/swift.cpp, 0.1 and 100).
const (
	FSMinCwnd = 0.1
	FSMaxCwnd = 100.0
)

// Params are Swift's knobs; each `yaml` tag is its scenario key (under `fabric:`, kind roce).
type Params struct {
	// BaseTarget is the base target delay (swift_base_target); 0 takes the fabric's base round
	// trip plus 10 us of queueing (fabric/swift.go).
	BaseTarget units.Time `yaml:"swift_base_target"`
	// HopScaling is h, added to the target per switch hop of the flow's path (swift_hop_scaling).
	HopScaling units.Time `yaml:"swift_hop_scaling"`
	// FSRange is the flow-scaling range (swift_fs_range); 0 turns flow scaling off.
	FSRange units.Time `yaml:"swift_fs_range"`
	// AI is the additive increase in packets per RTT (swift_ai).
	AI float64 `yaml:"swift_ai"`
	// Beta is the multiplicative-decrease gain (swift_beta).
	Beta float64 `yaml:"swift_beta"`
	// MaxMDF bounds one decrease: the window keeps at least 1 - max_mdf of itself (swift_max_mdf).
	MaxMDF float64 `yaml:"swift_max_mdf"`
	// MinCwnd is the smallest window in packets (swift_min_cwnd); below 1 the flow is paced.
	MinCwnd float64 `yaml:"swift_min_cwnd"`
	// EndpointTarget, when positive, keeps the endpoint window of [Swift] §3.3: it reacts to the
	// delay the packet spent at the receiving host against this target, the fabric window to
	// the rest of the delay, and the flow is bounded by the smaller (swift_endpoint_target).
	// 0: no endpoint window, the fabric window reacts to the whole delay.
	EndpointTarget units.Time `yaml:"swift_endpoint_target"`
}

// Defaults: ai 1 packet per RTT, beta 0.8, max_mdf 0.5 (Broadcom/csg-htsim sim/swift.cpp's
// values; the paper's Algorithm 1 names them), no hop or flow scaling.
// min_cwnd 1 packet (no pacing: the behaviour before swift_min_cwnd existed; the paper lets the
// window fall far below one packet, htsim to 10 bytes).
func Defaults() Params { return Params{AI: 1, Beta: 0.8, MaxMDF: 0.5, MinCwnd: 1} }

// Validate checks p, naming the scenario key of the first bad field.
func (p *Params) Validate() error {
	e := yamlstrict.Errorf
	switch {
	case p.BaseTarget < 0:
		return e("swift_base_target", "%v is negative (0 takes the fabric's base RTT + 10us)", p.BaseTarget)
	case p.HopScaling < 0:
		return e("swift_hop_scaling", "%v is negative", p.HopScaling)
	case p.FSRange < 0:
		return e("swift_fs_range", "%v is negative (0 turns flow scaling off)", p.FSRange)
	case !(p.AI > 0):
		return e("swift_ai", "%g must be above 0 (packets per RTT; default 1)", p.AI)
	case !(p.Beta > 0 && p.Beta <= 1):
		return e("swift_beta", "%g outside (0,1] (default 0.8)", p.Beta)
	case !(p.MaxMDF > 0 && p.MaxMDF < 1):
		return e("swift_max_mdf", "%g outside (0,1) (default 0.5)", p.MaxMDF)
	case p.EndpointTarget < 0:
		return e("swift_endpoint_target", "%v is negative (0: no endpoint window)", p.EndpointTarget)
	case !(p.MinCwnd > 0 && p.MinCwnd <= 1):
		return e("swift_min_cwnd", "%g outside (0,1] packets (default 1: no pacing; below 1 the flow is paced)", p.MinCwnd)
	}
	return nil
}

// Sender is one flow's Swift state.
type Sender struct {
	p         Params
	mss       float64
	cwnd      float64 // bytes
	minCwnd   float64 // bytes
	maxCwnd   float64 // bytes
	target0   units.Time
	rtt       units.Time // the last measured delay: the once-per-RTT spacing of decreases
	lastDecr  units.Time
	decreased bool
	// The endpoint window ([Swift] §3.3), used when Params.EndpointTarget is set.
	ecwnd      float64 // bytes
	lastDecrE  units.Time
	decreasedE bool
	hostDelay  units.Time // the host delay the last ACK reported

	Decreases         int64 // fabric-window multiplicative decreases so far
	EndpointDecreases int64 // endpoint-window multiplicative decreases so far
}

// Init starts a flow with window cwnd bytes, at most maxCwnd (max_cwnd; both at least one
// mss), segments of mss payload, and hops switch hops on its path; baseTarget is the resolved
// base target.
func (s *Sender) Init(p *Params, baseTarget units.Time, hops int, cwnd, maxCwnd, mss int64) {
	top := float64(max(maxCwnd, mss))
	*s = Sender{p: *p, mss: float64(mss), cwnd: min(float64(max(cwnd, mss)), top), maxCwnd: top,
		minCwnd: p.MinCwnd * float64(mss), target0: baseTarget + units.Time(hops)*p.HopScaling}
	s.ecwnd = s.cwnd
}

// Window is the most bytes the flow may have in flight.
func (s *Sender) Window() int64 { return int64(s.window()) }

// window is the effective window: the fabric window, or the smaller of it and the endpoint
// window when an endpoint target is set.
func (s *Sender) window() float64 {
	if s.p.EndpointTarget > 0 {
		return min(s.cwnd, s.ecwnd)
	}
	return s.cwnd
}

// HostDelay is the host delay the last ACK reported (kept with an endpoint target only).
func (s *Sender) HostDelay() units.Time { return s.hostDelay }

// PacingDelay is the time from one packet to the next while the window is below one packet,
// rtt / cwnd with cwnd in packets and rtt the last measured delay ([Swift] Algorithm 1); 0 when
// the window holds at least a packet (or before the first ACK).
func (s *Sender) PacingDelay() units.Time {
	w := s.window()
	if w >= s.mss {
		return 0
	}
	return units.Time(float64(s.rtt) * s.mss / w)
}

// Delay is the delay the last ACK measured (0 before the first).
func (s *Sender) Delay() units.Time { return s.rtt }

// Target is the target delay at the current window ([Swift] §3.1-3.2).
func (s *Sender) Target() units.Time {
	if s.p.FSRange == 0 {
		return s.target0
	}
	fr := float64(s.p.FSRange)
	alpha := fr / (1/math.Sqrt(FSMinCwnd) - 1/math.Sqrt(FSMaxCwnd))
	beta := -alpha / math.Sqrt(FSMaxCwnd)
	fs := min(max(alpha/math.Sqrt(s.cwnd/s.mss)+beta, 0), fr)
	return s.target0 + units.Time(fs)
}

// OnAck takes an ACK at now that measured delay and newly acknowledges ackedBytes, with no host
// delay in it. It returns whether a window was decreased.
func (s *Sender) OnAck(delay units.Time, ackedBytes int64, now units.Time) bool {
	return s.OnAckHost(delay, 0, ackedBytes, now)
}

// OnAckHost takes an ACK whose delay includes hostDelay spent at the receiving host ([Swift]
// §3.3): the fabric window reacts to delay - hostDelay against the fabric target; with an
// endpoint target set, the endpoint window reacts to hostDelay against it. Each window
// decreases at most once per RTT (the last measured delay). It returns whether a window was
// decreased.
func (s *Sender) OnAckHost(delay, hostDelay units.Time, ackedBytes int64, now units.Time) bool {
	target := s.Target()
	canDecrease := !s.decreased || now-s.lastDecr >= s.rtt
	canDecreaseE := !s.decreasedE || now-s.lastDecrE >= s.rtt
	s.rtt = delay
	dec := false
	if s.p.EndpointTarget > 0 {
		s.hostDelay = hostDelay
		if s.aimd(&s.ecwnd, hostDelay, s.p.EndpointTarget, ackedBytes, canDecreaseE) {
			s.lastDecrE, s.decreasedE, dec = now, true, true
			s.EndpointDecreases++
		}
	}
	if s.aimd(&s.cwnd, delay-hostDelay, target, ackedBytes, canDecrease) {
		s.lastDecr, s.decreased, dec = now, true, true
		s.Decreases++
	}
	return dec
}

// aimd applies [Swift] Algorithm 1 to window *w (bytes) for a delay against target: additive
// increase below it, else (when allowed) one multiplicative decrease, which it reports.
func (s *Sender) aimd(w *float64, delay, target units.Time, ackedBytes int64, canDecrease bool) bool {
	if delay < target {
		n := float64(ackedBytes) / s.mss // packets acknowledged
		if *w >= s.mss {
			*w += s.p.AI * n / (*w / s.mss) * s.mss
		} else {
			*w += s.p.AI * n * s.mss
		}
		*w = min(*w, s.maxCwnd)
		return false
	}
	if !canDecrease {
		return false
	}
	f := max(1-s.p.Beta*float64(delay-target)/float64(delay), 1-s.p.MaxMDF)
	*w = min(max(*w*f, s.minCwnd), s.maxCwnd)
	return true
}
