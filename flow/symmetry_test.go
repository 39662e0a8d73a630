package flow

import (
	"bytes"
	"encoding/json"
	"github.com/fabricsim/fabricsim/fabric"
	"testing"

	"github.com/fabricsim/fabricsim/collective"
	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

// railRings is a rail-optimized cluster of servers x 8 NICs with one reduce-scatter ring per
// rail (two channels): the eight rails' rings share no link.
func railRings(t testing.TB, servers int, bytes units.Size) (*topo.Graph, *msggraph.Graph) {
	g, err := topo.RailOptimized(topo.RailSpec{Servers: servers, NICsPerServer: 8, NIC: topo.LinkSpec{Rate: 390 * units.Gbps, Latency: 100 * units.Nanosecond},
		Radix: 32, Oversubscription: 1, Spine: topo.LinkSpec{Rate: 400 * units.Gbps, Latency: 150 * units.Nanosecond}})
	if err != nil {
		t.Fatal(err)
	}
	mg := &msggraph.Graph{Endpoints: 8 * servers}
	for rail := 0; rail < 8; rail++ {
		ranks := make([]int32, servers)
		for s := range ranks {
			ranks[s] = int32(s*8 + rail)
		}
		if _, err := collective.Compile(mg, collective.Spec{Op: collective.ReduceScatter, Ranks: ranks, Bytes: bytes, Channels: 2, ChunkBytes: 512 * units.KiB, ConnBase: int32(rail * 2)}); err != nil {
			t.Fatal(err)
		}
	}
	return g, mg
}

// railIncasts is the same rail-optimized cluster with one 3:1 incast per rail (three servers
// of the other leaf send 4 MiB each to one): queues form on each rail's leaf downlink.
func railIncasts(t testing.TB, servers int) (*topo.Graph, *msggraph.Graph) {
	g, _ := railRings(t, servers, units.MiB)
	mg := &msggraph.Graph{Endpoints: 8 * servers}
	for rail := 0; rail < 8; rail++ {
		dst := int32(rail)
		for k := 1; k <= 3; k++ {
			src := int32((servers-k)*8 + rail)
			mg.Add(msggraph.Message{Src: src, Dst: dst, Bytes: 4 * units.MiB, Tag: "incast"})
		}
	}
	return g, mg
}

// The symmetry reduction against the plain run, byte for byte: the eight rails' rings on RoCE
// with PFC alone, with DCQCN (uncongested: no marks), on InfiniBand; and congested incasts, where
// DCQCN marks or the shared buffer couples the rails, so the reduced run stops and the plain one
// is made (broken). copies is how many messages the reduced run did not run (a rail's ring has
// 2,016 messages, its incast 3): on InfiniBand's forwarding tables seven rails are copies of the
// first; on RoCE, ECMP makes one rail's routes share links in another pattern (two classes).
func TestSymmetryMatchesPlain(t *testing.T) {
	roce, ib, rings, incasts := railFixtures(t)
	for _, c := range []struct {
		name   string
		build  func(testing.TB) (*topo.Graph, *msggraph.Graph)
		cfg    fabric.Config
		copies int
		broken bool
	}{
		{"rings, RoCE PFC", rings, roce(false), 6 * 2016, false},
		{"rings, RoCE DCQCN", rings, roce(true), 6 * 2016, false},
		{"rings, InfiniBand", rings, ib, 7 * 2016, false},
		{"incasts, RoCE PFC", incasts, roce(false), 6 * 3, true},
		{"incasts, RoCE DCQCN", incasts, roce(true), 6 * 3, true},
		{"incasts, InfiniBand", incasts, ib, 7 * 3, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			g, mg := c.build(t)
			reduced, red, err := run(g, nil, c.cfg, mg, Options{Check: true})
			if err != nil {
				t.Fatal(err)
			}
			plain, _, err := run(g, nil, c.cfg, mg, Options{Check: true, NoSymmetry: true})
			if err != nil {
				t.Fatal(err)
			}
			if red == nil {
				t.Fatalf("no reduction; want %d copies", c.copies)
			}
			if red.copies != c.copies || red.broken != c.broken {
				t.Errorf("%d copies, broken %v; want %d, %v", red.copies, red.broken, c.copies, c.broken)
			}
			reduced.WallSeconds, plain.WallSeconds = 0, 0
			a, _ := json.Marshal(reduced)
			b, _ := json.Marshal(plain)
			if !bytes.Equal(a, b) {
				t.Errorf("reduced run differs from the plain run (completion %v vs %v)", reduced.SimTime, plain.SimTime)
			}
		})
	}
}

// railFixtures is the rail tests' shared set-up (TestSymmetryMatchesPlain, TestStopOnControl,
// TestCloneMatchesPlain): a RoCE config with DCQCN and ECN on or both off, InfiniBand NDR, and
// builders of 32 servers' rail rings of 8 MiB and rail incasts.
func railFixtures(t *testing.T) (roce func(dcqcn bool) fabric.Config, ib fabric.Config, rings, incasts func(testing.TB) (*topo.Graph, *msggraph.Graph)) {
	roce = func(dcqcn bool) fabric.Config {
		c := fabric.DefaultRoCE()
		c.RoCE.DCQCN, c.RoCE.ECN = dcqcn, dcqcn
		return c
	}
	ib, err := fabric.DefaultInfiniBand("ndr")
	if err != nil {
		t.Fatal(err)
	}
	rings = func(t testing.TB) (*topo.Graph, *msggraph.Graph) { return railRings(t, 32, 8*units.MiB) }
	incasts = func(t testing.TB) (*topo.Graph, *msggraph.Graph) { return railIncasts(t, 32) }
	return roce, ib, rings, incasts
}

// A reduction that would leave under minReducedShare of the messages unrun is not made, and the
// run is the plain run byte for byte: the rail incasts of TestSymmetryMatchesPlain (18 of their 24
// messages copies on RoCE) with 2,000 further 4 KiB messages between two other GPUs of rail 1
// (servers 5 and 6, apart from the incasts), which are no copies: 18 copies among 2,024 messages
// (0.89 %). With reduceAll (the plain version) the 18 copies are found and reduced (and the
// reduction breaks as the incasts' does), and the result is again the plain run's.
func TestFewCopiesNotReduced(t *testing.T) {
	roce, _, _, incasts := railFixtures(t)
	g, mg := incasts(t)
	for range 2000 {
		mg.Add(msggraph.Message{Src: 5*8 + 1, Dst: 6*8 + 1, Bytes: 4 * units.KiB, Tag: "filler"})
	}
	cfg := roce(false)
	plain, _, err := run(g, nil, cfg, mg, Options{Check: true, NoSymmetry: true})
	if err != nil {
		t.Fatal(err)
	}
	plain.WallSeconds = 0
	want, _ := json.Marshal(plain)
	for _, all := range []bool{false, true} {
		res, red, err := run(g, nil, cfg, mg, Options{Check: true, reduceAll: all})
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case !all && red != nil:
			t.Errorf("reduced with %d copies of %d messages; want no reduction under %v of them", red.copies, len(mg.Msgs), minReducedShare)
		case all && red == nil:
			t.Fatal("reduceAll: no reduction; want 18 copies")
		case all && red.copies != 18:
			t.Errorf("reduceAll: %d copies; want 18", red.copies)
		}
		res.WallSeconds = 0
		if got, _ := json.Marshal(res); !bytes.Equal(got, want) {
			t.Errorf("reduceAll %v: the run differs from the plain run", all)
		}
	}
}
