package compare

import (
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
// line-rate flows on one link queue 1 MiB in it, past any ECN threshold and PFC XOFF of the
// presets, so an oversubscribed link shows up in the probe.
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
// ms with three steps 12-22 % above it; the 16 MiB floor 1.180 ms and none).
func settledRun(r *classRun) bool {
	if r == nil || !r.NoDraws || pickStalls(r.Counters) != 0 {
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
