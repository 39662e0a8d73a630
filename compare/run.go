package compare

import (
	"fmt"
	"math"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fabricsim/fabricsim/analytic"
	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/flow"
	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/result"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/training"
	"github.com/fabricsim/fabricsim/units"
)

// Options adjust a run.
type Options struct {
	// Backend overrides the scenario's ("packet" or "analytic") when set.
	Backend string
	// Variants keeps only the named variants, in the scenario's order.
	Variants []string
	// Progress, when set, is called after each simulation job with jobs done and total.
	Progress func(done, total int)
	// Workers runs that many simulations at once; 0 means GOMAXPROCS.
	Workers int
	// Fidelity overrides the scenario's: auto, full or classes.
	Fidelity string
}

// Fidelity modes.
const (
	// FidelityAuto runs whole steps when they hold at most FullStepPackets packets, else classes.
	FidelityAuto = "auto"
	// FidelityFull runs every step as one message graph (CompileStep).
	FidelityFull = "full"
	// FidelityClasses runs each class of network collectives on its own (docs/compare.md).
	FidelityClasses = "classes"
)

// FullStepPackets is the most 4 KiB packets a step may send over the network for auto to run it
// whole: about 2 M packets, some 10-20 M events and a few seconds per variant and step.
const FullStepPackets = 1 << 21

// stepPackets is the number of MTU-sized packets a step sends over the network: each network
// collective's bytes on the wire (all-reduce 2(n-1) S in all, all-gather, reduce-scatter and
// all-to-all (n-1) S, send-recv S) over a 4 KiB MTU, an upper bound for hierarchical ones.
func (s *Scenario) stepPackets(p *training.Plan) float64 {
	var bytes float64
	for i := range p.Ops {
		o := &p.Ops[i]
		if o.Kind == training.Compute || s.intraServer(o) {
			continue
		}
		n := float64(len(o.Ranks))
		b := float64(o.Bytes) * float64(max(1, o.Repeat))
		switch o.Kind {
		case training.AllReduce:
			bytes += 2 * (n - 1) * b
		case training.SendRecv:
			bytes += b
		default:
			bytes += (n - 1) * b
		}
	}
	return bytes / 4096
}

// classRun is one packet- (or analytic-) level run of one class: each group's completion time
// and the fabric's counters.
type classRun struct {
	Dur      []units.Time
	Finish   []units.Time // every message's completion, for whole-step runs
	Counters map[string]float64
	Events   uint64
	Wall     float64
}

