package fabric

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"time"

	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/sim"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

// The parallel packet engine: one run split into partitions of the network that run on worker
// goroutines in conservative windows (sim.Group; docs/architecture.md, "The parallel engine").
// Each partition has its own copy of the Network's run state (clock and queue, packet pool,
// counters, the message engine's counts) and its nodes point to that copy, so the per-hop code
// runs unchanged; what the partitions share (flows, message arrays, ports, switches) is written,
// element by element, by one partition only. The result is byte-identical to the sequential
// run's for every thread count: the kernel orders events by entity (sim.SetEntities), not by the
// interleaving.

// AutoThreadsHosts is the size from which the default thread count (SetThreads(0)) is every
// core: below it a run is short, and a window holds too few events to pay for its barrier
// (docs/architecture.md has the measured cost per window).
const AutoThreadsHosts = 512

// ThreadsAuto asks SetThreads for the default rule.
const ThreadsAuto = 0

// SetThreads sets how many worker goroutines Run uses: 1 (the default) runs sequentially, k > 1
// runs up to k partitions where the run allows (Parallel reports what it did and why), and
// ThreadsAuto applies the rule: every core (GOMAXPROCS) for a fabric of AutoThreadsHosts hosts
// or more, else 1.
func (n *Network) SetThreads(k int) error {
	if k < 0 {
		return fmt.Errorf("threads %d: want 0 (automatic) or a positive count", k)
	}
	n.threads, n.threadsSet = k, true
	return nil
}

// ParallelInfo describes how a run was split (Parallel).
type ParallelInfo struct {
	Threads    int        // the worker count asked for (after the default rule)
	Partitions int        // partitions run (1: sequential)
	Reason     string     // why the run is sequential, or how it was partitioned
	Lookahead  units.Time // the window length
	Windows    uint64     // windows run
	HandedOver uint64     // events handed from one partition to another
	Events     uint64     // events run
	// Balance is the events over the sum, window by window, of the busiest partition's: the
	// speedup the partitioning allows before synchronization costs (1 when sequential).
	Balance float64
	// CreditsHanded counts the InfiniBand credit updates delivered at window ends (exchangeFC),
	// and ExchangeTime the wall time that took, summed over the partitions (which exchange at
	// once, between windows: a synchronization cost; the only figure here that is not exact).
	CreditsHanded uint64
	ExchangeTime  time.Duration
	// Deferred counts the windows whose credit exchange ran at the start of the next window's
	// job instead of in a hand-off of its own (sim.Group.ExchangeFrom).
	Deferred uint64
	// Spun and Slept count the waits of the hand-offs between windows (sim.Group.Waits) that
	// ended while spinning and that slept: machine-dependent, like ExchangeTime.
	Spun, Slept uint64
	// PartEvents is, per partition, the events it ran: the run's static balance.
	PartEvents []uint64
	// Busy and Waited are, per partition, the wall time of its jobs (windows and exchanges)
	// and of its worker's waits for the next one (partition 0's: the coordinator's, for the
	// other workers to finish; sim.Group.Times): machine-dependent, like ExchangeTime.
	Busy, Waited []time.Duration
}

// Parallel returns how the last Run was split.
func (n *Network) Parallel() ParallelInfo {
	i := n.parInfo
	i.Events, i.Balance = n.sim.Events(), 1
	if n.par != nil {
		g := n.par.g
		i.Windows, i.HandedOver = g.Windows, g.HandedOver
		i.Spun, i.Slept = g.Waits()
		i.Busy, i.Waited = g.Times()
		i.Deferred = g.Deferred
		for _, c := range n.par.nets {
			if f := c.ibfc; f != nil {
				i.CreditsHanded += f.handed
				i.ExchangeTime += f.exchangeTime
			}
		}
		i.PartEvents = g.PartEvents()
		if g.CriticalEvents > 0 {
			i.Balance = float64(i.Events) / float64(g.CriticalEvents)
		}
	}
	return i
}

// parRun is a parallel run's state, shared by the main network and the partitions' copies.
type parRun struct {
	g      *sim.Group
	partOf []int32 // node ID -> partition
	nets   []*Network
	trace  *windowTrace // FABRICSIM_WINDOWS, for measuring
}

