package fabric

import (
	"fmt"
	"slices"
	"testing"

	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

// TestDrawSeedRoutingUnchanged: Config.DrawSeed seeds the random draws only, never the
// switches' ECMP salt or the QP hashes, so one Seed with two DrawSeeds sends every packet of an
// uncongested ECMP permutation on the same path: every port of the k = 4 fat tree transmits the
// same bytes. Changing Seed instead moves flows to other uplinks (the control: the per-port
// bytes do see the routing).
func TestDrawSeedRoutingUnchanged(t *testing.T) {
	g, err := topo.FatTree(4, topo.LinkSpec{Rate: 100 * units.Gbps, Latency: units.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	mg := permutationGraph(len(g.Hosts), 256*units.KB, 5)
	portBytes := func(seed, draw uint64) []int64 {
		cfg := DefaultRoCE()
		cfg.Seed, cfg.DrawSeed = seed, draw
		n := newNet(t, g, cfg)
		run(t, n, mg)
		var b []int64
		for _, sw := range n.Switches {
			if sw == nil {
				continue
			}
			for _, p := range sw.Ports {
				b = append(b, p.TxBytes)
			}
		}
		if n.lastRun.Drops != 0 || n.lastRun.Counters["ecn_marks"] != 0 {
			t.Fatalf("seed %d draw %d: drops %d, marks %v: not the uncongested permutation", seed, draw, n.lastRun.Drops, n.lastRun.Counters["ecn_marks"])
		}
		return b
	}
	a, b := portBytes(7, 1), portBytes(7, 2)
	if !slices.Equal(a, b) {
		t.Errorf("Seed 7, DrawSeed 1 and 2: switch ports' bytes differ, so the paths did:\n%v\n%v", a, b)
	}
	if c := portBytes(8, 1); slices.Equal(a, c) {
		t.Errorf("Seeds 7 and 8 gave the same bytes on every switch port: the test does not see the ECMP hash")
	}
}

// TestDrawSeedDraws: DrawSeed changes the draws. An incast of three senders on one 40G switch
// port with RED between Kmin 5 KB and Kmax 100 KB at Pmax 20 % (DCQCN's marking, [DCQCN] Zhu
// et al., SIGCOMM 2015) and random loss of 1e-3 marks and drops by draws: two DrawSeeds under
// one Seed give different mark counts. DrawSeed 0 draws from Seed, so it is the run with
// DrawSeed = Seed byte for byte, as every run was before DrawSeed.
func TestDrawSeedDraws(t *testing.T) {
	out := func(seed, draw uint64) (string, float64) {
		cfg := DefaultRoCE()
		cfg.Seed, cfg.DrawSeed = seed, draw
		cfg.Transport = "irn"
		cfg.RoCE.Kmin, cfg.RoCE.Kmax, cfg.RoCE.Pmax = 5*units.KB, 100*units.KB, 0.2
		cfg.RoCE.RandomLoss = 1e-3
		g := star(4, 40*units.Gbps, units.Microsecond)
		mg := &msggraph.Graph{Endpoints: 4}
		for s := int32(1); s <= 3; s++ {
			mg.Add(msggraph.Message{Src: s, Dst: 0, Bytes: 16 * units.MB})
		}
		n := newNet(t, g, cfg)
		run(t, n, mg)
		res := n.lastRun
		return fmt.Sprint(res.Messages, res.Events, res.Counters, res.DropsByCause, res.BytesRetransmitted), res.Counters["ecn_marks"]
	}
	s0, m0 := out(3, 0)
	s3, _ := out(3, 3)
	if s0 != s3 {
		t.Errorf("DrawSeed 0 and DrawSeed = Seed differ:\n%s\n%s", s0, s3)
	}
	s1, m1 := out(3, 1)
	s2, m2 := out(3, 2)
	t.Logf("ecn marks: DrawSeed 0 %v, 1 %v, 2 %v", m0, m1, m2)
	if m1 == 0 || m2 == 0 {
		t.Fatalf("no marks (%v, %v): the incast does not reach RED's probabilistic band", m1, m2)
	}
	if m1 == m2 || s1 == s2 {
		t.Errorf("DrawSeeds 1 and 2 drew the same: %v and %v marks", m1, m2)
	}
}