// Run simulates the scenario's training step on every variant and returns the comparison.
func Run(s *Scenario, opt Options) (*Result, error) {
	wall := time.Now()
	backend := s.Backend
	if opt.Backend != "" {
		backend = opt.Backend
	}
	if backend != "packet" && backend != "analytic" && backend != "flow" {
		return nil, fmt.Errorf("backend %q unknown (valid: packet, flow, analytic)", backend)
	}
	switch opt.Fidelity {
	case "", FidelityAuto, FidelityFull, FidelityClasses:
	default:
		return nil, fmt.Errorf("fidelity %q unknown (valid: auto, full, classes)", opt.Fidelity)
	}
	variants := s.Variants
	if len(opt.Variants) > 0 {
		byName := map[string]*Variant{}
		var names []string
		for _, v := range s.Variants {
			byName[v.Name] = v
			names = append(names, v.Name)
		}
		variants = nil
		for _, n := range opt.Variants {
			v, ok := byName[n]
			if !ok {
				return nil, &Error{File: s.File, Msg: fmt.Sprintf("--variants: %q is not a variant of this scenario (it has: %s)", n, strings.Join(names, ", "))}
			}
			variants = append(variants, v)
		}
	}
	cfg := *s.Workload
	plan, err := training.Build(&cfg)
	if err != nil {
		return nil, err
	}
	bomG, err := s.Topology()
	if err != nil {
		return nil, err
	}
	// Each variant's simulated cluster: NIC links at the rate its data path and framing allow.
	type net struct {
		g *topo.Graph
		r *topo.Routes
	}
	nets := map[units.Rate]net{}
	vnet := make([]net, len(variants))
	for i, v := range variants {
		rate := s.simRate(v.Fabric)
		n, ok := nets[rate]
		if !ok {
			g := bomG
			if rate != s.Cluster.LinkRate {
				if g, err = s.simTopology(rate); err != nil {
					return nil, err
				}
			}
			r, err := topo.ComputeRoutes(g)
			if err != nil {
				return nil, fmt.Errorf("cluster routes: %w", err)
			}
			n = net{g, r}
			nets[rate] = n
		}
		vnet[i] = n
	}
	cls, opClass, opGroup := s.classes(plan)
	mode := s.Fidelity
	if opt.Fidelity != "" {
		mode = opt.Fidelity
	}
	packets := s.stepPackets(plan)
	full := mode == FidelityFull || mode == FidelityAuto && packets <= FullStepPackets
	graphs := make([]*msggraph.Graph, len(cls))
	ranges := make([][][2]int, len(cls))
	var opDone []msggraph.ID
	if full {
		// The whole step as one graph, one run per variant and step.
		g, done, err := s.CompileStep(plan)
		if err != nil {
			return nil, err
		}
		graphs, ranges, opDone = []*msggraph.Graph{g}, [][][2]int{{{0, len(g.Msgs)}}}, done
	}
	for ci, c := range cls {
		if full {
			break
		}
		g := &msggraph.Graph{Endpoints: plan.GPUs}
		for gi, o := range c.example {
			from := len(g.Msgs)
			if _, err := s.compileOp(g, o, nil, fmt.Sprintf("%s g%d", c.Key, gi)); err != nil {
				return nil, fmt.Errorf("compiling %s: %w", c.Key, err)
			}
			ranges[ci] = append(ranges[ci], [2]int{from, len(g.Msgs)})
		}
		graphs[ci] = g
	}

	// Every (variant, step, class) is an independent simulation.
	type job struct{ v, k, c int }
	var jobs []job
	for v := range variants {
		for k := 0; k < s.Steps; k++ {
			for c := range graphs {
				jobs = append(jobs, job{v, k, c})
			}
		}
	}
	runs := make([][][]*classRun, len(variants))
	for v := range runs {
		runs[v] = make([][]*classRun, s.Steps)
		for k := range runs[v] {
			runs[v][k] = make([]*classRun, len(graphs))
		}
	}
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	var (
		mu       sync.Mutex
		firstErr error
		done     int
		wg       sync.WaitGroup
	)
	ch := make(chan job)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range ch {
				mu.Lock()
				stop := firstErr != nil
				mu.Unlock()
				var r *classRun
				var err error
				if !stop {
					v := variants[j.v]
					r, err = runClass(backend, vnet[j.v].g, vnet[j.v].r, v, s.Seed+uint64(j.k)*7919, graphs[j.c], ranges[j.c], full)
					if err != nil {
						what := "the whole step"
						if !full {
							what = cls[j.c].Key
						}
						err = fmt.Errorf("variant %s, step %d, %s: %w", v.Name, j.k+1, what, err)
					}
				}
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				runs[j.v][j.k][j.c] = r
				done++
				if opt.Progress != nil {
					opt.Progress(done, len(jobs))
				}
				mu.Unlock()
			}
		}()
	}
	for _, j := range jobs {
		ch <- j
	}
	close(ch)
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}

	res := &Result{Scenario: s, Backend: backend, Plan: summarizePlan(plan, s)}
	res.Fidelity = s.fidelity(backend, plan, cls, variants, full, packets)
	for vi, v := range variants {
		vr := &VariantResult{Variant: v}
		for k := 0; k < s.Steps; k++ {
			var in stepInput
			if full {
				in = s.fullInput(plan, opDone, runs[vi][k][0])
			} else {
				in = s.classInput(plan, cls, opClass, opGroup, runs[vi][k])
			}
			st := s.replay(plan, in, k == 0)
			vr.Steps = append(vr.Steps, st.StepResult)
			vr.collDurations = append(vr.collDurations, st.coll...)
			if k == 0 {
				vr.Timeline = st.timeline
			}
			for name, x := range st.counters {
				if vr.Counters == nil {
					vr.Counters = map[string]float64{}
				}
				if strings.Contains(name, "max_") {
					vr.Counters[name] = max(vr.Counters[name], x)
				} else {
					vr.Counters[name] += x / float64(s.Steps)
				}
			}
		}
		for k := range runs[vi] {
			for _, r := range runs[vi][k] {
				vr.Events += r.Events
				vr.SimWall += r.Wall
			}
		}
		vr.finish()
		res.Variants = append(res.Variants, vr)
	}
	if err := s.costs(res, bomG, plan); err != nil {
		return nil, err
	}
	res.verdicts()
	res.WallSeconds = time.Since(wall).Seconds()
	return res, nil
}

