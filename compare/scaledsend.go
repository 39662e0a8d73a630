package compare

import (
	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/training"
	"github.com/fabricsim/fabricsim/units"
)

// groupExtrap is a group of a class that the flow backend runs reduced, and how its whole
// collective's completion follows from the reduced run: a ring prefix (ringprefix.go) or a
// scaled-down pipeline send (below).
type groupExtrap interface {
	// duration is the whole collective's completion from the run's message completions (r: the
	// group's messages in the class graph).
	duration(finish func(msggraph.ID) units.Time, r [2]int) units.Time
	// scale is the factor from the reduced run's counts (pauses, marks) to the whole one's.
	scale() float64
}

// compileExtrap compiles network op o reduced when the flow backend runs it so (a long flat
// ring as a prefix, a long pipeline send scaled down) and returns how to extrapolate it; nil
// (and nothing compiled) when o runs whole.
func (s *Scenario) compileExtrap(g *msggraph.Graph, o *training.Op, tag string) (groupExtrap, error) {
	if _, ok := s.prefixRing(o); ok {
		return s.compileRingPrefix(g, o, tag, prefixSteps)
	}
	if f := sendScale(o); f > 1 {
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

// minScaledSend is the smallest send (all-to-all buffer) a scaled-down run keeps: 16 MiB is
// 340 us at 400 Gb/s, past DCQCN's first recovery period.
const minScaledSend = 16 * units.MiB

// sendScale is the factor f a pipeline send's or all-to-all's bytes are divided by on the flow
// backend (1: run whole): the largest power of two leaving at least minScaledSend.
func sendScale(o *training.Op) int {
	if o.Kind != training.SendRecv && o.Kind != training.AllToAll {
		return 1
	}
	f := 1
	for o.Bytes/units.Size(2*f) >= minScaledSend {
		f *= 2
	}
	return f
}

// scaledSend is a group run with its bytes divided by the factor.
type scaledSend int

func (f scaledSend) duration(finish func(msggraph.ID) units.Time, r [2]int) units.Time {
	var end units.Time
	for i := r[0]; i < r[1]; i++ {
		end = max(end, finish(msggraph.ID(i)))
	}
	return end * units.Time(f)
}

func (f scaledSend) scale() float64 { return float64(f) }
