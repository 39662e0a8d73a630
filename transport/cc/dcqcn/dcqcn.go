// Package dcqcn is DCQCN (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments",
// SIGCOMM'15) as NVIDIA ConnectX NICs run it: the reaction point (RP, the sender's rate limiter)
// and the notification point (NP, the receiver's CNP generator) as plain state machines. They
// never touch an event queue: the caller feeds them what happened (a CNP arrived, bytes were
// sent, a timer fired, the time now) and applies what they return (a new rate, a timer to arm).
// The switch half (the congestion point, ECN RED marking) lives with the switch model.
//
// Every parameter and both presets are from [DCQCN] and [ConnectX-DCQCN] (docs/references.md).
package dcqcn

import (
	"fmt"
	"math"

	"github.com/fabricsim/fabricsim/units"
	"github.com/fabricsim/fabricsim/yamlstrict"
)

// Params are DCQCN's knobs. Rates are in bits per second, times in picoseconds. Each `yaml`
// tag is the parameter's scenario key (under `fabric:` with `kind: roce`).
type Params struct {
	// G is the alpha gain g: alpha moves by g towards 1 on a CNP and towards 0 every K.
	G float64 `yaml:"dcqcn_g"`
	// AlphaTimer is K: alpha decays by (1-g) every K without a CNP.
	AlphaTimer units.Time `yaml:"dcqcn_alpha_timer"`
	// AlphaInit is alpha when a flow starts.
	AlphaInit float64 `yaml:"dcqcn_alpha_init"`
	// IncreaseTimer is T and ByteCounter is B: each counts rate-increase events (one per T of
	// time, one per B bytes sent) since the last decrease.
	IncreaseTimer units.Time `yaml:"dcqcn_increase_timer"`
	ByteCounter   units.Size `yaml:"dcqcn_byte_counter"`
	// F is the threshold separating fast recovery, additive and hyper increase.
	F int `yaml:"dcqcn_f"`
	// AI and HAI are the additive and hyper-increase steps R_AI and R_HAI.
	AI  units.Rate `yaml:"dcqcn_rate_ai"`
	HAI units.Rate `yaml:"dcqcn_rate_hai"`
	// CNPInterval is the NP's minimum time between two CNPs for one QP (min_time_between_cnps).
	CNPInterval units.Time `yaml:"dcqcn_cnp_interval"`
	// DecreasePeriod is the RP's minimum time between two rate decreases
	// (rate_reduce_monitor_period); CNPs arriving sooner are ignored. 0: every CNP decreases.
	DecreasePeriod units.Time `yaml:"dcqcn_decrease_period"`
	// MinRate is the lowest rate a decrease may reach.
	MinRate units.Rate `yaml:"dcqcn_min_rate"`
	// MinDecFactor bounds one decrease: the new rate is at least MinDecFactor x the old one
	// (ConnectX rpg_min_dec_fac 50 %); 0 leaves the cut at alpha/2.
	MinDecFactor float64 `yaml:"dcqcn_min_dec_factor"`
	// ClampTarget sets the target rate to the current rate on a decrease (the paper's RT = RC).
	ClampTarget bool `yaml:"dcqcn_clamp_target"`
	// RateOnFirstCNP is the fraction of the rate the first CNP sets rate and target to
	// (ConnectX rate_to_set_on_first_cnp, 0 Mb/s = full speed = 1; ns-3 RateOnFirstCnp).
	// Models connectx and ns3.
	RateOnFirstCNP float64 `yaml:"dcqcn_rate_on_first_cnp"`
	// ClampAfterTimer also clamps the target on a cut when the last increase event came from
	// the timer (ConnectX clamp_tgt_rate_after_time_inc). Model connectx.
	ClampAfterTimer bool `yaml:"dcqcn_clamp_after_timer"`
}