// runClass runs one class graph (or a whole step's) on the chosen backend and measures each
// group's completion; keep also returns every message's completion time.
func runClass(backend string, g *topo.Graph, routes *topo.Routes, v *Variant, seed uint64, mg *msggraph.Graph, ranges [][2]int, keep bool) (*classRun, error) {
	w := time.Now()
	out := &classRun{Dur: make([]units.Time, len(ranges)), Counters: map[string]float64{}}
	var finish func(i int) units.Time
	switch backend {
	case "packet", "flow":
		cfg := v.Fabric
		cfg.Seed = seed
		var res *result.Run
		var err error
		if backend == "flow" {
			res, err = flow.Run(g, routes, cfg, mg, flow.Options{})
		} else {
			net, nerr := fabric.New(g, routes, cfg)
			if nerr != nil {
				return nil, nerr
			}
			res, err = net.Run(mg, units.MaxTime)
		}
		if err != nil {
			return nil, err
		}
		finish = func(i int) units.Time { return res.Messages[i].Finish }
		addCounters(out.Counters, res)
		out.Events = res.Events
	default:
		res, err := analytic.Run(mg, analyticNet(g, v.Fabric))
		if err != nil {
			return nil, err
		}
		finish = func(i int) units.Time { return res.Finish[i] }
	}
	if keep {
		out.Finish = make([]units.Time, len(mg.Msgs))
		for i := range out.Finish {
			out.Finish[i] = finish(i)
		}
	}
	for gi, r := range ranges {
		var end units.Time
		for i := r[0]; i < r[1]; i++ {
			end = max(end, finish(i))
		}
		out.Dur[gi] = end
	}
	out.Wall = time.Since(w).Seconds()
	return out, nil
}

// analyticNet is the fluid stand-in of a fabric: every NIC at its link rate times the framing
// efficiency of a full packet, and the latency of a path through a leaf and a spine.
func analyticNet(g *topo.Graph, c fabric.Config) analytic.Network {
	rate := g.Links[g.Nodes[g.Hosts[0]].Ports[0].Link].Rate
	var lat units.Time
	for _, l := range g.Links {
		lat = max(lat, l.Latency)
	}
	eff := float64(c.MTU) / float64(int(c.MTU)+c.HeaderBytes+c.L1Overhead)
	return analytic.Uniform{Lat: 4*lat + 3*c.SwitchLatency, BW: units.Rate(float64(rate) * eff)}
}

func addCounters(m map[string]float64, r *result.Run) {
	for k, x := range r.Counters {
		m[k] += x
	}
	m["drops"] += float64(r.Drops)
	m["timeouts"] += float64(r.Timeouts)
	m["naks"] += float64(r.NAKs)
	m["bytes_retransmitted"] += float64(r.BytesRetransmitted)
}

type stepEval struct {
	StepResult
	coll     []float64
	counters map[string]float64
	timeline *Timeline
}

// stepInput is what a step's replay needs: each op's duration once it is ready, whether it is a
// network collective, the completion times of the step's network collectives, the fabric's
// counters for the step, and each network op's share of the pause, stall and mark counts (for
// the timeline).
type stepInput struct {
	dur      []units.Time
	network  []bool
	coll     []float64
	counters map[string]float64
	share    func(i int) (pause, stall, mark float64)
}

