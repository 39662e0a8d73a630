package compare

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/fabricsim/fabricsim/collective"
	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/training"
	"github.com/fabricsim/fabricsim/units"
)

// collOp maps a plan op kind to the collective it is.
func collOp(k training.OpKind) collective.Op {
	switch k {
	case training.AllReduce:
		return collective.AllReduce
	case training.AllGather:
		return collective.AllGather
	case training.ReduceScatter:
		return collective.ReduceScatter
	case training.AllToAll:
		return collective.AllToAll
	case training.Broadcast:
		return collective.Broadcast
	case training.Reduce:
		return collective.Reduce
	}
	return collective.SendRecv
}

// intraServer reports whether every rank of op o sits in one server (its collective runs on
// NVLink only).
func (s *Scenario) intraServer(o *training.Op) bool {
	sv := s.serverOf(o.Ranks[0])
	for _, r := range o.Ranks[1:] {
		if s.serverOf(r) != sv {
			return false
		}
	}
	return true
}

// nvlinkTime is the time of one collective of op o inside a server: NCCL's ring over NVLink,
// whose busiest link carries the nccl-tests bus-bandwidth share of S ([nccl-tests]) and which
// takes one NVLink latency per ring step.
func (s *Scenario) nvlinkTime(o *training.Op) units.Time {
	n := len(o.Ranks)
	b, lat := s.Cluster.NVLink, s.Cluster.NVLinkLatency
	f := collective.BusBWFactor(collOp(o.Kind), n)
	steps := n - 1
	switch o.Kind {
	case training.AllReduce:
		steps = 2 * (n - 1)
	case training.AllToAll, training.SendRecv:
		steps = 1
	}
	t := b.TransmitTime(units.Size(f*float64(o.Bytes)+0.5)) + units.Time(steps)*lat
	return t
}

// collSpec is the collective of network op o on the GPU cluster: ranks are hosts (rank r is
// host r); a group with several ranks per server runs NCCL's hierarchical, rail-aligned
// algorithm so that only same-rail traffic crosses the network.
func (s *Scenario) collSpec(o *training.Op) collective.Spec {
	ranks := make([]int32, len(o.Ranks))
	perServer := map[int]int{}
	for i, r := range o.Ranks {
		ranks[i] = int32(r)
		perServer[s.serverOf(r)]++
	}
	sp := collective.Spec{Op: collOp(o.Kind), Ranks: ranks, Bytes: o.Bytes, Channels: s.Collective.Channels,
		ChunkBytes: s.Collective.Chunk, Tag: o.Tag}
	if o.Kind == training.SendRecv {
		sp.Channels = 1
	}
	multi := false
	for _, c := range perServer {
		if c > 1 {
			multi = true
		}
	}
	if multi && (o.Kind == training.AllReduce || o.Kind == training.AllGather || o.Kind == training.ReduceScatter) {
		equal := true
		first := perServer[s.serverOf(o.Ranks[0])]
		for _, c := range perServer {
			equal = equal && c == first
		}
		if equal {
			sp.Algo = collective.Hierarchical
			srv := make([]int, len(o.Ranks))
			for i, r := range o.Ranks {
				srv[i] = s.serverOf(r)
			}
			sp.ServerOf = func(i int) int { return srv[i] }
		}
	}
	return sp
}

// lowerToCluster turns the messages [from, len) of g that stay inside one server into NVLink
// delay nodes (bytes / NVLink rate + NVLink latency on the sender), and adds the data path's
// latency to the rest, which cross the network.
func (s *Scenario) lowerToCluster(g *msggraph.Graph, from int) {
	dp := s.dataPath()
	for i := from; i < len(g.Msgs); i++ {
		m := &g.Msgs[i]
		if m.Bytes == 0 {
			continue
		}
		if s.serverOf(int(m.Src)) == s.serverOf(int(m.Dst)) {
			m.Delay += s.Cluster.NVLink.TransmitTime(m.Bytes) + s.Cluster.NVLinkLatency
			m.Bytes, m.Dst = 0, m.Src
			continue
		}
		m.Delay += dp.Latency
	}
}

// class is a set of network collectives that run at the same time in a step: the same kind,
// size, parallel dimension and pipeline stage on different groups (the DP rings of every rail,
// the pipeline sends of every replica). One packet-level run plays one instance of each group
// at once.
type class struct {
	Key    string
	Kind   training.OpKind
	Dim    string
	Stage  int
	Bytes  units.Size
	Groups [][]int // distinct rank sets
	group  map[string]int
	// Instances counts the collectives of each group per step (ops x Repeat).
	Instances []int
	example   []*training.Op // one op of each group
}

// groupKey names a rank set (a decimal list; fmt.Sprint of every op's ranks was a tenth of a
// 16,384-GPU compare).
func groupKey(r []int) string {
	b := make([]byte, 0, 6*len(r))
	for _, x := range r {
		b = strconv.AppendInt(b, int64(x), 10)
		b = append(b, ',')
	}
	return string(b)
}

