// Package timely is the TIMELY sender (Mittal et al., "TIMELY: RTT-based Congestion Control for
// the Datacenter", SIGCOMM 2015) as a plain state machine: a sending rate driven by the round
// trip each completion event measures. A completion event is the ACK of the last byte of a
// segment (16-64 KB of a message, [TIMELY] §4, the rate control engine); its RTT is the completion time minus the time
// the segment's first packet was sent minus the segment's serialization at line rate ([TIMELY]
// §4, the RTT measurement engine), so that only propagation and queueing remain. The caller measures it and feeds it here.
//
// The reaction is [TIMELY] Algorithm 1, per completion event:
//
//	new_rtt_diff = new_rtt - prev_rtt; prev_rtt = new_rtt
//	rtt_diff = (1 - alpha) rtt_diff + alpha new_rtt_diff      (EWMA of the RTT difference)
//	normalized_gradient = rtt_diff / minRTT
//	new_rtt < T_low:  rate += delta
//	new_rtt > T_high: rate *= 1 - beta (1 - T_high / new_rtt)
//	gradient <= 0:    rate += N delta  (N = 5 after five completion events of gradient <= 0, HAI)
//	otherwise:        rate *= 1 - beta normalized_gradient
//
// Choices the pseudo-code leaves open, ours: the first completion event has no previous RTT and
// takes new_rtt_diff = 0; the run of events counted for hyperactive increase (HAI) is the
// events in a row whose gradient was <= 0 and that did not decrease the rate (any decrease, or a
// positive gradient, ends it); the rate stays within [MinRate, line rate] and a decrease factor
// below 0 counts as 0 (as HPCC's ns-3 TIMELY does, rdma-hw.cc UpdateRateTimely).
package timely

import (
	"github.com/fabricsim/fabricsim/units"
	"github.com/fabricsim/fabricsim/yamlstrict"
)

// HAI is N, both the number of completion events of non-positive gradient in a row after which
// the additive step is multiplied and the multiplier ([TIMELY] Algorithm 1: "N = 5 if gradient <
// 0 for five completion events (HAI mode); otherwise N = 1").
const HAI = 5

// Params are TIMELY's knobs; each `yaml` tag is its scenario key (under `fabric:`, kind roce).
type Params struct {
	// Alpha is the EWMA weight of the newest RTT difference (timely_alpha).
	Alpha float64 `yaml:"timely_alpha"`
	// Beta is the multiplicative-decrease factor (timely_beta).
	Beta float64 `yaml:"timely_beta"`
	// TLow and THigh bound the gradient regime: below T_low the rate always rises, above T_high
	// it always falls (timely_t_low, timely_t_high).
	TLow  units.Time `yaml:"timely_t_low"`
	THigh units.Time `yaml:"timely_t_high"`
	// MinRTT normalises the RTT gradient (timely_min_rtt).
	MinRTT units.Time `yaml:"timely_min_rtt"`
	// Delta is the additive increment step delta (timely_delta); 0 takes the line rate / 1000
	// (the paper's 10 Mb/s on 10 Gb/s NICs, scaled with the line rate as HPCC's ns-3 run.py
	// scales its TIMELY RATE_AI).
	Delta units.Rate `yaml:"timely_delta"`
	// MinRate is the lowest rate a decrease leaves (timely_min_rate).
	MinRate units.Rate `yaml:"timely_min_rate"`
	// Segment is the bytes of a message per completion event (timely_segment).
	Segment units.Size `yaml:"timely_segment"`
}

// Defaults are the settings of [TIMELY]'s evaluation as HPCC's ns-3 carries them (rdma-hw.cc attributes
// TimelyAlpha 0.875, TimelyBeta 0.8, TimelyTLow 50 us, TimelyTHigh 500 us, TimelyMinRtt 20 us;
// run.py RATE_AI 10 Mb/s per 10 Gb/s of line rate, the paper's delta on its 10G NICs: Delta 0), a 16 KB
// segment (the low end of the paper's 16-64 KB) and HPCC's ns-3 minimum rate, 100 Mb/s (its
// config.txt MIN_RATE). They were set for 10 Gb/s hosts; docs/transports.md discusses scaling.
func Defaults() Params {
	return Params{Alpha: 0.875, Beta: 0.8, TLow: 50 * units.Microsecond, THigh: 500 * units.Microsecond,
		MinRTT: 20 * units.Microsecond, MinRate: 100 * units.Mbps, Segment: 16 * units.KiB}
}

