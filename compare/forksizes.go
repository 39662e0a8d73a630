package compare

import (
	"context"
	"sync/atomic"

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
//
// larger, where set (with small), is the class at twice mg's sizes, which the compare runs where
// the pair's pauses spread (pausesSpread): it is forked from mg's run beside small
// (backend.StartFlowSizes), and more runs it to its end from its fork (docs/flow.md, "The doubled
// pair's larger run forked"); asked for or not, the pair's results are the same. more is nil
// where larger is not started (nil, or not the flow backend's fork).
func simulateSizes(ctx context.Context, name backend.Name, net *backend.Network, cfg fabric.Config, seed, drawSeed uint64, mg, small, larger *msggraph.Graph, fo backend.FlowOptions, noFork bool) (out *classRun, hi, lo *result.Run, more func() (*result.Run, error), err error) {
	if small == nil || name != backend.Flow || noFork {
		if small != nil {
			if _, lo, err = simulateClass(ctx, name, net, cfg, seed, drawSeed, small, fo); err != nil {
				return nil, nil, nil, nil, err
			}
		}
		out, hi, err = simulateClass(ctx, name, net, cfg, seed, drawSeed, mg, fo)
		return out, hi, lo, nil, err
	}
	fo.DrawSeed = drawSeed
	job := &backend.Job{Work: mg, Net: net, Fabric: cfg, Seed: seed, Flow: fo,
		Analytic: backend.AnalyticOptions{Network: analyticNet(net.Graph, cfg)}}
	hook := func(w *msggraph.Graph, r *result.Run) {
		if classRunHook != nil {
			js := *job
			js.Work = w
			classRunHook(name, &js, r)
		}
	}
	if larger == nil {
		if hi, lo, err = backend.RunFlowForked(ctx, job, small); err != nil {
			return nil, nil, nil, nil, err
		}
		hook(small, lo)
		hook(mg, hi)
		return &classRun{}, hi, lo, nil, nil
	}
	fs, err := backend.StartFlowSizes(ctx, job, small, larger)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if hi, err = fs.Result(0); err != nil {
		return nil, nil, nil, nil, err
	}
	if lo, err = fs.Result(1); err != nil {
		return nil, nil, nil, nil, err
	}
	hook(small, lo)
	hook(mg, hi)
	doubledStarted.Add(1)
	more = func() (*result.Run, error) {
		doubledForked.Add(1)
		if n := fs.Shared(2); n > 0 {
			doubledShared.Add(n)
		}
		r, err := fs.Result(2)
		if err == nil {
			hook(larger, r)
		}
		return r, err
	}
	return &classRun{}, hi, lo, more, nil
}

// doubledStarted counts the runs at twice a pair's sizes started with the pair (simulateSizes),
// doubledForked those finished because the pair was doubled, and doubledShared the steps (and
// jumps) those took from the pair's larger run, over the process: a diagnostic
// (TestForkSizesMatchPlain, docs/flow.md).
var doubledStarted, doubledForked, doubledShared atomic.Int64
