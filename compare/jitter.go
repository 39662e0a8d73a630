package compare

import (
	"encoding/binary"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/fabricsim/fabricsim/backend"
	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/report"
	"github.com/fabricsim/fabricsim/result"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/training"
	"github.com/fabricsim/fabricsim/units"
)

// stepDistribution sets the step-time percentiles, jitter and coefficient of variation from
// the simulated steps (after finish has the mean and standard deviation).
func (v *VariantResult) stepDistribution() {
	xs := v.stepTimes()
	sort.Float64s(xs)
	v.StepP50, v.StepP99 = result.Percentile(xs, 50), result.Percentile(xs, 99)
	if v.StepP50 > 0 {
		v.StepJitter = (v.StepP99 - v.StepP50) / v.StepP50
	}
	if v.StepTime > 0 {
		v.StepCV = v.StepStdev / v.StepTime
	}
	ex := v.exposedTimes()
	sort.Float64s(ex)
	v.ExposedP50, v.ExposedP99 = result.Percentile(ex, 50), result.Percentile(ex, 99)
}

func (v *VariantResult) exposedTimes() []float64 {
	xs := make([]float64, len(v.Steps))
	for i, st := range v.Steps {
		xs[i] = st.ExposedComm
	}
	return xs
}

func (v *VariantResult) stepTimes() []float64 {
	xs := make([]float64, len(v.Steps))
	for i, st := range v.Steps {
		xs[i] = st.StepTime
	}
	return xs
}

// showJitter says whether the table prints the step-time distribution: with compute noise, or
// with enough steps for a 99th percentile that is not simply the slowest of a handful.
func (r *Result) showJitter() bool {
	return r.Scenario.Noise != nil || r.Scenario.Steps >= 10
}

// noiseSummary is the noise section in words, for the table and the report.
func (s *Scenario) noiseSummary() string {
	n := s.Noise
	var parts []string
	if n == nil || !s.computeNoise() {
		parts = append(parts, "no compute noise")
	} else {
		if n.Dist != "none" && n.CV > 0 {
			parts = append(parts, fmt.Sprintf("compute x %s (mean 1, cv %s) per GPU and step", n.Dist, report.Plain(n.CV)))
		}
		if n.Slow.Prob > 0 && n.Slow.Persistent {
			parts = append(parts, fmt.Sprintf("a GPU slow (x%s) for the whole run with probability %s", report.Plain(n.Slow.Slowdown), report.Plain(n.Slow.Prob)))
		} else if n.Slow.Prob > 0 {
			parts = append(parts, fmt.Sprintf("a GPU slow (x%s) with probability %s per step", report.Plain(n.Slow.Slowdown), report.Plain(n.Slow.Prob)))
		}
		if n.Host.Prob > 0 {
			parts = append(parts, fmt.Sprintf("host detours of %v on %s of compute ops", n.Host.Delay, report.Plain(n.Host.Prob)))
		}
	}
	ns := s.networkSeeds()
	if ns == s.Steps {
		parts = append(parts, "a network seed per step")
	} else {
		parts = append(parts, fmt.Sprintf("%d network seed(s), step k uses seed k mod %d", ns, ns))
	}
	if s.perStepNetwork() {
		parts = append(parts, "network runs per step (its own ECN draws; collectives start as its compute makes them ready)")
	}
	return strings.Join(parts, "; ")
}

// writeJitter prints the step-time distribution under the table.
func (r *Result) writeJitter(w io.Writer) error {
	if !r.showJitter() {
		return nil
	}
	fmt.Fprintf(w, "\n  step time over %d steps (%s):\n", r.Scenario.Steps, r.Scenario.noiseSummary())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "  variant\tstep p50\tstep p99\tjitter\tcv\tslow-GPU steps\texposed p50\texposed p99\t")
	for _, v := range r.Variants {
		if v.StepsFinished == 0 {
			continue
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%.2f%%\t%.2f%%\t%d\t%s\t%s\t\n", v.Variant.Name, seconds(v.StepP50), seconds(v.StepP99),
			100*v.StepJitter, 100*v.StepCV, v.SlowGPUSteps, seconds(v.ExposedP50), seconds(v.ExposedP99))
	}
	return tw.Flush()
}

