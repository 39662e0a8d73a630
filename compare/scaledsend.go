package compare

import (
	"cmp"
	"math"
	"slices"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/result"
	"github.com/fabricsim/fabricsim/training"
	"github.com/fabricsim/fabricsim/units"
)

// groupExtrap is a group of a class that the flow backend runs reduced, and how its whole
// collective's completion follows from the reduced run: a ring prefix (ringprefix.go) or a
// scaled-down pipeline send (below).
type groupExtrap interface {
	// duration is the whole collective's completion from the run's message completions (r: the
	// group's messages in the class graph; fixed: the part of a message's completion that does
	// not grow with its bytes, fixedLatency).
	duration(finish func(msggraph.ID) units.Time, r [2]int, fixed func(msggraph.ID) units.Time) units.Time
	// scale is the factor from the reduced run's counts (pauses, marks) to the whole one's.
	scale() float64
}

// compileExtrap compiles network op o reduced when the flow backend runs it so (a long flat
// ring as a prefix, a long pipeline send scaled down) and returns how to extrapolate it; nil
// (and nothing compiled) when o runs whole.
func (s *Scenario) compileExtrap(g *msggraph.Graph, o *training.Op, tag string, minSend units.Size) (groupExtrap, error) {
	if _, ok := s.prefixRing(o); ok {
		return s.compileRingPrefix(g, o, tag, prefixSteps)
	}
	if f := sendScale(o, minSend); f > 1 {
		so := *o
		so.Bytes = (o.Bytes + units.Size(f) - 1) / units.Size(f)
		if _, err := s.compileOp(g, &so, nil, tag, false); err != nil {
			return nil, err
		}
		return scaledSend(f), nil
	}
	return nil, nil
}

// Scaled-down sends: a pipeline send of S bytes between two GPUs is one message, one flow per
// QP, all of a class's sends starting together; an all-to-all is S/n to every peer at once. Once congestion control has settled (DCQCN
// cuts within tens of microseconds, ConnectX's recovery timer is 300 us), the flows' rates are
// those of a fluid network that does not depend on how much is left to send, so the completion
// grows in proportion to S: a send of S/f completes in T(S)/f, less the path's latency (a few
// microseconds against milliseconds) times (f-1)/f. The flow backend runs a class's sends at
// S/f, no smaller than minScaledSend, and multiplies (docs/flow.md, "Scaled-down sends";
// measured against the whole sends under TestScaledSendMatchesWhole).

// minScaledSend is the smallest send (all-to-all buffer) a scaled-down run keeps where its
// class engaged a control loop: 16 MiB is 340 us at 400 Gb/s, past DCQCN's first recovery
// period.
const minScaledSend = 16 * units.MiB

// probeScaledSend is the size a class's sends are first run at (the probe): where that run
// engages no control loop (settledRun) the rates are the fluid network's from the first
// microseconds and the completion is affine in the bytes (whole), so the probe stands for the
// whole send; else the class runs again at minScaledSend. 2 MiB is 42 us at 400 Gb/s: two
// line-rate flows on one link queue 1 MiB in it, past any ECN threshold of the presets, so an
// oversubscribed link shows up in the probe. Not always past PFC's XOFF: with the dynamic
// threshold (alpha x the free shared buffer) it is megabytes, so a probe without ECN can end with
// its queues still filling towards it (settledRun).
const probeScaledSend = 2 * units.MiB

// probesSends reports whether class groups' sends (ex, the example ops) run smaller at the
// probe's floor than at minScaledSend: only then is the probe run.
func probesSends(ex []groupExtrap, ops []*training.Op, probe units.Size) bool {
	for gi, x := range ex {
		if _, ok := x.(scaledSend); ok && sendScale(ops[gi], probe) > sendScale(ops[gi], minScaledSend) {
			return true
		}
	}
	return false
}