// Validate checks p, naming the scenario key of the first bad field.
func (p *Params) Validate() error {
	e := yamlstrict.Errorf
	switch {
	case !(p.Alpha > 0 && p.Alpha <= 1):
		return e("timely_alpha", "%g outside (0,1] (EWMA weight of the newest RTT difference; default 0.875)", p.Alpha)
	case !(p.Beta > 0 && p.Beta <= 1):
		return e("timely_beta", "%g outside (0,1] (default 0.8)", p.Beta)
	case p.TLow <= 0:
		return e("timely_t_low", "%v must be positive (default 50us)", p.TLow)
	case p.THigh <= p.TLow:
		return e("timely_t_high", "%v must be above timely_t_low %v (default 500us)", p.THigh, p.TLow)
	case p.MinRTT <= 0:
		return e("timely_min_rtt", "%v must be positive (default 20us)", p.MinRTT)
	case p.Delta < 0:
		return e("timely_delta", "%v is negative (0 takes the line rate / 1000: 10Mbps at 10Gbps)", p.Delta)
	case p.MinRate <= 0:
		return e("timely_min_rate", "%v must be positive (default 100Mbps)", p.MinRate)
	case p.Segment < 1:
		return e("timely_segment", "%v must be positive (the paper's 16KB-64KB; default 16KB)", p.Segment)
	}
	return nil
}

// Step is the branch of Algorithm 1 a completion event took.
type Step uint8

const (
	BelowTLow   Step = iota + 1 // new_rtt < T_low: + delta
	AboveTHigh                  // new_rtt > T_high: x (1 - beta (1 - T_high/new_rtt))
	GradientAI                  // gradient <= 0: + delta
	GradientHAI                 // gradient <= 0 for HAI events in a row: + HAI x delta
	GradientMD                  // gradient > 0: x (1 - beta gradient)
)

var stepNames = [...]string{"", "below T_low", "above T_high", "gradient AI", "gradient HAI", "gradient MD"}

func (s Step) String() string { return stepNames[s] }

// Decrease reports whether the step lowers the rate.
func (s Step) Decrease() bool { return s == AboveTHigh || s == GradientMD }

// Sender is one flow's TIMELY state.
type Sender struct {
	p       Params
	line    float64 // bits/s
	rate    float64 // bits/s
	prevRTT units.Time
	rttDiff float64 // picoseconds
	started bool
	run     int // completion events in a row of gradient <= 0 without a decrease

	Decreases int64 // completion events that lowered the rate
}

// Init starts a flow at the line rate (an RDMA sender starts at line rate) and resolves a Delta
// of 0.
func (s *Sender) Init(p *Params, line units.Rate) {
	*s = Sender{p: *p, line: float64(line), rate: float64(line)}
	if s.p.Delta == 0 {
		s.p.Delta = line / 1000
	}
}

// Rate is the rate the flow is paced at now.
func (s *Sender) Rate() units.Rate { return units.Rate(s.rate) }

// RTT is the RTT of the last completion event (0 before the first).
func (s *Sender) RTT() units.Time { return s.prevRTT }

// Gradient is the current normalised RTT gradient, rtt_diff / minRTT.
func (s *Sender) Gradient() float64 { return s.rttDiff / float64(s.p.MinRTT) }

// OnCompletion takes a completion event's RTT and returns the step it took.
func (s *Sender) OnCompletion(rtt units.Time) Step {
	var newDiff float64
	if s.started {
		newDiff = float64(rtt - s.prevRTT)
	}
	s.started, s.prevRTT = true, rtt
	s.rttDiff = (1-s.p.Alpha)*s.rttDiff + s.p.Alpha*newDiff
	g := s.Gradient()
	var step Step
	switch {
	case rtt < s.p.TLow:
		step = BelowTLow
		s.rate += float64(s.p.Delta)
	case rtt > s.p.THigh:
		step = AboveTHigh
		s.rate *= max(1-s.p.Beta*(1-float64(s.p.THigh)/float64(rtt)), 0)
	case g <= 0:
		step = GradientAI
		n := 1.0
		if s.run+1 >= HAI {
			step, n = GradientHAI, HAI
		}
		s.rate += n * float64(s.p.Delta)
	default:
		step = GradientMD
		s.rate *= max(1-s.p.Beta*g, 0)
	}
	if step.Decrease() || g > 0 {
		s.run = 0
	} else {
		s.run++
	}
	if step.Decrease() {
		s.Decreases++
	}
	s.rate = min(max(s.rate, float64(s.p.MinRate)), s.line)
	return step
}