// classes groups the plan's network collectives into classes and returns, per op, its class
// index and group index (-1 for compute and NVLink-only ops).
func (s *Scenario) classes(p *training.Plan) (cls []*class, opClass, opGroup []int) {
	return s.classesContext(context.Background(), p)
}

// classesContext is classes stopped by ctx: a cancelled ctx ends it early, with the classes of
// the ops seen so far (Run then returns; a 16,384-GPU plan has millions of ops).
func (s *Scenario) classesContext(ctx context.Context, p *training.Plan) (cls []*class, opClass, opGroup []int) {
	opClass = make([]int, len(p.Ops))
	opGroup = make([]int, len(p.Ops))
	byKey := map[string]int{}
	for i := range p.Ops {
		if i%setupCheckEvery == 0 && ctx.Err() != nil {
			break
		}
		o := &p.Ops[i]
		opClass[i], opGroup[i] = -1, -1
		if o.Kind == training.Compute || s.intraServer(o) {
			continue
		}
		key := fmt.Sprintf("%s/%s/stage%d/%d", o.Kind, o.Dim, o.Stage, o.Bytes)
		ci, ok := byKey[key]
		if !ok {
			ci = len(cls)
			byKey[key] = ci
			cls = append(cls, &class{Key: key, Kind: o.Kind, Dim: o.Dim, Stage: o.Stage, Bytes: o.Bytes, group: map[string]int{}})
		}
		c := cls[ci]
		gk := groupKey(o.Ranks)
		gi, ok := c.group[gk]
		if !ok {
			gi = len(c.Groups)
			c.group[gk] = gi
			c.Groups = append(c.Groups, o.Ranks)
			c.Instances = append(c.Instances, 0)
			c.example = append(c.example, o)
		}
		c.Instances[gi] += max(1, o.Repeat)
		opClass[i], opGroup[i] = ci, gi
	}
	return cls, opClass, opGroup
}

// compileClass is the message graph of one instance of every group of class c, all starting
// at time 0, and the done nodes of each group.
func (s *Scenario) compileClass(c *class) (*msggraph.Graph, [][]msggraph.ID, error) {
	g := &msggraph.Graph{Endpoints: s.Cluster.Servers * s.Cluster.GPUsPerServer}
	done := make([][]msggraph.ID, len(c.Groups))
	for gi, o := range c.example {
		d, err := s.compileOp(g, o, nil, fmt.Sprintf("%s g%d", c.Key, gi), false)
		if err != nil {
			return nil, nil, fmt.Errorf("compiling %s: %w", c.Key, err)
		}
		done[gi] = d
	}
	return g, done, nil
}

// CompileStep compiles a whole training step into one message graph on the GPU cluster's
// endpoints (rank r = host r): every compute op is a delay node on its GPU, every collective is
// compiled with package collective (NVLink hops become delay nodes, network hops messages), an op
// with Repeat n is n collectives back to back, and an op starts when every op it depends on has
// completed (the plan's semantics), through one join node per op. It returns the graph and, per
// plan op, the node that completes with it; an op's duration in the run is that node's
// completion minus the latest completion among its dependencies.
func (s *Scenario) CompileStep(p *training.Plan) (*msggraph.Graph, []msggraph.ID, error) {
	g, done, _, err := s.compileStep(context.Background(), p, false)
	return g, done, err
}

// compileStep is CompileStep; with fold (the analytic backend) flat rings are folded
// (compileOp). A cancelled ctx stops it between ops with ctx's error.
//
// folds lists the folded rings' message ranges (fct.go's weights).
func (s *Scenario) compileStep(ctx context.Context, p *training.Plan, fold bool) (g *msggraph.Graph, opDone []msggraph.ID, folds []foldRange, err error) {
	g = &msggraph.Graph{Endpoints: p.GPUs}
	opDone = make([]msggraph.ID, len(p.Ops))
	for i := range p.Ops {
		if i%setupCheckEvery == 0 && ctx.Err() != nil {
			return nil, nil, nil, ctx.Err()
		}
		o := &p.Ops[i]
		deps := make([]msggraph.ID, 0, len(o.Deps))
		for _, d := range o.Deps {
			deps = append(deps, opDone[d])
		}
		deps = dedup(deps)
		src := int32(o.Ranks[0])
		switch {
		case o.Kind == training.Compute:
			opDone[i] = g.Add(msggraph.Message{Src: src, Dst: src, Delay: o.Duration, Deps: deps, Tag: o.Tag})
		case s.intraServer(o):
			opDone[i] = g.Add(msggraph.Message{Src: src, Dst: src, Delay: s.nvlinkTime(o) * units.Time(max(1, o.Repeat)), Deps: deps, Tag: o.Tag})
		default:
			after := deps
			for rep := 0; rep < max(1, o.Repeat); rep++ {
				from := len(g.Msgs)
				d, err := s.compileOp(g, o, after, o.Tag, fold)
				if err != nil {
					return nil, nil, nil, fmt.Errorf("op %d (%s): %w", i, o.Tag, err)
				}
				if fold && s.foldsRing(o, s.collSpec(o)) {
					folds = append(folds, foldRange{from, len(g.Msgs), len(o.Ranks)})
				}
				after = d
			}
			opDone[i] = g.Add(msggraph.Message{Src: src, Dst: src, Deps: dedup(append([]msggraph.ID(nil), after...)), Tag: o.Tag + " done"})
		}
	}
	if err := g.Validate(); err != nil {
		return nil, nil, nil, err
	}
	return g, opDone, folds, nil
}

