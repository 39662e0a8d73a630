package flow

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/topo"
)

// runCloned runs mg as run does, but pauses at the first step boundary after pause steps and
// jumps, takes a copy of the engine there (engine.clone) and runs the original and then the
// copy on to their ends; paused reports whether the run reached the boundary.
func runCloned(t *testing.T, g *topo.Graph, nh NextHopper, cfg fabric.Config, mg *msggraph.Graph, opt Options, pause int64) (orig, cp []byte, paused bool) {
	t.Helper()
	e, nh, err := setup(g, nh, cfg, mg, opt)
	if err != nil {
		t.Fatal(err)
	}
	e.pauseAt = pause
	err = e.run()
	if errors.Is(err, errReductionBroken) {
		// The copies would not have moved in lockstep (runToEnd): the plain run, paused there.
		if e, err = newEngine(g, nh, cfg, mg, opt); err != nil {
			t.Fatal(err)
		}
		e.initGraph()
		e.pauseAt = pause
		err = e.run()
	}
	if err == nil {
		// It ended before the boundary: nothing to copy.
		res, _, err := e.runToEnd(g, nh, cfg, mg, opt, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		res.WallSeconds = 0
		b, _ := json.Marshal(res)
		return b, b, false
	}
	if !errors.Is(err, errPaused) {
		t.Fatal(err)
	}
	c, _ := e.clone()
	var out [2][]byte
	for i, x := range []*engine{e, c} {
		res, _, err := x.runToEnd(g, nh, cfg, mg, opt, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		res.WallSeconds = 0
		out[i], _ = json.Marshal(res)
	}
	return out[0], out[1], true
}

// TestCloneMatchesPlain: an engine copied at a step boundary (engine.clone), the original and
// the copy each run on to the end, gives the plain run's result JSON byte for byte, both of
// them: incasts with DCQCN (the symmetry reduction breaks at the first mark), with PFC alone
// (reduced: the copy carries the reduction) and on InfiniBand, and rail rings (reduced, with
// DCQCN), each with and without the reduction, copied at several boundaries. The original runs
// first, so a copy that shared mutable state with it (a slice, a map, a pointer into the
// engine) would see the original's later state and differ.
func TestCloneMatchesPlain(t *testing.T) {
	roce, ib, rings, incasts := railFixtures(t)
	for _, c := range []struct {
		name  string
		build func(testing.TB) (*topo.Graph, *msggraph.Graph)
		cfg   fabric.Config
	}{
		{"incasts, RoCE DCQCN", incasts, roce(true)},
		{"incasts, RoCE PFC", incasts, roce(false)},
		{"incasts, InfiniBand", incasts, ib},
		{"rings, RoCE DCQCN", rings, roce(true)},
	} {
		for _, plain := range []bool{false, true} {
			g, mg := c.build(t)
			opt := Options{NoSymmetry: plain}
			want, err := Run(g, nil, c.cfg, mg, opt)
			if err != nil {
				t.Fatal(err)
			}
			want.WallSeconds = 0
			wb, _ := json.Marshal(want)
			steps := int64(want.Counters["flow_steps"])
			for _, k := range []int64{1, 3, steps / 4, steps / 2, steps - 2} {
				if k <= 0 {
					continue
				}
				orig, cp, paused := runCloned(t, g, nil, c.cfg, mg, opt, k)
				if !bytes.Equal(orig, wb) || !bytes.Equal(cp, wb) {
					t.Errorf("%s (no symmetry %v), copied after %d of %d steps: original same %v, copy same %v", c.name, plain, k, steps, bytes.Equal(orig, wb), bytes.Equal(cp, wb))
				}
				if !paused && k < steps/2 {
					t.Errorf("%s (no symmetry %v): no boundary after %d of %d steps", c.name, plain, k, steps)
				}
			}
		}
	}
}

// TestCloneDoesNotAlias: the copy shares no mutable memory with the original: after the copy is
// taken, every slice, map and pointer of the copy's state is a different object from the
// original's (the read-only topology, message graph and routes excepted), and pointers inside
// the engine (the network's configuration is the engine's own) point into the copy.
func TestCloneDoesNotAlias(t *testing.T) {
	g, mg := railIncasts(t, 32)
	c := fabric.DefaultRoCE()
	e, _, err := setup(g, nil, c, mg, Options{NoSymmetry: true})
	if err != nil {
		t.Fatal(err)
	}
	e.pauseAt = 20
	if err := e.run(); !errors.Is(err, errPaused) {
		t.Fatalf("run: %v", err)
	}
	x, _ := e.clone()
	if x.net == e.net || x.net.cfg != &x.cfg || x.ideal.cfg != &x.cfg || x.fc.e != x || x.rt.net != x.net {
		t.Errorf("the copy's network %p (original %p), its cfg %p (engine's %p), back-pressure's engine %p (copy %p)", x.net, e.net, x.net.cfg, &x.cfg, x.fc.e, x)
	}
	if x.g != e.g || x.mg != e.mg {
		t.Errorf("the topology and the message graph are copied, not shared")
	}
	if len(x.flows) == 0 || &x.flows[0] == &e.flows[0] || &x.path[0] == &e.path[0] || &x.queues[0] == &e.queues[0] {
		t.Errorf("the flows, paths or queues are shared")
	}
	if reflect.ValueOf(x.pathCache).UnsafePointer() == reflect.ValueOf(e.pathCache).UnsafePointer() {
		t.Errorf("the path cache is shared")
	}
	for r := range e.net.res {
		a, b := e.net.res[r].members, x.net.res[r].members
		if cap(a) > 0 && &a[:cap(a)][0] == &b[:cap(b)][0] {
			t.Fatalf("resource %d's members are shared", r)
		}
	}
}

// TestCloneMatchesPlain2048 copies BenchmarkPipelineClass's 2,048-GPU class (the congested
// pipeline sends a compare runs at two sizes) after 200 steps, about where its 8 MiB run would
// part from its 16 MiB one, with DCQCN and with PFC alone: the original and the copy give the
// plain run's result JSON (TestHotPathUnchanged's runs). It logs what the copy took.
func TestCloneMatchesPlain2048(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the 2,048-GPU pipeline class three times per variant")
	}
	for _, pfcOnly := range []bool{false, true} {
		want := runClass2048(t, pfcOnly, Options{})
		want.WallSeconds = 0
		wb, _ := json.Marshal(want)
		g, rt, mg, cfg, _ := pipeline2048(t, pfcOnly)
		e, nh, err := setup(g, rt, cfg, mg, Options{})
		if err != nil {
			t.Fatal(err)
		}
		e.pauseAt = 200
		if err := e.run(); !errors.Is(err, errPaused) {
			t.Fatalf("run: %v", err)
		}
		w := time.Now()
		c, n := e.clone()
		t.Logf("PFC alone %v: copied %d flows after %d steps: %.1f MB in %v", pfcOnly, len(e.flows), e.steps+e.jumps, float64(n)/1e6, time.Since(w))
		for i, x := range []*engine{e, c} {
			res, _, err := x.runToEnd(g, nh, cfg, mg, Options{}, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			res.WallSeconds = 0
			b, _ := json.Marshal(res)
			if !bytes.Equal(b, wb) {
				t.Errorf("PFC alone %v: the %s differs from the plain run", pfcOnly, []string{"original", "copy"}[i])
			}
		}
	}
}
