package backend

import (
	"context"
	"errors"
	"slices"

	"github.com/fabricsim/fabricsim/fabric"

	"github.com/fabricsim/fabricsim/flow"
	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/result"
	"github.com/fabricsim/fabricsim/units"
)

// Flow is the flow-level backend (package flow): flows instead of packets, with the fabric's
// routing, queues, PFC, credits and congestion control in the fluid limit (docs/flow.md).
const Flow Name = "flow"

// FlowOptions are the flow backend's own options. The zero value uses flow's defaults.
type FlowOptions struct {
	// Step is the base time step while queues or rates change, the finest resolution (0:
	// flow.DefaultStep; at most flow.MaxStep); the flow backend lengthens it where congestion
	// control is at rest (flow.Options.Step).
	Step units.Time
	// MemoryLimit refuses a run whose estimated memory is larger (0: flow.DefaultMemoryLimit).
	MemoryLimit int64
	// DrawSeed, when non-zero, seeds the flows' random draws (ECN marking, injected loss) apart
	// from Job.Seed, which then drives routing alone (flow.Options.DrawSeed).
	DrawSeed uint64
	// AgeOrder serves a partly sent queue segment oldest first (flow.Options.AgeOrder).
	AgeOrder bool
	// FixedStep keeps every step at Step (flow.Options.FixedStep: a diagnostic).
	FixedStep bool
	// CoarseCreditStep keeps the base step where InfiniBand credits bind (flow.Options.CoarseCreditStep).
	CoarseCreditStep bool
	// ProportionalFIFO serves a partly sent queue segment in proportion to its entries rather than
	// in its bytes' arrival order within their step (flow.Options.ProportionalFIFO).
	ProportionalFIFO bool
	// StopOnControl stops the run once a control loop has acted (flow.Options.StopOnControl:
	// a probe that is discarded where one did).
	StopOnControl bool
}

type flowBackend struct{}

func (flowBackend) Name() Name { return Flow }

// Run runs the job's message graph with package flow over the job's network and routes. GPU
// clusters get the packet backend's adaptations (VLs spread on InfiniBand, lossless buffers on
// the generic fabric), so both backends see the same fabric.
func (flowBackend) Run(ctx context.Context, j *Job) (*result.Run, error) {
	res, _, err := runFlow(ctx, j, nil)
	return res, err
}

// RunFlowForked runs job j on the flow backend and, beside it, j with its message graph replaced
// by small (the same messages with other sizes: a compare class's scaled-down sends at the
// pair's smaller size), the smaller run forked from the larger one where the two share their
// first steps (flow.RunForked; docs/flow.md, "Forking the two sizes' runs"): each result is the
// one Run gives its job.
func RunFlowForked(ctx context.Context, j *Job, small *msggraph.Graph) (*result.Run, *result.Run, error) {
	if small == nil {
		return nil, nil, errors.New("flow backend: a forked run needs its smaller graph")
	}
	return runFlow(ctx, j, small)
}

// runFlow is the flow backend's run of j, with small also run (RunFlowForked) where set.
func runFlow(ctx context.Context, j *Job, small *msggraph.Graph) (*result.Run, *result.Run, error) {
	gs := []*msggraph.Graph{j.Work}
	if small != nil {
		gs = append(gs, small)
	}
	p, err := prepFlow(ctx, j, gs)
	if err != nil {
		return nil, nil, err
	}
	var res, resSmall *result.Run
	if small == nil {
		res, err = flow.Run(j.Net.Graph, p.nh, p.cfg, p.gs[0], p.opt)
	} else {
		res, resSmall, err = flow.RunForked(j.Net.Graph, p.nh, p.cfg, p.gs[0], p.gs[1], p.opt)
	}
	for _, r := range []*result.Run{res, resSmall} {
		p.label(r)
	}
	return res, resSmall, p.stopped(err)
}

// flowPrep is a job's run on the flow backend as prepFlow makes it: the fabric, the graphs (a
// GPU cluster's adapted), the routes and the options.
type flowPrep struct {
	ctx context.Context
	j   *Job
	cfg fabric.Config
	gs  []*msggraph.Graph
	nh  flow.NextHopper
	opt flow.Options
}

