package compare

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fabricsim/fabricsim/analytic"
	"github.com/fabricsim/fabricsim/backend"
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
	// Backend overrides the scenario's when set.
	Backend backend.Name
	// AutoBudget is backend auto's budget of packet-backend time for the whole compare
	// (0: backend.DefaultAutoBudget; negative is an error).
	AutoBudget time.Duration
	// ClassBudget is backend auto's budget of packet-backend time for one run of one class, where
	// it runs the compare on the flow backend in class fidelity: a class within it runs on the
	// packet backend (auto.go, classPlan; 0: DefaultClassBudget; negative is an error).
	ClassBudget time.Duration
	// Variants keeps only the named variants, in the scenario's order.
	Variants []string
	// Progress, when set, is called with jobs done and total: once before the first
	// simulation starts (done 0) and after each one.
	Progress func(done, total int)
	// Workers runs that many simulations at once; 0 means GOMAXPROCS.
	Workers int
	// Fidelity overrides the scenario's when set.
	Fidelity FidelityMode
	// RunEveryStep simulates every step's network even where a repeated network seed would
	// repeat a run bit for bit (noise.network_seeds), and with noise.network_per_step every
	// step's own runs where their inputs repeat (runMemo): the plain version the reuse is tested
	// against.
	RunEveryStep bool
	// WholeCollectives runs every step of a long flat ring on the flow backend instead of its first
	// steps and their extrapolation (ringprefix.go): the plain version the prefixes are tested
	// against.
	WholeCollectives bool
	// ScaledSendFloor, when set, runs every pipeline send or all-to-all the flow backend scales
	// down at no less than this size, with no probe (scaledsend.go; minScaledSend, 16 MiB, is the
	// rule before the probe). 0: the probe at probeScaledSend, the class run again at
	// minScaledSend where the probe's run engaged a control loop.
	ScaledSendFloor units.Size
	// ScaledSendPair, when set, are the two sizes (the smaller first) a class's sends run at where
	// the probe's run engaged a control loop, the whole sends extrapolated from the two runs
	// message by message (scaledsend.go, twoSizeRun); zero: twoSizeLo and twoSizeHi.
	ScaledSendPair [2]units.Size
	// OneSizeScaledSends runs such a class again at minScaledSend alone and multiplies
	// (scaledSend.whole): the rule before the two sizes, the plain version they are tested
	// against.
	OneSizeScaledSends bool
	// NoPauseSpread keeps a congested class's pair of sizes where the larger run's PFC pauses
	// grew faster than the size (pausesSpread), instead of running it again at twice the sizes:
	// the rule before, the plain version the doubling is tested against.
	NoPauseSpread bool
	// WholeProbe runs a probe of scaled-down sends to its end where a control loop acted in it
	// (the run is then discarded) instead of stopping it there (flow.Options.StopOnControl): the
	// plain version that stopping is tested against.
	WholeProbe bool
	// NoForkSizes runs a congested class's two sizes one after the other on the flow backend,
	// instead of forking the smaller run from the larger one where they share their first
	// steps (forksizes.go; the same results): the plain version the fork is tested against.
	NoForkSizes bool
	// NoForkDoubled runs the larger size of a pair doubled where pauses spread (pausesSpread)
	// from its start, instead of forking it from the pair's larger run beside the smaller one
	// and finishing it where the pair is doubled (forksizes.go; the same results): the plain
	// version that is tested against.
	NoForkDoubled bool
	// SeedCorrection runs a congested class (one whose probe engaged a control loop) on the later
	// network seeds at the pair's larger size alone and takes the first seed's two-size
	// correction rank by rank (scaledsend.go, twoSizeShifted): an approximation, off by default
	// (docs/flow.md).
	SeedCorrection bool
	// EveryClass runs every class, also one whose simulation is an earlier class's (a ring
	// reduce-scatter and the all-gather of its size on the same groups, which send the same
	// messages and so give the same run): the plain version that sharing is tested against.
	EveryClass bool
	// FlowAgeOrder runs the flow backend with flow.Options.AgeOrder (a partly sent queue
	// segment served oldest first; docs/flow.md, "Where the step is not a resolution").
	FlowAgeOrder bool
	// FlowStep, FlowFixedStep and FlowCoarseCreditStep set the flow backend's base step
	// (flow.Options.Step; 0: its default), keep every step at it (flow.Options.FixedStep) and
	// keep it where InfiniBand credits bind (flow.Options.CoarseCreditStep): diagnostics of the
	// step's effect (docs/flow.md, "Where the step is not a resolution").
	FlowStep             units.Time
	FlowFixedStep        bool
	FlowCoarseCreditStep bool
	// FlowProportionalFIFO serves a partly sent queue segment in proportion to its entries
	// rather than in its bytes' arrival order within their step (flow.Options.ProportionalFIFO:
	// the plain FIFO, a diagnostic).
	FlowProportionalFIFO bool
	// sharedClasses is the shared run's class plan where this Run is a job's alone run
	// (jobResults): auto decides the classes as the shared run did (classPlan.follow).
	sharedClasses *classPlan
}

// flowOptions are the flow backend's options that Options sets.
func (o *Options) flowOptions() backend.FlowOptions {
	return backend.FlowOptions{Step: o.FlowStep, AgeOrder: o.FlowAgeOrder, FixedStep: o.FlowFixedStep, CoarseCreditStep: o.FlowCoarseCreditStep, ProportionalFIFO: o.FlowProportionalFIFO}
}

// FidelityMode says how a step's network collectives are simulated.
type FidelityMode string

// Fidelity modes.
const (
	// FidelityAuto runs whole steps when they hold at most FullStepPackets packets, else classes.
	FidelityAuto FidelityMode = "auto"
	// FidelityFull runs every step as one message graph (CompileStep).
	FidelityFull FidelityMode = "full"
	// FidelityClasses runs each class of network collectives on its own (docs/compare.md).
	FidelityClasses FidelityMode = "classes"
)

// ParseFidelity turns a user's fidelity (a flag, the scenario's key) into a FidelityMode, or
// says which are valid.
func ParseFidelity(s string) (FidelityMode, error) {
	switch m := FidelityMode(s); m {
	case FidelityAuto, FidelityFull, FidelityClasses:
		return m, nil
	}
	return "", fmt.Errorf("%q unknown (valid: auto, full, classes)", s)
}

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
	Bins     *fabric.Bins // the packet run's events per time bin (timeline.go); nil on analytic
	Events   uint64
	Wall     float64
	Omitted  []string  // what of the fabric the backend left out (result.Run.Omitted)
	Msgs     *msgStats // the network messages' completion times (fct.go)
	// NoDraws: the flow backend drew no random number (result.Run.NoDraws); with routes the same
	// up to renaming (flow.SameRoutes), another seed's run is this one.
	NoDraws bool
	// NoQueues: no switch buffer held a byte (result.Run.NoQueues): the links' sharing alone
	// decides whether another seed's routes give this run.
	NoQueues bool
}