// jitterSection is report.html's step-time distribution: a table, the CDF of step times and
// the step times in order.
func (r *Result) jitterSection() report.Section {
	t := &report.Table{Head: []string{"variant", "mean", "p50", "p99", "jitter (p99-p50)/p50", "cv", "slow-GPU steps", "exposed comm p50", "exposed comm p99"},
		RightAlign: []bool{false, true, true, true, true, true, true, true, true}}
	excdf := &report.Lines{Title: "Exposed communication per step (CDF): the network's part of the step", XLabel: "exposed communication", YLabel: "fraction of steps",
		XFormat: axisSeconds, YFormat: report.Plain, Step: true, YMin: 0, YMax: 1}
	cdf := &report.Lines{Title: "Step time (CDF over the simulated steps)", XLabel: "step time", YLabel: "fraction of steps",
		XFormat: axisSeconds, YFormat: report.Plain, Step: true, YMin: 0, YMax: 1}
	seq := &report.Lines{Title: "Step time, step by step", XLabel: "step", YLabel: "step time",
		XFormat: report.Plain, YFormat: axisSeconds}
	for _, v := range r.Variants {
		if v.StepsFinished == 0 {
			continue
		}
		t.Rows = append(t.Rows, []string{v.Variant.Name, seconds(v.StepTime), seconds(v.StepP50), seconds(v.StepP99),
			fmt.Sprintf("%.2f%%", 100*v.StepJitter), fmt.Sprintf("%.2f%%", 100*v.StepCV), fmt.Sprint(v.SlowGPUSteps),
			seconds(v.ExposedP50), seconds(v.ExposedP99)})
		ex := v.exposedTimes()
		sort.Float64s(ex)
		e := report.Series{Name: v.Variant.Name}
		for i, x := range ex {
			e.X = append(e.X, x)
			e.Y = append(e.Y, float64(i+1)/float64(len(ex)))
		}
		excdf.Series = append(excdf.Series, e)
		xs := v.stepTimes()
		s := report.Series{Name: v.Variant.Name}
		for i, x := range xs {
			s.X = append(s.X, float64(i+1))
			s.Y = append(s.Y, x)
		}
		seq.Series = append(seq.Series, s)
		sort.Float64s(xs)
		c := report.Series{Name: v.Variant.Name}
		for i, x := range xs {
			c.X = append(c.X, x)
			c.Y = append(c.Y, float64(i+1)/float64(len(xs)))
		}
		cdf.Series = append(cdf.Series, c)
	}
	text := []string{
		fmt.Sprintf("%d simulated steps: %s.", r.Scenario.Steps, r.Scenario.noiseSummary()),
		"p50 and p99 are nearest-rank percentiles of the step times; jitter is (p99 - p50) / p50, the tail a synchronous job pays over its median step; cv is the standard deviation over the mean. Each step is the longest path through the plan with that step's compute draws and network run (docs/jitter.md). Exposed communication is the part of each step's longest path spent in collectives: where it varies from step to step, the network adds jitter of its own.",
	}
	return report.Section{Title: "Step-time distribution", Text: text, Tables: []*report.Table{t}, Charts: []report.Chart{cdf, seq, excdf}}
}

// noiseNotes are the fidelity notes of compute noise and shared network runs.
func (s *Scenario) noiseNotes(full bool, runEvery bool, name backend.Name) []string {
	if s.Noise == nil {
		return nil
	}
	notes := []string{"Compute noise and network seeds: " + s.noiseSummary() + "."}
	if s.perStepNetwork() {
		draws := fmt.Sprintf("the %s backend's random draws (ECN marking) are the step's", name)
		if !drawSeeded(name) {
			draws = fmt.Sprintf("the %s backend makes no random draws (a run whose groups' start offsets repeat an earlier step's is that run)", name)
		}
		notes = append(notes, "network_per_step: every step's network was simulated on its own; the seed (ECMP hashes of the job's connections) follows network_seeds, "+draws+", and in class fidelity each group of a class started its collective at the time the step's compute draws made its middle instance ready (relative to the class's earliest group), after a first pass with the seed's runs.")
		return notes
	}
	if ns := s.networkSeeds(); ns < s.Steps {
		switch {
		case runEvery:
			notes = append(notes, "Every step's network was simulated, also where its seed repeats an earlier step's.")
		case full && s.computeNoise():
			notes = append(notes, "Whole steps: compute noise moves when each collective starts, so every step's network is simulated with its own compute draws.")
		default:
			notes = append(notes, fmt.Sprintf("The network runs do not depend on the compute draws here, so the %d runs of each seed serve every step with that seed, bit for bit as rerunning them would.", ns))
		}
	}
	return notes
}