// Paper is the DCQCN paper's configuration at 40 Gb/s ([DCQCN] §3, §5). The paper
// gives no hyper-increase step or minimum rate: R_HAI takes R_AI x 5 (est.) and the minimum rate
// the ConnectX 1 Mb/s.
func Paper() Params {
	return Params{
		G: 1.0 / 256, AlphaTimer: 55 * units.Microsecond, AlphaInit: 1,
		IncreaseTimer: 55 * units.Microsecond, ByteCounter: 10_000_000, F: 5,
		AI: 40 * units.Mbps, HAI: 200 * units.Mbps,
		CNPInterval: 50 * units.Microsecond, DecreasePeriod: 0,
		MinRate: units.Mbps, MinDecFactor: 0, ClampTarget: true,
		RateOnFirstCNP: 1,
	}
}

// ConnectX is the ConnectX firmware default ([ConnectX-DCQCN]): g = (1024-1019)/1024,
// K 1 us, alpha 1023/1024, T 300 us (rpg_time_reset), B 32767 B (rpg_byte_reset), F 1
// (rpg_threshold), R_AI 5 Mb/s, R_HAI 50 Mb/s, 4 us between CNPs and between decreases, min rate
// 1 Mb/s, min decrease factor 50 %. The firmware leaves clamp_tgt_rate off: a CNP cuts the
// current rate but keeps the target, so fast recovery climbs back towards the old rate.
func ConnectX() Params {
	return Params{
		G: 5.0 / 1024, AlphaTimer: units.Microsecond, AlphaInit: 1023.0 / 1024,
		IncreaseTimer: 300 * units.Microsecond, ByteCounter: 32767, F: 1,
		AI: 5 * units.Mbps, HAI: 50 * units.Mbps,
		CNPInterval: 4 * units.Microsecond, DecreasePeriod: 4 * units.Microsecond,
		MinRate: units.Mbps, MinDecFactor: 0.5, ClampTarget: false,
		RateOnFirstCNP: 1, ClampAfterTimer: true,
	}
}

// NS3 is the DCQCN configuration of HPCC's ns-3 runs (alibaba-edu/High-Precision-Congestion-
// Control simulation/run.py @9f4be2a9ead8, `--cc dcqcn` at 25 Gb/s): alpha timer 1 us, rate
// decrease interval 4 us, RP timer 300 us, g 1/256, fast recovery times 1, R_AI 5 Mb/s, R_HAI
// 50 Mb/s, min rate 1000 Mb/s, clamp target off; RateOnFirstCnp 1 (rdma-hw.cc's default).
// The keys model ns3 does not read keep ConnectX's values.
func NS3() Params {
	p := ConnectX()
	p.G = 1.0 / 256
	p.AlphaTimer, p.DecreasePeriod, p.IncreaseTimer = units.Microsecond, 4*units.Microsecond, 300*units.Microsecond
	p.F, p.AI, p.HAI = 1, 5*units.Mbps, 50*units.Mbps
	p.MinRate, p.ClampTarget, p.RateOnFirstCNP = 1000*units.Mbps, false, 1
	return p
}

// Preset returns a named preset: "paper", "connectx" or "ns3".
func Preset(name string) (Params, error) {
	switch name {
	case "paper":
		return Paper(), nil
	case "connectx":
		return ConnectX(), nil
	case "ns3":
		return NS3(), nil
	}
	return Params{}, fmt.Errorf("DCQCN preset %q unknown (valid: %s)", name, Presets)
}

// Presets lists the preset names as messages write them.
const Presets = "paper, connectx, ns3"