// ErrInterrupted is returned, wrapped, with the partial Result of a run whose context was
// cancelled: the finished variants and steps are in it, the rest marked unfinished. Cancelled
// during the setup before the simulations, Run returns it with no Result.
var ErrInterrupted = errors.New("interrupted")

// setupCheckEvery is how many items (plan ops) the setup's long loops go between looks at the
// context: a look costs nanoseconds, 256 ops' compilation far more, and a 16,384-GPU step's
// million ops then see it thousands of times.
const setupCheckEvery = 256

// setupHook, when set (tests), is called after each setup stage with what the stage did.
var setupHook func(doing string)

// Run simulates the scenario's training step on every variant and returns the comparison.
// Cancelling ctx stops the simulations in flight (at the packet engine's next check) and
// starts no more; Run then returns what finished, with an error wrapping ErrInterrupted.
//
// Cancelling ctx during the setup before the simulations (the plan, the cluster graph, the
// message graphs, auto's estimates: seconds to minutes at 16,384 GPUs) stops Run at its next
// check (between stages, and every setupCheckEvery items of their long loops) with no Result and
// an error wrapping ErrInterrupted that says so: nothing ran, so there is nothing to report.
func Run(ctx context.Context, s *Scenario, opt Options) (*Result, error) {
	wall := time.Now()
	// setup is Run's check after a setup stage: its error where ctx was cancelled during it.
	setup := func(doing string) error {
		if setupHook != nil {
			setupHook(doing)
		}
		if ctx.Err() == nil {
			return nil
		}
		return fmt.Errorf("%w while %s, before any simulation", ErrInterrupted, doing)
	}
	if err := setup("starting"); err != nil {
		return nil, err
	}
	backendName := s.Backend
	if opt.Backend != "" {
		backendName = opt.Backend
	}
	if _, err := backend.Lookup(backendName); err != nil {
		return nil, fmt.Errorf("backend: %v", err)
	}
	if opt.AutoBudget < 0 {
		return nil, &Error{File: s.File, Msg: fmt.Sprintf("--auto-budget %v: want a positive duration (e.g. 60s, 5m)", opt.AutoBudget)}
	}
	if opt.ClassBudget < 0 {
		return nil, &Error{File: s.File, Msg: fmt.Sprintf("--class-budget %v: want a positive duration (e.g. 5s, 30s)", opt.ClassBudget)}
	}
	if opt.Fidelity != "" {
		if _, err := ParseFidelity(string(opt.Fidelity)); err != nil {
			return nil, fmt.Errorf("fidelity %v", err)
		}
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
	if err := s.faultSteps(); err != nil { // faults.go: --steps may have cut the steps
		return nil, err
	}
	if err := s.checkLIDs(variants); err != nil {
		return nil, err
	}
	plan, err := s.plan(ctx)
	if serr := setup("building the training plan"); serr != nil {
		return nil, serr
	}
	if err != nil {
		return nil, err
	}
	bomG, err := s.Topology()
	if err != nil {
		return nil, err
	}
	// Each variant's simulated cluster: NIC links at the rate its data path and framing allow;
	// routes are computed once per network, when a backend first needs them.
	nets := map[units.Rate]*backend.Network{}
	vnet := make([]*backend.Network, len(variants))
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
			n = backend.NewNetwork(g, nil)
			nets[rate] = n
		}
		vnet[i] = n
	}
	if err := setup("building the cluster graph"); err != nil {
		return nil, err
	}
	cls, opClass, opGroup := s.classesContext(ctx, plan)
	if err := setup("grouping the collectives into classes"); err != nil {
		return nil, err
	}
	mode := s.Fidelity
	if opt.Fidelity != "" {
		mode = opt.Fidelity
	}
	packets := s.stepPackets(plan)
	full := mode == FidelityFull || mode == FidelityAuto && (packets <= FullStepPackets || len(s.Jobs) > 0 || len(s.Faults) > 0)
	graphs := make([]*msggraph.Graph, len(cls))
	ranges := make([][][2]int, len(cls))
	var opDone []msggraph.ID
	folds := make([][]foldRange, len(cls)) // the analytic backend's folded rings (fct.go)
	if full {
		// The whole step as one graph, one run per variant and step.
		g, done, f, err := s.compileStep(ctx, plan, backendName == backend.Analytic)
		if serr := setup("compiling the step's message graph"); serr != nil {
			return nil, serr
		}
		if err != nil {
			return nil, err
		}
		graphs, ranges, opDone, folds = []*msggraph.Graph{g}, [][][2]int{{{0, len(g.Msgs)}}}, done, [][]foldRange{f}
	}
	// The flow backend runs long flat rings as prefixes (ringprefix.go) and long pipeline sends
	// scaled down (scaledsend.go), and extrapolates their groups' completions.
	extraps := make([][]groupExtrap, len(cls))
	// compileClass compiles class ci for the backend, its pipeline sends scaled down to no less
	// than floor (scaledsend.go).
	compileClass := func(ci int, backendName backend.Name, floor units.Size) (*msggraph.Graph, [][2]int, []groupExtrap, []foldRange, error) {
		usePrefix := backendName == backend.Flow && !opt.WholeCollectives
		c := cls[ci]
		var (
			rng [][2]int
			ex  []groupExtrap
			fo  []foldRange
		)
		g := &msggraph.Graph{Endpoints: plan.GPUs}
		var rep []int
		if backendName == backend.Analytic {
			rep = s.groupReps(c) // groups that share one run (compile.go)
		}
		for gi, o := range c.example {
			if rep != nil && rep[gi] != gi {
				rng = append(rng, rng[rep[gi]])
				continue
			}
			from := len(g.Msgs)
			if usePrefix {
				x, err := s.compileExtrap(g, o, fmt.Sprintf("%s g%d", c.Key, gi), floor)
				if err != nil {
					return nil, nil, nil, nil, fmt.Errorf("compiling %s: %w", c.Key, err)
				}
				if x != nil {
					if ex == nil {
						ex = make([]groupExtrap, len(c.example))
					}
					ex[gi] = x
					rng = append(rng, [2]int{from, len(g.Msgs)})
					continue
				}
			}
			if _, err := s.compileOp(g, o, nil, fmt.Sprintf("%s g%d", c.Key, gi), backendName == backend.Analytic); err != nil {
				return nil, nil, nil, nil, fmt.Errorf("compiling %s: %w", c.Key, err)
			}
			if backendName == backend.Analytic && s.foldsRing(o, s.collSpec(o)) {
				fo = append(fo, foldRange{from, len(g.Msgs), len(o.Ranks)})
			}
			rng = append(rng, [2]int{from, len(g.Msgs)})
		}
		return g, rng, ex, fo, nil
	}
	// The pipeline sends are first run scaled to the probe's floor (probeScaledSend) and run again
	// at minScaledSend where that run engaged a control loop (settledRun); Options.ScaledSendFloor
	// runs them at its floor alone.
	probeFloor, probed := opt.ScaledSendFloor, make([]bool, len(cls))
	if probeFloor <= 0 {
		probeFloor = probeScaledSend
	}
	// compileClasses compiles every class for the backend, but those keep says to keep as they are.
	compileClasses := func(backendName backend.Name, keep func(ci int) bool) error {
		for ci := range cls {
			if full || ctx.Err() != nil {
				break
			}
			if keep != nil && keep(ci) {
				continue
			}
			var err error
			graphs[ci], ranges[ci], extraps[ci], folds[ci], err = compileClass(ci, backendName, probeFloor)
			if err != nil {
				return err
			}
			probed[ci] = opt.ScaledSendFloor <= 0 && probesSends(extraps[ci], cls[ci].example, probeFloor)
		}
		return nil
	}
	// Where the probe engaged a control loop the class runs again with its sends at two sizes
	// (twoSizeRun), or at minScaledSend alone (Options.OneSizeScaledSends).
	pair := opt.ScaledSendPair
	if pair[0] <= 0 || pair[1] <= 0 {
		pair = [2]units.Size{twoSizeLo, twoSizeHi}
	}
	if pair[0] >= pair[1] {
		return nil, fmt.Errorf("scaled-send pair %v, %v: the first size must be the smaller", pair[0], pair[1])
	}
	// sizedClass is class ci compiled with its sends at no less than size (minScaledSend, the
	// pair, or the pair doubled where pauses spread: pausesSpread), compiled once when a run
	// first needs it.
	type floorRun struct {
		once sync.Once
		g    *msggraph.Graph
		rng  [][2]int
		ex   []groupExtrap
		err  error
	}
	var floorsMu sync.Mutex
	floors := make([]map[units.Size]*floorRun, len(cls))
	sizedClass := func(ci int, size units.Size) *floorRun {
		floorsMu.Lock()
		if floors[ci] == nil {
			floors[ci] = map[units.Size]*floorRun{}
		}
		f := floors[ci][size]
		if f == nil {
			f = &floorRun{}
			floors[ci][size] = f
		}
		floorsMu.Unlock()
		f.once.Do(func() { f.g, f.rng, f.ex, _, f.err = compileClass(ci, backend.Flow, size) })
		return f
	}
	if err := compileClasses(backendName, nil); err != nil {
		return nil, err
	}
	if err := setup("compiling the classes' message graphs"); err != nil {
		return nil, err
	}

	// Every (variant, network run, class) is an independent simulation. Step k runs with network
	// seed k mod nseeds; its runs are its own where they depend on its compute noise (whole
	// steps) or where asked, else those of the first step with its seed (noise.go).
	nseeds := s.networkSeeds()
	// noise.network_per_step in class fidelity: after the runs above, every step runs each class
	// again with its groups starting as the step's compute draws make them ready (jitter.go);
	// RunEveryStep then runs every step's own runs, the first pass stays the seeds'.
	skewSteps := !full && s.perStepNetwork() && backendName != backend.Analytic // analytic groups share runs
	perStep := full && (s.computeNoise() || s.perStepNetwork()) || opt.RunEveryStep && !skewSteps
	nruns := nseeds
	if perStep {
		nruns = s.Steps
	}
	runOf := func(k int) int { return k % nruns }

	choice, est, err := s.chooseBackend(ctx, backendName, opt.Backend != "", opt, variants, vnet, graphs, nruns)
	if serr := setup("estimating the packet backend's cost"); serr != nil {
		return nil, serr
	}
	if err != nil {
		return nil, err
	}
	// Auto on the flow backend in class fidelity: the classes within the class budget run on the
	// packet backend, as compiled for it above (classPlan); nil where every class runs on the
	// compare's backend.
	var perClass *classPlan
	if backendName == backend.Auto && choice.Backend == backend.Flow && !full {
		keys := make([]string, len(cls))
		for c := range cls {
			keys[c] = cls[c].Key
		}
		perClass = newClassPlan(est, keys, opt.ClassBudget)
		perClass.cls = cls
		if opt.sharedClasses != nil { // a job's alone run (jobs.go): the shared run's decisions
			perClass.follow(opt.sharedClasses)
		}
		if err := compileClasses(backend.Flow, func(ci int) bool { return perClass.packet[ci] }); err != nil { // the flow backend's reduced classes
			return nil, err
		}
		if err := setup("compiling the flow backend's classes"); err != nil {
			return nil, err
		}
	}
	backendName = choice.Backend
	backendOf := func(c int) backend.Name { return perClass.backendOf(c, backendName) }
	// A class whose simulation is another's (a ring reduce-scatter and the all-gather of the same
	// size on the same groups send the same messages) runs once: sameAs[c] is that earlier
	// class, or -1.
	sameAs := make([]int, len(graphs))
	for c := range graphs {
		sameAs[c] = -1
		for e := 0; e < c && !full && !opt.EveryClass; e++ {
			if sameAs[e] < 0 && backendOf(c) == backendOf(e) && sameClassRun(graphs[c], graphs[e], ranges[c], ranges[e]) && samePrefixes(extraps[c], extraps[e]) &&
				slices.Equal(folds[c], folds[e]) && slices.Equal(cls[c].Instances, cls[e].Instances) {
				sameAs[c] = e
				break
			}
		}
	}

	// A faulted step (faults.go) runs once more with its faults, with the seed and compute noise
	// of its clean run: the step's time, and the clean run's the time lost.
	var fplans *faultPlans
	faulted := make([]map[int]*classRun, len(variants))
	failedF := make([]map[int]string, len(variants)) // faulted steps whose QPs ran out of retries
	if len(s.Faults) > 0 {
		if fplans, err = s.resolveFaultPlans(vnet); err != nil {
			return nil, err
		}
		if err := setup("resolving the faults"); err != nil {
			return nil, err
		}
	}
	type job struct {
		v, k, c int
		fault   bool
		skew    bool // a step's own run of class c with its groups' start offsets (skewSteps)
		later   bool // a later seed's (reuseSeeds), run after seed 0's
	}
	// A class's run with another network seed is its run with an earlier seed where the flow
	// backend drew no random number and the seeds route the class's flows alike (flow.SameRoutes:
	// always on InfiniBand, whose forwarding tables ignore the seed; on ECMP where no switch
	// held a byte and the flows share links in the same pattern, as when they share none; a
	// congested class is not compared: its seeds rarely match, and the comparison costs a fifth
	// of an uncongested 16,384-GPU ring class's run): the runs go seed by seed, and
	// a later seed's is taken from an earlier one instead of run where that holds
	// (TestSeedReuseMatchesEverySeed). seedOf[v][c][k] is the earliest seed whose routes seed k's
	// are (nil: not computed, every seed runs).
	reuseSeeds := backendName == backend.Flow && !full && !opt.RunEveryStep && nruns > 1
	var seedOf [][][]int
	if reuseSeeds {
		seedOf = make([][][]int, len(variants))
		for v := range seedOf {
			seedOf[v] = make([][]int, len(graphs))
		}
	}
	netSeed := func(k int) uint64 { return s.Seed + uint64(k%nseeds)*7919 }
	// unsettled[v][c]: seed 0's probe of class c on variant v engaged a control loop
	// (scaledsend.go); the later seeds then run the class at minScaledSend without a probe.
	unsettled := make([][]bool, len(variants))
	for v := range unsettled {
		unsettled[v] = make([]bool, len(graphs))
	}
	// seedPairs[v][c]: seed 0's two sizes of class c on variant v where they paired up, for the
	// later seeds' correction (Options.SeedCorrection).
	type seedPair struct {
		lo, hi, e *result.Run
		sz        [2]units.Size // the pair's sizes (doubled where pauses spread)
	}
	seedPairs := make([][]*seedPair, len(variants))
	for v := range seedPairs {
		seedPairs[v] = make([]*seedPair, len(graphs))
	}
	var jobs []job
	var later [][]job // reuseSeeds: the jobs of seeds 1, 2 ..., run after seed 0's
	if reuseSeeds {
		later = make([][]job, nruns-1)
	}
	for v := range variants {
		faulted[v] = map[int]*classRun{}
		failedF[v] = map[int]string{}
		for k := 0; k < nruns; k++ {
			for c := range graphs {
				if sameAs[c] >= 0 {
					continue // filled in from its twin's run below
				}
				if k > 0 && reuseSeeds {
					later[k-1] = append(later[k-1], job{v: v, k: k, c: c, later: true})
					continue
				}
				jobs = append(jobs, job{v: v, k: k, c: c})
			}
		}
		if fplans != nil && full { // in class fidelity faulted steps run their classes below
			for k := range s.Steps {
				if _, ok := fplans.index[k]; ok {
					jobs = append(jobs, job{v: v, k: k, c: 0, fault: true})
				}
			}
		}
	}
	runs := make([][][]*classRun, len(variants))
	for v := range runs {
		runs[v] = make([][]*classRun, nruns)
		for k := range runs[v] {
			runs[v][k] = make([]*classRun, len(graphs))
		}
	}
	var skewed [][][]*classRun // per variant, step and class: the skewSteps runs
	var offsets [][][][]units.Time
	total := len(jobs)
	for _, js := range later {
		total += len(js)
	}
	if skewSteps {
		total += len(variants) * s.Steps * len(graphs)
		skewed = make([][][]*classRun, len(variants))
		offsets = make([][][][]units.Time, len(variants))
		for v := range skewed {
			skewed[v] = make([][]*classRun, s.Steps)
			offsets[v] = make([][][]units.Time, s.Steps)
			for k := range skewed[v] {
				skewed[v][k] = make([]*classRun, len(graphs))
			}
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
	)
	if opt.Progress != nil {
		opt.Progress(0, total)
	}
	runJobs := func(jobs []job) {
		var wg sync.WaitGroup
		ch := make(chan job)
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range ch {
					mu.Lock()
					stop := firstErr != nil || ctx.Err() != nil
					mu.Unlock()
					if stop {
						continue
					}
					v := variants[j.v]
					g := graphs[j.c]
					classBackend := backendOf(j.c) // the class's (classPlan), else the compare's
					if full {
						g = noisyStep(g, plan, opDone, s.drawNoise(plan, j.k))
					}
					var off []units.Time
					if j.skew {
						off = offsets[j.v][j.k][j.c]
						g = skewedClass(g, ranges[j.c], off)
					}
					cfg := v.Fabric
					var fidx []int
					if j.fault {
						cfg.Faults, fidx = fplans.planFor(vnet[j.v], j.k, &cfg)
					}
					var pre []groupExtrap
					if !full {
						pre = extraps[j.c]
					}
					mw := msgWeights{folds: folds[j.c]} // fct.go
					if pre != nil {
						mw.bw = payloadRate(vnet[j.v].Graph, cfg) // scaled sends' fixed latency (scaledsend.go)
					}
					if !full {
						mw.group = cls[j.c].Instances
					}
					rng := ranges[j.c]
					atSize := func(size units.Size) (*msggraph.Graph, [][2]int, []groupExtrap, error) { // the class with its sends at size
						if size == probeFloor {
							return g, rng, pre, nil
						}
						f := sizedClass(j.c, size)
						if f.err != nil {
							return nil, nil, nil, f.err
						}
						fg := f.g
						if off != nil {
							fg = skewedClass(fg, f.rng, off)
						}
						return fg, f.rng, f.ex, nil
					}
					// congested runs a class whose sends engaged a control loop at two sizes (or at
					// minScaledSend alone); probeRes is the probe's run, nil where none ran.
					congested := func(probeRes *result.Run) (*classRun, error) {
						w := time.Now()
						sz := pair
						if opt.OneSizeScaledSends {
							sz = [2]units.Size{0, minScaledSend}
						}
						var lo *result.Run
						var loGraph *msggraph.Graph // the smaller run's class, run with the larger (simulateSizes)
						var shared *seedPair
						var rngLo [][2]int
						var exLo []groupExtrap
						var out *classRun
						var hi, doubled *result.Run
						var dropped uint64 // the events of the smaller runs of pairs doubled
						// larger is the run at twice the pair's sizes, forked with the pair's and
						// finished where the pair is doubled (simulateSizes); nil where none.
						var larger func() (*result.Run, error)
					pairRuns: // again at twice the sizes while the pauses spread (pausesSpread)
						gh, rh, eh, err := atSize(sz[1])
						if err != nil {
							return nil, err
						}
						if sz[0] > 0 {
							gl, rl, el, err := atSize(sz[0])
							if err != nil {
								return nil, err
							}
							rngLo, exLo = rl, el
							// The smaller run only where the two pair up (twoSizeRun): not where the
							// size cuts a collective into other messages (an all-to-all's chunks).
							if len(gl.Msgs) == len(gh.Msgs) && slices.Equal(rl, rh) {
								mu.Lock()
								first := seedPairs[j.v][j.c]
								mu.Unlock()
								if opt.SeedCorrection && j.later && first != nil {
									if sz != first.sz {
										sz = first.sz // at the first seed's sizes
										goto pairRuns
									}
									shared = first // the first seed's correction (twoSizeShifted)
								} else if lo = probeRes; doubled != nil {
									lo = doubled // the pair before, its larger run
								} else if sz[0] != probeFloor || lo == nil {
									loGraph = gl
								}
							}
						}
						g, rng, pre = gh, rh, eh
						var loRun *result.Run
						if larger != nil && loGraph == nil { // the doubled pair's larger run, forked with the pair before
							out = &classRun{}
							hi, err = larger()
							larger = nil
						} else {
							// The pair's sizes doubled, where the pauses could spread: forked from
							// the pair's larger run, finished only where the pair is doubled.
							var dbl *msggraph.Graph
							if loGraph != nil && !opt.NoForkDoubled && !opt.NoPauseSpread && scaledAny(eh) {
								gd, rd, _, err := atSize(2 * sz[1])
								if err != nil {
									return nil, err
								}
								if len(gd.Msgs) == len(gh.Msgs) && slices.Equal(rd, rh) {
									dbl = gd
								}
							}
							out, hi, loRun, larger, err = simulateSizes(ctx, classBackend, vnet[j.v], cfg, netSeed(j.k), s.drawSeed(j.k), g, loGraph, dbl, opt.flowOptions(), opt.NoForkSizes)
						}
						if err != nil {
							return nil, err
						}
						if loGraph != nil {
							lo = loRun
						}
						if lo != nil && !opt.NoPauseSpread && pausesSpread(lo, hi, sz) && scaledAny(eh) {
							sz, lo, doubled, dropped = [2]units.Size{2 * sz[0], 2 * sz[1]}, nil, hi, dropped+lo.Events
							loGraph = nil
							goto pairRuns
						}
						larger = nil // not needed: the pair holds
						if shared != nil {
							res, ok := twoSizeShifted(hi, shared.lo, shared.hi, shared.e, rngLo, rng, exLo, pre, mw.bw)
							if ok {
								hi, pre = res, nil
							} else { // not the first seed's messages: this seed's own smaller run
								gl, _, _, err := atSize(sz[0])
								if err != nil {
									return nil, err
								}
								if _, lo, err = simulateClass(ctx, classBackend, vnet[j.v], cfg, netSeed(j.k), s.drawSeed(j.k), gl, opt.flowOptions()); err != nil {
									return nil, err
								}
							}
						}
						if lo != nil {
							if res, ok := twoSizeRun(lo, hi, rngLo, rng, exLo, pre, mw.bw); ok {
								if opt.SeedCorrection && j.k == 0 && !j.skew && !j.fault {
									mu.Lock()
									seedPairs[j.v][j.c] = &seedPair{lo: lo, hi: hi, e: res, sz: sz}
									mu.Unlock()
								}
								hi, pre = res, nil
							}
						}
						out.summarize(hi, rng, false, pre, mw)
						out.Events += dropped
						out.Wall = time.Since(w).Seconds()
						return out, nil
					}
					// The probe (scaledsend.go): skipped where the variant's loops leave no count,
					// and on later seeds where the first seed's probe did not settle.
					probe := !full && probed[j.c]
					var r *classRun
					var err error
					if probe && (!probeSettles(cfg) || j.later && unsettled[j.v][j.c]) {
						r, err = congested(nil)
					} else {
						w := time.Now()
						var res *result.Run
						fo := opt.flowOptions()
						// A probe that engages a control loop is discarded (unless it is the pair's
						// smaller run): it stops there (flow.Options.StopOnControl).
						fo.StopOnControl = probe && !opt.WholeProbe && (pair[0] != probeFloor || opt.OneSizeScaledSends)
						if r, res, err = simulateClass(ctx, classBackend, vnet[j.v], cfg, netSeed(j.k), s.drawSeed(j.k), g, fo); err == nil {
							if res.Stopped {
								probesStopped.Add(1)
							} else {
								r.summarize(res, rng, full, pre, mw)
							}
							r.Wall = time.Since(w).Seconds()
							if probe && (res.Stopped || !settledRun(r, cfg.Kind)) {
								if j.k == 0 && !j.skew && !j.fault {
									mu.Lock()
									unsettled[j.v][j.c] = true
									mu.Unlock()
								}
								r, err = congested(res)
							}
						}
					}
					if r != nil && off != nil {
						for gi := range r.Dur {
							r.Dur[gi] -= off[gi] // each group's time from its own start
						}
					}
					if err != nil && ctx.Err() != nil {
						continue // cut short by the interrupt: the job stays unfinished
					}
					var qe *fabric.QPRetryError
					if j.fault && errors.As(err, &qe) { // faults.go: the step failed, reported
						mu.Lock()
						failedF[j.v][j.k] = qe.Error()
						mu.Unlock()
						r, err = &classRun{}, nil
					}
					var same []int
					if err == nil && reuseSeeds && j.k == 0 && !j.skew && r.NoDraws && (r.NoQueues || cfg.Kind == fabric.KindInfiniBand) {
						seeds := make([]uint64, nruns)
						for k := range seeds {
							seeds[k] = netSeed(k)
						}
						same, err = sameRoutes(vnet[j.v], cfg, g, seeds, false)
					}
					if ferr := s.faultError(fidx, err); j.fault && ferr != nil {
						err = ferr // bad input: a fault after the step ended, at its line
					} else if err != nil {
						what := "the whole step"
						if !full {
							what = cls[j.c].Key
						}
						err = fmt.Errorf("variant %s, step %d, %s: %w", v.Name, j.k+1, what, err)
					}
					mu.Lock()
					if err != nil && firstErr == nil {
						firstErr = err
					}
					if j.fault {
						if r != nil {
							faulted[j.v][j.k] = r
						}
					} else if j.skew {
						skewed[j.v][j.k][j.c] = r
					} else {
						runs[j.v][j.k][j.c] = r
						if same != nil {
							seedOf[j.v][j.c] = same
						}
					}
					done++
					if opt.Progress != nil {
						opt.Progress(done, total)
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
	}
	runJobs(jobs)
	for _, js := range later {
		// Seed k's jobs: taken from an earlier seed's run where it stands for them, run otherwise.
		var torun []job
		mu.Lock()
		for _, j := range js {
			if same := seedOf[j.v][j.c]; same != nil && same[j.k] < j.k {
				if r := runs[j.v][same[j.k]][j.c]; r != nil && r.NoDraws {
					cp := *r
					cp.Wall = 0 // run once
					runs[j.v][j.k][j.c] = &cp
					total--
					continue
				}
			}
			torun = append(torun, j)
		}
		if opt.Progress != nil {
			opt.Progress(done, total)
		}
		mu.Unlock()
		runJobs(torun)
	}
	for v := range runs {
		for k := range runs[v] {
			for c, e := range sameAs {
				if e < 0 {
					continue
				}
				if r := runs[v][k][e]; r != nil {
					cp := *r
					cp.Wall = 0 // run once
					runs[v][k][c] = &cp
				}
			}
		}
	}
	if skewSteps && firstErr == nil && ctx.Err() == nil {
		jobs = jobs[:0]
		// A step's class run whose inputs repeat an earlier run's is that run (runMemo, jitter.go).
		type alias struct {
			v, k, c int
			from    runRef
		}
		var aliases []alias
		for v := range variants {
			memo := newRunMemo(!drawSeeded(backendName) || drawFree(&variants[v].Fabric, vnet[v].Graph))
			for k := range nruns {
				for c := range graphs {
					memo.lookup(memo.key(c, k%nseeds, s.drawSeed(k), nil, len(ranges[c])), runRef{k: k, seed: true})
				}
			}
			for k := range s.Steps {
				in := s.classInput(plan, cls, opClass, opGroup, runs[v][k%nruns], s.drawNoise(plan, k))
				offsets[v][k] = stepOffsets(plan, cls, opClass, opGroup, in.dur)
				for c := range graphs {
					if !opt.RunEveryStep {
						key := memo.key(c, k%nseeds, s.drawSeed(k), offsets[v][k][c], len(ranges[c]))
						if from, ok := memo.lookup(key, runRef{k: k}); ok {
							aliases = append(aliases, alias{v, k, c, from})
							continue
						}
					}
					if skewStepHook == nil || skewStepHook(k) {
						jobs = append(jobs, job{v: v, k: k, c: c, skew: true})
					}
				}
			}
		}
		// Step by step across the variants, so that an interrupted run has as many steps of each.
		slices.SortStableFunc(jobs, func(a, b job) int { return a.k - b.k })
		mu.Lock()
		total -= len(aliases)
		if opt.Progress != nil && len(aliases) > 0 {
			opt.Progress(done, total)
		}
		mu.Unlock()
		runJobs(jobs)
		for _, a := range aliases {
			if a.from.seed {
				skewed[a.v][a.k][a.c] = runs[a.v][a.from.k][a.c]
			} else {
				skewed[a.v][a.k][a.c] = skewed[a.v][a.from.k][a.c]
			}
		}
	}
	if firstErr != nil {
		return nil, firstErr
	}

	res := &Result{Scenario: s, Backend: backendName, Plan: summarizePlan(plan, s), Interrupted: done < total}
	res.Fidelity = s.fidelity(backendName, plan, cls, variants, full, packets)
	res.Fidelity.Notes = append(res.Fidelity.Notes, s.noiseNotes(full, opt.RunEveryStep, backendName)...)
	if perClass != nil {
		perClass.annotate(&res.Fidelity)
		res.classPlan = perClass
	}
	for vi, v := range variants {
		vr := &VariantResult{Variant: v, Backend: choice.Backend, BackendReason: choice.Reason}
		if perClass != nil {
			vr.ClassBackends, vr.ClassBackendReason = perClass.counts(), perClass.reason()
		}
		var finished []int // steps whose simulations all finished (all of them unless interrupted)
		for k := 0; k < s.Steps; k++ {
			_, needF := fplans.step(k)
			needF = needF && full
			if !slices.Contains(runs[vi][runOf(k)], nil) && (!needF || faulted[vi][k] != nil) && (!skewSteps || !slices.Contains(skewed[vi][k], nil)) {
				finished = append(finished, k)
			}
		}
		vr.StepsFinished = len(finished)
		vr.Unfinished = len(finished) < s.Steps
		cleanT, faultedT := map[int]float64{}, map[int]float64{}
		msgs := &msgStats{}
		for _, k := range finished {
			var in stepInput
			nz := s.drawNoise(plan, k) // nil without compute noise
			if nz != nil && nz.slow > 0 {
				vr.SlowGPUSteps++
			}
			if _, ok := fplans.step(k); ok && !full {
				clean := runs[vi][runOf(k)]
				if skewSteps {
					clean = skewed[vi][k]
				}
				cleanIn := s.classInput(plan, cls, opClass, opGroup, clean, nz)
				fin, err := s.classFaultStep(ctx, backendOf, plan, cls, opClass, opGroup, fplans, vnet[vi], v, k, nseeds, cleanIn, vr)
				var qe *fabric.QPRetryError
				if errors.As(err, &qe) {
					failedF[vi][k], fin, err = qe.Error(), cleanIn, nil
				}
				if err != nil {
					if ctx.Err() != nil {
						res.Interrupted = true
						break
					}
					return nil, err
				}
				cleanT[k] = s.replay(plan, cleanIn, false).StepTime
				if failedF[vi][k] == "" {
					faultedT[k] = s.replay(plan, fin, false).StepTime
				}
				in = fin
			} else if failedF[vi][k] != "" {
				in = s.fullInput(plan, opDone, runs[vi][runOf(k)][0]) // the step failed: shown clean
			} else if fr := faulted[vi][k]; fr != nil {
				faultedT[k] = s.replay(plan, s.fullInput(plan, opDone, fr), false).StepTime
				cleanT[k] = s.replay(plan, s.fullInput(plan, opDone, runs[vi][runOf(k)][0]), false).StepTime
				in = s.fullInput(plan, opDone, fr) // the step as it ran, with its faults
			} else if full {
				in = s.fullInput(plan, opDone, runs[vi][runOf(k)][0]) // the run had the noise
			} else if skewSteps {
				in = s.classInput(plan, cls, opClass, opGroup, skewed[vi][k], nz) // the step's own runs
			} else {
				in = s.classInput(plan, cls, opClass, opGroup, runs[vi][runOf(k)], nz)
			}
			// The runs the step's figures come from; a failed step's stand-in (faults.go) has no
			// messages, so its clean runs count.
			stepRuns := runs[vi][runOf(k)]
			if fr := faulted[vi][k]; fr != nil && failedF[vi][k] == "" {
				stepRuns = []*classRun{fr}
			} else if skewSteps && !full {
				stepRuns = skewed[vi][k]
			}
			for _, r := range stepRuns {
				msgs.fct.merge(&r.Msgs.fct, 1)
				msgs.slow.merge(&r.Msgs.slow, 1)
			}
			first := k == finished[0]
			st := s.replay(plan, in, first)
			vr.Steps = append(vr.Steps, st.StepResult)
			vr.collDurations = append(vr.collDurations, st.coll...)
			if first {
				vr.Timeline = st.timeline
			}
			for name, x := range st.counters {
				if vr.Counters == nil {
					vr.Counters = map[string]float64{}
				}
				if result.AggregationOf(name) == result.Max {
					vr.Counters[name] = max(vr.Counters[name], x)
				} else {
					vr.Counters[name] += x / float64(len(finished))
				}
			}
		}
		if len(s.Faults) > 0 {
			vr.Faults = s.faultLosses(&v.Fabric, cleanT, faultedT, failedF[vi])
		}
		for _, r := range faulted[vi] {
			vr.Events += r.Events
			vr.SimWall += r.Wall
		}
		all := runs[vi]
		if skewSteps {
			all = append(slices.Clone(all), skewed[vi]...)
		}
		timed := map[*classRun]bool{} // a reused run (runMemo) took its host time once
		for k := range all {
			for _, r := range all[k] {
				if r != nil {
					vr.Events += r.Events
					if !timed[r] {
						timed[r] = true
						vr.SimWall += r.Wall
					}
					if vr.Omitted == nil {
						vr.Omitted = r.Omitted
					}
				}
			}
		}
		if backendName == backend.Analytic && railSpansLeaves(vnet[vi].Graph) {
			vr.Omitted = append(slices.Clone(vr.Omitted), "contention on leaf uplinks and spines (one uniform network)")
		}
		vr.Messages = msgs.summary(len(finished))
		vr.finish()
		res.Variants = append(res.Variants, vr)
	}
	aloneErr := s.jobResults(ctx, res, opt) // jobs.go: each job alone
	if aloneErr != nil && !errors.Is(aloneErr, ErrInterrupted) {
		return nil, aloneErr
	}
	if err := s.costs(res, bomG, plan); err != nil {
		return nil, err
	}
	res.verdicts()
	res.WallSeconds = time.Since(wall).Seconds()
	if aloneErr != nil {
		return res, aloneErr
	}
	if res.Interrupted {
		return res, fmt.Errorf("%w: %d of %d simulations finished", ErrInterrupted, done, total)
	}
	return res, nil
}

// runClass runs one class graph (or a whole step's) on the chosen backend and measures each
// group's completion; keep also returns every message's completion time. drawSeed, when not 0,
// seeds the flow and packet backends' random draws apart from the routing seed
// (noise.network_per_step; flow.Options.DrawSeed, fabric.Config.DrawSeed).
//
// A group run reduced (pre[group] != nil, the flow backend: a ring prefix, a scaled-down send)
// has its whole completion extrapolated, and the run's counters are scaled to the whole
// collectives' (by the largest factor of the class's groups).
//
// mw weighs the messages in the run's message statistics (fct.go).
// fo are the flow backend's options (Options.flowOptions; its DrawSeed is drawSeed).
func runClass(ctx context.Context, name backend.Name, net *backend.Network, cfg fabric.Config, seed, drawSeed uint64, mg *msggraph.Graph, ranges [][2]int, keep bool, pre []groupExtrap, mw msgWeights, fo backend.FlowOptions) (*classRun, error) {
	w := time.Now()
	out, res, err := simulateClass(ctx, name, net, cfg, seed, drawSeed, mg, fo)
	if err != nil {
		return nil, err
	}
	out.summarize(res, ranges, keep, pre, mw)
	out.Wall = time.Since(w).Seconds()
	return out, nil
}

// simulateClass runs one class graph (or a whole step's) on the chosen backend: the run, and a
// classRun with the packet backend's event bins (runClass).
func simulateClass(ctx context.Context, name backend.Name, net *backend.Network, cfg fabric.Config, seed, drawSeed uint64, mg *msggraph.Graph, fo backend.FlowOptions) (*classRun, *result.Run, error) {
	out := &classRun{}
	fo.DrawSeed = drawSeed
	job := &backend.Job{Work: mg, Net: net, Fabric: cfg, Seed: seed, Flow: fo,
		Analytic: backend.AnalyticOptions{Network: analyticNet(net.Graph, cfg)}}
	if name == backend.Packet {
		job.Packet.DrawSeed = drawSeed
		job.Packet.Instrument = func(n *fabric.Network) (func() error, error) {
			out.Bins = n.EnableBins(units.Nanosecond) // coarsened to at most fabric.MaxBins as the run goes
			return nil, nil
		}
	}
	res, err := backend.Run(ctx, name, job)
	if err != nil {
		return nil, nil, err
	}
	if classRunHook != nil {
		classRunHook(name, job, res)
	}
	return out, res, nil
}

// classRunHook, when set (by a test, before Run), sees every class run's job and result as it
// finishes, on the goroutine that ran it: the jitter draws' diagnostic (TestEPClassDraws) takes a
// class's job from it to rerun it under other draw seeds. Nil in every other use.
var classRunHook func(name backend.Name, job *backend.Job, res *result.Run)

// skewStepHook, when set (by a test, before Run), keeps only the steps it returns true for among
// a network_per_step compare's own step runs (the others stay unfinished): the slow steps'
// diagnostic (TestSlowStepClasses) reruns steps of a 200-step scenario without the rest. Nil in
// every other use.
var skewStepHook func(k int) bool

// summarize fills out from run res of a class graph whose groups are ranges (runClass).
func (out *classRun) summarize(res *result.Run, ranges [][2]int, keep bool, pre []groupExtrap, mw msgWeights) {
	out.Dur, out.Counters = make([]units.Time, len(ranges)), map[string]float64{}
	finish := func(i int) units.Time { return res.Messages[i].Finish }
	if res.Counters != nil {
		addCounters(out.Counters, res)
	}
	scale := 1.0
	for _, rp := range pre {
		if rp != nil {
			scale = max(scale, rp.scale())
		}
	}
	if scale != 1 {
		for k, x := range out.Counters {
			if result.AggregationOf(k) != result.Max {
				out.Counters[k] = x * scale
			}
		}
	}
	out.Events, out.Omitted, out.NoDraws, out.NoQueues = res.Events, res.Omitted, res.NoDraws, res.NoQueues
	out.Msgs = messageStats(res.Messages, ranges, pre, mw)
	if keep {
		out.Finish = make([]units.Time, len(res.Messages))
		for i := range out.Finish {
			out.Finish[i] = finish(i)
		}
	}
	fixed := func(id msggraph.ID) units.Time { return fixedLatency(&res.Messages[id], mw.bw) }
	for gi, r := range ranges {
		if gi < len(pre) && pre[gi] != nil {
			out.Dur[gi] = pre[gi].duration(func(id msggraph.ID) units.Time { return finish(int(id)) }, r, fixed)
			continue
		}
		var end units.Time
		for i := r[0]; i < r[1]; i++ {
			end = max(end, finish(i))
		}
		out.Dur[gi] = end
	}
}

// sameRoutes is flow.SameRoutes for graph mg on network net with fabric cfg, routed as the flow
// backend routes it (backend/flow.go: the network's routes, the subnet manager's tables on
// InfiniBand).
func sameRoutes(net *backend.Network, cfg fabric.Config, mg *msggraph.Graph, seeds []uint64, switches bool) ([]int, error) {
	var nh flow.NextHopper
	if cfg.Kind != fabric.KindInfiniBand {
		r, err := net.Routes()
		if err != nil {
			return nil, err
		}
		nh = r
	}
	return flow.SameRoutes(net.Graph, nh, cfg, mg, seeds, switches)
}

// railSpansLeaves says whether the NICs of some rail sit on more than one leaf, so that traffic
// between them crosses leaf uplinks and spines: where the analytic stand-in (analyticNet), one
// uniform network, sees no contention at all.
func railSpansLeaves(g *topo.Graph) bool {
	leaf := map[int32]topo.NodeID{}
	for _, h := range g.Hosts {
		n := &g.Nodes[h]
		if len(n.Ports) == 0 {
			continue
		}
		l := n.Ports[0].Peer
		if first, ok := leaf[n.Rail]; !ok {
			leaf[n.Rail] = l
		} else if first != l {
			return true
		}
	}
	return false
}

// analyticNet is the fluid stand-in of a fabric: every NIC at its link rate times the framing
// efficiency of a full packet, and the latency of the longest path (through a leaf and a spine
// on two tiers, and a core on three).
func analyticNet(g *topo.Graph, c fabric.Config) analytic.Network {
	var lat units.Time
	for _, l := range g.Links {
		lat = max(lat, l.Latency)
	}
	// The longest path climbs to the top tier and back: 2 x tiers links, 2 x tiers - 1 switches.
	tiers := 1
	for i := range g.Nodes {
		tiers = max(tiers, g.Nodes[i].Tier)
	}
	return analytic.Uniform{Lat: units.Time(2*tiers)*lat + units.Time(2*tiers-1)*c.SwitchLatency, BW: payloadRate(g, c)}
}

// payloadRate is the payload rate of a host's link with full frames (the analytic backend's
// bandwidth, analyticNet).
func payloadRate(g *topo.Graph, c fabric.Config) units.Rate {
	rate := g.Links[g.Nodes[g.Hosts[0]].Ports[0].Link].Rate
	eff := float64(c.MTU) / float64(int(c.MTU)+c.HeaderBytes+c.L1Overhead)
	return units.Rate(float64(rate) * eff)
}

// addCounters adds a run's counters and its loss totals (declared in package result) to m.
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
// counters for the step, and the measured event bins for the timeline (timeline.go): the
// whole-step run's, on the step's own time axis, or each network op's class run's with the
// weight of one of its collectives and its duration.
type stepInput struct {
	dur      []units.Time
	network  []bool
	coll     []float64
	counters map[string]float64
	stepBins *fabric.Bins
	opBins   func(i int) (b *fabric.Bins, weight float64, one units.Time)
}

// classInput is a step's input from the class runs: compute from the step model, NVLink
// collectives from the ring formula, network collectives from their class's run (group by
// group), counters scaled from one collective per group to the step's count.
func (s *Scenario) classInput(p *training.Plan, cls []*class, opClass, opGroup []int, runs []*classRun, noise *stepNoise) stepInput {
	in := stepInput{dur: make([]units.Time, len(p.Ops)), network: make([]bool, len(p.Ops)), counters: map[string]float64{}}
	for i := range p.Ops {
		o := &p.Ops[i]
		switch {
		case o.Kind == training.Compute:
			in.dur[i] = noise.duration(i, o)
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
			result.Combine(in.counters, k, x, scale) // high-water marks take the max, counts scale
		}
	}
	in.opBins = func(i int) (*fabric.Bins, float64, units.Time) {
		ci := opClass[i]
		return runs[ci].Bins, 1 / float64(len(cls[ci].Groups)), runs[ci].Dur[opGroup[i]]
	}
	return in
}

// fullInput is a step's input from a whole-step run (CompileStep): an op's duration is when its
// done node completed minus when the last op it depends on did, so the replay reproduces the
// run's completion times exactly; counters and event bins are the run's.
func (s *Scenario) fullInput(p *training.Plan, opDone []msggraph.ID, r *classRun) stepInput {
	in := stepInput{dur: make([]units.Time, len(p.Ops)), network: make([]bool, len(p.Ops)), counters: r.Counters, stepBins: r.Bins}
	fin := make([]units.Time, len(p.Ops))
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
		}
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
		if fin[i] > fin[last] && s.reportedJob(i) { // jobs.go: the first job's step
			last = i
		}
	}
	out.StepTime = fin[last].Seconds()
	out.JobStepTimes = s.jobStepTimes(fin) // jobs.go
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

// The families a reader compares, whatever the fabric calls them (result.Family).

// pickPauses is the PFC pause frames sent (not pause durations).
func pickPauses(c map[string]float64) float64 { return result.FamilyTotal(c, result.FamilyPauseFrames) }

// pickStalls is the time InfiniBand senders spent blocked for lack of credits, summed over
// ports, in seconds (its per-VL and per-port breakdowns are left out).
func pickStalls(c map[string]float64) float64 {
	return result.FamilyTotal(c, result.FamilyCreditStallNs) * 1e-9
}

// pickMarks is the packets marked for congestion: ECN CE on RoCE, FECN on InfiniBand.
func pickMarks(c map[string]float64) float64 {
	return result.FamilyTotal(c, result.FamilyCongestionMarks)
}

func quantiles(xs []float64) (p50, p99 float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	v := append([]float64(nil), xs...)
	sort.Float64s(v)
	return result.Percentile(v, 50), result.Percentile(v, 99)
}

// probesStopped counts the probes stopped where a control loop acted (flow.Options.StopOnControl;
// read by TestProbeStopMatchesWholeProbe).
var probesStopped atomic.Int64

// samePrefixes reports whether two classes' reduced groups extrapolate alike (sameAs in Run):
// none reduced, or the same ring prefixes group by group (the same steps, positions and message
// IDs; on the same messages, sameClassRun, the same whole rings). A scaled send is never shared:
// at another size (sizedClass) an all-to-all and a send that compile alike at one size may not.
func samePrefixes(a, b []groupExtrap) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] == nil && b[i] == nil {
			continue
		}
		x, ok1 := a[i].(*ringPrefix)
		y, ok2 := b[i].(*ringPrefix)
		if !ok1 || !ok2 || !reflect.DeepEqual(x, y) {
			return false
		}
	}
	return true
}

// sameClassRun reports whether two class graphs are the same simulation: the same messages in
// the same order (endpoints, bytes, start, delay, dependencies, priority, connection; the tags
// aside, which only label them) and the same groups.
func sameClassRun(a, b *msggraph.Graph, ra, rb [][2]int) bool {
	if a.Endpoints != b.Endpoints || len(a.Msgs) != len(b.Msgs) || !slices.Equal(ra, rb) {
		return false
	}
	for i := range a.Msgs {
		x, y := &a.Msgs[i], &b.Msgs[i]
		if x.Src != y.Src || x.Dst != y.Dst || x.Bytes != y.Bytes || x.Start != y.Start || x.Delay != y.Delay ||
			x.Prio != y.Prio || x.Conn != y.Conn || !slices.Equal(x.Deps, y.Deps) {
			return false
		}
	}
	return true
}
