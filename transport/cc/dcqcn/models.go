package dcqcn

import (
	"fmt"
	"math"
	"strings"

	"github.com/fabricsim/fabricsim/units"
)

// Model names a reaction-point state machine (key `dcqcn_model`). The three differ in when a
// CNP takes effect and how alpha moves; docs/transports.md tabulates the differences.
type Model string

const (
	// ModelPaper is the paper's RP ([DCQCN] §3.2, Fig. 5): every CNP cuts at once by alpha/2
	// and raises alpha by g; alpha decays by (1-g) per K without a CNP; the increase events
	// come from a timer T and a byte counter B. With the connectx preset it also honours
	// ConnectX's rate_reduce_monitor_period (CNPs within it ignored) and rpg_min_dec_fac. RP.
	ModelPaper Model = "paper"
	// ModelConnectX is the ConnectX firmware's RP as NVIDIA documents its parameters
	// ([ConnectX-DCQCN]): a CNP only raises flags; alpha is updated once every dce_tcp_rtt
	// (K) from "a CNP arrived in the last K", starting at initial_alpha_value on the first
	// CNP; the rate is cut at the start of the next rate_reduce_monitor_period after a CNP;
	// timer and byte counter as in the paper; clamp_tgt_rate_after_time_inc. ConnectXRP.
	ModelConnectX Model = "connectx"
	// ModelNS3 is HPCC's ns-3 "Mellanox version" of DCQCN ([HPCC-ns3] rdma-hw.cc): as
	// ConnectX but alpha = 1 on the first CNP, no byte counter, one increase stage counter
	// driven by the timer alone, and integer rates truncated at every step. NS3RP.
	ModelNS3 Model = "ns3"
)

// Models are the valid models.
var Models = []Model{ModelPaper, ModelConnectX, ModelNS3}

// UnmarshalText parses a model name.
func (m *Model) UnmarshalText(b []byte) error {
	for _, v := range Models {
		if string(b) == string(v) {
			*m = v
			return nil
		}
	}
	return fmt.Errorf("%q is not a DCQCN model (valid: %s)", b, modelList())
}

func modelList() string {
	s := make([]string, len(Models))
	for i, m := range Models {
		s[i] = string(m)
	}
	return strings.Join(s, ", ")
}

// Valid reports whether m names a model.
func (m Model) Valid() bool {
	for _, v := range Models {
		if m == v {
			return true
		}
	}
	return false
}

// Unused returns the parameter keys model m does not read: writing one of them in a scenario
// with this model is a mistake (the key belongs to another model).
func (m Model) Unused() []string {
	switch m {
	case ModelPaper:
		return []string{"dcqcn_rate_on_first_cnp", "dcqcn_clamp_after_timer"}
	case ModelNS3:
		// rdma-hw.cc: alpha starts at 1, no byte counter, no minimum decrease factor, no
		// timer/byte distinction for clamping.
		return []string{"dcqcn_alpha_init", "dcqcn_byte_counter", "dcqcn_min_dec_factor", "dcqcn_clamp_after_timer"}
	}
	return nil
}

// Reactor is a reaction point of any model, as the fabric drives it. Each input returns an
// Action: the rate to pace at, and when the RP next needs OnTimer (0: no timer). A timer armed
// earlier and superseded by a later Action must not be delivered (OnTimer ignores a stale one).
type Reactor interface {
	OnCNP(now units.Time) Action
	OnTimer(now units.Time) Action
	OnSent(n int64, now units.Time) Action
	Rate() units.Rate
	AtLine() bool
	// Cuts is the number of rate decreases applied so far.
	Cuts() int64
}

// Cuts is the number of rate decreases applied.
func (r *RP) Cuts() int64 { return r.Decreases }

// NewReactor returns an initialised reaction point of model m (at line rate at now).
func NewReactor(m Model, p *Params, line units.Rate, now units.Time) Reactor {
	switch m {
	case ModelConnectX:
		r := &ConnectXRP{}
		r.Init(p, line, now)
		return r
	case ModelNS3:
		r := &NS3RP{}
		r.Init(p, line)
		return r
	}
	r := &RP{}
	r.Init(p, line, now)
	return r
}