// probeSettles reports whether a probe run on fabric cfg can show that nothing settles: every
// control loop the variant has leaves a count when it acts (DCQCN's ECN marks, PFC's pauses,
// loss's drops). HPCC (utilization from INT), DCTCP, Swift and Timely (windows and delays), IB
// congestion control and a fault plan act without one, and such a variant's class runs at
// minScaledSend.
func probeSettles(cfg fabric.Config) bool {
	if len(cfg.Faults.Faults) > 0 {
		return false
	}
	switch cfg.Kind {
	case fabric.KindRoCE:
		r := &cfg.RoCE
		return !(r.HPCC || r.DCTCP || r.Swift || r.Timely)
	case fabric.KindInfiniBand:
		return !cfg.IB.CC.Enabled
	}
	return false
}

// settledRun reports whether a probe run engaged no control loop with a time of its own: no ECN
// mark (DCQCN's cuts, its 300 us rate-increase timer and alpha's EWMA: [DCQCN] §3,
// [ConnectX-DCQCN]), no PFC pause frame (pause and resume cycles), no drop (retransmission
// timers), no InfiniBand credit stall, no random draw. The rates are then set by the links' and
// NICs' sharing from the start, the same for any size. A credit stall is InfiniBand's
// back-pressure ([IBA] vol. 1 §7.9): a blocked VL holds the flows behind it, hop by hop, and how
// far that tree reaches grows with the bytes queued, so it is not size-free either (measured:
// examples/compare-jitter-moe-1024.yaml's ib-ndr over 45 steps, probe at 2 MiB median step 1.231
// ms with three steps 12-22 % above it; the 16 MiB floor 1.180 ms and none). And on Ethernet
// (kind: the fabric's) no byte held in a switch (result.Run.NoQueues): a queue means some link
// took in more than it sent, and where nothing acted on it in the probe it went on filling the
// shared buffer, towards PFC's XOFF or a tail drop, which the whole send reaches and the probe
// need not (measured: roce-pfc-only on the 512-GPU shape of TestScaledSendMatchesWhole over three
// seeds, the probes held 2.1 MB and never paused, the whole sends paused from 0.3-0.5 ms and
// their collective p99 was 28 % above the probe's; docs/flow.md, "Pauses that spread"). On
// InfiniBand a queue fills a VL's credits, kilobytes, and a full one is a credit stall, counted.
func settledRun(r *classRun, kind fabric.Kind) bool {
	if r == nil || !r.NoDraws || pickStalls(r.Counters) != 0 || kind != fabric.KindInfiniBand && !r.NoQueues {
		return false
	}
	for _, k := range []string{"ecn_marks", "pfc_pause_frames_sent", "drops", "cnps_sent"} {
		if r.Counters[k] != 0 {
			return false
		}
	}
	return true
}

// sendScale is the factor f a pipeline send's or all-to-all's bytes are divided by on the flow
// backend (1: run whole): the largest power of two leaving at least minSend (0: minScaledSend).
func sendScale(o *training.Op, minSend units.Size) int {
	if minSend <= 0 {
		minSend = minScaledSend
	}
	if o.Kind != training.SendRecv && o.Kind != training.AllToAll {
		return 1
	}
	f := 1
	for o.Bytes/units.Size(2*f) >= minSend {
		f *= 2
	}
	return f
}

// scaledSend is a group run with its bytes divided by the factor.
type scaledSend int

func (f scaledSend) duration(finish func(msggraph.ID) units.Time, r [2]int, fixed func(msggraph.ID) units.Time) units.Time {
	var end, lat units.Time
	for i := r[0]; i < r[1]; i++ {
		if t := finish(msggraph.ID(i)); t > end {
			end, lat = t, fixed(msggraph.ID(i))
		}
	}
	return f.whole(end, lat)
}

// whole is the whole send's completion from the scaled run's t, of which lat does not grow with
// the bytes: lat + f x (t - lat). The plain f x t counts the path's latency f times.
func (f scaledSend) whole(t, lat units.Time) units.Time {
	lat = min(max(lat, 0), t)
	return lat + units.Time(f)*(t-lat)
}