// WindowsEnv names the environment variable that, for measuring, has a parallel run write one
// CSV line a window to the file it names (sim.WindowWork: the window, its first and last
// instant in ps, then per partition the events it ran, those it handed to the others, and the
// wall time of its jobs in ns, the only machine-dependent column;
// docs/architecture.md, "Work per window"). A file that cannot be written is reported on
// stderr and the run goes on without it.
const WindowsEnv = "FABRICSIM_WINDOWS"

// windowTrace writes the windows of a run to FABRICSIM_WINDOWS's file.
type windowTrace struct {
	f   *os.File
	w   *bufio.Writer
	buf []byte
}

// newWindowTrace opens FABRICSIM_WINDOWS's file for k partitions, or returns nil.
func newWindowTrace(k int) *windowTrace {
	path := os.Getenv(WindowsEnv)
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "fabricsim: %s: %v (no window trace written)\n", WindowsEnv, err)
		return nil
	}
	t := &windowTrace{f: f, w: bufio.NewWriter(f)}
	t.w.WriteString("window,from_ps,bound_ps")
	for _, col := range []string{"events", "handed", "busy_ns"} {
		for p := 0; p < k; p++ {
			fmt.Fprintf(t.w, ",%s%d", col, p)
		}
	}
	t.w.WriteString("\n")
	return t
}

// add writes one window.
func (t *windowTrace) add(w *sim.WindowWork) {
	b := strconv.AppendUint(t.buf[:0], w.Window, 10)
	b = strconv.AppendInt(append(b, ','), int64(w.From), 10)
	b = strconv.AppendInt(append(b, ','), int64(w.Bound), 10)
	for _, l := range [][]uint64{w.Events, w.Handed} {
		for _, v := range l {
			b = strconv.AppendUint(append(b, ','), v, 10)
		}
	}
	for _, d := range w.Busy {
		b = strconv.AppendInt(append(b, ','), int64(d), 10)
	}
	t.buf = append(b, '\n')
	t.w.Write(t.buf)
}

// close flushes and closes the file.
func (t *windowTrace) close() {
	err := t.w.Flush()
	if cerr := t.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "fabricsim: %s: %v\n", WindowsEnv, err)
	}
}

// globalEntity is the kernel entity of events that belong to no node: the watchdog, the fault
// plan, samplers. It numbers after every node, so it runs last among events of equal time.
func (n *Network) globalEntity() int32 { return int32(len(n.g.Nodes)) }

// engineOf returns the message engine that runs node's message starts: the partition's copy.
func (n *Network) engineOf(node int32) *engine {
	if n.par == nil {
		return &n.eng
	}
	return &n.par.nets[n.par.partOf[node]].eng
}

// pending is the number of events not yet run.
func (n *Network) pending() int {
	if n.par != nil {
		return n.par.g.Pending()
	}
	return n.sim.Pending()
}

// sequentialReason says why a run of mg on n cannot be partitioned, or "" if it can: every
// mechanism that reads or writes state across nodes without a link in between (a policy's
// shared state, captures, faults, per-packet spraying's global counter) keeps it sequential.
// The policies that parallel_policy.go copies per partition (PFC, ECN RED, DCQCN, DWRR) run in
// parallel.
func (n *Network) sequentialReason() string {
	switch {
	case n.ibfc != nil && n.ibfc.packetFC:
		return "InfiniBand credit updates as packets run sequentially"
	case n.ibfc != nil && n.lossyPorts():
		return "InfiniBand links that lose frames (their credit refresh) run sequentially"
	case n.acker != nil || n.ints != nil:
		return "congestion control reading every ACK (HPCC, DCTCP, Swift) runs sequentially"
	case n.router != nil && n.ibRouter == nil:
		return "a router policy runs sequentially"
	case n.spray:
		return "per-packet spraying reads a global counter"
	case n.capture != nil:
		return "packet capture runs sequentially"
	case n.faults != nil:
		return "faults run sequentially"
	case n.bins != nil:
		return "binned counters run sequentially"
	case n.cfg.Kind == KindRoCE && n.cfg.RoCE.StormHost >= 0:
		return "a PFC storm runs sequentially"
	}
	if !n.partitionPolicies(&Network{}) {
		return "a flow-control, marking, congestion-control or scheduling policy that runs sequentially"
	}
	return ""
}

// lossyPorts reports whether a port loses frames (bit errors, random loss).
func (n *Network) lossyPorts() bool {
	for g := range n.ports {
		if n.ports[g].flags&portLossy != 0 {
			return true
		}
	}
	return false
}