// compileOp appends one collective of network op o to g after the nodes in after, lowered to
// the cluster (NVLink hops as delay nodes), and returns each rank's done node. A pipeline
// send-recv is one message from Ranks[0] to Ranks[1] (collective.SendRecv would exchange both
// ways).
//
// With fold (the analytic backend, whose network is Uniform: every pair of GPUs alike, a
// transmit and a receive port per GPU), a flat ring over ranks on distinct servers is compiled
// folded to one position (collective.Spec.Fold): every position of such a ring sees the same
// latency, bandwidth and ports, so the folded ring's times are the whole ring's
// (analytic.TestFoldedRingIsExact) at 2(n-1) messages per channel instead of 2n(n-1).
func (s *Scenario) compileOp(g *msggraph.Graph, o *training.Op, after []msggraph.ID, tag string, fold bool) ([]msggraph.ID, error) {
	from := len(g.Msgs)
	var done []msggraph.ID
	if o.Kind == training.SendRecv {
		id := g.Add(msggraph.Message{Src: int32(o.Ranks[0]), Dst: int32(o.Ranks[1]), Bytes: o.Bytes, Deps: after, Tag: tag})
		done = []msggraph.ID{id, id}
	} else {
		sp := s.collSpec(o)
		sp.After, sp.Tag = after, tag
		if fold && s.foldsRing(o, sp) {
			sp.Fold = 1
		}
		var err error
		if done, err = collective.Compile(g, sp); err != nil {
			return nil, err
		}
	}
	s.lowerToCluster(g, from)
	s.setClass(g, from, o) // jobs.go: the job's traffic class
	return done, nil
}

// foldsRing says whether compileOp folds op o (collective sp) when asked to: a flat ring over
// ranks on distinct servers; its messages then stand for len(o.Ranks) positions' (fct.go).
func (s *Scenario) foldsRing(o *training.Op, sp collective.Spec) bool {
	return o.Kind != training.SendRecv && sp.Algo != collective.Hierarchical && s.onDistinctServers(o.Ranks) && sp.Foldable(1)
}

// onDistinctServers says whether no two ranks share a server.
func (s *Scenario) onDistinctServers(ranks []int) bool {
	seen := make(map[int]bool, len(ranks))
	for _, r := range ranks {
		sv := s.serverOf(r)
		if seen[sv] {
			return false
		}
		seen[sv] = true
	}
	return true
}

// groupReps returns, for each group of class c, the group whose analytic run stands for it:
// itself, or an earlier group of the same shape (collective, size, rank count and the pattern of
// ranks sharing servers) when every group of the class uses its own GPUs. On the analytic
// backend's Uniform network such groups are independent (no port in common) and identical up to
// renaming the GPUs, so their completion times are equal: one run serves all of them (the DP
// rings of the eight rails of an 8-GPU server, say, or the pipeline sends of every replica).
func (s *Scenario) groupReps(c *class) []int {
	rep := make([]int, len(c.Groups))
	used := map[int]bool{}
	disjoint := true
	for _, gr := range c.Groups {
		for _, r := range gr {
			if used[r] {
				disjoint = false
			}
			used[r] = true
		}
	}
	first := map[string]int{}
	var key strings.Builder
	for gi, gr := range c.Groups {
		rep[gi] = gi
		if !disjoint {
			continue
		}
		key.Reset()
		label := map[int]int{}
		for _, r := range gr {
			sv := s.serverOf(r)
			l, ok := label[sv]
			if !ok {
				l = len(label)
				label[sv] = l
			}
			key.WriteString(strconv.Itoa(l))
			key.WriteByte(',')
		}
		if r, ok := first[key.String()]; ok {
			rep[gi] = r
		} else {
			first[key.String()] = gi
		}
	}
	return rep
}

func dedup(ids []msggraph.ID) []msggraph.ID {
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	out := ids[:0]
	for i, x := range ids {
		if i == 0 || x != ids[i-1] {
			out = append(out, x)
		}
	}
	return out
}
