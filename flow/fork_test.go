package flow

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/result"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

// halved is mg with the messages that keep(i) halved (a compare class's scaled sends at the
// pair's smaller size).
func halved(mg *msggraph.Graph, keep func(i int) bool) *msggraph.Graph {
	s := &msggraph.Graph{Msgs: append([]msggraph.Message(nil), mg.Msgs...), Endpoints: mg.Endpoints}
	for i := range s.Msgs {
		if keep(i) {
			s.Msgs[i].Bytes /= 2
		}
	}
	return s
}

func resultJSON(t *testing.T, r *result.Run) []byte {
	t.Helper()
	r.WallSeconds = 0
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkFork runs big and small plain (Run) and forked (runForked) and compares the results' JSON
// byte for byte; it returns the steps shared and the smaller run's steps.
func checkFork(t *testing.T, name string, g *topo.Graph, nh NextHopper, cfg fabric.Config, big, small *msggraph.Graph, opt Options) (shared int64, steps float64) {
	t.Helper()
	wantB, err := Run(g, nh, cfg, big, opt)
	if err != nil {
		t.Fatal(err)
	}
	wantS, err := Run(g, nh, cfg, small, opt)
	if err != nil {
		t.Fatal(err)
	}
	gotB, gotS, shared, err := runForked(g, nh, cfg, big, small, opt)
	if err != nil {
		t.Fatal(err)
	}
	steps = wantS.Counters["flow_steps"]
	if !bytes.Equal(resultJSON(t, gotB), resultJSON(t, wantB)) {
		t.Errorf("%s: the larger run differs from its plain run", name)
	}
	if !bytes.Equal(resultJSON(t, gotS), resultJSON(t, wantS)) {
		t.Errorf("%s: the forked smaller run differs from its plain run (forked after %d steps of %v)", name, shared, steps)
	}
	t.Logf("%s: forked after %d of the smaller run's %v steps", name, shared, steps)
	return shared, steps
}

// TestForkMatchesPlain: the smaller run forked from the larger one (RunForked) gives its plain
// run's result JSON byte for byte, and the larger run its own, with and without the symmetry
// reduction: incasts with PFC alone (also with every other message halved only: sizes that
// differ next to sizes that do not, sharing NICs) and on InfiniBand, which fork and share steps
// (asserted: the shared steps are what the fork saves); with DCQCN (incasts, rail rings of 8 and
// 4 MiB), which fork too (the path latency that times DCQCN's CNPs is the first packet's, the
// same at both sizes: engine.latency), and on a lossy fabric (not forked).
func TestForkMatchesPlain(t *testing.T) {
	roce, ib, _, _ := railFixtures(t)
	lossy := roce(true)
	lossy.RoCE.PFC = false
	all := func(int) bool { return true }
	incasts := func(t testing.TB) (*topo.Graph, *msggraph.Graph) { return railIncasts(t, 32) }
	for _, c := range []struct {
		name  string
		build func(testing.TB) (*topo.Graph, *msggraph.Graph)
		cfg   fabric.Config
		keep  func(int) bool
		forks bool // the smaller run is forked, after shared steps
	}{
		{"incasts, RoCE PFC", incasts, roce(false), all, true},
		{"incasts, RoCE PFC, every other message", incasts, roce(false), func(i int) bool { return i%2 == 0 }, true},
		{"incasts, InfiniBand", incasts, ib, all, true},
		{"incasts, RoCE DCQCN", incasts, roce(true), all, true},
		{"incasts, RoCE DCQCN, every other message", incasts, roce(true), func(i int) bool { return i%2 == 0 }, true},
		{"rings, RoCE DCQCN", func(t testing.TB) (*topo.Graph, *msggraph.Graph) { return railRings(t, 32, 8*units.MiB) }, roce(true), all, true},
		{"incasts, lossy RoCE", incasts, lossy, all, false},
	} {
		for _, plain := range []bool{false, true} {
			g, mg := c.build(t)
			shared, steps := checkFork(t, c.name, g, nil, c.cfg, mg, halved(mg, c.keep), Options{NoSymmetry: plain})
			// Forked is shared >= 0; the rings' smaller run counts no steps (flow_steps 0), so
			// they share none.
			if c.forks != (shared >= 0) || c.forks && steps > 0 && shared == 0 {
				t.Errorf("%s (no symmetry %v): shared %d of %v steps; want forked: %v", c.name, plain, shared, steps, c.forks)
			}
		}
	}
}

// TestForkMatchesPlain2048 runs BenchmarkPipelineClass's 2,048-GPU class (stage 3's sends at 16
// MiB, the smaller run at 8 MiB: a compare's pair) forked, with PFC alone (forked after 298 of
// the 8 MiB run's 600 steps) and with DCQCN (forked too): both results are the plain runs'.
func TestForkMatchesPlain2048(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the 2,048-GPU pipeline class at two sizes, twice")
	}
	for _, pfcOnly := range []bool{false, true} {
		g, rt, mg, cfg, name := pipeline2048(t, pfcOnly)
		shared, _ := checkFork(t, name, g, rt, cfg, mg, halved(mg, func(int) bool { return true }), Options{})
		if shared == 0 {
			t.Errorf("%s: shared no steps; want some", name)
		}
	}
}

