package flow

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/units"
)

// TestUpdateMatchesPlain holds back-pressure's update walking the active resources in the
// reverse of serve's order, with PAUSE's refresh interval kept per resource, to the plain
// version that walks them in serve's order and reads the interval from the resource
// (Options.plainUpdate): the same result JSON both ways on the 2,048-GPU pipeline class with
// DCQCN and with PFC alone (PFC's dynamic threshold, pause counting and headroom every step),
// and on a link that goes down or runs slower on InfiniBand (credits) and RoCE (PFC), with the
// invariant checks on.
func TestUpdateMatchesPlain(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the 2,048-GPU pipeline class four times")
	}
	matchesPlain(t, func(o Options, plain bool) Options { o.plainUpdate = plain; return o })
}

// matchesPlain runs TestUpdateMatchesPlain's runs with options with(o, false) and with(o, true)
// (the plain version) and fails where their result JSON differs.
func matchesPlain(t *testing.T, with func(o Options, plain bool) Options) {
	same := func(t *testing.T, name string, run func(plain bool) any) {
		var out [2][]byte
		for i, plain := range []bool{false, true} {
			b, err := json.Marshal(run(plain))
			if err != nil {
				t.Fatal(err)
			}
			out[i] = b
		}
		if string(out[0]) != string(out[1]) {
			t.Errorf("%s: the result differs from the plain version's (%d against %d bytes)", name, len(out[0]), len(out[1]))
		}
	}
	for _, pfcOnly := range []bool{false, true} {
		same(t, "pipeline-2048", func(plain bool) any {
			res := runClass2048(t, pfcOnly, with(Options{}, plain))
			res.WallSeconds = 0
			return res
		})
	}
	// Faults on a 2x2 leaf-spine (faults_test.go): every host sends 4 MB to each host of the
	// other leaf, and the leaf-0 uplink of host 0's flow to host 2 goes down for 200 us or runs
	// at a quarter of its rate, on InfiniBand (credits) and RoCE (PFC, DCQCN).
	ib, err := fabric.DefaultInfiniBand("edr")
	if err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []fabric.Config{ib, fabric.DefaultRoCE()} {
		g, r := leafSpine2x2(t)
		mg := &msggraph.Graph{Endpoints: 4}
		for src := range int32(4) {
			for _, dst := range []int32{(src + 2) % 4, (src + 3) % 4} {
				mg.Add(msggraph.Message{Src: src, Dst: dst, Bytes: 4 * units.MB})
			}
		}
		link := uplinkOf(t, g, r, cfg, 0, 2)
		for _, f := range []fabric.Fault{
			{Kind: fabric.FaultLinkDown, Link: link, At: 100 * units.Microsecond, For: 200 * units.Microsecond},
			{Kind: fabric.FaultLinkDegrade, Link: link, At: 50 * units.Microsecond, Rate: 25 * units.Gbps},
		} {
			c := cfg
			c.RTO = 50 * units.Microsecond
			c.Faults = fabric.FaultPlan{Faults: []fabric.Fault{f}, Recovery: fabric.DefaultFaultRecovery()}
			same(t, fmt.Sprintf("%v fault %d", cfg.Kind, f.Kind), func(plain bool) any {
				res, err := Run(g, r, c, mg, with(Options{Check: true}, plain))
				if err != nil {
					t.Fatal(err)
				}
				res.WallSeconds = 0
				return res
			})
		}
	}
}