// planParallel decides the run's partitions (after makeFlows and eng.init, before the first
// event is scheduled) and, for more than one, sets the parallel run up. An InfiniBand run that
// can be partitioned runs in windows for every thread count, one partition included (ibWindowed).
func (n *Network) planParallel(mg *msggraph.Graph) {
	threads := n.threads
	if !n.threadsSet {
		threads = 1
	}
	if threads == ThreadsAuto {
		threads = 1
		if len(n.g.Hosts) >= AutoThreadsHosts {
			threads = runtime.GOMAXPROCS(0)
		}
	}
	n.parInfo = ParallelInfo{Threads: threads, Partitions: 1}
	ib := n.ibfc != nil
	if threads < 2 && !ib {
		n.parInfo.Reason = "one thread"
		return
	}
	if why := n.sequentialReason(); why != "" {
		n.parInfo.Reason = why
		return
	}
	if ib {
		n.planIB(mg, threads)
		return
	}
	partOf, k := partitionNodes(n.g, threads)
	if k < 2 {
		n.parInfo.Reason = "the topology has no tier to cut (pods, leaves) into partitions"
		return
	}
	look := n.lookahead(partOf)
	if look <= 0 {
		n.parInfo.Reason = "a link between partitions has no delay (no lookahead)"
		return
	}
	if d := n.crossingDependency(mg, partOf); d >= 0 {
		n.parInfo.Reason = fmt.Sprintf("message %d depends on a message that completes in another partition", d)
		return
	}
	n.startParallel(partOf, k, look)
	n.parInfo.Partitions, n.parInfo.Lookahead = k, look
	n.parInfo.Reason = fmt.Sprintf("%d partitions cut below the top switch tier, lookahead %v", k, look)
}

// planIB sets up an InfiniBand run in windows. Credit updates cross a cut link without an
// event (ibcredit.go), so which updates a receiver knows of during a window must not depend on
// the cut: every link that some thread count cuts (those of the top switch tier, between the
// partitioner's units) hands its updates over at the window's end (ibCredits.flushFC,
// exchangeFC), with the lookahead and the checks of dependencies taken over those links, so
// that the windows and what each receiver knows are the same for 1, 2, 3 or 4 threads.
func (n *Network) planIB(mg *msggraph.Graph, threads int) {
	unitOf, groups, _ := partitionUnits(n.g)
	if groups < 2 {
		n.parInfo.Reason = "the topology has no tier to cut (pods, leaves) into partitions"
		return
	}
	look := n.lookahead(unitOf)
	if look <= 0 {
		n.parInfo.Reason = "a link to the top switch tier has no delay (no lookahead)"
		return
	}
	if d := n.crossingDependency(mg, unitOf); d >= 0 {
		n.parInfo.Reason = fmt.Sprintf("message %d depends on a message that completes below another top-tier group", d)
		return
	}
	partOf, k := partitionNodes(n.g, threads)
	n.startParallel(partOf, k, look)
	f := n.ibfc
	for g := range f.ports {
		f.ports[g].deferFC = unitOf[f.ports[g].port.Owner] != unitOf[n.peerNode[g]]
		f.ports[g].fcDest = partOf[n.peerNode[g]]
	}
	for _, c := range n.par.nets {
		cf := c.ibfc
		for w := range cf.out {
			cf.out[w] = make([][]fcHanded, k)
			cf.outFrom[w] = units.MaxTime
		}
	}
	n.par.g.Exchange, n.par.g.ExchangeFrom = n.exchangeFC, n.exchangeFrom
	n.parInfo.Partitions, n.parInfo.Lookahead = k, look
	n.parInfo.Reason = fmt.Sprintf("%d partitions cut below the top switch tier, lookahead %v, InfiniBand credits of top-tier links at window ends", k, look)
}

