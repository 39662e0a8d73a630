package backend

import (
	"context"
	"errors"
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
	if err := ctx.Err(); err != nil {
		return nil, nil, interrupted(ctx)
	}
	if err := flow.FaultsUnsupported(&j.Fabric); err != nil {
		return nil, nil, &FaultsError{Backend: Flow, Faults: len(j.Fabric.Faults.Faults), Why: err.Error()}
	}
	cfg := j.Fabric
	cfg.Seed = j.Seed
	work := j.Work
	if j.Packet.GPUCluster {
		if small != nil {
			small, _ = adaptToCluster(small, cfg)
		}
		work, cfg = adaptToCluster(work, cfg)
	}
	var nh flow.NextHopper
	if cfg.Kind != fabric.KindInfiniBand { // InfiniBand routes by the subnet manager's tables
		r, err := j.Net.Routes()
		if err != nil {
			return nil, nil, err
		}
		nh = r
	}
	opt := flow.Options{Step: j.Flow.Step, Until: j.Until, Check: j.Check, MemoryLimit: j.Flow.MemoryLimit, DrawSeed: j.Flow.DrawSeed, AgeOrder: j.Flow.AgeOrder,
		FixedStep: j.Flow.FixedStep, CoarseCreditStep: j.Flow.CoarseCreditStep, ProportionalFIFO: j.Flow.ProportionalFIFO,
		StopOnControl: j.Flow.StopOnControl, Progress: func(now units.Time, done, total int) bool {
			if j.Progress != nil {
				j.Progress(now, done, total)
			}
			return ctx.Err() == nil
		}}
	var res, resSmall *result.Run
	var err error
	if small == nil {
		res, err = flow.Run(j.Net.Graph, nh, cfg, work, opt)
	} else {
		res, resSmall, err = flow.RunForked(j.Net.Graph, nh, cfg, work, small, opt)
	}
	for _, r := range []*result.Run{res, resSmall} {
		if r != nil {
			r.Scenario, r.Seed, r.Backend = j.Scenario, j.Seed, string(Flow)
		}
	}
	if errors.Is(err, flow.ErrStopped) {
		err = interrupted(ctx)
	}
	return res, resSmall, err
}