// Validate checks p and returns what is wrong with the first bad field as a
// *yamlstrict.FieldError naming its scenario key.
func (p *Params) Validate() error {
	e := yamlstrict.Errorf
	switch {
	case !(p.G > 0 && p.G <= 1):
		return e("dcqcn_g", "%g outside (0,1]", p.G)
	case !(p.AlphaInit >= 0 && p.AlphaInit <= 1):
		return e("dcqcn_alpha_init", "%g outside [0,1]", p.AlphaInit)
	case p.AlphaTimer <= 0:
		return e("dcqcn_alpha_timer", "must be positive")
	case p.IncreaseTimer <= 0:
		return e("dcqcn_increase_timer", "must be positive")
	case p.ByteCounter <= 0:
		return e("dcqcn_byte_counter", "must be positive")
	case p.F < 0:
		return e("dcqcn_f", "must not be negative")
	case p.AI < 0:
		return e("dcqcn_rate_ai", "must not be negative")
	case p.HAI < 0:
		return e("dcqcn_rate_hai", "must not be negative")
	case p.CNPInterval < 0:
		return e("dcqcn_cnp_interval", "must not be negative")
	case p.DecreasePeriod < 0:
		return e("dcqcn_decrease_period", "must not be negative")
	case p.MinRate <= 0:
		return e("dcqcn_min_rate", "must be positive")
	case !(p.MinDecFactor >= 0 && p.MinDecFactor < 1):
		return e("dcqcn_min_dec_factor", "%g outside [0,1)", p.MinDecFactor)
	case !(p.RateOnFirstCNP > 0 && p.RateOnFirstCNP <= 1):
		return e("dcqcn_rate_on_first_cnp", "%g outside (0,1] (a fraction of the rate; 1 = unchanged)", p.RateOnFirstCNP)
	}
	return nil
}

// Stage names the increase phase an increase event applied.
type Stage uint8

// Increase stages (DCQCN §3.2).
const (
	None Stage = iota
	FastRecovery
	Additive
	Hyper
)

func (s Stage) String() string {
	return [...]string{"none", "fast-recovery", "additive", "hyper"}[s]
}

// Action is what the caller must do after feeding the RP an input.
type Action struct {
	// Rate is the rate to pace at from now (the line rate when uncongested).
	Rate units.Rate
	// ArmTimer, when positive, is when the increase timer must next fire (OnTimer). A timer
	// armed earlier and not yet fired is superseded: call OnTimer only for the latest.
	ArmTimer units.Time
	Stage    Stage
}

// RP is one QP's reaction point. Its zero value is not usable: call Init.
type RP struct {
	p    *Params
	line float64 // line rate, b/s

	RC, RT float64 // current and target rate, b/s
	Alpha  float64
	// alphaAt is when alpha was last brought up to date (the alpha timer is lazy: decays
	// since then are applied when alpha is read).
	alphaAt units.Time
	T, B    int // increase events counted by the timer and the byte counter since the last cut
	bytes   int64
	// TimerAt is when the pending increase timer fires (0: none armed).
	TimerAt      units.Time
	lastDecrease units.Time
	decreased    bool
	// Decreases and Increases count applied events (for reports and tests).
	Decreases, Increases int64
}

// Init starts the RP at line rate at time now.
func (r *RP) Init(p *Params, line units.Rate, now units.Time) {
	*r = RP{p: p, line: float64(line), RC: float64(line), RT: float64(line), Alpha: p.AlphaInit, alphaAt: now}
}

// Rate is the current rate rounded to whole bits per second.
func (r *RP) Rate() units.Rate { return units.Rate(math.Round(r.RC)) }

// AtLine reports whether the RP sends at line rate (nothing left to recover).
func (r *RP) AtLine() bool { return r.RC >= r.line && r.RT >= r.line }

// alphaNow applies the alpha decays due by now: one factor (1-g) per whole K since alphaAt.
func (r *RP) alphaNow(now units.Time) {
	if k := int64((now - r.alphaAt) / r.p.AlphaTimer); k > 0 {
		r.Alpha *= math.Pow(1-r.p.G, float64(k))
		r.alphaAt += units.Time(k) * r.p.AlphaTimer
	}
}

// AlphaAt returns alpha as of now (with the timer's decays applied).
func (r *RP) AlphaAt(now units.Time) float64 {
	r.alphaNow(now)
	return r.Alpha
}