// fixedLatency is the part of message m's completion alone on an idle network that does not grow
// with its bytes: its ideal FCT (the flow backend's packet pipeline, result.Message.IdealFCT)
// less its bytes' serialization at bw, the path's payload rate (analyticNet); 0 where unknown.
func fixedLatency(m *result.Message, bw units.Rate) units.Time {
	if m.IdealFCT <= 0 || bw <= 0 {
		return 0
	}
	return max(0, m.IdealFCT-bw.TransmitTime(units.Size(m.Bytes)))
}

func (f scaledSend) scale() float64 { return float64(f) }

// Two sizes: where a class's sends engage a control loop, its run at S/f is short of the whole
// by a time that does not scale with f (measured at 2,048 GPUs: roce-default's collective p50
// -12.5, -6.8, -3.6 % at 16, 32, 64 MiB, about 0.15 ms x f; docs/flow.md, "Scaled-down sends").
// The model is that error's shape: a figure X estimated from the run at size s (the one-size
// rule, scaledSend.whole) is X(s) = X + c/s, c a time the scaled run gains or loses that does
// not shrink with its bytes (the congestion transient: DCQCN's first cuts, the recovery after the
// competitors finish), so that f x it is counted in X(s). Two runs at s1 < s2 remove it
// (Richardson): X = (s2 X(s2) - s1 X(s1)) / (s2 - s1), for s2 = 2 s1 2 X(s2) - X(s1).
//
// What is extrapolated: the class's message completions as one set, so that the collective
// percentiles, the step (each group's completion) and the message statistics come from the same
// times. Message by message the two runs scatter (a message's competitors differ from one size
// to the other) and the extrapolation multiplies the scatter by 2 s2 / (s2 - s1) + 1, 3 for a
// doubling (measured at 2,048 GPUs: p99 +9.5 %, p50 -6.8 % from 16 and 32 MiB); so the two runs'
// completions are paired by rank (the r-th shortest of one with the r-th shortest of the other,
// a quantile-to-quantile extrapolation: every percentile of the set is the extrapolation of the
// runs' percentiles) and the r-th extrapolated time goes to the message that was r-th in the
// larger run.

// twoSizeLo and twoSizeHi are the sizes (no less than) a congested class's sends run at, the
// default pair (Options.ScaledSendPair).
const (
	twoSizeLo = 8 * units.MiB
	twoSizeHi = 16 * units.MiB
)

// Pauses that spread: where a congested link's PFC pauses reach back hop by hop to the NICs, a
// NIC's every flow of the class is held to the paused one's rate (the victims of congestion
// spreading), from the time the pause reaches it: the time the switch buffers take to fill to
// XOFF (with the dynamic threshold, alpha x the free shared buffer: megabytes), at the rate the
// congested links' surplus fills them. That time does not shrink with the sends, so a run that
// ends before it sees no victims, and X(s) = X + c/s does not hold for the pair (measured on the
// 512-GPU shape of TestScaledSendMatchesWhole over three seeds: the buffers fill for 0.3-0.5 ms,
// the victims, sends sharing a NIC with a paused one, slow from about 1 ms, the 16 MiB run's
// end; whole they finish at 7.7-8.1 ms, the two sizes give them 5.6-6.3 ms, and the collective
// p99 over the three seeds, which falls among them, is 28 % short: docs/flow.md, "Pauses that
// spread"). The pair's paused time tells where the pauses began: paused for a time that grows
// in proportion to the bytes past an onset s0, the runs at s1 and s2 = k s1 pause P2 / P1 =
// (s2 - s0) / (s1 - s0), at most 2k - 1 (3 for a doubling) when the pauses began in the smaller
// run's first half. Where they began later the pair runs again at twice its sizes, until they
// did or the larger run is the whole send.

// pauseGrowthMax is the largest P2 / P1 (the pair's paused time, larger run over smaller) for a
// doubling, k = 2, that keeps the pair: 2k - 1 = 3, the pauses began in the smaller run's first
// half.
const pauseGrowthMax = 3

