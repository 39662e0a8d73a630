package flow_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/flow"
)

// TestDrawSeedSeparatesRouting: Options.DrawSeed moves the flows' random draws (ECN marking)
// and nothing else. On the 24-host all-to-all across 3:1 leaves: with PFC only (no random draw;
// ECMP decides), a different DrawSeed gives the same result byte for byte while a different
// fabric seed does not (the hashes move); with DCQCN a different DrawSeed changes the run
// (the marks fall elsewhere), and DrawSeed equal to the fabric's seed is the default run.
func TestDrawSeedSeparatesRouting(t *testing.T) {
	g, _, mg := allToAll3to1(false)(t)
	runJSON := func(dcqcn bool, seed, draw uint64) ([]byte, float64) {
		c := fabric.DefaultRoCE() // ConnectX and switch defaults: the all-to-all marks
		c.RoCE.DCQCN, c.RoCE.ECN = dcqcn, dcqcn
		c.Seed = seed
		r, err := flow.Run(g, nil, c, mg, flow.Options{DrawSeed: draw})
		if err != nil {
			t.Fatal(err)
		}
		r.Seed, r.WallSeconds = 0, 0 // the seed as given and the host time are not the run
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		return b, r.EndTime.Seconds()
	}
	pfc, t0 := runJSON(false, 1, 0)
	if b, t1 := runJSON(false, 1, 99); !bytes.Equal(pfc, b) {
		t.Errorf("PFC only: DrawSeed 99 changed the run (%.3f -> %.3f us): it must move no route", 1e6*t0, 1e6*t1)
	}
	if b, t1 := runJSON(false, 2, 0); bytes.Equal(pfc, b) {
		t.Errorf("PFC only: fabric seed 2 gave the same run (%.3f us): the control does not discriminate", 1e6*t1)
	}
	dc, t0 := runJSON(true, 1, 0)
	if b, _ := runJSON(true, 1, 1); !bytes.Equal(dc, b) {
		t.Errorf("DCQCN: DrawSeed equal to the fabric seed differs from the default run")
	}
	if b, t1 := runJSON(true, 1, 99); bytes.Equal(dc, b) {
		t.Errorf("DCQCN: DrawSeed 99 gave the same run (%.3f us): the marks did not move", 1e6*t1)
	} else {
		t.Logf("DCQCN all-to-all: %.3f us with the fabric seed's draws, %.3f us with DrawSeed 99", 1e6*t0, 1e6*t1)
	}
}
