package flow

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/ibsm"
	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/result"
	"github.com/fabricsim/fabricsim/sim"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

// DefaultStep is the fluid model's base time step while queues or rates change: at 400 Gb/s a link
// moves 50 KB in it, a few percent of an ECN or PFC threshold, and DCQCN's fastest timers (the
// 4 us CNP interval and decrease period of ConnectX) span several steps.
const DefaultStep = units.Microsecond

// MaxStep bounds Options.Step and the adaptive step: a coarser step would pass a whole DCQCN
// decrease period or a ConnectX CNP interval in one step.
const MaxStep = 4 * units.Microsecond

// Options adjust a flow-level run.
type Options struct {
	// Step is the base time step while anything changes (0: DefaultStep), at most MaxStep:
	// the finest resolution, used whenever a mechanism whose outcome depends on the step's
	// length is at work; between such moments the step doubles up to MaxStep (adaptive.go).
	Step units.Time
	// FixedStep keeps every step at Step (no adaptive step: the plain stepping the adaptive
	// step is compared with, TestAdaptiveMatchesFixed).
	FixedStep bool
	// Until stops the run at this simulated time (0: run until every message completes);
	// unfinished messages are reported with Finish 0.
	Until units.Time
	// Check verifies invariants while running: bytes conserved, no backlog negative, lossless
	// classes never drop, buffers within their size.
	Check bool
	// Progress, when set, is called about every 10-50 ms of host time (progressInterval) with
	// messages done and total; returning false stops the run (the results so far are returned
	// with ErrStopped).
	Progress func(now units.Time, done, total int) bool
	// MemoryLimit refuses a run whose estimated memory (EstimateMemory) is larger, with a
	// *LimitError; 0 means DefaultMemoryLimit.
	MemoryLimit int64
	// DrawSeed, when non-zero, seeds the flows' own random streams (ECN marking, injected loss)
	// instead of the fabric's Seed, which then drives routing (ECMP hashes) alone: a job keeps
	// its connections, and their hashes, from step to step while the marks fall differently in
	// each (docs/jitter.md).
	DrawSeed uint64
	// NoSymmetry runs every copy of a repeated, independent part of the graph instead of one
	// representative (symmetry.go; the results are the same: for tests and measurements).
	NoSymmetry bool
	// SplitEntries keeps each piece of a flow's bytes that joins a queue in a step its own
	// entry (fifo.push) instead of joining the piece before it (fifo.pushMerged): the plain
	// hand-off that the merged one is compared with (TestMergedEntriesMatchSplit).
	SplitEntries bool
	// AgeOrder serves a partly sent FIFO segment oldest first: the bytes that left their NIC in
	// the earliest step whole, in proportion among the bytes of the step the link's allowance
	// reaches, instead of every entry in proportion (docs/flow.md, "Where the step is not a
	// resolution"). Off by default until validated against the packet backend everywhere.
	AgeOrder bool
	// CoarseCreditStep keeps the base step once InfiniBand credits bind, instead of making
	// the credit step (CreditStep, with ProportionalFIFO ProportionalCreditStep) the base step
	// for the rest of the run (creditstep.go): the plain stepping that the credit step is
	// compared with (TestCreditStepMatchesFineStep). With FixedStep every step is Step, credits
	// or not.
	CoarseCreditStep bool
	// ProportionalFIFO serves a partly sent FIFO segment in proportion to its entries (the plain
	// FIFO, fifo.serveShare) instead of in the order its bytes arrived within their step (the
	// default: every entry remembers the window of the step, a fraction of it, in which its bytes
	// reached the queue, spread evenly over it, and the link sends the segment's bytes in that
	// order, so that an entry whose bytes came early in the step leaves, and its message may
	// finish, before the rest of its segment: fifo.serveWin; docs/flow.md, "Where the step is
	// not a resolution"). With it the credit step is ProportionalCreditStep. The plain version
	// that arrival order is compared with (TestSubStepMatchesFineStep, TestTailDropArrivalOrder);
	// AgeOrder implies it.
	ProportionalFIFO bool
	// JoinIntervals shares a NIC within a step interval by interval between its flows' join
	// times (joinFill) instead of sharing the whole step's bytes among every flow present at
	// its end, which gives a flow that joins late in the step an equal share of all of it.
	JoinIntervals bool
	// StopOnControl stops the run at the start of its first step after a control loop with a
	// time of its own has acted, as far as counters that only grow show it: an ECN mark counted
	// (where ECN or DCQCN is on), a PFC pause frame sent, or at once where packets can be lost
	// (a lossy run draws). The result then has Stopped set and holds the run so far (unfinished
	// messages with Finish 0). For a run that only asks whether anything acted (compare's probe
	// of a scaled-down send, which is discarded where it did): a run that never stops is the
	// plain run, step for step. Checked on the resources with members, after every step.
	StopOnControl bool
	// PerFlowARQuiet lets a PerFlowAR family whose paths hold no queue and no throttle go quiet
	// as a whole, each member at its share of the last step (arflows.go, "Quiet families"):
	// fewer steps, and figures that move where a run's timing is chaotic (docs/flow.md, row 12;
	// TestPerFlowARQuiet). Experimental, off.
	PerFlowARQuiet bool
	// PerFlowARAllStages makes every adaptive switch's choice per flow, a member per minimal path
	// (16 per QP across pods of a k=8 fat tree: the first version of PerFlowAR), instead of the
	// first adaptive switch's alone, a member per port of its group with the later adaptive
	// stages pooled into bundles (4 per QP there; arflows.go, "First-choice families"). The plain
	// version that first-choice families are compared with (TestPerFlowARFirstChoice).
	PerFlowARAllStages bool
	// plainWin makes arrival order's partly sent segments (fifo.serveWin) sort their window
	// edges with slices.Sort and find A at each entry's edges by slices.BinarySearch every time
	// it is read, instead of sorting short ones in place, scanning for an edge once and keeping
	// its place: the plain version that is compared with (TestServeWinMatchesPlain).
	plainWin bool
	// progressSteps, when positive, replaces progressInterval's interval between two calls of
	// Progress (tests: a stop seen on a small graph).
	progressSteps int64
	// plainPaced makes DCQCN's paced packets (dcqcn.go, pacedArrivals) be walked every step,
	// instead of only from the first step in which one of them leaves its queue: the plain
	// version that is compared with (TestPacedArrivalsMatchPlain).
	plainPaced bool
	// plainUpdate makes back-pressure's update walk the active resources in the order serve
	// does, instead of the reverse (backpressure.update), and read PAUSE's refresh interval from
	// the resource every time it counts a pause's frames instead of once (refreshAt): the plain
	// version that is compared with (TestUpdateMatchesPlain).
	plainUpdate bool
	// reduceAll keeps every symmetry reduction that finds copies, however few (reduction.worthwhile
	// drops one that would save under minReducedShare of the messages): the plain version that is
	// compared with (TestFewCopiesNotReduced).
	reduceAll bool
	// PerFlowAREverywhere forms families in every run with a choice to make per flow, without
	// the spread rule (arflows.go, "The spread rule": a run whose QPs into each destination edge
	// switch are many enough that their downlinks' loads average out keeps the pooled bundles).
	// The plain version the rule is compared with (TestPerFlowARSpreadRule).
	PerFlowAREverywhere bool
	// PooledAR keeps the pooled model of InfiniBand adaptive routing in every run: each adaptive
	// stage's links one bundle, the outcome of every flow spreading its bytes evenly over them
	// (router.bundlePath). By default, a run where the spread rule expects the switches' own
	// choices to lengthen it by more than 5 % (arflows.go, "The spread rule": few QPs sharing a
	// destination edge switch's loaded downlinks, validation row 16) routes adaptive QPs per flow
	// instead: each a family of flows, one per switch the first adaptive switch on its path may
	// send to (first-choice families; the later adaptive stages pooled into bundles;
	// PerFlowARAllStages: one per minimal path), the switch sending the bytes that reach it in a
	// step down its allowed ports packet by packet by their backlog, as the packet backend's
	// switches do (arflows.go; docs/flow.md, "Per-flow adaptive routing"). Row 16 moves from
	// -29 % to -4 % of the packet backend's completion time, at 44x the pooled model's
	// instructions (which take no step there), with a step dependence; every other run measured
	// keeps the pooled bundles (docs/flow.md, "The spread rule"). Without congestion control and
	// faults only (elsewhere the bundles stay); in a run with families every flow is stepped and
	// the symmetry reduction is off (Run plans its memory by family size, EstimateMemory does not).
	PooledAR bool
}