// BenchmarkForkPipelineClass runs BenchmarkPipelineClass's 2,048-GPU class at 16 and 8 MiB with
// PFC alone (a roce-pfc-only compare's congested pair): plain, the two runs one after the other
// (Run), and forked (RunForked: the 8 MiB run forked after 298 of its 600 steps); small is the
// 8 MiB run alone, clone the copy at the fork (engine.clone after 200 steps), and setup nothing
// (the class's graph and routes, which every one of them includes: for instruction counts).
func BenchmarkForkPipelineClass(b *testing.B) {
	g, rt, mg, cfg, _ := pipeline2048(b, true)
	small := halved(mg, func(int) bool { return true })
	benchPair(b, g, rt, cfg, mg, small)
	b.Run("small", func(b *testing.B) {
		for range b.N {
			if _, err := Run(g, rt, cfg, small, Options{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("clone", func(b *testing.B) {
		e, _, err := setup(g, rt, cfg, mg, Options{})
		if err != nil {
			b.Fatal(err)
		}
		e.pauseAt = 200
		if err := e.run(); !errors.Is(err, errPaused) {
			b.Fatalf("run: %v", err)
		}
		b.ResetTimer()
		var n int64
		for range b.N {
			_, n = e.clone()
		}
		b.ReportMetric(float64(n)/1e6, "MB")
	})
}

// BenchmarkForkPipelineClassDCQCN is BenchmarkForkPipelineClass's pair with DCQCN (a roce-default
// compare's congested pair): plain, the two runs one after the other, and forked (RunForked);
// setup is the class's graph and routes, which both include (for instruction counts).
func BenchmarkForkPipelineClassDCQCN(b *testing.B) {
	g, mg, cfg := pipelineClass(b, 256, 3)
	rt, err := topo.ComputeRoutes(g)
	if err != nil {
		b.Fatal(err)
	}
	small := halved(mg, func(int) bool { return true })
	benchPair(b, g, rt, cfg, mg, small)
}

// benchPair runs a fork benchmark's common sub-benchmarks: setup (nothing: the graph and routes
// every one of them includes), plain (the larger run, then the smaller one) and forked
// (RunForked).
func benchPair(b *testing.B, g *topo.Graph, rt *topo.Routes, cfg fabric.Config, mg *msggraph.Graph, small *msggraph.Graph) {
	b.Run("setup", func(b *testing.B) {})
	b.Run("plain", func(b *testing.B) {
		for range b.N {
			if _, err := Run(g, rt, cfg, mg, Options{}); err != nil {
				b.Fatal(err)
			}
			if _, err := Run(g, rt, cfg, small, Options{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("forked", func(b *testing.B) {
		for range b.N {
			if _, _, err := RunForked(g, rt, cfg, mg, small, Options{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// checkSizes runs gs plain (Run) and through StartSizes (gs[0] run, the others forked from it),
// the results asked for from the last to the first (as a compare asks for its pair, then the
// doubled size), and compares every result's JSON byte for byte; it returns the steps each
// shared.
func checkSizes(t *testing.T, name string, g *topo.Graph, nh NextHopper, cfg fabric.Config, gs []*msggraph.Graph, opt Options) []int64 {
	t.Helper()
	s, err := StartSizes(g, nh, cfg, gs, opt)
	if err != nil {
		t.Fatal(err)
	}
	shared := make([]int64, len(gs))
	for k := len(gs) - 1; k >= 0; k-- {
		want, err := Run(g, nh, cfg, gs[k], opt)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.Result(k)
		if err != nil {
			t.Fatal(err)
		}
		shared[k] = s.Shared(k)
		if !bytes.Equal(resultJSON(t, got), resultJSON(t, want)) {
			t.Errorf("%s: graph %d's run differs from its plain run (shared %d steps)", name, k, shared[k])
		}
	}
	t.Logf("%s: shared steps %v", name, shared)
	return shared
}

// doubled is mg with the messages that keep(i) doubled (a compare class's pair doubled).
func doubled(mg *msggraph.Graph, keep func(i int) bool) *msggraph.Graph {
	s := &msggraph.Graph{Msgs: append([]msggraph.Message(nil), mg.Msgs...), Endpoints: mg.Endpoints}
	for i := range s.Msgs {
		if keep(i) {
			s.Msgs[i].Bytes *= 2
		}
	}
	return s
}

// TestSizesMatchPlain: a graph run with a smaller and a larger one beside it (every message, or
// every other one, halved and doubled: a compare's class at 16 MiB with 8 and 32 MiB) through
// StartSizes gives each its plain run's result JSON byte for byte, with and without the symmetry
// reduction, on the cases of TestForkMatchesPlain that fork; both fork, the larger one no
// earlier than the smaller one (it parts where the run's own flows near their end).
func TestSizesMatchPlain(t *testing.T) {
	roce, ib, _, _ := railFixtures(t)
	all := func(int) bool { return true }
	incasts := func(t testing.TB) (*topo.Graph, *msggraph.Graph) { return railIncasts(t, 32) }
	for _, c := range []struct {
		name  string
		build func(testing.TB) (*topo.Graph, *msggraph.Graph)
		cfg   fabric.Config
		keep  func(int) bool
	}{
		{"incasts, RoCE PFC", incasts, roce(false), all},
		{"incasts, RoCE PFC, every other message", incasts, roce(false), func(i int) bool { return i%2 == 0 }},
		{"incasts, InfiniBand", incasts, ib, all},
		{"incasts, RoCE DCQCN", incasts, roce(true), all},
		{"incasts, RoCE DCQCN, every other message", incasts, roce(true), func(i int) bool { return i%2 == 0 }},
	} {
		for _, plain := range []bool{false, true} {
			g, mg := c.build(t)
			shared := checkSizes(t, c.name, g, nil, c.cfg, []*msggraph.Graph{mg, halved(mg, c.keep), doubled(mg, c.keep)}, Options{NoSymmetry: plain})
			if shared[1] <= 0 || shared[2] < shared[1] {
				t.Errorf("%s (no symmetry %v): shared steps %v; want both forked, the larger one no earlier", c.name, plain, shared)
			}
		}
	}
}

// TestSizesMatchPlain2048 runs BenchmarkPipelineClass's 2,048-GPU class at 16 MiB with 8 and 32
// MiB beside it through StartSizes, with PFC alone and with DCQCN: every result is its plain
// run's. With PFC alone the 8 MiB run forks after 298 steps, as from the pair alone, and the
// 32 MiB run after 427 of its 1,240; with DCQCN the 8 MiB run after 229, and the 32 MiB run
// parts at step 137 (a DCQCN marks' tolerance that reads the size, 1e-9 of the flow's bytes:
// twin.marks1), so it runs plain.
func TestSizesMatchPlain2048(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the 2,048-GPU pipeline class at three sizes, twice")
	}
	for _, pfcOnly := range []bool{true, false} {
		g, rt, mg, cfg, name := pipeline2048(t, pfcOnly)
		all := func(int) bool { return true }
		shared := checkSizes(t, name, g, rt, cfg, []*msggraph.Graph{mg, halved(mg, all), doubled(mg, all)}, Options{})
		if shared[1] <= 0 || pfcOnly && shared[2] < shared[1] {
			t.Errorf("%s: shared steps %v; want the smaller run forked (and with PFC alone the larger one no earlier)", name, shared)
		}
	}
}

// pipeline2048 is BenchmarkPipelineClass's 2,048-GPU class (stage 3's sends, 16 MiB) with DCQCN,
// or with PFC alone, its routes, and the name the fork tests give it.
func pipeline2048(t testing.TB, pfcOnly bool) (*topo.Graph, *topo.Routes, *msggraph.Graph, fabric.Config, string) {
	g, mg, cfg := pipelineClass(t, 256, 3)
	if pfcOnly {
		cfg.RoCE.DCQCN, cfg.RoCE.ECN = false, false
	}
	rt, err := topo.ComputeRoutes(g)
	if err != nil {
		t.Fatal(err)
	}
	return g, rt, mg, cfg, map[bool]string{false: "pipeline 2048, DCQCN", true: "pipeline 2048, PFC alone"}[pfcOnly]
}