// alphaClock is alpha updated on a fixed timer of period K from a "CNP arrived" flag, as
// ConnectX (dce_tcp_rtt, dce_tcp_g) and ns-3 (UpdateAlphaMlx) do: at each tick alpha =
// (1-g) alpha + g x flag, then the flag clears. It is evaluated lazily (advance applies the ticks
// due), which gives the same values as a timer event per tick. A tick at the same time as a
// CNP or a cut is applied first (ns-3 schedules the rate check 1 ns after the alpha tick).
type alphaClock struct {
	alpha   float64
	flag    bool
	next    units.Time // next tick
	running bool
}

func (c *alphaClock) start(alpha float64, now, k units.Time) {
	*c = alphaClock{alpha: alpha, next: now + k, running: true}
}

func (c *alphaClock) advance(now, k units.Time, g float64) {
	if !c.running || now < c.next {
		return
	}
	ticks := int64((now-c.next)/k) + 1
	if c.flag {
		c.alpha = (1-g)*c.alpha + g
	} else {
		c.alpha *= 1 - g
	}
	c.flag = false
	if ticks > 1 {
		c.alpha *= math.Pow(1-g, float64(ticks-1))
	}
	c.next += units.Time(ticks) * k
}

// nextBoundary is the first time after t on the grid start + i x period (i >= 1).
func nextBoundary(start, period, t units.Time) units.Time {
	i := (t-start)/period + 1
	return start + i*period
}

// ConnectXRP is the ConnectX firmware's reaction point, from the documented meaning of its
// parameters ([ConnectX-DCQCN]):
//   - initial_alpha_value: alpha on the first CNP (AlphaInit);
//   - dce_tcp_rtt, dce_tcp_g: alpha is updated once every K from whether a CNP arrived in it;
//   - rate_reduce_monitor_period: a CNP is acted on at the start of the next period (the grid
//     starts at the first CNP), at most one cut per period, by (1 - alpha/2) (rpg_gd applied
//     to the firmware's fixed-point alpha), never below rpg_min_dec_fac of the rate nor below
//     rpg_min_rate;
//   - rate_to_set_on_first_cnp: the rate the first CNP sets (RateOnFirstCNP x the rate);
//   - rpg_time_reset, rpg_byte_reset, rpg_threshold, rpg_ai_rate, rpg_hai_rate: the increase
//     events and stages as in the paper;
//   - clamp_tgt_rate: a cut sets the target to the current rate; clamp_tgt_rate_after_time_inc
//     (ClampAfterTimer): it does so also when the last increase event came from the timer.
type ConnectXRP struct {
	p    *Params
	line float64

	RC, RT float64
	a      alphaClock
	first  bool // no CNP yet
	// grid is the start of the rate_reduce_monitor_period grid; cutAt the pending cut (0: none).
	grid, cutAt units.Time
	T, B        int
	bytes       int64
	incAt       units.Time // the increase timer (0: not armed)
	byTimer     bool       // the last increase event came from the timer
	cuts        int64
}

// Init starts the RP at line rate.
func (r *ConnectXRP) Init(p *Params, line units.Rate, now units.Time) {
	*r = ConnectXRP{p: p, line: float64(line), RC: float64(line), RT: float64(line), first: true}
}

func (r *ConnectXRP) Rate() units.Rate { return units.Rate(math.Round(r.RC)) }
func (r *ConnectXRP) AtLine() bool     { return r.RC >= r.line && r.RT >= r.line && r.cutAt == 0 }
func (r *ConnectXRP) Cuts() int64      { return r.cuts }

// Alpha returns alpha as of now.
func (r *ConnectXRP) Alpha(now units.Time) float64 {
	r.a.advance(now, r.p.AlphaTimer, r.p.G)
	return r.a.alpha
}

func (r *ConnectXRP) next() units.Time {
	switch {
	case r.cutAt != 0 && (r.incAt == 0 || r.cutAt < r.incAt):
		return r.cutAt
	}
	return r.incAt
}

func (r *ConnectXRP) action(st Stage) Action {
	return Action{Rate: r.Rate(), ArmTimer: r.next(), Stage: st}
}

// OnCNP records the CNP: the alpha flag and a cut at the next period boundary.
func (r *ConnectXRP) OnCNP(now units.Time) Action {
	p := r.p
	if r.first {
		r.first = false
		r.a.start(p.AlphaInit, now, p.AlphaTimer)
		r.grid = now
		r.RC *= p.RateOnFirstCNP
		r.RT = r.RC
	} else {
		r.a.advance(now, p.AlphaTimer, p.G)
		r.a.flag = true
	}
	if r.cutAt == 0 {
		// Cuts fall on the grid, so two are at least one period apart.
		r.cutAt = nextBoundary(r.grid, p.DecreasePeriod, now)
	}
	return r.action(None)
}

