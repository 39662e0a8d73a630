package flow

import (
	"fmt"
	"math"
	"slices"

	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/sim"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

// Per-flow adaptive routing (the default where the spread rule below asks for it;
// Options.PooledAR keeps the pooled bundles; docs/flow.md, "Adaptive routing on a permutation
// (row 16)").
//
// The pooled model (router.bundlePath) makes each adaptive stage one resource of the stage's
// links: the outcome of every flow spreading its bytes evenly over them. The packet backend's
// switches balance their own ports instead (fabric/ibroute.go: each data packet leaves by the
// allowed port with the fewest bytes queued on its VL, ports without credits last, ties to the
// forwarding table's port), and on a fat tree a flow's upward choices fix which downlink of the
// destination pod its bytes arrive on, so the flows into one edge switch load its downlinks
// unevenly.
//
// Here an adaptive QP is a family of flows, one per minimal path (the subnet manager's
// adaptive-routing groups at every switch, the forwarding table's path first). The family's
// first flow (its root) is the QP in its NIC's round robin and holds every byte to inject; the
// other members inject nothing. Where bytes of a member arrive at a switch with a choice (they
// left hop h, hop h+1 has alternatives among the members that share hops 0..h), the switch
// assigns them to the alternatives by the switch's own rule, packet by packet in the order they
// arrive within the step (arFlush, arSwitch), and they join that member's queue at hop h+1 and follow its path from there. The queues,
// credits and back-pressure of the engine then give the collisions their time. A member's
// bytes are counted on the family: the root's total is the family's, and the family finishes
// (every member ends at once) when the root has injected everything and the members together
// have delivered it.
//
// First-choice families (the default; Options.PerFlowARAllStages makes every stage's choice per
// flow, the first version; where a later stage's parallel links differ the spread rule makes every
// switch choose per flow by next switch, arState.bySwitch, "The spread rule at later stages"). Only the first adaptive switch on the path (the source's edge switch)
// chooses per flow: a member per switch its group's ports reach (parallel links to one switch
// one bundle: where they go next is the same), and from that switch on the path is the pooled
// model's (router.bundlePath: each later adaptive stage one bundle). On a
// fat tree that first choice is the one that sets the destination's load: the edge's uplink j
// leads to aggregation switch j, whose cores reach only aggregation switch j of the destination
// pod, so a flow's share on its edge's uplink j is its share on the downlink agg j -> destination
// edge, the link whose uneven volumes set row 16's completion (docs/flow.md). The aggregation
// switch's choice among its cores spreads a member over links that then meet again; pooling them
// keeps the downlinks' volumes, with 4 members per QP across pods of a k=8 fat tree instead of 16
// (row 16 within its targets on three permutations at half the instructions:
// TestPerFlowARFirstChoice). On two tiers the leaf's is the only choice and both are the same,
// but for parallel links (TestPerFlowARParallelLinks: within 2 % of a member per link; the
// 1,024-GPU compare's rail fabric has two links from each leaf to each spine, 16 members per QP
// instead of 64).
//
// Families are built where the fabric routes adaptively, no congestion control runs (its
// per-QP state would be split over the members) and no fault is planned (faults reroute single
// paths); every flow is then stepped (no quiet flows: a quiet flow's bytes pass its path
// without the switches' choices) and the symmetry reduction is off.

// maxARPaths bounds a family (larger path sets keep the pooled bundles).
const maxARPaths = 64

// arShape is the family structure of one (source, destination) pair: its minimal paths and,
// for every path k and hop h, the paths the switch at the head of hop h+1 may send path k's
// bytes on (alt[k][h], the member indexes, one per distinct next link, the forwarding table's
// port first; a single one where there is no choice).
type arShape struct {
	paths [][]int32
	alt   [][][]int32
}

// arFamily is one adaptive QP's flows.
type arFamily struct {
	shape   *arShape
	members []int32 // flow ids, by path index (members[0] is the root)
}

// arState is the engine's per-flow adaptive routing: the shapes by pair, each flow's family and
// member index, and the step's length (for the links' budgets).
type arState struct {
	shapes map[uint64]*arShape // by source << 32 | destination
	fams   []arFamily
	free   []int32
	famOf  []int32   // by flow id: family index, -1 none
	idx    []int32   // by flow id: member index
	carry  []float64 // by flow id: a quiet family member's rate, bytes/s (quiet families)
	tau    float64
	first  bool // per-flow choices at the first adaptive switch only, bundles after it
	// bySwitch: per-flow choices at every adaptive switch, a member per next switch (parallel
	// links to one switch one bundle, as the first choice's); set by the spread rule at later
	// stages (arLaterOverload).
	bySwitch bool
	pend     []arPend
	ports    []arPort
	portAt   []int32 // by resource and class: arSwitch's index of its port + 1, 0 outside arSwitch
	pkts     []arPkt
	got      []float64
	base     []int32
	pidx     []int32
	nalt     []int32
}

func newARState() *arState { return &arState{shapes: map[uint64]*arShape{}} }

// family returns flow fid's family, or nil.
func (a *arState) family(fid int32) *arFamily {
	if a == nil || int(fid) >= len(a.famOf) || a.famOf[fid] < 0 {
		return nil
	}
	return &a.fams[a.famOf[fid]]
}

func (a *arState) setFlow(fid, fam, k int32) {
	for int(fid) >= len(a.famOf) {
		a.famOf = append(a.famOf, -1)
		a.idx = append(a.idx, 0)
		a.carry = append(a.carry, 0)
	}
	a.famOf[fid], a.idx[fid], a.carry[fid] = fam, k, 0
}

// arShapeOf computes (once per pair) the minimal paths from src to dst by the adaptive groups,
// the forwarding table's path first (first-choice families: one per port of the first adaptive
// switch's group, each continued by the pooled model's bundles); nil where there is a single
// path or too many.
func (e *engine) arShapeOf(src, dst int32) *arShape {
	key := uint64(src)<<32 | uint64(uint32(dst))
	if s, ok := e.ar.shapes[key]; ok {
		return s
	}
	r := e.rt
	g := r.g
	dn := g.Hosts[dst]
	var paths [][]int32
	var walk func(n topo.NodeID, pre []int32, chose bool) bool
	walk = func(n topo.NodeID, pre []int32, chose bool) bool {
		if n == dn {
			paths = append(paths, slices.Clone(pre))
			return len(paths) <= maxARPaths
		}
		if g.Nodes[n].Kind != topo.Switch || len(pre) > 64 {
			return false
		}
		if chose && e.ar.first {
			p, err := r.bundlePath(n, dst, slices.Clone(pre))
			if err != nil {
				return false
			}
			paths = append(paths, p)
			return len(paths) <= maxARPaths
		}
		grp := r.ib.Group(n, int(dst))
		lft := r.ib.Port(n, int(dst))
		if lft < 0 {
			return false
		}
		order := []int32{lft}
		if len(grp) > 1 {
			for _, p := range grp {
				if p != lft {
					order = append(order, p)
				}
			}
		}
		if (e.ar.first || e.ar.bySwitch) && len(order) > 1 {
			// The first choice (bySwitch: every choice): a member per next switch, parallel
			// links to it one bundle.
			var peers []topo.NodeID
			var chans [][]int32
			for _, p := range order {
				peer := g.Nodes[n].Ports[p].Peer
				i := slices.Index(peers, peer)
				if i < 0 {
					i = len(peers)
					peers = append(peers, peer)
					chans = append(chans, nil)
				}
				chans[i] = append(chans[i], r.net.channel(n, p))
			}
			for i, peer := range peers {
				hop := chans[i][0]
				if len(chans[i]) > 1 {
					slices.Sort(chans[i])
					hop = r.net.bundle(chans[i])
				}
				if !walk(peer, append(pre, hop), true) {
					return false
				}
			}
			return true
		}
		for _, p := range order {
			if !walk(g.Nodes[n].Ports[p].Peer, append(pre, r.net.channel(n, p)), chose || len(order) > 1) {
				return false
			}
		}
		return true
	}
	n := g.Hosts[src]
	ok := walk(g.Nodes[n].Ports[0].Peer, []int32{r.net.channel(n, 0)}, false)
	var s *arShape
	if ok && len(paths) > 1 {
		s = &arShape{paths: paths}
		s.alt = make([][][]int32, len(paths))
		for k, p := range paths {
			s.alt[k] = make([][]int32, len(p))
			for h := 0; h+1 < len(p); h++ {
				// The members sharing hops 0..h, one per distinct hop h+1 (the first with it: the
				// forwarding table's order, so the first is the table's port).
				var alt []int32
				for j, q := range paths {
					// (First-choice paths may differ in length after the choice, where a pair
					// constraint sits between two of the pooled stages.)
					if len(q) <= h+1 || !slices.Equal(q[:h+1], p[:h+1]) {
						continue
					}
					dup := false
					for _, a := range alt {
						if paths[a][h+1] == q[h+1] {
							dup = true
							break
						}
					}
					if !dup {
						alt = append(alt, int32(j))
					}
				}
				s.alt[k][h] = alt
			}
		}
	}
	e.ar.shapes[key] = s
	return s
}

// anyFamily reports whether a message of mg is between hosts with an adaptive choice to make
// per flow (a family, arShapeOf). Where none is, PerFlowAREverywhere leaves the run to the
// pooled model as it runs with PooledAR, its quiet flows included: every flow stepped would change nothing but the
// cost (and the step's resolution of the flows' transitions; measured: the MoE 3:1 compare's
// ib-ndr step 4.748 ms with every flow stepped, 4.830 ms as by default, with no family formed,
// a leaf's two uplinks reaching one spine).
func (e *engine) anyFamily(mg *msggraph.Graph) bool {
	for i := range mg.Msgs {
		if m := &mg.Msgs[i]; m.Src != m.Dst && e.arShapeOf(m.Src, m.Dst) != nil {
			return true
		}
	}
	return false
}

// The spread rule. Per-flow choices matter where they leave a destination edge switch's
// downlinks unevenly loaded and the most loaded of them then queues; elsewhere the pooled
// bundles (equal shares, no step where nothing queues) give the same times at a fraction of the
// cost. With k downlinks into an edge switch carrying n equal QPs, each QP's share per downlink
// deviating by sigma from 1/k, the downlinks' loads spread by about s = k sigma / sqrt(n) of
// their mean. sigma = 0.093 is the packet backend's deviation of a flow's share per edge uplink
// on row 16 (docs/flow.md, "Adaptive routing on a permutation"); the estimate gives 19 % on row
// 16 (k = n = 4; the packet backend's downlinks 474 +- 90 packets) and 0.9 % on row 9 (k = 2,
// n = 432; the packet backend's within 1.8 % of their mean, about two deviations). A source
// edge switch balances its own uplinks, so the n_S of its N_S QPs that go to one destination
// switch deviate together by sigma sqrt(n_S (N_S - n_S) / (N_S - 1)) (the sum of deviations
// that add to zero), not sigma sqrt(n_S): s = k sigma sqrt(sum_S of that squared) / n, none
// where a source switch sends all its QPs to one destination switch (a ring's leaf crossing).
// The spread only costs time where the downlinks are loaded: with the destinations' links able
// to ask rho times the downlinks' capacity (each destination link at most its rate, and at most
// what its QPs' sources can send: a QP at its NIC's rate shared among the NIC's QPs), the
// pooled bundles carry the downlinks at rho of their rate (the destinations' links bind where
// rho < 1), and the most loaded downlink is asked for about rho (1 + g s), g = 1.5 being row
// 16's ratio of the pooled model's shortfall to its spread (rho = 1 there: -29 % with s = 19 %).
// So per-flow choices lengthen the run by about max(1, rho (1 + g s)) / max(1, rho) - 1, and the
// run forms families where that exceeds arOverMin = 5 %, half the completion target (10 %,
// validate_test.go): where it does not, the pooled model's estimated shortfall is within half
// the target. Row 16: 27.9 %, families; row 9 (rho 2.35, s 1.0 %): 1.6 %, pooled; row 12 and
// the 1,024-GPU compare's rings (s = 0: one destination leaf per source leaf and depth) and the
// 70B pipeline class (rho 0.49: each NIC sends to two stages): none, pooled
// (TestPerFlowARSpreadRule, TestPerFlowARRulePipeline).
//
// Where the parallel links into the destination differ from the sources' (arMismatch, factor f:
// 1 plus the share of the QPs that the sources' own balance puts beyond the links' shares), the
// most loaded downlink is asked for about rho f (1 + g s): the estimate is max(1, rho f (1 + g
// s)) / max(1, rho). f = 1 on rows 9, 12 and 16 and the pipeline class; 1.25 on the rail plane of
// the 1,024-GPU jitter example (validation rows 17 and 18: 1.28 and 1.36, families; the EP
// all-to-all was 1.024 without f, pooled, and 11.1 % short of the packet backend's completion).
//
// The rule is decided per run, before anything is stepped (bundles and families on the same
// links would count their capacity twice): n, rho and k are counted per destination edge switch
// and per dependency depth (the messages of one depth of the graph, the ones that can run at
// once: a chain's later messages do not share the downlinks with its first), QPs per message
// from qpSplit; the run forms families where the largest estimate over the edge switches and
// depths exceeds 1 + arOverMin. Messages' start times and delays are not looked at.
const (
	arShareSigma = 0.093
	arSpreadGain = 1.5
	arOverMin    = 0.05
)

// arIns is the links into host dst's edge switch that a QP from host src may arrive by, read
// from the pooled model's path (the stage before the destination's link; sorted), and outs the
// links its first adaptive stage chooses among (the source edge switch's uplinks), or nil, nil
// where the QP has no adaptive choice to make per flow (as arShapeOf: the first adaptive stage's
// links lead to one switch, or there is none). They stand for every pair of hosts under the
// same two edge switches (arOverload).
func (e *engine) arIns(src, dst int32) (ins, outs []int32) {
	p, err := e.rt.path(src, dst, 0, 0, nil)
	if err != nil || len(p) < 3 {
		return nil, nil
	}
	res := e.net.res
	for _, r := range p[1:] {
		if res[r].links > 1 && !res[r].pair {
			if res[r].to < 0 { // links to several switches
				outs = slices.Clone(res[r].chans)
			}
			break
		}
	}
	if outs == nil {
		return nil, nil
	}
	for h := len(p) - 2; h >= 1; h-- {
		if r := &e.net.res[p[h]]; !r.pair {
			if r.links > 1 {
				return slices.Clone(r.chans), outs
			}
			return []int32{p[h]}, outs
		}
	}
	return nil, nil
}

// arKey is an edge switch and a dependency depth, or (arOverload's load.src) a source edge
// switch and its QPs.
type arKey struct {
	sw    topo.NodeID
	depth int32
}

// arOverload is the spread rule's estimate for mg: the largest max(1, rho f (1 + arSpreadGain
// s)) / max(1, rho) over destination edge switches and dependency depths (1 where no message has a
// family).
func (e *engine) arOverload(mg *msggraph.Graph) float64 {
	type load struct {
		n        int64
		ins, dst []int32   // the links into the edge switch, the destinations' links (distinct)
		src      []arKey   // the sources' edge switches (depth: the QPs from each)
		outs     [][]int32 // by source edge switch: its links the first adaptive stage chooses among
		want     []float64 // by destination link: what its QPs' sources can send, bytes/s
	}
	pk := func(a topo.NodeID, depth int32) uint64 { return uint64(a)<<32 | uint64(uint32(depth)) }
	depth := make([]int32, len(mg.Msgs))
	loads := map[uint64]*load{} // by destination edge switch and depth
	from := map[uint64]int64{}  // by source edge switch and depth: the QPs with a family
	nic := map[uint64]int64{}   // by source host and depth: its QPs
	type qps struct {
		l        *load
		host     int32
		src, dst int32 // the source's and the destination's host links (their NICs' rates)
		depth    int32
		n        int64
	}
	var all []qps
	var keys []uint64
	type insOuts struct{ ins, outs []int32 }
	pairs := map[uint64]insOuts{} // by source and destination edge switch: arIns
	for i := range mg.Msgs {
		m := &mg.Msgs[i]
		for _, d := range m.Deps {
			depth[i] = max(depth[i], depth[d]+1)
		}
		if m.Src == m.Dst || m.Bytes <= 0 {
			continue
		}
		nq, _ := e.qpSplit(m)
		nic[pk(topo.NodeID(m.Src), depth[i])] += nq
		first, last := e.net.channel(e.g.Hosts[m.Src], 0), e.net.channel(e.g.Hosts[m.Dst], 0)
		srcSw, dstSw := e.net.res[first].to, e.net.res[last].to
		pair := uint64(srcSw)<<32 | uint64(uint32(dstSw))
		io, ok := pairs[pair]
		if !ok {
			io.ins, io.outs = e.arIns(m.Src, m.Dst)
			pairs[pair] = io
		}
		ins := io.ins
		if ins == nil {
			continue
		}
		k := pk(dstSw, depth[i])
		l := loads[k]
		if l == nil {
			l = &load{}
			loads[k] = l
			keys = append(keys, k)
		}
		l.n += nq
		all = append(all, qps{l, m.Src, first, last, depth[i], nq})
		from[pk(srcSw, depth[i])] += nq
		if j := slices.IndexFunc(l.src, func(x arKey) bool { return x.sw == srcSw }); j >= 0 {
			l.src[j].depth += int32(nq)
		} else {
			l.src = append(l.src, arKey{srcSw, int32(nq)})
			l.outs = append(l.outs, io.outs)
		}
		if l.ins == nil {
			l.ins = ins
		} else if !slices.Equal(l.ins, ins) {
			for _, r := range ins {
				if !slices.Contains(l.ins, r) {
					l.ins = append(slices.Clip(l.ins), r)
				}
			}
		}
	}
	res := e.net.res // (arIns's paths may add bundles)
	// What the destinations' links can be asked for: each QP at its source NIC's rate shared by
	// the NIC's QPs of its depth, each destination link at most its rate.
	for _, q := range all {
		w := float64(q.n) * res[q.src].rate / float64(nic[pk(topo.NodeID(q.host), q.depth)])
		if j := slices.Index(q.l.dst, q.dst); j >= 0 {
			q.l.want[j] += w
		} else {
			q.l.dst, q.l.want = append(q.l.dst, q.dst), append(q.l.want, w)
		}
	}
	most := 1.0
	for _, k := range keys {
		l := loads[k]
		var ups []topo.NodeID // the members: one per switch the links come from
		for _, r := range l.ins {
			if !slices.Contains(ups, res[r].from) {
				ups = append(ups, res[r].from)
			}
		}
		if len(ups) < 2 {
			continue
		}
		var in, out float64
		for _, r := range l.ins {
			in += res[r].rate
		}
		for j, r := range l.dst {
			out += min(res[r].rate, l.want[j])
		}
		// A source switch balances its own uplinks: the n_S of its N_S QPs that come here
		// deviate together by sqrt(n_S (N_S - n_S) / (N_S - 1)) sigma, none where N_S = n_S.
		var v float64
		for _, x := range l.src {
			nS, NS := float64(x.depth), float64(from[pk(x.sw, int32(uint32(k)))])
			if NS > nS {
				v += nS * (NS - nS) / (NS - 1)
			}
		}
		s := float64(len(ups)) * arShareSigma * math.Sqrt(v) / float64(l.n)
		rho := out / in
		f := e.arMismatch(l.ins, ups, l.src, l.outs, in, float64(l.n)) // parallel links that differ
		most = max(most, max(1, rho*f*(1+arSpreadGain*s))/max(1, rho))
	}
	if later := e.arLaterOverload(mg, depth); later > 1+arOverMin {
		// A later stage's parallel links differ where it is loaded: first-choice families would
		// pool that stage (arLaterOverload), so every stage chooses per flow.
		if e.ar != nil && e.ar.first {
			e.ar.first, e.ar.bySwitch = false, true
		}
		most = max(most, later)
	}
	return most
}

// The spread rule at later stages. First-choice families pool every adaptive stage after the
// source's edge switch, so the mismatch factor above is counted at the first choice only. Where
// a later stage's parallel links differ (the shared-fabric example's three tiers: a pod's spine
// has 2, 2, 1, 1, 1, 1 links to the six cores of its plane, which pair of cores gets two turns
// with the pod, so a spine's bytes to another pod land half on two cores that have a quarter of
// the links into the destination spine), the pooled stage gives the pair constraint's outcome,
// every switch routing in concert, and the packet backend's spines balance their own ports
// instead: on its aggressor's EP all-to-all (validation row 19) the pooled bundles are 26.9 % and
// first-choice families 25.4 % short of the packet backend's completion, every stage per flow
// within 2.2 % on all three figures (docs/flow.md, "The spread rule at later stages"). arLaterOverload counts the same factor at every adaptive stage after the
// first: each QP's bytes spread from its source edge switch stage by stage, each switch over its
// own links of the pooled path in proportion to their rates (a switch balancing its ports); at a
// stage whose links lead to several switches, the switches Y its next stage's links end on play
// the destination edge switch's part (ins: the next stage's links into Y, ups: the switches they
// come from, the sources: the switches choosing among links to ups, each with the QPs' share that
// reaches it). The estimate per Y and dependency depth is max(1, rho f) / max(1, rho), rho being
// what the QPs through Y can send (each at its NIC's rate shared by the NIC's QPs of its depth,
// and at most its destination NIC's share, times the share that passes Y) over Y's links'
// rate; no spread term (the spread of shares is the first choice's, counted above). Where the
// largest exceeds 1 + arOverMin, arOverload makes every adaptive switch choose per flow for the
// run, a member per next switch (arState.bySwitch; with Options.PerFlowARAllStages the members
// stay per link): the simplest sound form, decided per run as the rule itself is (row 19: the
// same figures as every stage per link, at 24 members per QP instead of 40); a per-stage mix (per
// flow only at the stages that mismatch) would cost less and is not built.
// f = 1 at every later stage of a k-ary fat tree (an aggregation switch has one link to each core
// of its group, a core one to each pod) and there is no later stage on two tiers (rows 9, 12, 17,
// 18, the 1,024-GPU default compare), so no other run changes.

// arLater is one later adaptive stage of a pair's pooled path, seen from one switch y its next
// stage ends on: the links into y (ins), their switches (ups), and the switches choosing among
// links to ups (src), each with the share of a QP's bytes that reaches it (w) and its links
// (outs).
type arLater struct {
	y    topo.NodeID
	ins  []int32
	ups  []topo.NodeID
	src  []topo.NodeID
	w    []float64
	outs [][]int32
}

// arLaterStages is arLater for every later adaptive stage of the pooled path from host src to
// host dst (nil where there is none).
func (e *engine) arLaterStages(src, dst int32) []arLater {
	p, err := e.rt.path(src, dst, 0, 0, nil)
	if err != nil || len(p) < 4 {
		return nil
	}
	res := e.net.res
	var stages [][]int32 // the switch-to-switch stages' links
	for _, r := range p[1 : len(p)-1] {
		if res[r].pair {
			continue
		}
		if res[r].links > 1 {
			stages = append(stages, res[r].chans)
		} else {
			stages = append(stages, []int32{r})
		}
	}
	multi := func(cs []int32) bool { // links to several switches
		for _, c := range cs {
			if res[c].to != res[cs[0]].to {
				return true
			}
		}
		return false
	}
	var out []arLater
	dist := map[topo.NodeID]float64{res[p[0]].to: 1} // a QP's share by switch
	var nodes []topo.NodeID                          // dist's keys in order of arrival
	nodes = append(nodes, res[p[0]].to)
	chose := false
	for i, cs := range stages {
		if chose && multi(cs) && i+1 < len(stages) {
			var ys []topo.NodeID
			for _, c := range stages[i+1] {
				if !slices.Contains(ys, res[c].to) {
					ys = append(ys, res[c].to)
				}
			}
			for _, y := range ys {
				l := arLater{y: y}
				for _, c := range stages[i+1] {
					if res[c].to == y {
						l.ins = append(l.ins, c)
						if !slices.Contains(l.ups, res[c].from) {
							l.ups = append(l.ups, res[c].from)
						}
					}
				}
				for _, x := range nodes {
					var mine []int32
					reach := false
					for _, c := range cs {
						if res[c].from == x {
							mine = append(mine, c)
							reach = reach || slices.Contains(l.ups, res[c].to)
						}
					}
					if reach && dist[x] > 0 {
						l.src, l.w, l.outs = append(l.src, x), append(l.w, dist[x]), append(l.outs, mine)
					}
				}
				if len(l.ups) > 1 && len(l.src) > 0 {
					out = append(out, l)
				}
			}
		}
		chose = chose || multi(cs)
		next := map[topo.NodeID]float64{}
		var nn []topo.NodeID
		for _, x := range nodes {
			var tot float64
			for _, c := range cs {
				if res[c].from == x {
					tot += res[c].rate
				}
			}
			for _, c := range cs {
				if res[c].from == x && tot > 0 {
					if _, ok := next[res[c].to]; !ok {
						nn = append(nn, res[c].to)
					}
					next[res[c].to] += dist[x] * res[c].rate / tot
				}
			}
		}
		dist, nodes = next, nn
	}
	return out
}

// arLaterOverload is the spread rule's estimate at later adaptive stages (above): the largest
// max(1, rho f) / max(1, rho) over the switches y of every pair's later stages and dependency
// depths (1 where there is none). depth is arOverload's, by message.
func (e *engine) arLaterOverload(mg *msggraph.Graph, depth []int32) float64 {
	type load struct {
		n, want float64
		ins     []int32
		ups     []topo.NodeID
		src     []topo.NodeID
		w       []float64
		outs    [][]int32
	}
	pk := func(a topo.NodeID, depth int32) uint64 { return uint64(a)<<32 | uint64(uint32(depth)) }
	res := e.net.res
	pairs := map[uint64][]arLater{} // by source and destination edge switch
	nicOut := map[uint64]float64{}  // by host and depth: QPs it sends
	nicIn := map[uint64]float64{}   // by host and depth: QPs it receives
	for i := range mg.Msgs {
		m := &mg.Msgs[i]
		if m.Src == m.Dst || m.Bytes <= 0 {
			continue
		}
		nq, _ := e.qpSplit(m)
		nicOut[pk(topo.NodeID(m.Src), depth[i])] += float64(nq)
		nicIn[pk(topo.NodeID(m.Dst), depth[i])] += float64(nq)
	}
	loads := map[uint64]*load{}
	var keys []uint64
	for i := range mg.Msgs {
		m := &mg.Msgs[i]
		if m.Src == m.Dst || m.Bytes <= 0 {
			continue
		}
		first, last := e.net.channel(e.g.Hosts[m.Src], 0), e.net.channel(e.g.Hosts[m.Dst], 0)
		pair := uint64(res[first].to)<<32 | uint64(uint32(res[last].to))
		st, ok := pairs[pair]
		if !ok {
			st = e.arLaterStages(m.Src, m.Dst)
			pairs[pair] = st
			res = e.net.res // (the paths may add bundles)
		}
		if len(st) == 0 {
			continue
		}
		nq, _ := e.qpSplit(m)
		q := float64(nq)
		want := min(q*res[first].rate/nicOut[pk(topo.NodeID(m.Src), depth[i])], q*res[last].rate/nicIn[pk(topo.NodeID(m.Dst), depth[i])])
		for _, s := range st {
			k := pk(s.y, depth[i])
			l := loads[k]
			if l == nil {
				l = &load{ins: s.ins, ups: s.ups}
				loads[k] = l
				keys = append(keys, k)
			}
			for _, r := range s.ins {
				if !slices.Contains(l.ins, r) {
					l.ins = append(slices.Clip(l.ins), r)
					if !slices.Contains(l.ups, res[r].from) {
						l.ups = append(slices.Clip(l.ups), res[r].from)
					}
				}
			}
			var through float64
			for j, x := range s.src {
				through += s.w[j]
				if u := slices.Index(l.src, x); u >= 0 {
					l.w[u] += q * s.w[j]
				} else {
					l.src, l.w, l.outs = append(l.src, x), append(l.w, q*s.w[j]), append(l.outs, s.outs[j])
				}
			}
			l.n += q * through
			l.want += want * through
		}
	}
	most := 1.0
	for _, k := range keys {
		l := loads[k]
		var in float64
		for _, r := range l.ins {
			in += res[r].rate
		}
		if in <= 0 || l.n <= 0 {
			continue
		}
		rho := l.want / in
		f := e.arMismatchW(l.ins, l.ups, l.w, l.outs, in, l.n)
		most = max(most, max(1, rho*f)/max(1, rho))
	}
	return most
}

// arMismatch is the spread rule's mismatch factor for a destination edge switch whose links
// in are ins (in bytes/s in all), from the switches ups, with n QPs from the source edge
// switches src (depth: the QPs from each) that choose among the links outs[j]: 1 plus the share
// of the QPs that land beyond the links' shares of the switches ups when each source spreads its
// QPs over its own links in proportion to their rates (a switch balancing its own ports; the
// pooled bundles' outcome is every switch at its links' share). That share has to find another
// way, by the switches' choices under back-pressure, or queue. It is 0 where every source has
// the destination's share of links to each switch (a fat tree; leaves with as many links to
// every spine), and above 0 where the parallel links differ: a two-tier rail plane of radix-16
// leaves at 3:1 has four uplinks over three spines, two to one of them (which one turns with the
// leaf), so a leaf's QPs to a leaf whose pair goes to another spine put half of them on a spine
// with a quarter of the links into it (a share of 0.25 beyond: factor 1.25; the packet backend
// 12.5 and 38 % slower than the pooled bundles on validation rows 17 and 18, the families -2.0
// and -3.0 %). A source whose links lead to other switches than ups (a fat tree's aggregation
// layer in another pod) counts at the links' shares. The factor is a decision, as the rest of the
// rule: it does not predict the shortfall (back-pressure moves part of that share).
func (e *engine) arMismatch(ins []int32, ups []topo.NodeID, src []arKey, outs [][]int32, in, n float64) float64 {
	w := make([]float64, len(src))
	for j, x := range src {
		w[j] = float64(x.depth)
	}
	return e.arMismatchW(ins, ups, w, outs, in, n)
}

// arMismatchW is arMismatch with the sources' QPs as weights w (arLaterOverload: a QP's share
// reaching a later stage's switch).
func (e *engine) arMismatchW(ins []int32, ups []topo.NodeID, w []float64, outs [][]int32, in, n float64) float64 {
	res := e.net.res
	capUp := make([]float64, len(ups)) // by switch of ups: its links' rate into the edge switch
	for _, r := range ins {
		capUp[slices.Index(ups, res[r].from)] += res[r].rate
	}
	load := make([]float64, len(ups)) // QPs by switch of ups
	by := make([]float64, len(ups))
	for j, x := range w {
		clear(by)
		var tot float64
		for _, c := range outs[j] {
			if u := slices.Index(ups, res[c].to); u >= 0 {
				by[u] += res[c].rate
				tot += res[c].rate
			}
		}
		for u := range ups {
			if tot > 0 {
				load[u] += x * by[u] / tot
			} else {
				load[u] += x * capUp[u] / in
			}
		}
	}
	f := 1.0
	for u := range ups {
		f += max(0, load[u]/n-capUp[u]/in)
	}
	return f
}

// arFamilySize is the size of the family between host 0 and the last host and between host 0
// and the middle one (on a tree, hosts of other pods or planes: the most paths), for memory
// planning; 0 without per-flow routing.
func (e *engine) arFamilySize() int {
	n := len(e.g.Hosts)
	if e.ar == nil || n < 2 {
		return 0
	}
	most := 1
	for _, d := range []int{n - 1, n / 2} {
		if s := e.arShapeOf(0, int32(d)); s != nil && d > 0 {
			most = max(most, len(s.paths))
		}
	}
	return most
}

// startFamily starts QP qp of message msg as a family of flows over shape's paths (startFlow's
// work for each member).
func (e *engine) startFamily(msg int32, m *msggraph.Message, qp int32, payload int64, cls int32, t units.Time, shape *arShape) error {
	a := e.ar
	var fi int32
	if n := len(a.free); n > 0 {
		fi = a.free[n-1]
		a.free = a.free[:n-1]
	} else {
		fi = int32(len(a.fams))
		a.fams = append(a.fams, arFamily{})
	}
	fam := &a.fams[fi]
	fam.shape = shape
	fam.members = fam.members[:0]
	hash := qpHash(e.cfg.Seed, msg, m, qp)
	ack, err := e.rt.ackPath(m.Dst, m.Src, hash, qp, nil)
	if err != nil {
		return err
	}
	if len(e.rc) < len(e.net.res)*e.nc {
		e.growState() // the shape created a bundle (arShapeOf, first-choice families)
	}
	wire := e.wireBytes(payload)
	var lat units.Time = -1
	for k, p := range shape.paths {
		fid := e.newFlow()
		a.setFlow(fid, fi, int32(k))
		fam.members = append(fam.members, fid)
		hops, ackHops := int32(len(p)), int32(len(ack))
		off := e.alloc(hops + ackHops)
		copy(e.path[off:off+hops], p)
		copy(e.path[off+hops:off+hops+ackHops], ack)
		for h := int32(0); h < hops; h++ {
			e.owner[off+h].flow, e.owner[off+h].hop, e.owner[off+h].res = fid, h, p[h]
		}
		f := &e.flows[fid]
		ver := f.ver + 1
		*f = flowState{ver: ver, msg: msg, qp: qp, src: m.Src, cls: cls, hops: hops, off: off, ackOff: off + hops, ackHops: ackHops, start: t,
			rng: uint64(msg)<<20 ^ uint64(qp) ^ e.drawSeed()*0x9e3779b97f4a7c15, hidx: -1}
		if k == 0 {
			f.total, f.rem = wire, wire
			lat = e.latency(p, payload)
		}
		f.lat = lat // the paths are alike in length and rates
		f.from, f.t0 = t, t
		for h, r := range p {
			e.join(r, fid, int32(h), off)
		}
		e.live++
		if k > 0 {
			e.qpLeft[msg]++ // joinMessage counts the root
		}
	}
	e.lastStart = max(e.lastStart, t)
	root := fam.members[0]
	hs := &e.hostSt[m.Src]
	e.flows[root].hidx = int32(len(hs.flows))
	hs.flows = append(hs.flows, root)
	for _, fid := range fam.members {
		e.heatFlow(fid)
	}
	e.heatHost(m.Src)
	e.stationary = false
	return nil
}

// famFinished is finished for a family member: the root has injected every byte and the members
// together delivered them.
func (e *engine) famFinished(fam *arFamily) bool {
	root := &e.flows[fam.members[0]]
	if root.rem != 0 || root.done {
		return false
	}
	var d float64
	for _, fid := range fam.members {
		d += e.flows[fid].deliv
	}
	return d >= root.total-eps(root.total)
}

// famEnded marks every member of fid's family done, ending with fid's last byte (tOut), for
// retirement after the sweep; fid itself the caller has listed.
func (e *engine) famEnded(fam *arFamily, fid int32) {
	tOut := e.flows[fid].tOut
	for _, m := range fam.members {
		if m == fid {
			continue
		}
		f := &e.flows[m]
		f.done = true
		f.tOut = tOut
		e.ended = append(e.ended, m)
	}
}

// famRelease frees a family whose members have all ended (endFlow of its root).
func (e *engine) famRelease(fid int32) {
	a := e.ar
	fi := a.famOf[fid]
	a.famOf[fid] = -1
	if a.idx[fid] == 0 {
		a.free = append(a.free, fi)
	}
}

// Quiet families. A family whose paths hold no queue and no throttle, whose root injects at the
// rate it had the step before, goes quiet as a whole (settle cools its root's host): each member
// then carries a constant share of the root's rate, the share of the root's bytes it delivered in
// the last step, and the family is no longer stepped. Where no port a switch may choose has a
// queue, the choices of a step leave nothing behind (the next step's choices start from the
// queues alone), so what a member carries matters only as the load the other flows see on its
// links (quietLoad: the ports' budgets in arSwitch, preheat). A queue on any member's path, a
// new flow that would overload a link one crosses (preheat), or a change at the root's host
// (its round robin's shares: reshare is refused) heats the whole family, its bytes brought up to
// date. Off unless Options.PerFlowARQuiet (TestPerFlowARQuiet).

// famCoolable is coolable for a family's root: the root steady, no byte of any member queued,
// nothing on any member's path queued or throttled, and the members' last step known.
func (e *engine) famCoolable(fam *arFamily, tau float64) bool {
	root := &e.flows[fam.members[0]]
	if root.rem <= 0 || root.rate <= 0 || math.Abs(root.rate-root.prevRate) > relTol*root.rate {
		return false
	}
	if e.loss != nil && (e.loss.random || e.loss.state(fam.members[0]).pending) {
		return false
	}
	var out float64
	for _, fid := range fam.members {
		f := &e.flows[fid]
		if !f.hot {
			return false
		}
		out += f.out
		for h, r := range e.path[f.off : f.off+f.hops] {
			if h > 0 && e.owner[f.off+int32(h)].back > 0 {
				return false
			}
			if e.net.res[r].q > 0 || e.fc.throttled(r) {
				return false
			}
		}
	}
	return out > 0
}

// coolFamily makes a hot family quiet: each member at its share of the last step's deliveries
// times the root's rate; the root's end scheduled.
func (e *engine) coolFamily(fam *arFamily) {
	a := e.ar
	rid := fam.members[0]
	root := &e.flows[rid]
	var out float64
	for _, fid := range fam.members {
		out += e.flows[fid].out
	}
	for _, fid := range fam.members {
		f := &e.flows[fid]
		a.carry[fid] = root.rate * f.out / out
		e.unhot(fid)
		f.ver++
		f.t0 = e.now
		e.coolPath(fid)
	}
	e.setEnd(rid, root.rem, root.rate)
}

// materializeFamily brings a quiet family's bytes up to now: the root injected at its rate, each
// member delivered its share.
func (e *engine) materializeFamily(fam *arFamily) {
	root := &e.flows[fam.members[0]]
	if root.hot || e.now <= root.t0 {
		return
	}
	x := 0.0
	if root.rate > 0 { // (a family that has not sent yet has no rate and no shares)
		x = min(root.rem, root.rate*(e.now-root.t0).Seconds())
	}
	root.rem -= x
	e.stats.injected += x
	e.stats.deliveredWire += x
	left := x
	for k, fid := range fam.members {
		f := &e.flows[fid]
		if x > 0 {
			y := x * e.ar.carry[fid] / root.rate
			if k == len(fam.members)-1 {
				y = left // what rounding left
			}
			y = min(y, left)
			f.deliv += y
			left -= y
		}
		f.t0 = e.now
	}
}

// heatFamily makes a quiet (or new) family hot, every member, its bytes brought up to now.
func (e *engine) heatFamily(fam *arFamily) {
	a := e.ar
	rid := fam.members[0]
	root := &e.flows[rid]
	if root.hot || root.done {
		return
	}
	if root.rate > 0 {
		if end := root.t0 + units.Time(math.Ceil(root.rem/root.rate*float64(units.Second))); end <= e.now {
			e.ends.remove(rid)
			e.quietFamilyEnd(fam, end) // it ended already
			return
		}
	}
	e.materializeFamily(fam)
	e.ends.remove(rid)
	for _, fid := range fam.members {
		f := &e.flows[fid]
		f.from = e.now
		f.hot, f.hotIdx = true, int32(len(e.hot))
		f.ver++
		e.hot = append(e.hot, fid)
		e.heatPath(fid)
		a.carry[fid] = 0
		f.prevRate = f.rate
	}
	e.stationary = false
	if root.hidx >= 0 {
		e.heatHost(root.src)
	}
}

// quietFamilyEnd is a quiet family's projected end: the root's last byte leaves its NIC at t, and
// every member's passes through.
func (e *engine) quietFamilyEnd(fam *arFamily, t units.Time) {
	e.materializeFamily(fam)
	rid := fam.members[0]
	root := &e.flows[rid]
	var d float64
	for _, fid := range fam.members {
		d += e.flows[fid].deliv
	}
	root.deliv += root.total - d // what rounding left
	root.rem = 0
	for _, fid := range slices.Clone(fam.members) {
		e.flows[fid].done = true
		e.retire(fid, t)
	}
}

// famDemand is what a hot member of fam is counted to send on each of its links when preheat
// weighs a link's demand: the root's rate (its host's before it has one) spread evenly over the
// members.
func (e *engine) famDemand(fam *arFamily) float64 {
	root := &e.flows[fam.members[0]]
	r := root.rate
	if r <= 0 {
		r = e.hostSt[root.src].rate
	}
	return r / float64(len(fam.members))
}

// arForward is forward's hand-off for a family member whose bytes (s, having left hop h by
// resource r) reach a switch: where the switch has a choice among the members' next hops, the
// bytes wait for arFlush, which makes it for every piece that reached the switch in the step.
func (e *engine) arForward(r, fid, h int32, s float64, fam *arFamily) {
	if len(fam.shape.alt[e.ar.idx[fid]][h]) == 1 {
		e.enqueueHop(r, fid, h+1, s)
		return
	}
	e.ar.pend = append(e.ar.pend, arPend{r: r, fid: fid, h: h, s: s, sw: e.net.res[r].to})
}

// arPend is a family member's bytes waiting for its switch's choice (arFlush): s bytes of flow
// fid that left hop h by resource r into switch sw.
type arPend struct {
	r, fid, h int32
	s         float64
	sw        topo.NodeID
}

// arPort is one egress port of a switch while arFlush assigns the step's packets: its backlog b
// at time t (seconds into the step), the rate it drains at (its link's, or less where the next
// hop's credits allow less), whether it has no credits for more.
type arPort struct {
	res     int32
	cls     int32 // a port's queues are per class: each packet weighs its own VL's (fabric/ibroute.go)
	b, t    float64
	rate    float64
	starved bool
}

// arPkt is one packet of a pending piece (index c in the pending list) reaching its switch at
// time t.
type arPkt struct {
	t    float64
	c    int32
	size float64
}

// arFlush makes the adaptive switches' choices for the bytes that reached them in the step
// (arForward), before the queues they join are served: per switch, packet by packet in the order
// they arrive (arSwitch).
func (e *engine) arFlush() {
	a := e.ar
	if len(a.pend) == 0 {
		return
	}
	pend := a.pend
	slices.SortStableFunc(pend, func(x, y arPend) int { return int(x.sw) - int(y.sw) })
	for i := 0; i < len(pend); {
		j := i
		for j < len(pend) && pend[j].sw == pend[i].sw {
			j++
		}
		e.arSwitch(pend[i:j], a.tau)
		i = j
	}
	a.pend = pend[:0]
}

// arSwitch is one switch's adaptive routing over a step of tau seconds, as fabric/ibroute.go
// does it packet by packet: each pending piece's bytes arrive as packets spread evenly over the
// step (at a phase drawn per QP and step); each leaves by the allowed port with the least backlog (what
// its queue held when the step's choices began, plus what the switch sent it since, less what
// the port sent at its rate), a port still sending its last packet counting that packet, a port
// without credits for more behind every other, ties to the forwarding table's port.
func (e *engine) arSwitch(pend []arPend, tau float64) {
	a := e.ar
	pkt := e.ideal.maxWire
	ports := a.ports[:0]
	if n := len(e.net.res) * e.nc; len(a.portAt) < n {
		a.portAt = append(a.portAt, make([]int32, n-len(a.portAt))...)
	}
	port := func(nr int32, cls int32) int {
		at := &a.portAt[int(nr)*e.nc+int(cls)] // the port's index + 1 (0: not yet looked up)
		if *at > 0 {
			return int(*at - 1)
		}
		*at = int32(len(ports) + 1)
		res := &e.net.res[nr]
		budget := max(0, res.rate-res.quietLoad) * tau
		send := budget
		if !res.toHost {
			send = min(send, e.rc[int(nr)*e.nc+int(cls)].allow)
		}
		q := e.queue(nr, cls).bytes
		ports = append(ports, arPort{res: nr, cls: cls, b: q, rate: send / tau, starved: send < budget && q >= send})
		return len(ports) - 1
	}
	pkts := a.pkts[:0]
	for c, p := range pend {
		n := max(1, int(math.Ceil(p.s/pkt-1e-9)))
		// Each input's packets arrive at a phase of the packet time of their own, which the
		// fluid does not resolve: drawn per QP and step (from a hash: the same run gives the
		// same draws). Pieces that arrive together would otherwise be served in the sweep's
		// order, and a phase kept from step to step would keep the same QP ahead of another at
		// every step, its choices the same (measured, docs/flow.md: shares 1.5-2x the packet
		// backend's spread).
		f := &e.flows[p.fid]
		phase := float64(sim.Mix64(uint64(f.msg)<<20^uint64(f.qp)^uint64(e.steps)<<40^0x5bd1e995)>>11) / (1 << 53)
		for i := 0; i < n; i++ {
			pkts = append(pkts, arPkt{t: (float64(i) + phase) * tau / float64(n), c: int32(c), size: p.s / float64(n)})
		}
	}
	// In time order, pieces in their order at equal times (a piece's packets never share a time):
	// the order of a stable sort, at an unstable sort's cost.
	slices.SortFunc(pkts, func(x, y arPkt) int {
		switch {
		case x.t < y.t:
			return -1
		case x.t > y.t:
			return 1
		}
		return int(x.c - y.c)
	})
	// got[base[c]+i] is what piece c sends by its i-th alternative, pidx[base[c]+i] that
	// alternative's port (looked up once per piece, not per packet).
	got := a.got[:0]
	base := a.base[:0]
	pidx := a.pidx[:0]
	nalt := a.nalt[:0]
	for _, p := range pend {
		base = append(base, int32(len(got)))
		fam := a.family(p.fid)
		alt := fam.shape.alt[a.idx[p.fid]][p.h]
		cls := e.flows[p.fid].cls
		for _, j := range alt {
			got = append(got, 0)
			pidx = append(pidx, int32(port(e.owner[e.flows[fam.members[j]].off+p.h+1].res, cls)))
		}
		nalt = append(nalt, int32(len(alt)))
	}
	for _, k := range pkts {
		b0 := int(base[k.c])
		best, bestPort, bestScore := -1, -1, math.Inf(1)
		for ai, pi := range pidx[b0 : b0+int(nalt[k.c])] {
			pt := &ports[pi]
			b := max(0, pt.b-pt.rate*(k.t-pt.t))
			sc := b
			if b < 1e-6*pkt {
				sc = 0
				if pt.b > 0 && pt.rate > 0 && pt.t+pt.b/pt.rate >= k.t-1e-9*tau {
					sc = pkt // its last packet is still leaving (fabric/ibroute.go adds a busy port's lastWire)
				}
			}
			if pt.starved && b >= pt.rate*(tau-k.t) {
				sc += 1e12 // no credits for more this step (fabric/ibroute.go's noCredit)
			}
			if sc < bestScore { // ties keep the first: the forwarding table's port
				best, bestPort, bestScore = ai, int(pi), sc
			}
		}
		pt := &ports[bestPort]
		pt.b = max(0, pt.b-pt.rate*(k.t-pt.t)) + k.size
		pt.t = k.t
		got[b0+best] += k.size
	}
	for c, p := range pend {
		fam := a.family(p.fid)
		alt := fam.shape.alt[a.idx[p.fid]][p.h]
		last := -1
		for i := range alt {
			if got[int(base[c])+i] > 0 {
				last = i
			}
		}
		rest := p.s
		for i, j := range alt {
			x := got[int(base[c])+i]
			if x <= 0 {
				continue
			}
			if i == last {
				x = rest // what rounding left
			}
			rest -= x
			e.enqueueHop(p.r, fam.members[j], p.h+1, x)
		}
	}
	for _, pt := range ports {
		a.portAt[int(pt.res)*e.nc+int(pt.cls)] = 0
	}
	a.ports, a.pkts, a.got, a.base, a.pidx, a.nalt = ports, pkts, got, base, pidx, nalt
}

// enqueueHop is forward's last part: s bytes of flow fid join its queue at hop h (h > 0), having
// left resource r.
func (e *engine) enqueueHop(r, fid, h int32, s float64) {
	if s <= 0 {
		return
	}
	f := &e.flows[fid]
	if ok := e.enqueue(e.owner[f.off+h].res, fid, h, s); ok > 0 && !e.net.isPair(r) {
		e.addIng(r, f.cls, ok)
	}
}

// checkFamilies is check's conservation for families: the bytes the root injected are the
// members' queued and delivered bytes together.
func (e *engine) checkFamilies() error {
	if e.ar == nil {
		return nil
	}
	for i := range e.ar.fams {
		fam := &e.ar.fams[i]
		if len(fam.members) == 0 || e.ar.famOf[fam.members[0]] != int32(i) {
			continue // free
		}
		root := &e.flows[fam.members[0]]
		var q, d float64
		for _, fid := range fam.members {
			q += e.inNetwork(fid)
			d += e.flows[fid].deliv
		}
		inj := root.total - root.rem
		if x := inj - (q + d); math.Abs(x) > 1e-6*root.total+1e-3 || math.IsNaN(x) {
			return fmt.Errorf("invariant violated at %v: message %d's adaptive-routing family injected %g B, holds %g B, delivered %g B", e.now, root.msg, inj, q, d)
		}
	}
	return nil
}