// pausesSpread reports whether the pair of runs lo and hi of a class, its sends at sz[0] and
// sz[1], paused (PFC) for a time that grew faster than pauseGrowthMax allows: the pauses began
// after the smaller run's first half, too late for the pair to stand for the whole send.
func pausesSpread(lo, hi *result.Run, sz [2]units.Size) bool {
	p1, p2 := lo.Counters["pfc_paused_time_ns"], hi.Counters["pfc_paused_time_ns"]
	if p2 <= 0 || sz[0] <= 0 {
		return false
	}
	k := float64(sz[1]) / float64(sz[0])
	return p2 > (2*k-1)*p1
}

// scaledAny reports whether some group of ex is a scaled send (run at less than its bytes).
func scaledAny(ex []groupExtrap) bool {
	for _, x := range ex {
		if f, ok := x.(scaledSend); ok && f > 1 {
			return true
		}
	}
	return false
}

// twoSizeByMessage pairs the two runs' messages by identity instead of rank (a diagnostic of
// TestScaledMeasure; docs/flow.md).
var twoSizeByMessage = false

// richardson is the whole send's figure from its one-size estimates x1 and x2 at S/f1 and S/f2
// (f1 > f2): (f1 x2 - f2 x1) / (f1 - f2), the sizes' (s2 x2 - s1 x1) / (s2 - s1).
func richardson(x1, x2 float64, f1, f2 int) float64 {
	return (float64(f1)*x2 - float64(f2)*x1) / float64(f1-f2)
}

// sendFactor is group gi's scale factor in ex (1: run whole); false where it is not a scaled
// send.
func sendFactor(ex []groupExtrap, gi int) (int, bool) {
	if gi >= len(ex) || ex[gi] == nil {
		return 1, true
	}
	f, ok := ex[gi].(scaledSend)
	return int(f), ok
}

// wholeFCTs is the one-size estimate of the whole send's completion time of each message idx of
// r, run at 1/f of its bytes (scaledSend.whole).
func wholeFCTs(r *result.Run, idx []int, f int, bw units.Rate) []units.Time {
	v := make([]units.Time, len(idx))
	for j, i := range idx {
		m := &r.Messages[i]
		v[j] = scaledSend(f).whole(m.FCT(), fixedLatency(m, bw))
	}
	return v
}

// rankOrder is the indices of x in the order of their values (stable: ties keep their order).
func rankOrder(x []units.Time) []int {
	order := make([]int, len(x))
	for j := range order {
		order[j] = j
	}
	slices.SortStableFunc(order, func(p, q int) int { return cmp.Compare(x[p], x[q]) })
	return order
}

