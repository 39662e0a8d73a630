// Package hpcc is HPCC (Li et al., "HPCC: High Precision Congestion Control", SIGCOMM 2019) as
// a plain state machine: the sender's reaction to the in-band telemetry (INT) that every switch
// egress appends to a data packet and the receiver echoes on its ACK. The caller feeds it each
// ACK's hop records with the ACKed sequence and the next sequence to send; it returns the rate
// to pace at (the window follows from the rate: rate x base RTT). The switch half, pushing a hop
// record as a packet leaves an egress queue, lives with the switch model.
//
// The algorithm is [HPCC] Algorithm 1 as HPCC's own ns-3 runs it ([HPCC-ns3] rdma-hw.cc,
// RdmaHw::UpdateRateHp with MULTI_RATE 0 and FAST_REACT 1): per hop, the normalised in-flight
// bytes u = txRate/B + min(qlen, previous qlen) x 8/(B x T); U, the largest over the hops, is
// smoothed over the base RTT T; with k = U/eta, the rate becomes R/k + R_AI (multiplicative
// step) once the stage counter reaches MaxStage or whenever k >= 1, else R + R_AI (additive
// step). R, the reference rate, and the stage are committed once per RTT (when an ACK passes
// the sequence sent at the last commit); the ACKs in between react from the same reference
// ("fast react").
//
// With MultiRate (`hpcc_multi_rate`, ns-3 MULTI_RATE 1, [HPCC-ns3] UpdateRateHp's
// m_multipleRate branch) the sender keeps that state per hop instead: each hop's u is smoothed
// on its own (U_i), each hop has its own reference rate R_i and stage, steps from them as above
// (R_i/k_i + R_AI or R_i + R_AI, k_i = U_i/eta), and the flow paces at the smallest of the hops'
// rates; the per-hop references and stages are committed once per RTT as R is.
package hpcc

import (
	"github.com/fabricsim/fabricsim/units"
	"github.com/fabricsim/fabricsim/yamlstrict"
)

// MaxHops is the most hop records an INT stack carries (ns-3 IntHeader::maxHop).
const MaxHops = 5

// HopBytes is the size of one hop record on the wire and StackBytes of the whole INT header:
// five 8-byte hops and a 2-byte hop count ([HPCC-ns3] int-header.h: 64-bit packed hop, nhop).
const (
	HopBytes   = 8
	StackBytes = MaxHops*HopBytes + 2
)

// Hop is what a switch egress reports as a packet leaves it ([HPCC] §3.2): the time, the bytes
// the port has transmitted so far, the bytes queued at the port, and the link rate.
type Hop struct {
	TS      units.Time
	TxBytes int64
	QLen    int64
	Rate    units.Rate
}

// Params are HPCC's knobs; each `yaml` tag is its scenario key (under `fabric:` with `kind:
// roce`).
type Params struct {
	// Eta is the target utilisation (0.95, [HPCC] §3.3; ns-3 U_TARGET).
	Eta float64 `yaml:"hpcc_eta"`
	// MaxStage is the number of additive steps before a multiplicative one (5, [HPCC] §3.3
	// maxStage; ns-3 MI_THRESH).
	MaxStage int `yaml:"hpcc_max_stage"`
	// AI is the additive step R_AI (W_AI / T); 0 takes the line rate / 2500 (ns-3 run.py: 10
	// Mb/s per 25 Gb/s of line rate).
	AI units.Rate `yaml:"hpcc_rate_ai"`
	// MinRate is the lowest rate (ns-3 MIN_RATE).
	MinRate units.Rate `yaml:"hpcc_min_rate"`
	// BaseRTT is T; 0 takes the network's longest base round trip (ns-3 GLOBAL_T: maxRtt).
	BaseRTT units.Time `yaml:"hpcc_base_rtt"`
	// MultiRate keeps a rate per hop and paces at the smallest (ns-3 MULTI_RATE 1; its run.py
	// sets 0, the default here).
	MultiRate bool `yaml:"hpcc_multi_rate"`
}

// Defaults are [HPCC]'s parameters with ns-3's minimum rate.
func Defaults() Params {
	return Params{Eta: 0.95, MaxStage: 5, MinRate: 100 * units.Mbps}
}

// Validate checks p, naming the scenario key of the first bad field.
func (p *Params) Validate() error {
	e := yamlstrict.Errorf
	switch {
	case !(p.Eta > 0 && p.Eta <= 1):
		return e("hpcc_eta", "%g outside (0,1]", p.Eta)
	case p.MaxStage < 0:
		return e("hpcc_max_stage", "must not be negative")
	case p.AI < 0:
		return e("hpcc_rate_ai", "must not be negative (0 = line rate / 2500)")
	case p.MinRate <= 0:
		return e("hpcc_min_rate", "must be positive")
	case p.BaseRTT < 0:
		return e("hpcc_base_rtt", "must not be negative (0 = the longest base round trip)")
	}
	return nil
}