// partitionNodes splits g into at most parts partitions, balanced by port count (a port is a
// link end, and a link end's events are about the same whatever the tier: on the k=16
// permutation 1,830-1,960 events a port for hosts, edge, aggregation and core switches). The
// groups below the top tier (partitionUnits) are cut into contiguous runs by their own weight;
// then the top-tier switches, small units, fill each partition in turn up to an equal share,
// which evens out what the large groups leave (k=16 fat tree, 2 partitions: 8 pods and 32 cores
// each, where one run over all units gave 10 pods against 6 pods and 64 cores, 6.15 M against
// 5.59 M events). It returns each node's partition and the number of partitions (1
// when g has no top tier to remove or a single group). Any partitioning gives the same result
// bytes; this one only decides the load balance.
func partitionNodes(g *topo.Graph, parts int) ([]int32, int) {
	unitOf, groups, nunits := partitionUnits(g)
	partOf := make([]int32, len(g.Nodes))
	if groups < 2 {
		return partOf, 1
	}
	weight := make([]int, nunits)
	for i := range g.Nodes {
		weight[unitOf[i]] += len(g.Nodes[i].Ports)
	}
	groupTotal := 0
	for _, w := range weight[:groups] {
		groupTotal += w
	}
	parts = min(parts, groups)
	// Contiguous runs of groups: group j goes to the partition its weight's midpoint falls in
	// (every partition gets one, as groups >= parts).
	unitPart := make([]int32, nunits)
	load := make([]int, parts)
	acc := 0
	for u, w := range weight[:groups] {
		p := min((2*acc+w)*parts/(2*groupTotal), parts-1)
		unitPart[u] = int32(p)
		load[p] += w
		acc += w
	}
	// Top-tier switches, in order, fill the partitions in order up to an equal share each (a
	// switch goes to the first partition its weight's midpoint still fits in; the last takes
	// the rest): contiguous runs, so that what is indexed by node or port (the kernel's entity
	// counts, the policies' per-port arrays) is written by one partition a cache line but at a
	// run's ends.
	total := 0
	for _, w := range weight {
		total += w
	}
	q := 0
	for u := groups; u < nunits; u++ {
		w := weight[u]
		for q < parts-1 && (2*load[q]+w)*parts > 2*total {
			q++
		}
		unitPart[u] = int32(q)
		load[q] += w
	}
	for i := range partOf {
		partOf[i] = unitPart[unitOf[i]]
	}
	return partOf, parts
}

// partitionUnits returns the units the partitioner assigns whole: remove the top tier of
// switches; the groups that stay connected (by their lowest node) are units 0..groups-1, then
// each top-tier switch is one. Every link between two units has a top-tier switch at one end,
// and every partitioning cuts only such links. groups is 0 when g has no top tier to remove.
func partitionUnits(g *topo.Graph) (unitOf []int32, groups, nunits int) {
	top := 0
	for i := range g.Nodes {
		if nd := &g.Nodes[i]; nd.Kind == topo.Switch && nd.Tier > top {
			top = nd.Tier
		}
	}
	unitOf = make([]int32, len(g.Nodes))
	if top < 2 {
		return unitOf, 0, 1
	}
	isTop := func(id topo.NodeID) bool {
		nd := &g.Nodes[id]
		return nd.Kind == topo.Switch && nd.Tier == top
	}
	for i := range unitOf {
		unitOf[i] = -1
	}
	for i := range g.Nodes {
		id := topo.NodeID(i)
		if unitOf[i] >= 0 || isTop(id) {
			continue
		}
		u := int32(groups)
		members := []topo.NodeID{id}
		unitOf[i] = u
		for k := 0; k < len(members); k++ {
			for _, p := range g.Nodes[members[k]].Ports {
				if q := p.Peer; unitOf[q] < 0 && !isTop(q) {
					unitOf[q] = u
					members = append(members, q)
				}
			}
		}
		groups++
	}
	nunits = groups
	for i := range g.Nodes {
		if isTop(topo.NodeID(i)) {
			unitOf[i] = int32(nunits)
			nunits++
		}
	}
	return unitOf, groups, nunits
}

// lookahead is the least delay of a link between two partitions: its propagation plus the
// receiving switch's latency (Port.delay), the least time from an event in one partition to
// the arrival it causes in another.
func (n *Network) lookahead(partOf []int32) units.Time {
	look := units.MaxTime
	for gidx := range n.ports {
		p := &n.ports[gidx]
		if partOf[p.Owner] != partOf[n.peerNode[gidx]] {
			look = min(look, p.delay)
		}
	}
	return look
}