// twoSizeRun is the whole sends' run from a class's runs lo and hi with its sends scaled by ex1
// and ex2 (the smaller sends in lo), groups rng in both, bw the payload rate of the messages'
// fixed latency (fixedLatency): the completions extrapolated by rank (richardson), each
// message's start, bytes and ideal FCT on the line through its two runs' (exact: they are affine
// in the bytes), the counters that compare reads (runClass) as richardson of their one-size
// estimates, at least 0. A completion short of the ideal FCT is taken at it. False where the
// runs do not pair up: other messages, a group scaled alike in both (its factor the same, above
// 1) or not a scaled send.
func twoSizeRun(lo, hi *result.Run, rng1, rng2 [][2]int, ex1, ex2 []groupExtrap, bw units.Rate) (*result.Run, bool) {
	if len(lo.Messages) != len(hi.Messages) || !slices.Equal(rng1, rng2) {
		return nil, false
	}
	out := *hi
	out.Messages = make([]result.Message, len(hi.Messages))
	// ranked: per pair of factors, the messages extrapolated by rank.
	ranked := map[[2]int][]int{}
	var pairs [][2]int
	F1, F2 := 1, 1
	for gi, r := range rng2 {
		f1, ok1 := sendFactor(ex1, gi)
		f2, ok2 := sendFactor(ex2, gi)
		if !ok1 || !ok2 || f1 < f2 || f1 == f2 && f1 > 1 {
			return nil, false
		}
		F1, F2 = max(F1, f1), max(F2, f2)
		k := [2]int{f1, f2}
		for i := r[0]; i < r[1]; i++ {
			a, b, m := &lo.Messages[i], &hi.Messages[i], &out.Messages[i]
			if a.Src != b.Src || a.Dst != b.Dst {
				return nil, false
			}
			*m = *b
			if f2 == 1 {
				continue
			}
			line := func(x1, x2 float64) float64 { return richardson(x1*float64(f1), x2*float64(f2), f1, f2) } // exact on a line through 0
			m.Bytes = int64(math.Round(line(float64(a.Bytes), float64(b.Bytes))))
			// start and ideal FCT: a + (b - a) (1 - 1/f1) / (1/f2 - 1/f1), affine in the bytes
			w := float64(f1-1) * float64(f2) / float64(f1-f2)
			m.Start = a.Start + units.Time(math.Round(w*float64(b.Start-a.Start)))
			m.IdealFCT = a.IdealFCT + units.Time(math.Round(w*float64(b.IdealFCT-a.IdealFCT)))
			if !a.Done() || !b.Done() || b.Bytes == 0 {
				m.Finish = 0
				if a.Done() && b.Done() { // a delay node: affine in the bytes too
					m.Finish = a.Finish + units.Time(math.Round(w*float64(b.Finish-a.Finish)))
				}
				continue
			}
			if twoSizeByMessage {
				x1 := scaledSend(f1).whole(a.FCT(), fixedLatency(a, bw))
				x2 := scaledSend(f2).whole(b.FCT(), fixedLatency(b, bw))
				m.Finish = m.Start + max(units.Time(math.Round(richardson(float64(x1), float64(x2), f1, f2))), m.IdealFCT)
				continue
			}
			if _, ok := ranked[k]; !ok {
				pairs = append(pairs, k)
			}
			ranked[k] = append(ranked[k], i)
		}
	}
	for _, k := range pairs {
		f1, f2 := k[0], k[1]
		idx := ranked[k]
		x1, x2 := wholeFCTs(lo, idx, f1, bw), wholeFCTs(hi, idx, f2, bw)
		order := rankOrder(x2) // the messages by their one-size estimate in hi
		slices.Sort(x1)
		for r, j := range order {
			m := &out.Messages[idx[j]]
			m.Finish = m.Start + max(units.Time(math.Round(richardson(float64(x1[r]), float64(x2[j]), f1, f2))), m.IdealFCT)
		}
	}
	line := func(x1, x2 float64) float64 { return max(0, richardson(x1*float64(F1), x2*float64(F2), F1, F2)) }
	if F2 == 1 {
		line = func(_, x2 float64) float64 { return x2 }
	}
	if hi.Counters != nil {
		out.Counters = make(map[string]float64, len(hi.Counters))
		for k, x := range hi.Counters {
			if result.AggregationOf(k) == result.Max {
				out.Counters[k] = x
			} else {
				out.Counters[k] = line(lo.Counters[k], x)
			}
		}
	}
	n := func(x1, x2 int64) int64 { return int64(math.Round(line(float64(x1), float64(x2)))) }
	out.Drops, out.Timeouts, out.NAKs = n(lo.Drops, hi.Drops), n(lo.Timeouts, hi.Timeouts), n(lo.NAKs, hi.NAKs)
	out.BytesRetransmitted = n(lo.BytesRetransmitted, hi.BytesRetransmitted)
	out.Events = lo.Events + hi.Events
	out.NoDraws, out.NoQueues = lo.NoDraws && hi.NoDraws, lo.NoQueues && hi.NoQueues
	return &out, true
}