// OnTimer runs the timers due at now: the increase timer first, then the pending cut (ns-3's
// order when both fall on one instant; ConnectX documents none).
func (r *ConnectXRP) OnTimer(now units.Time) Action {
	st := None
	if r.incAt != 0 && r.incAt == now {
		r.incAt = now + r.p.IncreaseTimer
		r.T++
		r.byTimer = true
		st = r.increase()
		if r.RC >= r.line && r.RT >= r.line {
			r.incAt = 0
		}
	}
	if r.cutAt != 0 && r.cutAt == now {
		r.cut(now)
	}
	return r.action(st)
}

func (r *ConnectXRP) cut(now units.Time) {
	p := r.p
	r.a.advance(now, p.AlphaTimer, p.G)
	if p.ClampTarget || (p.ClampAfterTimer && r.byTimer) {
		r.RT = r.RC
	}
	factor := max(1-r.a.alpha/2, p.MinDecFactor)
	r.RC = max(r.RC*factor, float64(p.MinRate))
	r.T, r.B, r.bytes, r.byTimer = 0, 0, 0, false
	r.cutAt = 0
	r.cuts++
	r.incAt = now + p.IncreaseTimer
}

// OnSent counts bytes sent: every ByteCounter bytes is an increase event.
func (r *ConnectXRP) OnSent(n int64, now units.Time) Action {
	if r.first || (r.RC >= r.line && r.RT >= r.line) {
		return r.action(None)
	}
	r.bytes += n
	if r.bytes < int64(r.p.ByteCounter) {
		return r.action(None)
	}
	r.bytes -= int64(r.p.ByteCounter)
	r.B++
	r.byTimer = false
	st := r.increase()
	if r.RC >= r.line && r.RT >= r.line {
		r.incAt = 0
	}
	return r.action(st)
}

// increase is the paper's increase event ([DCQCN] §3.2) on ConnectX's counters.
func (r *ConnectXRP) increase() Stage {
	p := r.p
	var st Stage
	switch f := p.F; {
	case r.T > f && r.B > f:
		st = Hyper
		r.RT += float64(min(r.T, r.B)-f) * float64(p.HAI)
	case r.T > f || r.B > f:
		st = Additive
		r.RT += float64(p.AI)
	default:
		st = FastRecovery
	}
	r.RT = min(r.RT, r.line)
	r.RC = min((r.RT+r.RC)/2, r.line)
	if r.line-r.RC < r.line*1e-6 && r.RT >= r.line {
		r.RC = r.line
	}
	return st
}

// NS3RP is the reaction point of HPCC's ns-3 (alibaba-edu/High-Precision-Congestion-Control
// simulation/src/point-to-point/model/rdma-hw.cc @9f4be2a9ead8, functions cnp_received_mlx,
// UpdateAlphaMlx, CheckRateDecreaseMlx, RateIncEventTimerMlx and RateIncEventMlx):
//   - a CNP (an ACK with the CNP flag) sets two flags; the first CNP sets alpha to 1, starts the
//     alpha timer (AlphaResumInterval, K) and the rate-decrease check (RateDecreaseInterval,
//     first check 1 ns later than the period so that it follows the alpha update), and sets
//     rate and target to RateOnFirstCnp x the rate;
//   - the check, every period, cuts when a CNP arrived since the last one: the target is set to
//     the rate unless ClampTargetRate is off and no increase event happened since the last cut
//     (rpTimeStage 0); rate = max(MinRate, rate x (1 - alpha/2)); the increase timer restarts;
//   - the increase timer (RPTimer, T) fires every T after the last cut, forever: stage < F fast
//     recovery, stage == F additive (target += RateAI), stage > F hyper (target += RateHAI,
//     once per event), then rate = rate/2 + target/2; then the stage counts up. No byte counter.
//   - rates are ns-3 DataRates: integer bits per second, each product or quotient truncated.
//
// A cut does not move the next packet already scheduled at the old rate (the Mlx functions set
// m_rate without ChangeRate); a rise does not bring it forward either.
type NS3RP struct {
	p    *Params
	line uint64

	RC, RT uint64 // m_rate, m_targetRate, b/s
	a      alphaClock
	first  bool
	// grid is the first check; cutAt the pending check (0: none).
	grid, cutAt units.Time
	Stage       int
	incAt       units.Time
	cuts        int64
}

