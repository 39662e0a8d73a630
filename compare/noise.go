package compare

import (
	"math"
	"math/rand/v2"

	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/sim"
	"github.com/fabricsim/fabricsim/training"
	"github.com/fabricsim/fabricsim/units"
)

// Noise is the scenario's `noise:` section: how a GPU's compute time varies from step to step,
// and how many distinct network seeds the steps draw from (docs/jitter.md).
//
// Every compute op of GPU g in step k takes its planned duration times the factor f(g, k) (one
// draw per GPU and step: a GPU's clock and thermal state change over seconds, not per kernel),
// times Slow.Slowdown when GPU g is slow in step k, plus Host.Delay with probability Host.Prob
// per op (an OS or host detour that delays the op's launch). The draws depend only on the seed,
// the step and the GPU, so the same scenario gives the same steps.
type Noise struct {
	// Dist is the distribution of f: lognormal (default), normal (truncated at 0) or none.
	Dist string `yaml:"dist" json:"dist"`
	// CV is f's coefficient of variation (standard deviation over mean; the mean is 1).
	CV   float64   `yaml:"cv" json:"cv"`
	Slow SlowGPUs  `yaml:"slow" json:"slow"`
	Host HostNoise `yaml:"host" json:"host"`
	// NetworkSeeds is how many distinct seeds the steps' network simulations use: step k runs
	// with seed + 7919 (k mod NetworkSeeds). 0 (the default) is one per step. Where a step's
	// network runs do not depend on its compute times (class fidelity, or whole steps without
	// compute noise) a repeated seed repeats the run bit for bit, so it is simulated once.
	NetworkSeeds int `yaml:"network_seeds" json:"network_seeds"`
	// PerStep gives every step network runs of its own, as a running job sees them: routing
	// (ECMP hashes of the job's connections) follows NetworkSeeds, the runs' random draws (ECN
	// marking) are the step's, and in class fidelity each group of a class starts its collective
	// when the step's compute draws make it ready, so groups that share links overlap as they
	// would in that step (docs/jitter.md, "Network jitter").
	PerStep bool `yaml:"network_per_step" json:"network_per_step,omitempty"`
}

// SlowGPUs are fail-slow GPUs: in each step each GPU is slow with probability Prob, and its
// compute then takes Slowdown times as long. Persistent draws the slow GPUs once for the whole
// run instead (a slow machine that stays in the job until someone removes it).
type SlowGPUs struct {
	Prob       float64 `yaml:"prob" json:"prob"`
	Slowdown   float64 `yaml:"slowdown" json:"slowdown"`
	Persistent bool    `yaml:"persistent" json:"persistent,omitempty"`
}

// HostNoise is OS or host noise: each compute op is delayed by Delay with probability Prob.
type HostNoise struct {
	Prob  float64    `yaml:"prob" json:"prob"`
	Delay units.Time `yaml:"delay" json:"delay"`
}

// Noise defaults (docs/jitter.md gives the sources).
const (
	// DefaultNoiseCV: Meta saw a diurnal 1-2 % throughput swing on 16k H100s from GPU DVFS
	// (Llama 3 paper, section 3.3.4), and Sinha et al. measured 8 % (up to 22 %) performance
	// variation between GPUs of one SKU (SC22): we take a 2 % coefficient of variation per GPU
	// and step, whose central 95 % spans 8 % [EST].
	DefaultNoiseCV = 0.02
	// DefaultSlowdown: the slowest GPUs Sinha et al. found ran 1.5x the median GPU (SC22).
	DefaultSlowdown = 1.5
	// noiseSalt separates the noise streams from the network's seeds.
	noiseSalt = 0x6e6f697365 // "noise"
	// drawSalt separates the network's per-step draws from its routing seeds.
	drawSalt = 0x6472617773 // "draws"
)

func (s *Scenario) noiseDefaults() {
	n := s.Noise
	if n == nil {
		return
	}
	if n.Dist == "" {
		n.Dist = "lognormal"
	}
	if !s.has("noise.cv") && n.Dist != "none" {
		n.CV = DefaultNoiseCV
	}
	if !s.has("noise.slow.slowdown") {
		n.Slow.Slowdown = DefaultSlowdown
	}
}

func (s *Scenario) noiseValidate() error {
	n := s.Noise
	if n == nil {
		return nil
	}
	bad := func(x float64) bool { return math.IsNaN(x) || math.IsInf(x, 0) }
	switch {
	case n.Dist != "lognormal" && n.Dist != "normal" && n.Dist != "none":
		return s.d.At("noise.dist", "%q unknown (valid: lognormal, normal, none)", n.Dist)
	case bad(n.CV) || n.CV < 0 || n.CV > 1:
		return s.d.At("noise.cv", "%v: want a coefficient of variation in 0..1, e.g. 0.02", n.CV)
	case n.Dist == "normal" && n.CV > 0.25:
		return s.d.At("noise.cv", "%v: a normal factor above cv 0.25 is negative too often; use dist: lognormal", n.CV)
	case bad(n.Slow.Prob) || n.Slow.Prob < 0 || n.Slow.Prob > 1:
		return s.d.At("noise.slow.prob", "%v: want a probability per GPU and step in 0..1, e.g. 0.001", n.Slow.Prob)
	case bad(n.Slow.Slowdown) || n.Slow.Slowdown < 1:
		return s.d.At("noise.slow.slowdown", "%v: want a factor of at least 1, e.g. 1.5", n.Slow.Slowdown)
	case bad(n.Host.Prob) || n.Host.Prob < 0 || n.Host.Prob > 1:
		return s.d.At("noise.host.prob", "%v: want a probability per compute op in 0..1", n.Host.Prob)
	case n.Host.Delay < 0:
		return s.d.At("noise.host.delay", "must not be negative")
	case n.Host.Prob > 0 && n.Host.Delay == 0:
		return s.d.At("noise.host", "prob %v with no delay: give the detour, e.g. delay: 50us", n.Host.Prob)
	case n.NetworkSeeds < 0 || n.NetworkSeeds > s.Steps:
		return s.d.At("noise.network_seeds", "%d: want 1..steps (%d), or 0 for one per step", n.NetworkSeeds, s.Steps)
	}
	return nil
}

