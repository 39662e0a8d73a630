package fabric

import (
	"math"
	"testing"

	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/units"
)

// The RS-FEC's uncorrected codeword probability against closed forms: with T = 0 the tail is
// everything but the all-correct codeword, 1 - (1 - ps)^N exactly; for small symbol error
// rates the tail is its first term, C(N, T+1) ps^(T+1) (1-ps)^(N-T-1), within the ratio of the
// second term to the first, (N-T-1)/(T+2) x ps/(1-ps) (0.03 % for KP4 at ber 1e-6).
func TestRSFECClosedForms(t *testing.T) {
	noCorrection := RSFEC{Name: "RS(10,8) t=0", N: 10, K: 8, T: 0, M: 10}
	for _, ber := range []float64{1e-6, 1e-4, 1e-2} {
		ps := noCorrection.SymbolError(ber)
		want := 1 - math.Pow(1-ps, 10)
		if got := noCorrection.CodewordFailure(ber); math.Abs(got-want) > 1e-9*want {
			t.Errorf("T=0, ber %g: %g, want 1-(1-ps)^N = %g", ber, got, want)
		}
	}
	for _, c := range []struct {
		fec RSFEC
		ber float64
	}{{FECKP4, 1e-6}, {FECKP4, 1e-5}, {FECKR4, 1e-6}} {
		f := c.fec
		ps := f.SymbolError(c.ber)
		lc, _ := math.Lgamma(float64(f.N + 1))
		a, _ := math.Lgamma(float64(f.T + 2))
		b, _ := math.Lgamma(float64(f.N - f.T))
		first := math.Exp(lc - a - b + float64(f.T+1)*math.Log(ps) + float64(f.N-f.T-1)*math.Log1p(-ps))
		bound := float64(f.N-f.T-1) / float64(f.T+2) * ps / (1 - ps) * 1.01
		got := f.CodewordFailure(c.ber)
		if got < first || got > first*(1+bound) {
			t.Errorf("%s, ber %g: %g, want the first term %g within %.2g", f.Name, c.ber, got, first, bound)
		}
		t.Logf("%s at ber %g: uncorrected codeword %.3g, a 4 KiB frame (%d codewords) %.3g; store latency at 400G %v",
			f.Name, c.ber, got, f.Codewords(4096+30), f.FrameError(c.ber, 4096+30), f.Latency(400*units.Gbps))
	}
	// A frame is lost if any of its codewords is: 1 - (1 - p)^codewords.
	p := FECKR4.CodewordFailure(2e-3)
	if got, want := FECKR4.FrameError(2e-3, 4126), 1-math.Pow(1-p, 7); math.Abs(got-want) > 1e-12 || FECKR4.Codewords(4126) != 7 {
		t.Errorf("frame error %g, want 1-(1-%g)^7 = %g (codewords %d)", got, p, want, FECKR4.Codewords(4126))
	}
}

// A degraded InfiniBand link with a pre-FEC bit error rate: without link-level retry, the
// frames its FEC leaves uncorrected are lost (drop cause corrupt) and the transport resends
// them; with LLR nothing is lost, and since the link delivers in order every failed try holds
// the frames behind it for one link round trip: each frame takes its serialization plus
// LLRDelay (LLRRate). One 8 MB flow over the degraded uplink (EDR, KR4, ber 7e-4) is bottlenecked
// there, so it finishes later than on the healthy link by its frames times LLRDelay, within 1 %.
func TestIBBitErrorsFECAndLLR(t *testing.T) {
	ib, err := DefaultInfiniBand("edr")
	if err != nil {
		t.Fatal(err)
	}
	g := leafSpine2(t)
	mg := &msggraph.Graph{Endpoints: 4}
	size := 8 * units.MB
	mg.Add(msggraph.Message{Src: 0, Dst: 2, Bytes: size})
	cfg := ib
	cfg.RTO = 50 * units.Microsecond
	healthy := newNet(t, g, cfg)
	run(t, healthy, mg)
	leaf0 := g.Nodes[g.Hosts[0]].Ports[0].Peer
	link := usedUplink(healthy, leaf0)
	a, b := healthy.linkPorts(link)
	up := a
	if b.Owner == leaf0 {
		up = b
	}
	const ber = 7e-4
	frame := FECKR4.FrameError(ber, int64(cfg.MTU)+int64(cfg.HeaderBytes))
	rtt := 2*up.delay + up.Rate.TransmitTime(cfg.MTU+units.Size(cfg.HeaderBytes))
	frames := (int64(size) + int64(cfg.MTU) - 1) / int64(cfg.MTU)
	want := units.Time(frames) * LLRDelay(frame, rtt)
	for _, llr := range []bool{false, true} {
		c := cfg
		c.Faults = FaultPlan{Faults: []Fault{{Kind: FaultLinkDegrade, Link: link, BER: ber, LLR: llr}}, Recovery: DefaultFaultRecovery()}
		n := newNet(t, g, c)
		run(t, n, mg)
		h, f := healthy.lastRun, n.lastRun
		extra := f.Messages[0].FCT() - h.Messages[0].FCT()
		t.Logf("llr %v: frame error %.3g, FCT %v -> %v (+%v), drops %v, LLR mean delay %v (rtt %v)", llr, frame, h.Messages[0].FCT(), f.Messages[0].FCT(), extra, f.DropsByCause, want, rtt)
		if f.BytesDelivered != int64(size) {
			t.Errorf("llr %v: delivered %d B of %d", llr, f.BytesDelivered, size)
		}
		if !llr {
			if f.DropsByCause["corrupt"] == 0 {
				t.Errorf("no frame lost to the uncorrected errors")
			}
			continue
		}
		if f.Drops != 0 {
			t.Errorf("llr: %d drops, want none (the link resends)", f.Drops)
		}
		if d := float64(extra-want) / float64(want); d < -0.01 || d > 0.01 {
			t.Errorf("llr: FCT +%v, want %d frames x the mean retry delay = %v within 1 %%", extra, frames, want)
		}
	}
}
