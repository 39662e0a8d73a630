package flow

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"

	"github.com/fabricsim/fabricsim/collective"
	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

// physicalPaths lists the resources of every QP's data path of mg under seed.
func physicalPaths(t *testing.T, g *topo.Graph, cfg fabric.Config, mg *msggraph.Graph, seed uint64) []int32 {
	t.Helper()
	lr, err := NewLeafRoutes(g)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Seed = seed
	e, err := newEngine(g, lr, cfg, mg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var out []int32
	for i := range mg.Msgs {
		m := &mg.Msgs[i]
		if m.Bytes == 0 {
			continue
		}
		for q := range e.qpCount(m) {
			pc, err := e.paths(m.Src, m.Dst, qpHash(seed, int32(i), m, q), q)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, pc.p[:pc.hops]...)
		}
	}
	return out
}

// TestSameRoutesGivesSameRun: seeds that SameRoutes groups route a rail's ring over
// other links (ECMP picks other spines) in the same pattern, and their runs are the same byte
// for byte (every message's start and finish, every counter); on InfiniBand every seed is one
// group. The rings are uncongested (no switch holds a byte, no DCQCN draw), so the links alone
// are compared; with switches compared too the groups can only be finer.
func TestSameRoutesGivesSameRun(t *testing.T) {
	g, _ := railRings(t, 32, units.MiB)
	// Rail 0's ring alone: its two channels cross between the two leaves twice.
	mg := &msggraph.Graph{Endpoints: 8 * 32}
	ranks := make([]int32, 32)
	for s := range ranks {
		ranks[s] = int32(s * 8)
	}
	if _, err := collective.Compile(mg, collective.Spec{Op: collective.ReduceScatter, Ranks: ranks, Bytes: 2 * units.MiB, Channels: 2, ChunkBytes: 512 * units.KiB}); err != nil {
		t.Fatal(err)
	}
	seeds := []uint64{1, 2, 3, 4, 5, 6, 7, 8}
	roce := fabric.DefaultRoCE()
	ib, err := fabric.DefaultInfiniBand("ndr")
	if err != nil {
		t.Fatal(err)
	}
	if same, err := SameRoutes(g, nil, ib, mg, seeds, true); err != nil || slices.Max(same) != 0 {
		t.Errorf("InfiniBand: groups %v (%v), want every seed in seed 0's", same, err)
	}
	links, err := SameRoutes(g, nil, roce, mg, seeds, false)
	if err != nil {
		t.Fatal(err)
	}
	withSw, err := SameRoutes(g, nil, roce, mg, seeds, true)
	if err != nil {
		t.Fatal(err)
	}
	runs := make([][]byte, len(seeds))
	for i, sd := range seeds {
		cfg := roce
		cfg.Seed = sd
		res, err := Run(g, nil, cfg, mg, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !res.NoDraws || !res.NoQueues {
			t.Fatalf("seed %d: NoDraws %v, NoQueues %v: want an uncongested run", sd, res.NoDraws, res.NoQueues)
		}
		res.WallSeconds = 0
		runs[i], _ = json.Marshal(res.Messages)
		c, _ := json.Marshal(res.Counters)
		runs[i] = append(runs[i], c...)
		runs[i] = bytes.ReplaceAll(runs[i], []byte("seed"), nil)
	}
	reused := 0
	for i, j := range links {
		if withSw[i] < i && links[i] > withSw[i] {
			t.Errorf("seed %d: with switches in seed %d's group, by links alone in %d's", seeds[i], seeds[withSw[i]], seeds[j])
		}
		if j == i {
			continue
		}
		if slices.Equal(physicalPaths(t, g, roce, mg, seeds[i]), physicalPaths(t, g, roce, mg, seeds[j])) {
			continue // the same links: not a renaming
		}
		reused++
		if !bytes.Equal(runs[i], runs[j]) {
			t.Errorf("seed %d routes like seed %d (SameRoutes) but its run differs", seeds[i], seeds[j])
		}
	}
	if reused == 0 {
		t.Errorf("groups %v: no seed routes like another over other links; the test shows nothing", links)
	}
	t.Logf("groups by links %v, with switches %v", links, withSw)
}