// Init starts the RP at line rate.
func (r *NS3RP) Init(p *Params, line units.Rate) {
	*r = NS3RP{p: p, line: uint64(line), RC: uint64(line), RT: uint64(line), first: true}
}

func (r *NS3RP) Rate() units.Rate { return units.Rate(r.RC) }

// AtLine: at line rate with nothing pending. ns-3's timer keeps firing at line rate, but each
// event leaves rate and target at the line; the stage only matters as "not 0", which it stays.
func (r *NS3RP) AtLine() bool { return r.RC >= r.line && r.RT >= r.line && r.cutAt == 0 }
func (r *NS3RP) Cuts() int64  { return r.cuts }

// Alpha returns alpha as of now.
func (r *NS3RP) Alpha(now units.Time) float64 {
	r.a.advance(now, r.p.AlphaTimer, r.p.G)
	return r.a.alpha
}

func (r *NS3RP) next() units.Time {
	if r.cutAt != 0 && (r.incAt == 0 || r.cutAt < r.incAt) {
		return r.cutAt
	}
	return r.incAt
}

func (r *NS3RP) action(st Stage) Action { return Action{Rate: r.Rate(), ArmTimer: r.next(), Stage: st} }

// OnCNP sets the CNP-arrived flags (cnp_received_mlx).
func (r *NS3RP) OnCNP(now units.Time) Action {
	p := r.p
	if r.first {
		r.first = false
		r.a.start(1, now, p.AlphaTimer)
		r.grid = now + p.DecreasePeriod + units.Nanosecond
		r.cutAt = r.grid
		r.RC = uint64(p.RateOnFirstCNP * float64(r.RC))
		r.RT = r.RC
		return r.action(None)
	}
	r.a.advance(now, p.AlphaTimer, p.G)
	r.a.flag = true
	if r.cutAt == 0 {
		// The periodic check runs on the grid whether or not a CNP came; only the checks
		// that find the flag set do anything, so it is armed only then.
		if now < r.grid {
			r.cutAt = r.grid
		} else {
			r.cutAt = nextBoundary(r.grid, p.DecreasePeriod, now)
		}
	}
	return r.action(None)
}

// OnTimer runs what is due at now: the increase timer, then the rate check (in ns-3 the
// increase event for an instant was scheduled earlier than the check, when T >= the period).
func (r *NS3RP) OnTimer(now units.Time) Action {
	st := None
	if r.incAt != 0 && r.incAt == now {
		r.incAt = now + r.p.IncreaseTimer
		st = r.increase()
		r.Stage++
		if r.RC >= r.line && r.RT >= r.line {
			r.incAt = 0
		}
	}
	if r.cutAt != 0 && r.cutAt == now {
		r.cut(now)
	}
	return r.action(st)
}

// cut is CheckRateDecreaseMlx finding the flag set.
func (r *NS3RP) cut(now units.Time) {
	p := r.p
	r.a.advance(now, p.AlphaTimer, p.G)
	if p.ClampTarget || r.Stage != 0 {
		r.RT = r.RC
	}
	r.RC = max(uint64(p.MinRate), uint64(float64(r.RC)*(1-r.a.alpha/2)))
	r.Stage = 0
	r.cutAt = 0
	r.cuts++
	r.incAt = now + p.IncreaseTimer
}

// increase is RateIncEventMlx.
func (r *NS3RP) increase() Stage {
	p := r.p
	var st Stage
	switch f := p.F; {
	case r.Stage < f:
		st = FastRecovery
	case r.Stage == f:
		st = Additive
		r.RT += uint64(p.AI)
	default:
		st = Hyper
		r.RT += uint64(p.HAI)
	}
	r.RT = min(r.RT, r.line)
	r.RC = uint64(float64(r.RC)/2) + uint64(float64(r.RT)/2)
	return st
}

// OnSent does nothing: ns-3's DCQCN has no byte counter.
func (r *NS3RP) OnSent(n int64, now units.Time) Action { return Action{Rate: r.Rate()} }