// DefaultMemoryLimit is the memory a run may plan to use unless Options says otherwise (the
// machines this runs on in CI have 24 GiB).
var DefaultMemoryLimit int64 = 16 << 30

// LimitError is a run refused because its estimated memory exceeds the limit.
type LimitError struct {
	Estimate, Limit int64
	Hosts, Messages int
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("flow backend: a run of %d hosts and %d messages needs about %s, above the memory limit of %s; run fewer GPUs, fewer steps or a coarser collective (larger chunks)",
		e.Hosts, e.Messages, gib(e.Estimate), gib(e.Limit))
}

// ErrStopped is returned when Options.Progress stopped the run.
var ErrStopped = fmt.Errorf("flow: stopped")

// errPaused is run's return at engine.pauseAt: the run is at a step boundary and resumes with
// the next call.
var errPaused = errors.New("flow: paused")

// Validate checks the options.
func (o *Options) Validate() error {
	if o.Step < 0 || o.Step > MaxStep {
		return fmt.Errorf("flow step %v outside (0, %v]: a step must be positive and no longer than DCQCN's shortest timer", o.Step, MaxStep)
	}
	if o.Until < 0 {
		return fmt.Errorf("flow: negative end time %v", o.Until)
	}
	return nil
}

// Run executes message graph mg on topology g with fabric cfg at flow level. nh gives the
// minimum-hop candidates (a *topo.Routes or LeafRoutes); nil computes LeafRoutes. InfiniBand
// fabrics route by the subnet manager's tables and ignore nh.
func Run(g *topo.Graph, nh NextHopper, cfg fabric.Config, mg *msggraph.Graph, opt Options) (*result.Run, error) {
	res, _, err := run(g, nh, cfg, mg, opt)
	return res, err
}

// run is Run, also returning the symmetry reduction the result came from (nil: none, or the
// plain run after a broken one).
func run(g *topo.Graph, nh NextHopper, cfg fabric.Config, mg *msggraph.Graph, opt Options) (*result.Run, *reduction, error) {
	wall := time.Now()
	e, nh, err := setup(g, nh, cfg, mg, opt)
	if err != nil {
		return nil, nil, err
	}
	return e.runToEnd(g, nh, cfg, mg, opt, wall)
}

// setup checks a run's inputs and makes its engine, reduced where the symmetry reduction
// applies, with the graph's first events filed; nh is the routes it uses (LeafRoutes where none
// were given on Ethernet).
func setup(g *topo.Graph, nh NextHopper, cfg fabric.Config, mg *msggraph.Graph, opt Options) (*engine, NextHopper, error) {
	if err := opt.Validate(); err != nil {
		return nil, nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, nil, err
	}
	if err := mg.Validate(); err != nil {
		return nil, nil, err
	}
	if mg.Endpoints > len(g.Hosts) {
		return nil, nil, fmt.Errorf("workload addresses %d endpoints but the topology has %d hosts", mg.Endpoints, len(g.Hosts))
	}
	limit := opt.MemoryLimit
	if limit == 0 {
		limit = DefaultMemoryLimit
	}
	var subnet ibsm.Engine
	if cfg.Kind == fabric.KindInfiniBand {
		subnet = cfg.IB.Routing
		if subnet == "" {
			subnet = ibsm.MinHop // the stored tables: at least what any engine keeps
		}
	}
	if est := estimate(g, int64(len(mg.Msgs)), nh == nil && cfg.Kind != fabric.KindInfiniBand, subnet); est > limit {
		return nil, nil, &LimitError{Estimate: est, Limit: limit, Hosts: len(g.Hosts), Messages: len(mg.Msgs)}
	}
	if nh == nil && cfg.Kind != fabric.KindInfiniBand {
		lr, err := NewLeafRoutes(g)
		if err != nil {
			return nil, nil, err
		}
		nh = lr
	}
	e, err := newEngine(g, nh, cfg, mg, opt)
	if err != nil {
		return nil, nil, err
	}
	if n := e.arFamilySize(); n > 1 {
		// Per-flow adaptive routing: a QP is up to n flows (arflows.go), planned as n messages.
		if est := estimate(g, int64(len(mg.Msgs))*int64(n), false, subnet); est > limit {
			return nil, nil, &LimitError{Estimate: est, Limit: limit, Hosts: len(g.Hosts), Messages: len(mg.Msgs)}
		}
	}
	if !opt.NoSymmetry && e.faults == nil && e.ar == nil { // faults break the copies' independence
		nres := len(e.net.res)
		red, err := e.reduce()
		if err != nil {
			return nil, nil, err
		}
		if red != nil && !opt.reduceAll && !red.worthwhile(len(mg.Msgs)) && len(e.net.res) == nres {
			// Routing the copies made no bundle: the engine is as a plain run's would be (its
			// route cache aside, which only memoizes).
			red = nil
		}
		e.red = red
		e.growState() // routing the copies may have created bundles
	}
	e.initGraph()
	return e, nh, nil
}

// runToEnd runs engine e, set up by run (or paused at a step boundary, engine.pauseAt, and maybe
// cloned), to its end, and collects its result as run does.
func (e *engine) runToEnd(g *topo.Graph, nh NextHopper, cfg fabric.Config, mg *msggraph.Graph, opt Options, wall time.Time) (*result.Run, *reduction, error) {
	err := e.run()
	red := e.red
	if errors.Is(err, errReductionBroken) {
		// The copies would not have moved in lockstep: run the plain network.
		if e, err = newEngine(g, nh, cfg, mg, opt); err != nil {
			return nil, red, err
		}
		e.initGraph()
		err = e.run()
	}
	e.fc.flushPauses()
	if e.red != nil {
		e.red.expand(e)
	}
	e.faults.restoreRouting()
	res := e.collect()
	res.Stopped = e.stopped
	res.WallSeconds = time.Since(wall).Seconds()
	return res, red, err
}