// prepFlow prepares job j's run of graphs gs (j.Work and others of the same messages) on the
// flow backend: GPU clusters get the packet backend's adaptations, Ethernet the job's routes.
func prepFlow(ctx context.Context, j *Job, gs []*msggraph.Graph) (*flowPrep, error) {
	if err := ctx.Err(); err != nil {
		return nil, interrupted(ctx)
	}
	if err := flow.FaultsUnsupported(&j.Fabric); err != nil {
		return nil, &FaultsError{Backend: Flow, Faults: len(j.Fabric.Faults.Faults), Why: err.Error()}
	}
	p := &flowPrep{ctx: ctx, j: j, cfg: j.Fabric, gs: slices.Clone(gs)}
	p.cfg.Seed = j.Seed
	if j.Packet.GPUCluster {
		cfg := p.cfg
		for i := range p.gs {
			p.gs[i], p.cfg = adaptToCluster(p.gs[i], cfg)
		}
	}
	if p.cfg.Kind != fabric.KindInfiniBand { // InfiniBand routes by the subnet manager's tables
		r, err := j.Net.Routes()
		if err != nil {
			return nil, err
		}
		p.nh = r
	}
	p.opt = flow.Options{Step: j.Flow.Step, Until: j.Until, Check: j.Check, MemoryLimit: j.Flow.MemoryLimit, DrawSeed: j.Flow.DrawSeed, AgeOrder: j.Flow.AgeOrder,
		FixedStep: j.Flow.FixedStep, CoarseCreditStep: j.Flow.CoarseCreditStep, ProportionalFIFO: j.Flow.ProportionalFIFO,
		StopOnControl: j.Flow.StopOnControl, Progress: func(now units.Time, done, total int) bool {
			if j.Progress != nil {
				j.Progress(now, done, total)
			}
			return ctx.Err() == nil
		}}
	return p, nil
}

// label names the job's scenario, seed and backend in r.
func (p *flowPrep) label(r *result.Run) {
	if r != nil {
		r.Scenario, r.Seed, r.Backend = p.j.Scenario, p.j.Seed, string(Flow)
	}
}

// stopped is err, an interrupt (flow.ErrStopped) as the job's context's.
func (p *flowPrep) stopped(err error) error {
	if errors.Is(err, flow.ErrStopped) {
		return interrupted(p.ctx)
	}
	return err
}

// FlowSizes is a job's runs on the flow backend at several sizes (StartFlowSizes).
type FlowSizes struct {
	p *flowPrep
	s *flow.Sizes
}

// StartFlowSizes starts job j on the flow backend with, beside it, j with its message graph
// replaced by each of others (the same messages with other sizes: a compare class's scaled-down
// sends at 8 and 32 MiB beside 16 MiB), each forked from j's run where they share its first
// steps (flow.StartSizes); Result runs one of them to its end, index 0 j's own, i the i-th of
// others: each the result Run gives its job, byte for byte. A run never asked for costs only
// the steps before it forked.
func StartFlowSizes(ctx context.Context, j *Job, others ...*msggraph.Graph) (*FlowSizes, error) {
	p, err := prepFlow(ctx, j, append([]*msggraph.Graph{j.Work}, others...))
	if err != nil {
		return nil, err
	}
	s, err := flow.StartSizes(j.Net.Graph, p.nh, p.cfg, p.gs, p.opt)
	if err != nil {
		return nil, p.stopped(err)
	}
	return &FlowSizes{p: p, s: s}, nil
}

// Shared is the steps (and jumps) run i took from j's run before it forked (flow.Sizes.Shared):
// -1 where it runs plain, 0 for j's own.
func (f *FlowSizes) Shared(i int) int64 { return f.s.Shared(i) }

// Result is run i's result (StartFlowSizes).
func (f *FlowSizes) Result(i int) (*result.Run, error) {
	r, err := f.s.Result(i)
	f.p.label(r)
	return r, f.p.stopped(err)
}