// crossingDependency returns a message whose dependency completes in another partition than
// the one that starts it, or -1. Such a start would be scheduled at the completion's time (plus
// the message's Delay) in another partition: within the window, so not exact; the run stays
// sequential. (A ring collective's steps start where the step before completed: they do not
// cross.)
func (n *Network) crossingDependency(mg *msggraph.Graph, partOf []int32) int {
	host := func(h int32) int32 { return partOf[n.g.Hosts[h]] }
	for d := range mg.Msgs {
		m := &mg.Msgs[d]
		if len(m.Deps) == 0 {
			continue
		}
		at := host(m.Src)
		for _, i := range m.Deps {
			dep := &mg.Msgs[i]
			// Where dependency i completes: a delay node at its source, a message where its
			// last byte is delivered (or, with fct_end: last_ack, where its last ACK returns).
			done := host(dep.Dst)
			if dep.Bytes == 0 || n.cfg.FCTEnd == FCTLastAck {
				done = host(dep.Src)
			}
			if done != at {
				return d
			}
		}
	}
	return -1
}

// startParallel makes the partitions: a sim.Group over the kernel, one copy of the network's run
// state per partition, and every node pointed at its partition's copy.
func (n *Network) startParallel(partOf []int32, k int, look units.Time) {
	ents := make([]int32, len(partOf)+1)
	copy(ents, partOf)
	ents[len(partOf)] = -1 // the global entity runs on the main Sim
	par := &parRun{partOf: partOf, g: sim.NewGroup(n.sim, k, ents, look)}
	for i := 0; i < k; i++ {
		c := new(Network)
		*c = *n
		c.sim = par.g.Part(i)
		c.pool = packetPool{ints: n.pool.ints}
		c.stats, c.packetHops, c.dataInjected, c.dataArrived, c.dataDropped, c.lastDelivery = Stats{}, 0, 0, 0, 0, 0
		c.eng.n, c.eng.done, c.eng.lastFinish = c, 0, 0
		c.par = par
		n.partitionPolicies(c) // checked by sequentialReason
		par.nets = append(par.nets, c)
	}
	n.par = par
	n.pointNodes(func(node topo.NodeID) *Network { return par.nets[partOf[node]] })
	par.g.AfterWindow = n.mergeParts
	par.g.BeforeMain = n.mergeParts
	if par.trace = newWindowTrace(k); par.trace != nil {
		par.g.Trace = par.trace.add
	}
}

// pointNodes points every node's switch, NIC and ports at the network net returns for it.
func (n *Network) pointNodes(net func(topo.NodeID) *Network) {
	for i := range n.g.Nodes {
		id := topo.NodeID(i)
		c := net(id)
		if sw := n.Switches[i]; sw != nil {
			sw.net = c
		}
		for g := n.portBase[i]; g < n.portBase[i+1]; g++ {
			n.ports[g].net = c
		}
		if h := n.g.Nodes[i].Host; h >= 0 {
			n.NICs[h].net = c
		}
	}
}

// mergeParts sums the partitions' counters into the main network (between windows, for the
// watchdog and progress, and at the end for the result).
func (n *Network) mergeParts() {
	var st Stats
	var hops uint64
	var inj, arr, drp, live int64
	var last units.Time
	done, lastFinish := 0, units.Time(0)
	for _, c := range n.par.nets {
		st.BytesSent += c.stats.BytesSent
		st.BytesDelivered += c.stats.BytesDelivered
		st.BytesRetransmitted += c.stats.BytesRetransmitted
		for i := range st.Drops {
			st.Drops[i] += c.stats.Drops[i]
		}
		st.Timeouts += c.stats.Timeouts
		st.NAKs += c.stats.NAKs
		st.OutOfOrder += c.stats.OutOfOrder
		st.Duplicates += c.stats.Duplicates
		hops += c.packetHops
		inj += c.dataInjected
		arr += c.dataArrived
		drp += c.dataDropped
		live += c.pool.live
		last = max(last, c.lastDelivery)
		done += c.eng.done
		lastFinish = max(lastFinish, c.eng.lastFinish)
	}
	n.stats, n.packetHops, n.dataInjected, n.dataArrived, n.dataDropped = st, hops, inj, arr, drp
	n.pool.live, n.lastDelivery, n.eng.done, n.eng.lastFinish = live, last, done, lastFinish
}

// endParallel merges the partitions' counters and points the nodes back at the main network.
func (n *Network) endParallel() {
	if n.par.trace != nil {
		n.par.trace.close()
	}
	n.mergeParts()
	n.mergePolicies()
	n.pointNodes(func(topo.NodeID) *Network { return n })
}