// flowState is one QP of a message in flight: its path, the bytes still to inject, the bytes
// waiting at each hop's queue (back), the bytes out of its last queue. Amounts are wire bytes.
type flowState struct {
	// The fields a step reads for every hop of a hot flow come first, in its first cache line
	// (a congested step is bound by memory: BenchmarkPipelineClass).
	cls  int32 // class index (e.classOf)
	hops int32
	off  int32 // path at e.path[off:off+hops], slots (backlog, owner) at e.owner[off:off+hops]
	src  int32 // host index
	// total, rem and deliv are the flow's bytes, those still to inject and those delivered.
	total float64
	rem   float64
	deliv float64
	// inj and out are the bytes injected and delivered in the current step; rate the injection
	// rate of the last step (bytes/s), for the stationarity test.
	inj, out float64
	rate     float64
	// The second line: what a step reads of every hot flow once (inject, DCQCN's afterStep,
	// settle), so that a hot flow's step reads two lines of it, not three (docs/flow.md, "Fewer
	// lines a congested step reads").
	msg  int32
	hidx int32 // index in its host's injecting list, -1 when done injecting
	// tInj is when, in seconds into the current step, the flow's last byte left its NIC (0 if
	// it did in an earlier step); tOut when it left the last queue.
	tInj float64
	// prevRate is its rate the step before (cooling needs it steady).
	prevRate float64
	// lat is the time from the last byte leaving the last queue to its delivery (propagation,
	// switch latencies, the last packet's store and forward).
	lat units.Time
	// from is the time the flow's next step of injection starts: the step's start, or when the
	// flow started or was heated if that fell within the step (it sends for the rest of it), or
	// before the step when a dependency completed within the step that just ran (it catches up).
	from units.Time
	rng  uint64
	// ackOff and ackHops place the path its ACKs take back to the source (after the data path
	// in the path pool).
	ackOff, ackHops int32
	qp              int32 // the QP of the message it carries (its hash, its share of the bytes)
	// hot: the flow is stepped (its path has a queue or a throttle, its host's round robin or its
	// congestion control is changing); a quiet flow sends at rate, unchanging, from t0 on, and
	// only its end (projected, event with ver) is an event. hotIdx is its index in engine.hot.
	hotIdx int32
	tOut   float64
	start  units.Time
	t0     units.Time
	ver    uint32
	done   bool
	hot    bool
	_      [32]byte // to 192 bytes: the first line of every flow aligned
}

// classState is what a step reads and writes per resource and class, together (one cache line
// instead of three): the ingress counter, the allowance, the drain of the last step and of the
// step before.
type classState struct {
	ing, allow, drain float64
	// lastDrain is the drain of the step before (what rescaleAllowances scales); it also pads
	// the struct to 32 bytes (aligned).
	lastDrain float64
}

// slotOwner is what the hop-to-hop hand-off of a congested step reads and writes per path slot,
// together (one cache line per entry served instead of three, BenchmarkPipelineClass): the flow
// and hop the slot belongs to, the slot's generation, the resource of the hop (e.path[slot],
// repeated here for data hops, so that the previous and the next hop are read from the
// neighbouring slots' line), and the flow's bytes queued at that hop (its backlog).
type slotOwner struct {
	flow, hop int32
	gen       uint32
	res       int32
	back      float64
	// ent is the slot's entry in its hop's queue as fifo.pushMerged last left it.
	ent int32
}

// hostState is a host NIC: the flows it injects, served round robin at line rate.
type hostState struct {
	flows []int32
	// joining counts the messages offered to the NIC that wait for their turn (joinDelay).
	joining int32
	active  int32 // index in engine.activeHosts, -1 while its flows are quiet (or it has none)
	link    int32 // the resource of its NIC port
	rate    float64
}

type engine struct {
	g    *topo.Graph
	cfg  fabric.Config
	mg   *msggraph.Graph
	net  *network
	rt   *router
	opt  Options
	step units.Time
	now  units.Time
	// cur is the length of the next step (adaptive.go; step when FixedStep), horizon the time
	// (seconds) within which the step being computed saw a queue reach a transition at its
	// fill rate.
	cur       units.Time
	horizon   float64
	adaptive  bool
	lastStart units.Time // the latest flow start
	// merge: a flow's pieces joining a queue in one step share an entry (!Options.SplitEntries).
	merge bool
	// ageOrder: Options.AgeOrder; age is the NIC step of the bytes being handed on (inject,
	// fifo.serve), which enqueue gives their entry at the next queue.
	ageOrder bool
	age      int32
	// subStep: arrival order (not Options.ProportionalFIFO); w0, w1 is the window of the step
	// (fractions of it) in which the bytes being handed on left (inject, fifo.serveWin), which
	// enqueue gives their entry.
	subStep    bool
	w0, w1     float64
	winX, winD []float64 // serveWin's scratch: the window edges, A at them
	winK       []int32   // and each entry's edges' places among them
	plainWin   bool      // Options.plainWin
	// creditStep is the step while InfiniBand credits bind (creditstep.go; 0: the base step).
	creditStep units.Time

	// joinIntervals: Options.JoinIntervals; joinAt ... joinSub are joinFill's scratch.
	joinIntervals                      bool
	joinAt, joinLeft, joinGot, joinFin []float64
	joinOrd                            []int32
	joinSub                            []fill

	// The message graph (as the packet backend's engine walks it).
	waiting  []int32
	readyAt  []units.Time
	depStart []int32
	depList  []int32
	started  []units.Time
	finish   []units.Time
	qpLeft   []int32
	lastOut  []units.Time // latest QP delivery of a message in flight
	done     int
	events   eventHeap
	// due are events at the current time released while events are handled (inEvents).
	due      []event
	inEvents bool
	ends     endHeap
	seq      uint64

	// Flows, their paths and backlogs (slots reused when a flow ends).
	flows     []flowState
	freeFlows []int32
	path      []int32
	pos       []int32 // index of (flow, hop) in its resource's members
	// owner says whose each path slot is (fifo entries) and what it holds: the flow, the hop,
	// the slot's generation (its reuses), its resource and its backlog, together (slotOwner).
	owner []slotOwner
	// queues are the FIFOs of every resource and class, by value (one pointer less to chase per
	// hop and step; an unused one is empty).
	queues    []fifo
	freeSlots map[int32][]int32 // hops -> free offsets
	live      int
	cc        congestionControl
	loss      *lossModel

	hostSt []hostState
	// activeHosts are the hot hosts with flows to inject (all their flows are hot); hot the hot
	// flows (stepped), quiet the others.
	activeHosts []int32
	hot         []int32
	// act lists, per rank, the resources with members.
	act [][]int32
	// quietMembers is the sum of every resource's quietN (the quiet flows' hops): where it is
	// 0, preheat and settle's pass for the resources quiet flows cross have nothing to do, and
	// are skipped (BenchmarkPipelineClass's 2,048-GPU DCQCN class: no quiet flow in 2,440 of
	// its 3,291 steps; check holds it to the resources' sum).
	quietMembers int
	// quietN is, per resource, how many of its members are quiet. It is dense, apart from the
	// resource: preheat and settle's pass read it for every active resource in a step with quiet
	// flows, and most have none, so the resource's own line is read only where one has
	// (docs/flow.md, "Fewer lines a congested step reads").
	quietN []int32

	// Per resource and class (rc, index r*nc+c): bytes held downstream that came through r (the
	// ingress counter PFC and credits watch), what may pass r in the next step, and how much of
	// the ingress drained in the last step.
	nc      int
	classOf map[uint8]int32
	msgCls  []uint8 // each message's class index
	classes []uint8
	rc      []classState
	// resTo is each resource's downstream node (resource.to), dense: what engine.drained reads.
	resTo []topo.NodeID
	fc    *backpressure
	// sched splits an egress among its classes (classes.go); schedBuf is its scratch.
	sched    *classSched
	schedBuf []fill
	// overhead is the capacity ACKs and credit updates take from data.
	overhead *overhead

	// Per-step bookkeeping.
	stationary bool
	changed    bool
	ended      []int32
	scratch    []fill
	steps      int64
	jumps      int64
	lastDeliv  units.Time
	delivered  float64
	ideal      *idealCache
	progressAt int64
	progressN  int64 // steps between two calls of Options.Progress (progressInterval)
	progressNs int64 // host time of the last call, ns since progressClock
	pathBuf    []int32
	heatBuf    []int32
	pathCache  map[uint64]*cachedPath
	idealMemo  map[idealKey]units.Time
	// allHot keeps every flow hot (no quiet flows): the plain stepping the quiet flows must
	// reproduce (TestQuietMatchesAllHot).
	allHot bool
	// red, when set, runs one representative of each class of identical, independent
	// components (symmetry.go); toRun is the number of messages the run completes.
	red   *reduction
	toRun int
	// faults runs the fault plan (faults.go; nil without faults).
	faults *faultState
	// ar routes adaptive QPs per flow (unless Options.PooledAR, arflows.go; nil: pooled bundles).
	ar *arState
	// stopped: Options.StopOnControl stopped the run (controlActed).
	stopped bool
	// pauseAt, when positive, makes run return errPaused at the first step boundary after that
	// many steps and jumps (clone.go: a copy is taken there); run resumes where it left.
	pauseAt int64
	// twin, when set, is the smaller run of a pair that shares this run's first steps (fork.go).
	twin *twin

	stats stats
}