// stepOffsets is, for every class and group, when the step reaches that group's collective,
// less the earliest group's: the starts of one step's collectives as its compute draws (in
// dur, with the network durations of the step's seed runs) make them ready. A group runs its
// class's collective several times a step (every layer, every micro-batch); its offset is its
// middle instance's, neither the first (the least spread: little compute has run) nor the last.
func stepOffsets(p *training.Plan, cls []*class, opClass, opGroup []int, dur []units.Time) [][]units.Time {
	start := make([]units.Time, len(p.Ops))
	fin := make([]units.Time, len(p.Ops))
	inst := make([][][]units.Time, len(cls)) // class, group: instance starts in plan order
	for ci, c := range cls {
		inst[ci] = make([][]units.Time, len(c.Groups))
	}
	for i := range p.Ops {
		for _, d := range p.Ops[i].Deps {
			start[i] = max(start[i], fin[d])
		}
		fin[i] = start[i] + dur[i]
		if c := opClass[i]; c >= 0 {
			inst[c][opGroup[i]] = append(inst[c][opGroup[i]], start[i])
		}
	}
	out := make([][]units.Time, len(cls))
	for ci := range cls {
		out[ci] = make([]units.Time, len(inst[ci]))
		first := units.MaxTime
		for gi, xs := range inst[ci] {
			out[ci][gi] = xs[len(xs)/2]
			first = min(first, out[ci][gi])
		}
		for gi := range out[ci] {
			out[ci][gi] -= first
		}
	}
	return out
}

// skewedClass is class graph g with each group's messages (ranges) held until the group's
// offset: the collectives of a class start as one step's compute lets them.
func skewedClass(g *msggraph.Graph, ranges [][2]int, off []units.Time) *msggraph.Graph {
	c := *g
	c.Msgs = append([]msggraph.Message(nil), g.Msgs...)
	for gi, r := range ranges {
		for i := r[0]; i < r[1]; i++ {
			c.Msgs[i].Start += off[gi]
		}
	}
	return &c
}

// drawFree says whether a flow or packet run of fabric cfg on graph g makes no random draw, so
// that its draw seed (Scenario.drawSeed) cannot change it. The flow backend draws for two
// things only: an ECN mark reaching DCQCN's notification point (RoCE with DCQCN, flow/dcqcn.go)
// and a loss (flow/loss.go: lossy classes, RoCE's random loss, a link with an error rate, a
// fault that drops); the packet engine likewise (fabric/ecn.go's RED on RoCE, fabric/port.go's
// error and random-loss draws). InfiniBand's credits are lossless and its congestion control
// marks without drawing, so a healthy InfiniBand fabric draws nothing (TestPerStepReuse: its
// steps, reused across draw seeds, equal running each).
func drawFree(cfg *fabric.Config, g *topo.Graph) bool {
	if cfg.Kind != fabric.KindInfiniBand || len(cfg.Faults.Faults) > 0 {
		return false
	}
	for i := range g.Links {
		if g.Links[i].ErrorRate > 0 {
			return false
		}
	}
	return true
}

// drawSeeded says whether backend name draws a run's random numbers from its draw seed apart
// from the routing seed. The flow backend does (flow.Options.DrawSeed) and so does the packet
// engine (fabric.Config.DrawSeed, through backend.PacketOptions.DrawSeed: its ECN marks, random
// losses, links' error draws), so each step of a routing seed draws its own marks and losses
// while its connections keep their ECMP paths (TestPerStepPacketDraws). The analytic backend
// draws nothing.
func drawSeeded(name backend.Name) bool { return name == backend.Flow || name == backend.Packet }

// runMemo finds a variant's per-step class runs (network_per_step) whose inputs repeat an
// earlier run's: the same class, routing seed and start offset of every group, and the same
// random draws, or draws that cannot matter (drawFree) or that the backend does not take from
// the draw seed (drawSeeded). The backends are deterministic, so a repeated input is the same
// simulation and the earlier run is the step's result byte for byte (TestPerStepReuse and
// TestPerStepPacketDraws compare with running every step). Offsets repeat where the steps'
// compute does not move the groups apart (no compute noise, a class of one group), draws on a
// draw-free fabric; with compute noise at cv > 0 they differ from step to step and every
// step's runs are simulated.
type runMemo struct {
	free bool // the variant's runs draw nothing
	seen map[string]runRef
	buf  []byte
}

// runRef names the run that serves an input: the seed run of network run k (seed), or the
// per-step run of step k.
type runRef struct {
	k    int
	seed bool
}

func newRunMemo(free bool) *runMemo { return &runMemo{free: free, seen: map[string]runRef{}} }

// key is the input of a run of class c with routing seed index si, draw seed draw and group
// offsets off (nil: all zero, as in the seed runs).
func (m *runMemo) key(c, si int, draw uint64, off []units.Time, groups int) string {
	if m.free {
		draw = 0
	}
	b := binary.AppendUvarint(m.buf[:0], uint64(c))
	b = binary.AppendUvarint(b, uint64(si))
	b = binary.AppendUvarint(b, draw)
	for gi := range groups {
		var o units.Time
		if off != nil {
			o = off[gi]
		}
		b = binary.AppendVarint(b, int64(o))
	}
	m.buf = b
	return string(b)
}

// lookup returns the run that already serves this input, or records ref as its run.
func (m *runMemo) lookup(key string, ref runRef) (runRef, bool) {
	if r, ok := m.seen[key]; ok {
		return r, true
	}
	m.seen[key] = ref
	return ref, false
}
