package flow

import (
	"math"
	"testing"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/units"
)

// TestJoinIntervals holds joinFill (Options.JoinIntervals) to the closed form of a join within
// a step. On a star with no flow control and a 1 GiB buffer, host 3 sends 2 MiB to host 1 from 0
// and host 0 sends 2 MiB to host 1 from 100 ns (host 1's downlink overflows: the flows are
// stepped from 100 ns) and 256 KiB to host 2 from 900 ns, in the middle of a 2 us step. Host 0's
// round robin sends the first message alone until the second joins, then both at half the line
// rate until the second is done: its FCT is the join's delay (joinDelay: half a packet time)
// plus its FCT alone plus its wire bytes at the line rate. The plain stepping at 2 us gives the
// second message half of the whole step it joined in, as if it had joined at the step's start,
// and finishes it 0.8 us early (held to more than 0.5 us, so that the case exercises the join);
// joinFill, at steps of 2 us and 250 ns, within 1 ns of the closed form. The first message's
// FCT, set by host 1's downlink, is the plain fine-step one within 1 ns.
func TestJoinIntervals(t *testing.T) {
	g, r := star(t, 4)
	mg := &msggraph.Graph{Endpoints: 4}
	mg.Add(msggraph.Message{Src: 0, Dst: 1, Bytes: 2 * units.MiB, Start: 100 * units.Nanosecond})
	mg.Add(msggraph.Message{Src: 0, Dst: 2, Bytes: 256 * units.KiB, Start: 900 * units.Nanosecond})
	mg.Add(msggraph.Message{Src: 3, Dst: 1, Bytes: 2 * units.MiB})
	cfg := fabric.DefaultRoCE()
	cfg.RoCE.DCQCN, cfg.RoCE.PFC, cfg.Buffer = false, false, units.GiB
	run := func(o Options) [2]float64 {
		fr, err := Run(g, r, cfg, mg, o)
		if err != nil {
			t.Fatal(err)
		}
		return [2]float64{fr.Messages[0].FCT().Seconds() * 1e6, fr.Messages[1].FCT().Seconds() * 1e6}
	}
	// The closed form of the second message: it joins the NIC one half packet time after it is
	// offered (joinDelay, one flow ahead in the round), then shares the line rate with the first
	// until its wire bytes are sent; its last byte then takes the path's latency (its FCT alone
	// less its bytes at the line rate).
	e, err := newEngine(g, r, cfg, mg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rate := float64(400*units.Gbps) / 8
	if nq, _ := e.qpSplit(&mg.Msgs[1]); nq != 1 {
		t.Fatalf("%d QPs: the closed form is for one", nq)
	}
	wireB := e.wireBytes(int64(mg.Msgs[1].Bytes))
	joinDelay := math.Round(0.5*e.ideal.maxWire/rate*1e12) / 1e12
	ref := run(Options{Step: 62_500, FixedStep: true})
	plain := run(Options{Step: 2 * units.Microsecond, FixedStep: true})
	pr := packetOn(t, g, r, cfg, mg)
	exact := (joinDelay + pr.Messages[1].IdealFCT.Seconds() + wireB/rate) * 1e6
	t.Logf("second message's closed form %.4f us", exact)
	t.Logf("FCT, us: plain at 62.5 ns %.4f / %.4f, plain at 2 us %.4f / %.4f, packet backend %.4f / %.4f", ref[0], ref[1], plain[0], plain[1],
		pr.Messages[0].FCT().Seconds()*1e6, pr.Messages[1].FCT().Seconds()*1e6)
	if plain[1] > exact-0.5 {
		t.Errorf("plain 2 us step: second message %.4f us, closed form %.4f us: the case does not exercise a join within the step", plain[1], exact)
	}
	for _, step := range []units.Time{2 * units.Microsecond, 250 * units.Nanosecond} {
		got := run(Options{Step: step, FixedStep: true, JoinIntervals: true})
		t.Logf("joinFill at %v: %.4f / %.4f us", step, got[0], got[1])
		if d := math.Abs(got[1] - exact); d > 1e-3 {
			t.Errorf("joinFill at %v: second message's FCT %.4f us, closed form %.4f us (%.4f us apart, at most 1 ns)", step, got[1], exact, d)
		}
		if d := math.Abs(got[0] - ref[0]); d > 1e-3 {
			t.Errorf("joinFill at %v: first message's FCT %.4f us, plain at 62.5 ns %.4f us (%.4f us apart, at most 1 ns)", step, got[0], ref[0], d)
		}
	}
}