type stats struct {
	injected, deliveredWire float64
	payloadSent             int64
	payloadDelivered        int64
}

func newEngine(g *topo.Graph, nh NextHopper, cfg fabric.Config, mg *msggraph.Graph, opt Options) (*engine, error) {
	if err := cfg.PacketOnly(); err != nil {
		return nil, err
	}
	e := &engine{g: g, cfg: cfg, mg: mg, opt: opt, step: opt.Step, freeSlots: map[int32][]int32{}, classOf: map[uint8]int32{},
		pathCache: map[uint64]*cachedPath{}}
	if e.step == 0 {
		e.step = DefaultStep
	}
	e.cur, e.adaptive = e.step, !opt.FixedStep && e.step < MaxStep
	e.merge = !opt.SplitEntries
	e.ageOrder = opt.AgeOrder
	e.subStep = !opt.ProportionalFIFO && !opt.AgeOrder
	e.plainWin = opt.plainWin
	e.joinIntervals = opt.JoinIntervals
	e.net = newNetwork(g, &e.cfg)
	rt, err := newRouter(g, nh, &e.cfg, e.net)
	if err != nil {
		return nil, err
	}
	e.rt = rt
	e.act = make([][]int32, e.net.numRanks())
	e.hostSt = make([]hostState, len(g.Hosts))
	for h := range e.hostSt {
		n := g.Hosts[h]
		e.hostSt[h] = hostState{active: -1, link: e.net.channel(n, 0), rate: float64(g.PortLink(n, 0).Rate) / 8}
	}
	// Classes: every priority the workload uses, mapped as the packet backend maps it.
	e.msgCls = make([]uint8, len(mg.Msgs))
	for i := range mg.Msgs {
		if mg.Msgs[i].Bytes > 0 {
			c, err := e.classFor(&mg.Msgs[i], int32(i))
			if err != nil {
				return nil, err
			}
			k, ok := e.classOf[c]
			if !ok {
				k = int32(len(e.classes))
				e.classOf[c] = k
				e.classes = append(e.classes, c)
			}
			e.msgCls[i] = uint8(k)
		}
	}
	e.nc = max(1, len(e.classes))
	e.sched = newClassSched(&e.cfg, e.classes)
	e.fc = newBackpressure(e)
	e.fc.plain = opt.plainUpdate
	if cs := e.creditStepLen(); e.fc.kind == bpCredits && e.adaptive && !opt.CoarseCreditStep && e.step > cs {
		e.creditStep = cs
	}
	e.overhead = newOverhead(e)
	e.growState()
	e.ideal = newIdealCache(&e.cfg)
	switch {
	case cfg.Kind == fabric.KindRoCE && cfg.RoCE.DCQCN:
		if err := cfg.RoCE.DCQCNParams.Validate(); err != nil {
			return nil, err
		}
		e.cc = newDCQCN(e)
	case cfg.Kind == fabric.KindInfiniBand && cfg.IB.CC.Enabled:
		cc, err := newIBCC(e)
		if err != nil {
			return nil, err
		}
		e.cc = cc
	}
	if e.needsLoss() || faultsNeedLoss(&cfg.Faults) {
		e.loss = newLossModel(e)
	}
	if err := e.installFaults(); err != nil {
		return nil, err
	}
	if !opt.PooledAR && rt.mode == routeAR && e.cc == nil && e.faults == nil {
		e.ar = newARState()
		e.ar.first = !opt.PerFlowARAllStages
		if opt.PerFlowAREverywhere && e.anyFamily(mg) || !opt.PerFlowAREverywhere && e.arOverload(mg) > 1+arOverMin {
			e.allHot = !opt.PerFlowARQuiet // a quiet flow's bytes would pass its path without the switches' choices (but quiet families: arflows.go)
		} else {
			e.ar = nil // no QP has a choice to make per flow, or the choices average out: the pooled model as it runs by default
		}
		if len(e.rc) < len(e.net.res)*e.nc {
			e.growState() // the shapes created bundles
		}
	}
	return e, nil
}

// classFor is the queue a message's packets use on every link, as the packet backend assigns it:
// its priority (0 asks for the fabric's data class) on Ethernet and RoCE; on InfiniBand the VL of
// its service level.
func (e *engine) classFor(m *msggraph.Message, id int32) (uint8, error) {
	prio := m.Prio
	if prio == 0 {
		prio = e.cfg.DataPriority
	}
	if int(prio) >= e.cfg.Priorities {
		if e.cfg.Kind != fabric.KindEthernet {
			return 0, fmt.Errorf("message %d (%s) uses priority %d but the fabric has %d", id, m.Tag, m.Prio, e.cfg.Priorities)
		}
		prio = 0
	}
	if e.cfg.Kind == fabric.KindInfiniBand {
		return e.cfg.IB.SL2VL[prio&(fabric.IBServiceLevels-1)], nil
	}
	return prio, nil
}

func (e *engine) initGraph() {
	mg := e.mg
	m := len(mg.Msgs)
	e.waiting = make([]int32, m)
	e.readyAt = make([]units.Time, m)
	e.started = make([]units.Time, m)
	e.finish = make([]units.Time, m)
	e.qpLeft = make([]int32, m)
	e.lastOut = make([]units.Time, m)
	for i := range mg.Msgs {
		e.waiting[i] = int32(len(mg.Msgs[i].Deps))
	}
	e.depStart, e.depList = mg.Dependents()
	e.toRun = m
	if e.red != nil {
		e.toRun -= e.red.copies
	}
	for i := range mg.Msgs {
		e.readyAt[i] = mg.Msgs[i].Start
		if e.waiting[i] == 0 && (e.red == nil || e.red.repOf[i] == int32(i)) {
			e.schedule(int32(i))
		}
	}
}

// Event kinds.
const (
	evStart    = iota // a message is offered to its source NIC (or a delay node is ready)
	evComplete        // a message's last byte is delivered (or a delay node's delay is over)
)

// evJoin (after the fault kinds, faults.go): a message offered to a busy NIC joins its round
// robin (joinDelay).
const evJoin = 4

type event struct {
	t    units.Time
	seq  uint64
	kind uint8
	id   int32
	ver  uint32
}

// eventHeap is a binary min-heap of events by (time, sequence), typed (container/heap's
// interface boxing was a tenth of a large run).
type eventHeap []event

func (h eventHeap) less(i, j int) bool {
	if h[i].t != h[j].t {
		return h[i].t < h[j].t
	}
	return h[i].seq < h[j].seq
}