// classInput is a step's input from the class runs: compute from the step model, NVLink
// collectives from the ring formula, network collectives from their class's run (group by
// group), counters scaled from one collective per group to the step's count.
func (s *Scenario) classInput(p *training.Plan, cls []*class, opClass, opGroup []int, runs []*classRun) stepInput {
	in := stepInput{dur: make([]units.Time, len(p.Ops)), network: make([]bool, len(p.Ops)), counters: map[string]float64{}}
	for i := range p.Ops {
		o := &p.Ops[i]
		switch {
		case o.Kind == training.Compute:
			in.dur[i] = o.Duration
		case opClass[i] < 0:
			in.dur[i] = s.nvlinkTime(o) * units.Time(max(1, o.Repeat))
		default:
			in.network[i] = true
			one := runs[opClass[i]].Dur[opGroup[i]]
			in.dur[i] = one * units.Time(max(1, o.Repeat))
			for r := 0; r < max(1, o.Repeat); r++ {
				in.coll = append(in.coll, one.Seconds())
			}
		}
	}
	for ci, c := range cls {
		total := 0
		for _, x := range c.Instances {
			total += x
		}
		scale := float64(total) / float64(len(c.Groups))
		for k, x := range runs[ci].Counters {
			if strings.Contains(k, "max_") { // high-water marks (max_switch_buffer_bytes, ib_max_vl_buffer_bytes): not additive
				in.counters[k] = max(in.counters[k], x)
				continue
			}
			in.counters[k] += x * scale
		}
	}
	in.share = func(i int) (float64, float64, float64) {
		ci := opClass[i]
		c := runs[ci].Counters
		per := float64(max(1, p.Ops[i].Repeat)) / float64(len(cls[ci].Groups))
		return pickPauses(c) * per, pickStalls(c) * per, pickMarks(c) * per
	}
	return in
}

// fullInput is a step's input from a whole-step run (CompileStep): an op's duration is when its
// done node completed minus when the last op it depends on did, so the replay reproduces the
// run's completion times exactly; counters are the run's, shared among the network ops by
// duration x ranks for the timeline.
func (s *Scenario) fullInput(p *training.Plan, opDone []msggraph.ID, r *classRun) stepInput {
	in := stepInput{dur: make([]units.Time, len(p.Ops)), network: make([]bool, len(p.Ops)), counters: r.Counters}
	fin := make([]units.Time, len(p.Ops))
	var weight float64
	for i := range p.Ops {
		o := &p.Ops[i]
		fin[i] = r.Finish[opDone[i]]
		var ready units.Time
		for _, d := range o.Deps {
			ready = max(ready, fin[d])
		}
		in.dur[i] = max(0, fin[i]-ready)
		if o.Kind != training.Compute && !s.intraServer(o) {
			in.network[i] = true
			n := max(1, o.Repeat)
			for k := 0; k < n; k++ {
				in.coll = append(in.coll, in.dur[i].Seconds()/float64(n))
			}
			weight += in.dur[i].Seconds() * float64(len(o.Ranks))
		}
	}
	pause, stall, mark := pickPauses(r.Counters), pickStalls(r.Counters), pickMarks(r.Counters)
	in.share = func(i int) (float64, float64, float64) {
		if weight == 0 {
			return 0, 0, 0
		}
		w := in.dur[i].Seconds() * float64(len(p.Ops[i].Ranks)) / weight
		return pause * w, stall * w, mark * w
	}
	return in
}