// networkSeeds is how many distinct network seeds the steps use.
func (s *Scenario) networkSeeds() int {
	if s.Noise == nil || s.Noise.NetworkSeeds == 0 {
		return s.Steps
	}
	return min(s.Noise.NetworkSeeds, s.Steps) // --steps may lower the steps below it
}

// perStepNetwork says whether every step has network runs of its own (Noise.PerStep).
func (s *Scenario) perStepNetwork() bool { return s.Noise != nil && s.Noise.PerStep }

// drawSeed is the seed of step k's random draws in the network (ECN marking) apart from its
// routing seed, with noise.network_per_step; 0 (draws follow the routing seed) without.
func (s *Scenario) drawSeed(k int) uint64 {
	if !s.perStepNetwork() {
		return 0
	}
	return sim.Mix64(s.Seed^drawSalt^sim.Mix64(uint64(k)+1)) | 1
}

// computeNoise says whether the steps' compute times vary.
func (s *Scenario) computeNoise() bool {
	n := s.Noise
	return n != nil && (n.Dist != "none" && n.CV > 0 || n.Slow.Prob > 0 && n.Slow.Slowdown > 1 || n.Host.Prob > 0 && n.Host.Delay > 0)
}

// stepNoise is one step's draws: each GPU's compute factor and each compute op's detour.
type stepNoise struct {
	factor []float64    // per GPU
	detour []units.Time // per plan op; nil without host noise
	slow   int          // GPUs slow in this step
}

// drawNoise draws step k's noise for the plan's GPUs: one PCG stream per step (its two seeds
// the scenario's seed and k, each through sim.Mix64 so that nearby seeds start far apart), the GPUs' factors and slow draws in GPU order, then the ops' detours
// from a second stream, so changing one knob leaves the other draws as they were. nil when the
// scenario has no compute noise.
func (s *Scenario) drawNoise(p *training.Plan, k int) *stepNoise {
	if !s.computeNoise() {
		return nil
	}
	n := s.Noise
	out := &stepNoise{factor: make([]float64, p.GPUs)}
	rng := rand.New(rand.NewPCG(sim.Mix64(s.Seed^noiseSalt), sim.Mix64(2*uint64(k))))
	// Lognormal with mean 1 and coefficient of variation c: ln f ~ N(-sigma^2/2, sigma^2),
	// sigma^2 = ln(1 + c^2).
	sigma := math.Sqrt(math.Log1p(n.CV * n.CV))
	// Persistent slow GPUs: one draw per GPU for the run, from a stream of its own (the step
	// stream still draws its slow number, so the factors do not move).
	var persist *rand.Rand
	if n.Slow.Persistent {
		persist = rand.New(rand.NewPCG(sim.Mix64(s.Seed^noiseSalt^0x736c6f77), 0)) // "slow"
	}
	for g := range out.factor {
		z, u := rng.NormFloat64(), rng.Float64()
		if persist != nil {
			u = persist.Float64()
		}
		f := 1.0
		switch n.Dist {
		case "lognormal":
			f = math.Exp(sigma*z - sigma*sigma/2)
		case "normal":
			f = max(0, 1+n.CV*z)
		}
		if u < n.Slow.Prob {
			f *= n.Slow.Slowdown
			out.slow++
		}
		out.factor[g] = f
	}
	if n.Host.Prob > 0 && n.Host.Delay > 0 {
		rng := rand.New(rand.NewPCG(sim.Mix64(s.Seed^noiseSalt), sim.Mix64(2*uint64(k)+1)))
		out.detour = make([]units.Time, len(p.Ops))
		for i := range p.Ops {
			if p.Ops[i].Kind == training.Compute && rng.Float64() < n.Host.Prob {
				out.detour[i] = n.Host.Delay
			}
		}
	}
	return out
}

// duration is compute op i's duration in this step (o.Duration without noise).
func (n *stepNoise) duration(i int, o *training.Op) units.Time {
	if n == nil {
		return o.Duration
	}
	d := units.Time(math.Round(float64(o.Duration) * n.factor[o.Ranks[0]]))
	if n.detour != nil {
		d += n.detour[i]
	}
	return d
}

// noisyStep is the whole-step graph g with step noise n on its compute nodes (opDone[i] is
// compute op i's node): a copy of g's messages, the rest shared.
func noisyStep(g *msggraph.Graph, p *training.Plan, opDone []msggraph.ID, n *stepNoise) *msggraph.Graph {
	if n == nil {
		return g
	}
	c := *g
	c.Msgs = append([]msggraph.Message(nil), g.Msgs...)
	for i := range p.Ops {
		if o := &p.Ops[i]; o.Kind == training.Compute {
			c.Msgs[opDone[i]].Delay = n.duration(i, o)
		}
	}
	return &c
}