func (h *eventHeap) push(ev event) {
	*h = append(*h, ev)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if !s.less(i, p) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *eventHeap) pop() event {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s = s[:n]
	for i := 0; ; {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && s.less(r, l) {
			m = r
		}
		if !s.less(m, i) {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}

func (e *engine) push(t units.Time, kind uint8, id int32) {
	e.seq++
	e.events.push(event{t: t, seq: e.seq, kind: kind, id: id})
}

func (e *engine) pushEvent(ev event) { e.events.push(ev) }

func (e *engine) schedule(i int32) {
	m := &e.mg.Msgs[i]
	kind := uint8(evStart)
	if m.Bytes == 0 {
		e.started[i] = e.readyAt[i]
		kind = evComplete
	}
	at := e.readyAt[i] + m.Delay
	if e.inEvents && at == e.now {
		// Due now (a dependency just completed and nothing to wait): handled in this round of
		// events without a trip through the queue.
		e.seq++
		e.due = append(e.due, event{t: at, seq: e.seq, kind: kind, id: i})
		return
	}
	e.push(at, kind, i)
}

// complete records message i's completion at t and releases its dependents.
func (e *engine) complete(i int32, t units.Time) {
	e.finish[i] = t
	e.done++
	for _, d := range e.depList[e.depStart[i]:e.depStart[i+1]] {
		if t > e.readyAt[d] {
			e.readyAt[d] = t
		}
		e.waiting[d]--
		if e.waiting[d] == 0 {
			e.schedule(d)
		}
	}
}

// controlActed reports whether a control loop with a time of its own has acted in the run so
// far (Options.StopOnControl), by counters that only grow and that the result reports: an ECN
// mark on a resource with members (the ecn_marks counter where ECN is on; DCQCN's marks, which
// draw), a PFC pause frame sent from one, or a loss model (every lossy run draws:
// result.Run.NoDraws). A mark or frame on a resource that has no member left is not seen: the
// run then goes on, as without the option.
func (e *engine) controlActed() bool {
	if e.loss != nil {
		return true
	}
	_, dcqcn := e.cc.(*dcqcnModel)
	marks := dcqcn || e.cfg.Kind == fabric.KindRoCE && e.cfg.RoCE.ECN
	frames := e.fc.kind == bpPFC && len(e.fc.pauseFrames) > 0
	if !marks && !frames {
		return false
	}
	for rank := range e.act {
		for _, r := range e.act[rank] {
			if marks && e.net.res[r].marks > 0 {
				return true
			}
			if frames {
				for c := range e.nc {
					if e.fc.pauseFrames[int(r)*e.nc+c] > 0 {
						return true
					}
				}
			}
		}
	}
	return false
}

// run advances the fluid network from event to event: in steps of e.step while anything changes
// (queues, throttles, congestion-control rates), in one jump while every rate is constant.
func (e *engine) run() error {
	until := e.opt.Until
	if until <= 0 {
		until = units.MaxTime
	}
	noProgress := e.cfg.NoProgress
	for e.done < e.toRun {
		if e.pauseAt > 0 && e.steps+e.jumps >= e.pauseAt {
			e.pauseAt = 0
			return errPaused
		}
		if e.opt.StopOnControl && e.controlActed() {
			// Before a broken reduction's restart: the plain run acts in the same step (the
			// copies move in lockstep with the representatives until then).
			e.stopped = true
			return nil
		}
		if e.red != nil && e.red.broken {
			return errReductionBroken
		}
		if e.twin != nil && e.twin.forkNow(e) {
			return errFork
		}
		tNext := e.nextEvent()
		if len(e.hot) == 0 {
			if tNext == units.MaxTime {
				break
			}
			if tNext > until {
				e.now = until
				return nil
			}
			e.now = max(e.now, tNext)
			e.cur = e.step // what heats next starts at the base step
			if err := e.handleEvents(e.now + 1); err != nil {
				return err
			}
			continue
		}
		T := e.now
		var tEnd units.Time
		if e.stationary {
			tEnd = min(tNext, e.jumpLimit(), until)
			e.jump(tEnd)
			e.cur = e.step
		} else {
			// Events within the step happen at their own times before it is computed: a flow
			// that starts (or heats) then sends for the rest of the step.
			tEnd = min(T+e.cur, until)
			if err := e.handleEvents(tEnd); err != nil {
				return err
			}
			e.now = T
			if e.adaptive {
				e.rescaleAllowances(float64(tEnd-T) / float64(units.Second))
			}
			e.stationary = e.stepTo(tEnd)
		}
		e.now = tEnd
		if e.loss != nil && e.loss.failed != nil { // a QP past its retry limit (loss.go)
			return e.loss.failed
		}
		if e.opt.Check {
			if err := e.check(); err != nil {
				return err
			}
		}
		if e.now >= until {
			if e.opt.Until > 0 {
				return nil
			}
			// No time limit, yet the clock ran out: what is left never finishes (a flow with
			// bytes but no rate and no event to give it one). Report it below, never as done.
			break
		}
		if noProgress > 0 && e.live > 0 && e.now-e.lastDeliv > noProgress && !e.faults.waiting() {
			return e.stallError(noProgress)
		}
		if err := e.handleEvents(e.now + 1); err != nil {
			return err
		}
		if p := e.opt.Progress; p != nil && e.steps+e.jumps >= e.progressAt {
			e.progressAt = e.steps + e.jumps + e.progressInterval()
			if !p(e.now, e.done+(len(e.mg.Msgs)-e.toRun)*e.done/max(1, e.toRun), len(e.mg.Msgs)) {
				return ErrStopped
			}
		}
	}
	if e.red != nil && e.red.broken {
		return errReductionBroken
	}
	if e.done == e.toRun {
		var end units.Time
		for _, t := range e.finish {
			end = max(end, t)
		}
		if err := e.faults.afterEnd(end); err != nil {
			return err
		}
	}
	if e.done < e.toRun && e.opt.Until <= 0 {
		for i := range e.mg.Msgs {
			if e.waiting[i] > 0 && (e.red == nil || e.red.repOf[i] == int32(i)) {
				return fmt.Errorf("flow: message %d (%s) never became ready", i, e.mg.Msgs[i].Tag)
			}
		}
		return fmt.Errorf("flow: %d of %d messages did not complete", e.toRun-e.done, len(e.mg.Msgs))
	}
	return nil
}

// handleEvents processes every event before end, each at its own time (e.now is set to it; the
// caller restores its clock): message starts and completions, and quiet flows' ends, in one
// order by (time, sequence).
func (e *engine) handleEvents(end units.Time) error {
	e.inEvents = true
	defer func() { e.inEvents = false }()
	for {
		for k := 0; k < len(e.due); k++ {
			if err := e.handle(e.due[k]); err != nil {
				e.due = e.due[:0]
				return err
			}
		}
		e.due = e.due[:0]
		qe, quiet := e.ends.top()
		if quiet && qe.t >= end {
			quiet = false
		}
		msg := len(e.events) > 0 && e.events[0].t < end
		if !quiet && !msg {
			return nil
		}
		if quiet && (!msg || qe.t < e.events[0].t || qe.t == e.events[0].t && qe.seq < e.events[0].seq) {
			e.ends.remove(qe.fid)
			e.now = max(e.now, qe.t)
			e.quietEnd(qe.fid, qe.t)
			continue
		}
		ev := e.events.pop()
		e.now = max(e.now, ev.t)
		if err := e.handle(ev); err != nil {
			return err
		}
	}
}

// handle runs one message event at its time.
func (e *engine) handle(ev event) error {
	switch ev.kind {
	case evStart:
		return e.startMessage(ev.id, ev.t)
	case evJoin:
		e.hostSt[e.mg.Msgs[ev.id].Src].joining--
		return e.joinMessage(ev.id, ev.t)
	case evComplete:
		e.complete(ev.id, ev.t)
	case evFault, evReroute:
		return e.handleFault(ev)
	}
	return nil
}

// nextEvent is the time of the earliest pending event or quiet end.
func (e *engine) nextEvent() units.Time {
	t := units.MaxTime
	if len(e.events) > 0 {
		t = e.events[0].t
	}
	if qe, ok := e.ends.top(); ok {
		t = min(t, qe.t)
	}
	return t
}

func (e *engine) stallError(d units.Time) error {
	return fmt.Errorf("no progress for %v at %v: %d flows hold bytes and none is delivered (%d of %d messages complete)%s%s",
		d, e.now, e.live, e.done, len(e.mg.Msgs), e.fc.explainStall(), e.faults.stallNote())
}

// startMessage offers message i's bytes to its source NIC at time t: its flows join the NIC's
// round robin now, or after joinDelay where the NIC is busy.
func (e *engine) startMessage(i int32, t units.Time) error {
	m := &e.mg.Msgs[i]
	e.started[i] = t
	if d := e.joinDelay(m.Src); d > 0 {
		e.hostSt[m.Src].joining++
		e.push(t+d, evJoin, i)
		return nil
	}
	return e.joinMessage(i, t)
}

// joinDelay is how long a message offered to host h's NIC now waits for its first packet: the
// NIC's round robin (fabric/nic.go, activate and nextData) appends a new flow to its list and
// serves it after one packet of each flow between its pointer and the list's end, half the
// flows in the round on average, and after the messages offered before it that still wait.
//
// Within a step the fluid shares a NIC equally among its flows, so flows offered together would
// otherwise start, and finish, together: in a ring whose next messages wait for these (a ring
// all-reduce's chunks), the packet backend's finishes, spread by this order, spread the next
// starts further, where the fluid's stayed in lockstep (validation row 10's FCT median +19 %
// without it; docs/flow.md, "Round-robin order").
func (e *engine) joinDelay(h int32) units.Time {
	hs := &e.hostSt[h]
	if hs.rate <= 0 {
		return 0
	}
	ahead := float64(len(hs.flows))/2 + float64(hs.joining)
	return units.Time(math.Round(ahead * e.ideal.maxWire / hs.rate * float64(units.Second)))
}

// joinMessage starts message i's flows at time t: one per QP (fabric/qp.go's striping: whole
// packets, each QP its own hash).
func (e *engine) joinMessage(i int32, t units.Time) error {
	m := &e.mg.Msgs[i]
	size := int64(m.Bytes)
	nq, per := e.qpSplit(m)
	cls := int32(e.msgCls[i])
	for q := int64(0); q < nq; q++ {
		share := min(per, size-q*per)
		if share <= 0 {
			break
		}
		if err := e.startFlow(i, m, int32(q), share, cls, t); err != nil {
			return fmt.Errorf("message %d (%s): %w", i, m.Tag, err)
		}
		e.qpLeft[i]++
	}
	return nil
}

// qpSplit is the number of QPs a message's bytes are striped over and each one's share (whole
// packets; the last QP gets the rest).
func (e *engine) qpSplit(m *msggraph.Message) (nq, per int64) {
	qps := int64(max(e.cfg.QPsPerConn, 1))
	mtu := int64(e.cfg.MTU)
	pkts := (int64(m.Bytes) + mtu - 1) / mtu
	nq = min(qps, pkts)
	if nq == 0 {
		return 0, 0
	}
	return nq, (pkts + nq - 1) / nq * mtu
}

// newFlow returns a free flow slot: a finished flow's, else a new one.
func (e *engine) newFlow() int32 {
	if n := len(e.freeFlows); n > 0 {
		fid := e.freeFlows[n-1]
		e.freeFlows = e.freeFlows[:n-1]
		return fid
	}
	e.flows = append(e.flows, flowState{})
	return int32(len(e.flows) - 1)
}

func (e *engine) startFlow(msg int32, m *msggraph.Message, qp int32, payload int64, cls int32, t units.Time) error {
	if e.ar != nil {
		if shape := e.arShapeOf(m.Src, m.Dst); shape != nil {
			return e.startFamily(msg, m, qp, payload, cls, t, shape)
		}
	}
	fid := e.newFlow()
	hash := qpHash(e.cfg.Seed, msg, m, qp)
	pc, err := e.paths(m.Src, m.Dst, hash, qp)
	if err != nil {
		e.freeFlows = append(e.freeFlows, fid)
		return err
	}
	p := pc.p
	hops, ackHops := pc.hops, int32(len(p))-pc.hops
	if len(e.rc) < len(e.net.res)*e.nc {
		e.growState() // the path created a bundle
	}
	off := e.alloc(hops + ackHops)
	copy(e.path[off:off+hops+ackHops], p)
	for h := int32(0); h < hops; h++ {
		e.owner[off+h].flow, e.owner[off+h].hop, e.owner[off+h].res = fid, h, p[h]
	}
	p = p[:hops]
	wire := e.wireBytes(payload)
	f := &e.flows[fid]
	ver := f.ver + 1 // a reused slot keeps counting: old events stay stale
	*f = flowState{ver: ver, msg: msg, qp: qp, src: m.Src, cls: cls, hops: hops, off: off, ackOff: off + hops, ackHops: ackHops, total: wire, rem: wire, start: t,
		rng: uint64(msg)<<20 ^ uint64(qp) ^ e.drawSeed()*0x9e3779b97f4a7c15, hidx: -1}
	f.from = t
	e.lastStart = max(e.lastStart, t)
	if one := min(payload, int64(e.cfg.MTU)); pc.payload != one {
		pc.payload, pc.lat = one, e.latency(p, one) // the latency is the first packet's
	}
	f.lat = pc.lat
	f.t0 = t
	if e.twin != nil {
		e.twin.start(e, fid)
	}
	for h, r := range p {
		e.join(r, fid, int32(h), off) // quiet at rate 0 until its host's round robin is shared
	}
	hs := &e.hostSt[m.Src]
	f.hidx = int32(len(hs.flows))
	hs.flows = append(hs.flows, fid)
	if e.cc != nil {
		e.cc.start(fid, t)
	}
	if e.loss != nil {
		e.loss.start(fid)
	}
	e.live++
	// A new flow changes its host's round robin: shared again among quiet flows where no link
	// on their paths overflows, else the host's flows are stepped.
	if hs.active >= 0 || !e.reshare(m.Src) {
		e.heatFlow(fid)
		e.heatHost(m.Src)
		e.stationary = false
	}
	return nil
}

// drawSeed seeds the flows' random streams: Options.DrawSeed, else the fabric's DrawSeed (as
// the packet backend reads it), else the fabric's seed.
func (e *engine) drawSeed() uint64 {
	if e.opt.DrawSeed != 0 {
		return e.opt.DrawSeed
	}
	if e.cfg.DrawSeed != 0 {
		return e.cfg.DrawSeed
	}
	return e.cfg.Seed
}

// alloc returns the offset of hops free path and backlog slots.
func (e *engine) alloc(hops int32) int32 {
	if l := e.freeSlots[hops]; len(l) > 0 {
		off := l[len(l)-1]
		e.freeSlots[hops] = l[:len(l)-1]
		for i := off; i < off+hops; i++ {
			e.owner[i].gen++
			e.owner[i].back = 0
		}
		return off
	}
	off := int32(len(e.path))
	for range hops {
		e.path = append(e.path, 0)
		e.pos = append(e.pos, 0)
		e.owner = append(e.owner, slotOwner{})
	}
	return off
}

// wireBytes is the bytes a QP's payload puts on the wire: every packet's headers, minimum frame
// and layer-1 overhead, and the RETH of the first packet.
func (e *engine) wireBytes(payload int64) float64 {
	c := &e.cfg
	mtu := int64(c.MTU)
	full := payload / mtu
	frame := func(p int64) int64 { return max(p+int64(c.HeaderBytes), int64(c.MinFrame)) + int64(c.L1Overhead) }
	w := full * frame(mtu)
	if rest := payload - full*mtu; rest > 0 {
		w += frame(rest)
	}
	return float64(w + int64(c.FirstHeaderExtra))
}

// latency is the time from the last wire byte leaving the flow's bottleneck to the message's
// delivery: the packet backend's FCT alone on the path (idealCache) minus the bytes at the
// bottleneck's rate, for one packet of at most an MTU (payload's first). It is a property of the
// path and the packet, not of the message: in a store-and-forward pipeline of equal packets the
// FCT is the first packet's time through every hop plus one bottleneck time per further packet,
// so less the bytes at the bottleneck what is left is the first packet's. The FCT of the whole
// message would carry the rounding of each packet's time on the wire to the picosecond (a
// payload rate is rarely a whole number of bytes per picosecond) and the last packet's shorter
// frame: a latency that moves with the size by fractions of a nanosecond (3.722343 us at 8 MiB,
// 3.722898 us at 16 MiB on the 2,048-GPU pipeline class), which DCQCN's CNPs and IB CC's BECNs
// would carry into every step, so that two sizes' runs part at once. Single-packet messages get
// their own FCT's latency exactly; a message alone is then off its packet-level FCT by that
// rounding (about 0.3 ps a packet) and its last packet's frame.
func (e *engine) latency(p []int32, payload int64) units.Time {
	payload = min(payload, int64(e.cfg.MTU))
	ideal := e.ideal.fct(e.net, p, payload)
	bott := math.Inf(1)
	for _, r := range p {
		bott = min(bott, float64(e.net.res[r].linkRate)/8)
	}
	return max(0, ideal-units.Time(e.wireBytes(payload)/bott*1e12))
}

// join adds flow f at hop h (path slot off+h) to resource r.
func (e *engine) join(r, f, h, off int32) {
	res := &e.net.res[r]
	e.pos[off+h] = int32(len(res.members))
	res.members = append(res.members, member{f: f, h: h})
	if e.flows[f].hot {
		e.hotJoin(r)
	} else {
		e.quietN[r]++
		e.quietMembers++
		res.quietLoad += e.qload(f)
	}
}

// hotJoin counts one more hot member of resource r (listing r for the sweep at the first).
func (e *engine) hotJoin(r int32) {
	res := &e.net.res[r]
	res.hotN++
	if res.active < 0 {
		lst := &e.act[res.rank]
		res.active = int32(len(*lst))
		*lst = append(*lst, r)
	}
}

// hotLeave counts one hot member less (unlisting r at the last).
func (e *engine) hotLeave(r int32) {
	res := &e.net.res[r]
	res.hotN--
	if res.hotN == 0 {
		lst := &e.act[res.rank]
		last := (*lst)[len(*lst)-1]
		(*lst)[res.active] = last
		e.net.res[last].active = res.active
		*lst = (*lst)[:len(*lst)-1]
		res.active = -1
	}
}

// leave removes flow f at hop h (path slot off+h) from resource r: the last member takes its place.
func (e *engine) leave(r, f, h, off int32) {
	res := &e.net.res[r]
	i := e.pos[off+h]
	last := res.members[len(res.members)-1]
	res.members[i] = last
	e.pos[e.flows[last.f].off+last.h] = i
	res.members = res.members[:len(res.members)-1]
	if fl := &e.flows[f]; fl.hot {
		e.hotLeave(r)
	} else {
		e.quietN[r]--
		e.quietMembers--
		res.quietLoad -= e.qload(f)
		if e.quietN[r] == 0 {
			res.quietLoad = 0 // no residue
		}
	}
}

// endFlow retires a flow whose bytes have all left its last queue at time tLast.
func (e *engine) endFlow(fid int32, tLast units.Time) {
	f := &e.flows[fid]
	if e.twin != nil {
		e.twin.ended(fid)
	}
	path := e.path[f.off : f.off+f.hops]
	for h, r := range path {
		e.leave(r, fid, int32(h), f.off)
	}
	sent := f.total
	if e.ar.family(fid) != nil {
		sent = f.deliv // what crossed this member's path
		e.famRelease(fid)
	}
	if e.loss != nil {
		sent += e.loss.state(fid).resent
	}
	e.overhead.account(f, sent)
	e.freeSlots[f.hops+f.ackHops] = append(e.freeSlots[f.hops+f.ackHops], f.off)
	if f.hot {
		e.unhot(fid)
	} else {
	}
	if f.hidx >= 0 {
		e.unhost(fid)
	}
	if e.cc != nil {
		e.cc.end(fid)
	}
	at := tLast + f.lat
	msg := f.msg
	e.lastOut[msg] = max(e.lastOut[msg], at)
	e.qpLeft[msg]--
	if e.qpLeft[msg] == 0 {
		e.push(e.lastOut[msg], evComplete, msg)
		n := int64(1)
		if e.red != nil {
			n += int64(e.red.mult[msg])
		}
		e.stats.payloadDelivered += n * int64(e.mg.Msgs[msg].Bytes)
	}
	f.done = true
	e.freeFlows = append(e.freeFlows, fid)
	e.live--
	e.stationary = false
}

// unhost removes a flow that has injected all its bytes from its host's round robin.
func (e *engine) unhost(fid int32) {
	f := &e.flows[fid]
	hs := &e.hostSt[f.src]
	last := hs.flows[len(hs.flows)-1]
	hs.flows[f.hidx] = last
	e.flows[last].hidx = f.hidx
	hs.flows = hs.flows[:len(hs.flows)-1]
	f.hidx = -1
	switch {
	case len(hs.flows) == 0 && hs.active >= 0:
		e.unlistHost(f.src)
	case hs.active < 0 && len(hs.flows) > 0 && !e.reshare(f.src):
		e.heatHost(f.src) // the others' shares of the round robin change
	}
}

// unlistHost takes host h off the hot hosts.
func (e *engine) unlistHost(h int32) {
	hs := &e.hostSt[h]
	lastH := e.activeHosts[len(e.activeHosts)-1]
	e.activeHosts[hs.active] = lastH
	e.hostSt[lastH].active = hs.active
	e.activeHosts = e.activeHosts[:len(e.activeHosts)-1]
	hs.active = -1
}

// needsLoss reports whether anything can drop: a lossy class, or a link with an error rate.
func (e *engine) needsLoss() bool {
	for c := range e.classes {
		if e.fc.kind == bpNone || !e.fc.lossless[c] {
			return true
		}
	}
	if e.cfg.Kind == fabric.KindRoCE && e.cfg.RoCE.RandomLoss > 0 {
		return true
	}
	for _, l := range e.g.Links {
		if l.ErrorRate > 0 {
			return true
		}
	}
	return false
}

// rehost puts a flow that has bytes to send again (a retransmission) back in its NIC's round
// robin.
func (e *engine) rehost(fid int32) {
	f := &e.flows[fid]
	hs := &e.hostSt[f.src]
	f.hidx = int32(len(hs.flows))
	hs.flows = append(hs.flows, fid)
	f.prevRate = -1 // its rate is that of before it stopped: not steady until it has sent again
	e.heatHost(f.src)
}

// Planning figures for EstimateMemory: per message of the graph (the engine's per-message arrays
// and its share of the flows, paths, queues and events in flight; BenchmarkRing1024/plain
// allocates 152 B per message in all; the symmetry reduction keeps 8 B per message through the
// run, and its 16 B per message of analysis are garbage before the engine's arrays are made) and
// per channel (a port's resource, padded to 256 B, its queue, class state, back-pressure and
// bundle entries: the heap a new engine keeps, 447 and 449 B per port on RoCE fat trees of k=16
// and k=32, and 451 B at k=32 on InfiniBand less its forwarding tables; 481.5 B at k=16 since the
// queue record grew to two aligned cache lines (128 B) and the dense resTo; 497.6 B with the
// dense quiet counts and the pause refresh per resource, measured after two collections so that
// the sync.Pools' buffers are gone; TestChannelBytes).
//
// InfiniBand adds the subnet manager's forwarding tables (package ibsm, shared by every run of the
// network). Stored: an LFT entry (2 B) and an adaptive-routing group id (4 B) per switch row x
// host, with the port sets and row index 5.90-6.02 B per entry on a k=16 fat tree (327,680
// entries, 1.9 MB) and 6.00 B on k=32 (10,485,760 entries, 63.0 MB): 32x the entries, 32.6x the
// bytes, for 8x the hosts: this term grows as switches x hosts, not linearly. Computed on demand
// (a tree above ibsm.StoredEntries entries): the tree routes they come from, linear, 52-88 B per
// host on a k=16 fat tree (with what the process already holds), 85 B on k=32 and 78 B on the
// 131,072-GPU rail-plane Clos (10.2 MB), planned above the largest (TestSubnetTableBytes).
const (
	bytesPerMessage      = 160
	bytesPerChannel      = 512
	bytesPerTableEntry   = 6.25
	bytesPerOnDemandHost = 96
)

// EstimateMemory is the memory a flow-level run of mg on g is planned to need beyond the graphs
// themselves, when it routes with LeafRoutes (an Ethernet fabric, no NextHopper given): the
// engine's state per message and per channel, and the leaf-indexed routes (switches x edge
// switches). An InfiniBand run plans the subnet manager's tables instead (subnetBytes).
func EstimateMemory(g *topo.Graph, mg *msggraph.Graph) int64 {
	return estimate(g, int64(len(mg.Msgs)), true, "")
}

// PlannedMemory is EstimateMemory before the message graph is built, from the number of
// messages it will have (a flat ring's 2 (n-1) n per channel, for instance), for callers that
// should refuse a run before compiling its graph; with routes given (no LeafRoutes).
func PlannedMemory(g *topo.Graph, messages int64) int64 { return estimate(g, messages, false, "") }

// CheckPlanned returns a *LimitError when a run of that many messages on g would plan more
// memory than limit (0: DefaultMemoryLimit).
func CheckPlanned(g *topo.Graph, messages int64, limit int64) error {
	if limit == 0 {
		limit = DefaultMemoryLimit
	}
	if est := PlannedMemory(g, messages); est > limit {
		return &LimitError{Estimate: est, Limit: limit, Hosts: len(g.Hosts), Messages: int(min(messages, math.MaxInt32))}
	}
	return nil
}

// estimate is the planned memory of a run of that many messages on g: with LeafRoutes built for
// it when leafRoutes, with the subnet manager's tables of engine subnet when it is set
// (InfiniBand).
func estimate(g *topo.Graph, messages int64, leafRoutes bool, subnet ibsm.Engine) int64 {
	var ports, switches, edges int64
	for i := range g.Nodes {
		ports += int64(len(g.Nodes[i].Ports))
		if g.Nodes[i].Kind == topo.Switch {
			switches++
		}
	}
	est := float64(messages)*bytesPerMessage + float64(ports)*bytesPerChannel
	if leafRoutes {
		seen := map[topo.NodeID]bool{}
		for _, h := range g.Hosts {
			if p := g.Nodes[h].Ports[0].Peer; !seen[p] {
				seen[p] = true
				edges++
			}
		}
		est += float64(switches) * float64(edges) * 4
	}
	if subnet != "" {
		est += subnetBytes(g, switches, subnet)
	}
	return int64(min(est, math.MaxInt64/2))
}

// subnetBytes plans the forwarding tables ibsm.Compute keeps for g: stored (bytesPerTableEntry
// per row x host; a row per switch, but for a GPU server's internal nodes under min-hop and
// D-mod-K) up to ibsm.StoredEntries entries or when g is not a layered tree, else computed on
// demand from the tree routes (bytesPerOnDemandHost per host). The tree test is topo's
// (EstimateGraphMemory plans the tree routes exactly when g is one), linear in the graph.
func subnetBytes(g *topo.Graph, switches int64, engine ibsm.Engine) float64 {
	hosts := float64(len(g.Hosts))
	if float64(switches)*hosts > float64(ibsm.StoredEntries) &&
		topo.EstimateGraphMemory(g) == topo.EstimateMemory(len(g.Hosts), int(switches), len(g.Links)) {
		return hosts * bytesPerOnDemandHost
	}
	rows := switches
	if engine != ibsm.UpDown {
		for i := range g.Nodes {
			if g.Nodes[i].Kind == topo.Switch && g.Nodes[i].Tier == 0 {
				rows-- // server-internal: no row (ibsm's innerPicks)
			}
		}
	}
	return float64(rows) * hosts * bytesPerTableEntry
}

func gib(n int64) string {
	if n < 1<<30 {
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
}

// pathKey names a QP's route: the messages of one connection share it.
type pathKey struct {
	src, dst int32
	hash     uint32
	qp       int32
}

// cachedPath is a route (data path then ACK path) and the latency of the last payload size sent
// on it; key is the route's full key (the cache is indexed by its hash).
type cachedPath struct {
	key     pathKey
	p       []int32
	hops    int32
	payload int64
	lat     units.Time
}

// maxCachedPaths bounds the route cache (cleared when full).
const maxCachedPaths = 1 << 20

// paths returns the data and ACK paths of a QP, computed once per connection (a collective's
// chunks on one channel follow the same route).
func (e *engine) paths(src, dst int32, hash uint32, qp int32) (*cachedPath, error) {
	k := pathKey{src, dst, hash, qp}
	hk := sim.Mix64(uint64(src)<<40^uint64(dst)<<20^uint64(qp)) ^ uint64(hash)
	if c, ok := e.pathCache[hk]; ok && c.key == k {
		return c, nil
	}
	p, err := e.rt.path(src, dst, hash, qp, nil)
	if err != nil {
		return nil, err
	}
	hops := int32(len(p))
	if p, err = e.rt.ackPath(dst, src, hash, qp, p); err != nil {
		return nil, err
	}
	if len(e.pathCache) >= maxCachedPaths {
		clear(e.pathCache)
	}
	c := &cachedPath{key: k, p: p, hops: hops, payload: -1}
	e.pathCache[hk] = c
	return c, nil
}

// progressClock is the origin of engine.progressNs (a monotonic reading, kept as an integer so
// that an engine's state holds no time.Time).
var progressClock = time.Now()

// progressInterval returns the steps until the next call of Options.Progress. The callback is
// how a run sees an interrupt, so the interval follows the host time the steps take
// (nextProgressN): a step can cost microseconds or, at 131,072 GPUs or under adaptive
// routing's per-flow model, hundreds of milliseconds. With a fixed 4,096 steps, the 131,072-GPU
// step's forked runs went on more than 90 s after a SIGINT, and examples/compare-shared-1024.yaml
// 7-14 s after a SIGTERM (0.5 s with this rule). Only when the callback is called depends on
// the host; what the run computes does not.
func (e *engine) progressInterval() int64 {
	if e.opt.progressSteps > 0 {
		return e.opt.progressSteps
	}
	now := int64(time.Since(progressClock))
	if e.progressN == 0 {
		e.progressN = 1 // the first steps' cost is not known
	} else {
		e.progressN = nextProgressN(e.progressN, time.Duration(now-e.progressNs))
	}
	e.progressNs = now
	return e.progressN
}

// nextProgressN is the interval after one of n steps that took host time d: cut to the steps
// that would take 20 ms where they took more than 50 ms (at least 1), doubled where they took
// under 10 ms (up to 4,096), kept between: about 10-50 ms between two looks at the context.
func nextProgressN(n int64, d time.Duration) int64 {
	switch {
	case d > 50*time.Millisecond:
		return max(1, int64(float64(n)*float64(20*time.Millisecond)/float64(d)))
	case d < 10*time.Millisecond:
		return min(4096, n*2)
	}
	return n
}