// replay plays the plan's dependency graph with the input's durations. The step time is the
// longest path; walking it back splits the step into compute and exposed communication exactly.
func (s *Scenario) replay(p *training.Plan, in stepInput, timeline bool) stepEval {
	n := len(p.Ops)
	dur := in.dur
	fin := make([]units.Time, n)
	out := stepEval{counters: in.counters, coll: in.coll}
	out.Exposed = map[string]float64{}
	for i := range p.Ops {
		var start units.Time
		for _, d := range p.Ops[i].Deps {
			start = max(start, fin[d])
		}
		fin[i] = start + dur[i]
	}
	last := 0
	for i := range fin {
		if fin[i] > fin[last] {
			last = i
		}
	}
	out.StepTime = fin[last].Seconds()
	var compute units.Time
	exposed := map[string]units.Time{}
	for i := last; i >= 0; {
		o := &p.Ops[i]
		if o.Kind == training.Compute {
			compute += dur[i]
		} else {
			exposed[exposureKey(o, in.network[i])] += dur[i]
		}
		next := -1
		for _, d := range o.Deps {
			if next < 0 || fin[d] > fin[next] {
				next = d
			}
		}
		i = next
	}
	out.Compute = compute.Seconds()
	var ex units.Time
	for k, t := range exposed {
		out.Exposed[k] = t.Seconds()
		ex += t
	}
	out.ExposedComm = ex.Seconds()
	if timeline {
		out.timeline = s.timeline(p, in, fin, fin[last])
	}
	return out
}

func exposureKey(o *training.Op, network bool) string {
	where := "nvlink"
	if network {
		where = "network"
	}
	return o.Dim + " " + where
}

// Timeline is the step's fabric events over time: each network collective's share of its
// class's counters spread over the interval it ran in the step schedule.
type Timeline struct {
	BinSeconds float64   `json:"bin_s"`
	Pauses     []float64 `json:"pfc_pauses"`
	Stalls     []float64 `json:"credit_stall_s"`
	Marks      []float64 `json:"ecn_marks"`
	Network    []float64 `json:"network_busy"` // network collectives in flight (mean per bin)
}

const timelineBins = 120

func (s *Scenario) timeline(p *training.Plan, in stepInput, fin []units.Time, end units.Time) *Timeline {
	t := &Timeline{Pauses: make([]float64, timelineBins), Stalls: make([]float64, timelineBins),
		Marks: make([]float64, timelineBins), Network: make([]float64, timelineBins)}
	if end <= 0 {
		return t
	}
	bin := float64(end) / timelineBins
	t.BinSeconds = bin / float64(units.Second)
	for i := range p.Ops {
		if !in.network[i] || in.dur[i] <= 0 {
			continue
		}
		pause, stall, mark := in.share(i)
		a, b := float64(fin[i]-in.dur[i]), float64(fin[i])
		for k := int(a / bin); k < timelineBins && float64(k)*bin < b; k++ {
			lo, hi := math.Max(a, float64(k)*bin), math.Min(b, float64(k+1)*bin)
			if hi <= lo {
				continue
			}
			f := (hi - lo) / (b - a)
			t.Pauses[k] += pause * f
			t.Stalls[k] += stall * f
			t.Marks[k] += mark * f
			t.Network[k] += (hi - lo) / bin
		}
	}
	return t
}

// Counter names differ between fabrics; these pick the families a reader compares.
func sumMatching(c map[string]float64, want func(string) bool) float64 {
	var x float64
	for k, v := range c {
		if want(k) {
			x += v
		}
	}
	return x
}

// pickPauses is the PFC pause frames sent (pfc_pause_frames_sent and any other per-fabric
// "...pause_frames..." count; not pause durations).
func pickPauses(c map[string]float64) float64 {
	return sumMatching(c, func(k string) bool {
		return strings.Contains(k, "pause_frames") && !strings.Contains(k, ".")
	})
}

// pickStalls is the time InfiniBand senders spent blocked for lack of credits, summed over
// ports, in seconds (ib_credit_stall_ns; its per-VL breakdown is left out).
func pickStalls(c map[string]float64) float64 {
	return sumMatching(c, func(k string) bool {
		return strings.Contains(k, "credit_stall") && strings.HasSuffix(k, "_ns")
	}) * 1e-9
}

func pickMarks(c map[string]float64) float64 {
	return sumMatching(c, func(k string) bool {
		return strings.Contains(k, "ecn_mark") || strings.Contains(k, "fecn_mark")
	})
}

func quantiles(xs []float64) (p50, p99 float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	v := append([]float64(nil), xs...)
	sort.Float64s(v)
	return result.Percentile(v, 50), result.Percentile(v, 99)
}