// twoSizeShifted is the whole sends' run of a later network seed from its run hi at the larger
// size alone and the first seed's pair (lo0, hi0, and e0 = twoSizeRun(lo0, hi0)): each rank's
// estimate in hi moved by the first seed's two-size correction at that rank (richardson of the
// first seed's ranked estimates, less its larger run's), on the model that the transient c of
// X(s) = X + c/s is the class's, whatever the seed's routes; the messages' start, bytes and
// ideal FCT, and the counters, moved by the first seed's extrapolation of them (the counters at
// least 0). Options.SeedCorrection; an approximation (docs/flow.md). False where the runs do not
// pair up.
func twoSizeShifted(hi, lo0, hi0, e0 *result.Run, rng1, rng2 [][2]int, ex1, ex2 []groupExtrap, bw units.Rate) (*result.Run, bool) {
	n := len(hi.Messages)
	if len(lo0.Messages) != n || len(hi0.Messages) != n || len(e0.Messages) != n || !slices.Equal(rng1, rng2) {
		return nil, false
	}
	out := *hi
	out.Messages = make([]result.Message, n)
	ranked := map[[2]int][]int{}
	var pairs [][2]int
	F2 := 1
	for gi, r := range rng2 {
		f1, ok1 := sendFactor(ex1, gi)
		f2, ok2 := sendFactor(ex2, gi)
		if !ok1 || !ok2 || f1 < f2 || f1 == f2 && f1 > 1 {
			return nil, false
		}
		F2 = max(F2, f2)
		k := [2]int{f1, f2}
		for i := r[0]; i < r[1]; i++ {
			b, b0, x0, m := &hi.Messages[i], &hi0.Messages[i], &e0.Messages[i], &out.Messages[i]
			if b.Src != b0.Src || b.Dst != b0.Dst {
				return nil, false
			}
			*m = *b
			if f2 == 1 {
				continue
			}
			m.Bytes += x0.Bytes - b0.Bytes
			m.Start += x0.Start - b0.Start
			m.IdealFCT += x0.IdealFCT - b0.IdealFCT
			if !b.Done() || !b0.Done() || !x0.Done() || b.Bytes == 0 || !lo0.Messages[i].Done() {
				m.Finish = 0
				if b.Done() && x0.Done() && b0.Done() { // a delay node
					m.Finish = b.Finish + x0.Finish - b0.Finish
				}
				continue
			}
			if _, ok := ranked[k]; !ok {
				pairs = append(pairs, k)
			}
			ranked[k] = append(ranked[k], i)
		}
	}
	for _, k := range pairs {
		f1, f2 := k[0], k[1]
		idx := ranked[k]
		x1, x2, y := wholeFCTs(lo0, idx, f1, bw), wholeFCTs(hi0, idx, f2, bw), wholeFCTs(hi, idx, f2, bw)
		order := rankOrder(y) // the messages by their one-size estimate in hi
		slices.Sort(x1)
		slices.Sort(x2)
		for r, j := range order {
			m := &out.Messages[idx[j]]
			d := richardson(float64(x1[r]), float64(x2[r]), f1, f2) - float64(x2[r])
			m.Finish = m.Start + max(units.Time(math.Round(float64(y[j])+d)), m.IdealFCT)
		}
	}
	// A count: this seed's at the larger size, scaled to the whole (F2, as twoSizeRun's line),
	// moved by the first seed's extrapolation less its own scaled count.
	shift := func(x, x0, e float64) float64 { return max(0, float64(F2)*(x-x0)+e) }
	if hi.Counters != nil {
		out.Counters = make(map[string]float64, len(hi.Counters))
		for k, x := range hi.Counters {
			if result.AggregationOf(k) == result.Max {
				out.Counters[k] = x
			} else {
				out.Counters[k] = shift(x, hi0.Counters[k], e0.Counters[k])
			}
		}
	}
	n64 := func(x, x0, e int64) int64 { return int64(math.Round(shift(float64(x), float64(x0), float64(e)))) }
	out.Drops, out.Timeouts, out.NAKs = n64(hi.Drops, hi0.Drops, e0.Drops), n64(hi.Timeouts, hi0.Timeouts, e0.Timeouts), n64(hi.NAKs, hi0.NAKs, e0.NAKs)
	out.BytesRetransmitted = n64(hi.BytesRetransmitted, hi0.BytesRetransmitted, e0.BytesRetransmitted)
	out.NoDraws, out.NoQueues = hi.NoDraws && lo0.NoDraws, hi.NoQueues && lo0.NoQueues
	return &out, true
}
