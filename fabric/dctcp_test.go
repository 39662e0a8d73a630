package fabric

import (
	"math"
	"testing"

	"github.com/fabricsim/fabricsim/units"
)

// DCTCP's headline ([DCTCP] §3.3, Fig. 13-14): on a 2:1 incast of long flows into one 100 Gb/s
// port with step marking at K, the queue oscillates just around K and the link stays busy. The
// paper's fluid analysis with N synchronised flows (windows growing one segment per RTT) gives
// the queue's peak Qmax = K + N segments and its swing A = (1/2) sqrt(2N (C x RTT + K)) segments
// (eqs. 8-10), so Qmin = Qmax - A stays above 0 (full throughput) when K > C x RTT / 7 (eq. 13).
// Checked from 1 ms on, sampled every microsecond: the queue's peak within two segments of
// K + N, its trough within two segments of Qmax - A, its trough above 0, the port's payload rate
// at >= 99 % of what 100 Gb/s carries in full frames, no pause and no drop.
func TestDCTCPIncastHeadline(t *testing.T) {
	const seg = 4096
	k := int64(20 * seg)
	cfg := DefaultRoCE()
	cfg.RoCE.DCQCN, cfg.RoCE.DCTCP = false, true
	cfg.RoCE.Kmin, cfg.RoCE.Kmax, cfg.RoCE.Pmax = units.Size(k), units.Size(k), 1
	until := 5 * units.Millisecond
	n, mg, s := twoToOne(t, cfg, 100*units.Gbps, units.Microsecond, until)
	n.sim.Schedule(0, s, 0, 0, nil)
	res, err := n.Run(mg, until)
	if err != nil {
		t.Fatal(err)
	}
	from := 1000
	qmin, qmax := int64(math.MaxInt64), int64(0)
	for _, q := range s.q[from:] {
		qmin, qmax = min(qmin, q), max(qmax, q)
	}
	frame := float64(seg + cfg.HeaderBytes + cfg.L1Overhead)
	bdp := float64((100 * units.Gbps).BytesIn(n.baseRTT())) / seg // C x RTT in segments
	const flows = 2
	wantMax := float64(k)/seg + flows
	wantMin := wantMax - 0.5*math.Sqrt(2*flows*(bdp+float64(k)/seg))
	r := s.rates(from, len(s.t)-1)
	util := (r[0] + r[1]) / (100e9 * seg / frame)
	t.Logf("C x RTT %.1f segments, K %d; queue %.1f..%.1f segments (fluid model %.1f..%.1f), utilisation %.4f, rates %.2f %.2f Gb/s, cuts %v",
		bdp, k/seg, float64(qmin)/frame, float64(qmax)/frame, wantMin, wantMax, util, r[0]/1e9, r[1]/1e9, res.Counters["dctcp_window_cuts"])
	if float64(k)/seg <= bdp/7 {
		t.Fatalf("K %d segments not above C x RTT / 7 = %.1f: the setting does not test full throughput", k/seg, bdp/7)
	}
	if q := float64(qmax) / frame; math.Abs(q-wantMax) > 2 {
		t.Errorf("queue peak %.1f segments, fluid model K + N = %.1f (tolerance 2)", q, wantMax)
	}
	if q := float64(qmin) / frame; math.Abs(q-wantMin) > 2 || qmin == 0 {
		t.Errorf("queue trough %.1f segments, fluid model Qmax - A = %.1f (tolerance 2, must stay above 0)", q, wantMin)
	}
	if util < 0.99 {
		t.Errorf("utilisation %.4f, want >= 0.99", util)
	}
	if res.Drops != 0 || res.Counters["pfc_pause_frames_sent"] != 0 || res.Counters["dctcp_window_cuts"] == 0 {
		t.Errorf("drops %d, pauses %v, cuts %v", res.Drops, res.Counters["pfc_pause_frames_sent"], res.Counters["dctcp_window_cuts"])
	}
}