// Sender is one QP's HPCC state. Init it before use.
type Sender struct {
	p    *Params
	line float64 // b/s
	t    units.Time
	ai   float64

	// Rate is the rate paced at now; Ref is the reference rate R of the last commit.
	Rate, Ref float64
	U         float64 // smoothed normalised in-flight bytes
	Stage     int
	lastSeq   int64 // sequence to pass for the next commit (0: no ACK yet)
	hops      [MaxHops]Hop
	nhop      int
	// With MultiRate: per hop, the smoothed u, the reference rate and the stage.
	HopU     [MaxHops]float64
	HopRef   [MaxHops]float64
	HopStage [MaxHops]int
	// Commits and Reactions count the per-RTT updates and all updates (for tests and reports).
	Commits, Reactions int64
}

// Init starts the sender at line rate with base RTT t.
func (s *Sender) Init(p *Params, line units.Rate, t units.Time) {
	ai := float64(p.AI)
	if ai == 0 {
		ai = float64(line) / 2500
	}
	*s = Sender{p: p, line: float64(line), t: t, ai: ai, Rate: float64(line), Ref: float64(line)}
	for i := range s.HopRef {
		s.HopRef[i] = float64(line)
	}
}

// PaceRate is the current rate, rounded to whole b/s.
func (s *Sender) PaceRate() units.Rate { return units.Rate(s.Rate + 0.5) }

// Window is the bytes the sender may have unacknowledged: rate x T (ns-3 VAR_WIN).
func (s *Sender) Window() int64 { return int64(s.Rate * s.t.Seconds() / 8) }

// OnAck handles an ACK of ackSeq carrying hops, with sndNxt the next byte to send. It reports
// whether the rate changed.
func (s *Sender) OnAck(ackSeq, sndNxt int64, hops []Hop) bool {
	full := ackSeq > s.lastSeq
	if s.lastSeq == 0 { // the first ACK: remember the hops, measure from the next one
		s.lastSeq = sndNxt
		s.nhop = copy(s.hops[:], hops)
		return false
	}
	if len(hops) > MaxHops || len(hops) != s.nhop {
		// A path change: restart the measurement from these records.
		s.nhop = copy(s.hops[:], hops)
		return false
	}
	if s.p.MultiRate {
		return s.onAckPerHop(full, sndNxt, hops)
	}
	var umax float64
	var dt units.Time
	any := false
	for i, h := range hops {
		old := s.hops[i]
		s.hops[i] = h
		tau := h.TS - old.TS
		if tau <= 0 || h.Rate <= 0 {
			continue
		}
		b := float64(h.Rate)
		tx := float64(h.TxBytes-old.TxBytes) * 8 / tau.Seconds()
		u := tx/b + float64(min(h.QLen, old.QLen))*8/(b*s.t.Seconds())
		if !any || u > umax {
			umax, dt = u, tau
		}
		any = true
	}
	if !any {
		return false
	}
	dt = min(dt, s.t)
	s.U = (s.U*float64(s.t-dt) + umax*float64(dt)) / float64(s.t)
	k := s.U / s.p.Eta
	var rate float64
	stage := s.Stage + 1
	if k >= 1 || s.Stage >= s.p.MaxStage {
		rate, stage = s.Ref/k+s.ai, 0
	} else {
		rate = s.Ref + s.ai
	}
	rate = max(min(rate, s.line), float64(s.p.MinRate))
	changed := rate != s.Rate
	s.Rate = rate
	s.Reactions++
	if full {
		s.Ref, s.Stage = rate, stage
		s.lastSeq = max(s.lastSeq, sndNxt)
		s.Commits++
	}
	return changed
}

// onAckPerHop is OnAck with a rate per hop ([HPCC-ns3] UpdateRateHp, m_multipleRate): each hop
// that has a new record smooths its own u over its tau (capped at T) and steps its own
// reference; a hop without a new record keeps its reference; the flow takes the smallest.
func (s *Sender) onAckPerHop(full bool, sndNxt int64, hops []Hop) bool {
	var next [MaxHops]float64
	var stage [MaxHops]int
	var updated [MaxHops]bool
	rate := s.line
	any := false
	for i, h := range hops {
		old := s.hops[i]
		s.hops[i] = h
		tau := h.TS - old.TS
		if tau <= 0 || h.Rate <= 0 {
			rate = min(rate, s.HopRef[i])
			continue
		}
		b := float64(h.Rate)
		tx := float64(h.TxBytes-old.TxBytes) * 8 / tau.Seconds()
		u := tx/b + float64(min(h.QLen, old.QLen))*8/(b*s.t.Seconds())
		tau = min(tau, s.t)
		s.HopU[i] = (s.HopU[i]*float64(s.t-tau) + u*float64(tau)) / float64(s.t)
		k := s.HopU[i] / s.p.Eta
		if k >= 1 || s.HopStage[i] >= s.p.MaxStage {
			next[i], stage[i] = s.HopRef[i]/k+s.ai, 0
		} else {
			next[i], stage[i] = s.HopRef[i]+s.ai, s.HopStage[i]+1
		}
		next[i] = max(min(next[i], s.line), float64(s.p.MinRate))
		rate = min(rate, next[i])
		updated[i], any = true, true
	}
	if !any {
		return false
	}
	changed := rate != s.Rate
	s.Rate = rate
	s.Reactions++
	if full {
		s.Ref = rate
		for i := range hops {
			if updated[i] {
				s.HopRef[i], s.HopStage[i] = next[i], stage[i]
			}
		}
		s.lastSeq = max(s.lastSeq, sndNxt)
		s.Commits++
	}
	return changed
}