// OnCNP handles a congestion notification: cut the rate by alpha/2, raise alpha, restart the
// increase counters and the timer. A CNP within DecreasePeriod of the last cut is ignored.
func (r *RP) OnCNP(now units.Time) Action {
	p := r.p
	if r.decreased && p.DecreasePeriod > 0 && now-r.lastDecrease < p.DecreasePeriod {
		return Action{Rate: r.Rate()}
	}
	r.alphaNow(now)
	if p.ClampTarget {
		r.RT = r.RC
	}
	factor := 1 - r.Alpha/2
	if factor < p.MinDecFactor {
		factor = p.MinDecFactor
	}
	r.RC *= factor
	if min := float64(p.MinRate); r.RC < min {
		r.RC = min
	}
	r.Alpha = (1-p.G)*r.Alpha + p.G
	r.alphaAt = now // the alpha timer restarts at each CNP
	r.T, r.B, r.bytes = 0, 0, 0
	r.lastDecrease, r.decreased = now, true
	r.Decreases++
	r.TimerAt = now + p.IncreaseTimer
	return Action{Rate: r.Rate(), ArmTimer: r.TimerAt}
}

// OnTimer handles the increase timer firing at now (only the latest armed TimerAt counts; a
// stale one returns an Action with no timer and the rate unchanged).
func (r *RP) OnTimer(now units.Time) Action {
	if r.TimerAt == 0 || now != r.TimerAt {
		return Action{Rate: r.Rate()}
	}
	r.TimerAt = 0
	r.T++
	st := r.increase()
	a := Action{Rate: r.Rate(), Stage: st}
	if !r.AtLine() {
		r.TimerAt = now + r.p.IncreaseTimer
		a.ArmTimer = r.TimerAt
	}
	return a
}

// OnSent counts n bytes sent at now; every ByteCounter bytes is an increase event. The result's
// Stage is None when no event happened (the rate is unchanged then).
func (r *RP) OnSent(n int64, now units.Time) Action {
	if r.AtLine() {
		return Action{Rate: r.Rate()}
	}
	r.bytes += n
	if r.bytes < int64(r.p.ByteCounter) {
		return Action{Rate: r.Rate()}
	}
	r.bytes -= int64(r.p.ByteCounter)
	r.B++
	return Action{Rate: r.Rate(), Stage: r.increase()}
}

// increase applies one rate-increase event per the counters T and B ([DCQCN] §3): fast
// recovery while both are at most F, additive increase when one exceeds F, hyper increase when
// both do; then RC moves halfway to RT, and both are clamped to [min rate, line rate].
func (r *RP) increase() Stage {
	p := r.p
	f := p.F
	var st Stage
	switch {
	case r.T > f && r.B > f:
		st = Hyper
		r.RT += float64(min(r.T, r.B)-f) * float64(p.HAI)
	case r.T > f || r.B > f:
		st = Additive
		r.RT += float64(p.AI)
	default:
		st = FastRecovery
	}
	if r.RT > r.line {
		r.RT = r.line
	}
	r.RC = (r.RT + r.RC) / 2
	if r.RC > r.line {
		r.RC = r.line
	}
	// Within a few ppm of the line: call it the line (no pacing, no more timer events).
	if r.line-r.RC < r.line*1e-6 && r.RT >= r.line {
		r.RC = r.line
	}
	if min := float64(p.MinRate); r.RC < min {
		r.RC = min
	}
	r.Increases++
	return st
}

// NP is one QP's notification point: at most one CNP per CNPInterval.
type NP struct {
	last units.Time
	sent bool
}

// OnPacket is called for each data packet received at now; ce says it carries the ECN CE mark.
// It reports whether to send a CNP to the sender's QP.
func (np *NP) OnPacket(ce bool, now units.Time, p *Params) bool {
	if !ce {
		return false
	}
	if np.sent && now-np.last < p.CNPInterval {
		return false
	}
	np.last, np.sent = now, true
	return true
}
