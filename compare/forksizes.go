package compare

import (
	"context"

	"github.com/fabricsim/fabricsim/backend"
	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/result"
)

// simulateSizes runs a congested class at the pair's two sizes (twoSizeRun): mg with its sends at
// the larger size, and small, the same class at the smaller one (nil: mg alone, simulateClass).
// On the flow backend the smaller run is forked from the larger one where the two share their
// first steps (backend.RunFlowForked, flow.RunForked: each result the one simulateClass gives
// its graph, byte for byte; docs/flow.md, "Forking the two sizes' runs"); elsewhere, or with
// Options.NoForkSizes, the two run one after the other.
func simulateSizes(ctx context.Context, name backend.Name, net *backend.Network, cfg fabric.Config, seed, drawSeed uint64, mg, small *msggraph.Graph, fo backend.FlowOptions, noFork bool) (out *classRun, hi, lo *result.Run, err error) {
	if small == nil || name != backend.Flow || noFork {
		if small != nil {
			if _, lo, err = simulateClass(ctx, name, net, cfg, seed, drawSeed, small, fo); err != nil {
				return nil, nil, nil, err
			}
		}
		out, hi, err = simulateClass(ctx, name, net, cfg, seed, drawSeed, mg, fo)
		return out, hi, lo, err
	}
	fo.DrawSeed = drawSeed
	job := &backend.Job{Work: mg, Net: net, Fabric: cfg, Seed: seed, Flow: fo,
		Analytic: backend.AnalyticOptions{Network: analyticNet(net.Graph, cfg)}}
	if hi, lo, err = backend.RunFlowForked(ctx, job, small); err != nil {
		return nil, nil, nil, err
	}
	if classRunHook != nil {
		js := *job
		js.Work = small
		classRunHook(name, &js, lo)
		classRunHook(name, job, hi)
	}
	return &classRun{}, hi, lo, nil
}
