package flow

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/headroom"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

// resource is what flows share: one direction of a link (a channel: the egress queue of a port
// and the wire behind it), or a bundle of channels that a per-packet choice (adaptive routing,
// spraying) pools. Its queue holds the bytes of its member flows waiting at the upstream node.
type resource struct {
	// The fields a step reads and writes for every active resource come first, in one cache
	// line (the struct is padded to 256 bytes, so that line is aligned): a step of a congested
	// network is bound by memory, not arithmetic (BenchmarkPipelineClass).

	// rate is the wire rate in bytes per second (a bundle: the sum of its links).
	rate float64
	// q is the bytes its queue held after the last step. hotN of its members are hot, the others
	// quiet (engine.quietN counts them), sending quietLoad bytes per second through it (they pass:
	// a quiet flow's path has no queue).
	q         float64
	quietLoad float64
	// credWin is the rate a VL's credit loop allows (backpressure.window; +Inf without credits), 0
	// until computed.
	credWin float64
	// from is the upstream node (a bundle's first); to the downstream node, or -1 for a bundle
	// that ends on several switches (toSwitches then lists them).
	to   topo.NodeID
	hotN int32
	// toHost: the resource delivers to a host NIC, which drains at line rate (never back-pressures).
	toHost bool
	// fromHost: the resource is a host's NIC link; its bytes are injected, never queued.
	fromHost bool
	// pair: the resource is a pair constraint (pairConstraint), not a link: no credits, no
	// delay, and the bytes it hands on stay counted on the link before it.
	pair  bool
	marks float64
	// links is the number of channels pooled (1 for a channel); first the first (itself for a
	// channel).
	links int32
	// rank orders resources so that every path visits increasing ranks (ascending levels, then
	// descending): one step moves bytes through a whole uncongested path (see levels).
	rank int32

	ecn     ecnThresholds
	txBytes float64
	// members are the flows crossing the resource and at which hop of their path.
	members []member
	// prop is a member link's propagation delay alone.
	prop units.Time
	// linkRate and delay are one member link's rate and its propagation delay plus the receiving
	// switch's port-to-port latency (the packet backend's Port.delay): what a packet alone sees.
	linkRate   units.Rate
	delay      units.Time
	from       topo.NodeID
	toSwitches []topo.NodeID
	// chans are a bundle's channels (nil for a channel).
	chans []int32
	// rev is 1 + the resource of the opposite direction, 0 until computed (reverse).
	rev   int32
	first int32
	// active is the resource's index in its rank's active list, -1 while it has no members.
	active int32
	_      [44]byte
}

// member is one flow crossing a resource: the flow and the index of the resource in its path.
type member struct {
	f int32
	h int32
}

// ecnThresholds is RED marking at the resource's egress queue (fabric/ecn.go): probability 0 up to
// kmin bytes, rising linearly to pmax at kmax, 1 above; pmax 0 means no marking.
type ecnThresholds struct {
	kmin, kmax, pmax float64
}

// marksEmpty reports whether prob may be above 0 for an empty queue (0 bytes, or a rounding
// residue below): where Kmin is below 0 (or NaN) and marking is on.
func (t *ecnThresholds) marksEmpty() bool { return t.pmax != 0 && !(t.kmin >= 0) }

func (t *ecnThresholds) prob(q float64) float64 {
	switch {
	case t.pmax == 0 || q <= t.kmin:
		return 0
	case q < t.kmax:
		return t.pmax * (q - t.kmin) / (t.kmax - t.kmin)
	}
	return 1
}

// switchBuf is a switch's shared buffer: its size, the shared pool left after PFC headroom
// reservations, and the bytes its egress queues hold.
type switchBuf struct {
	size   float64
	shared float64
	used   float64
	maxUse float64
	// On lossy fabrics: bytes that arrived and left in the current and last step, and the share
	// of arrivals admitted this step (lossModel.admit).
	arr, dep, arrPrev, depPrev float64
	ratio                      float64
	stamp                      int64
}

// network is the topology as the fluid model sees it: resources for every channel (created up
// front, numbered by node and port) and bundles (created on first use), the switches' buffers.
type network struct {
	g        *topo.Graph
	cfg      *fabric.Config
	chanBase []int32 // first channel of each node
	res      []resource
	bundles  map[string]int32
	key      []byte
	// pairs memoizes pairConstraint by its two stages (-1: none needed); pairMark says, per
	// resource up to the last pair constraint created, whether it is one.
	pairs    map[[2]int32]int32
	pairMark []bool
	level    []int32 // per node: hops from the nearest host
	maxLevel int32
	bufs     []switchBuf // per node (zero for hosts)
	// headroomOf memoizes headroom by link rate and latency (its breakdown is formatted text).
	headroomOf map[[2]int64]float64
	// emptyUnmarked: no resource's ECN marks an empty queue (no Kmin below 0, a bundle's is its
	// links' times their number), so fifo.setLeft need not read the thresholds of a queue its
	// link emptied (84 % of the queues served in BenchmarkPipelineClass's 2,048-GPU DCQCN class;
	// they are in the resource's second cache line).
	emptyUnmarked bool
}

func newNetwork(g *topo.Graph, cfg *fabric.Config) *network {
	n := &network{g: g, cfg: cfg, chanBase: make([]int32, len(g.Nodes)+1), bundles: map[string]int32{},
		bufs: make([]switchBuf, len(g.Nodes))}
	for i := range g.Nodes {
		n.chanBase[i+1] = n.chanBase[i] + int32(len(g.Nodes[i].Ports))
	}
	n.levels()
	n.res = make([]resource, n.chanBase[len(g.Nodes)])
	for i := range g.Nodes {
		nd := &g.Nodes[i]
		for p := range nd.Ports {
			l := &g.Links[nd.Ports[p].Link]
			peer := &g.Nodes[nd.Ports[p].Peer]
			r := &n.res[n.chanBase[i]+int32(p)]
			*r = resource{rate: float64(l.Rate) / 8, linkRate: l.Rate, delay: l.Latency, prop: l.Latency, from: nd.ID, to: peer.ID, links: 1,
				toHost: peer.Kind == topo.Host, fromHost: nd.Kind == topo.Host, active: -1}
			if peer.Kind == topo.Switch {
				switch {
				case peer.Latency > 0:
					r.delay += peer.Latency
				case peer.Latency == 0:
					r.delay += cfg.SwitchLatency
				}
			}
			r.rank = n.rankOf(nd.ID, peer.ID)
			r.first = n.chanBase[i] + int32(p)
			if cfg.Kind == fabric.KindRoCE && cfg.RoCE.ECN && cfg.RoCE.DCQCN && nd.Kind == topo.Switch {
				r.ecn = ecnFor(&cfg.RoCE, l.Rate)
			}
		}
	}
	for i := range g.Nodes {
		if g.Nodes[i].Kind == topo.Switch {
			n.bufs[i] = n.switchBuffer(topo.NodeID(i))
		}
	}
	n.emptyUnmarked = true
	for r := range n.res {
		if n.res[r].ecn.marksEmpty() {
			n.emptyUnmarked = false
		}
	}
	return n
}

// ecnFor is the marking of a port of the given rate (fabric/ecn.go's rules): explicit thresholds,
// the per-rate map scaled to the nearest entry, or HPCC's rate-scaled defaults.
func ecnFor(c *fabric.RoCEConfig, rate units.Rate) ecnThresholds {
	t := ecnThresholds{pmax: c.Pmax}
	switch {
	case c.Kmin > 0 || c.Kmax > 0:
		t.kmin, t.kmax = float64(c.Kmin), float64(c.Kmax)
	case len(c.ECNMap) > 0:
		best := c.ECNMap[0]
		for _, e := range c.ECNMap {
			if absRate(e.Rate-rate) < absRate(best.Rate-rate) {
				best = e
			}
		}
		s := float64(rate) / float64(best.Rate)
		t.kmin, t.kmax, t.pmax = float64(int64(float64(best.Kmin)*s)), float64(int64(float64(best.Kmax)*s)), best.Pmax
	default:
		kmin, kmax := fabric.ECNDefaults(rate)
		t.kmin, t.kmax = float64(kmin), float64(kmax)
	}
	return t
}

func absRate(r units.Rate) units.Rate {
	if r < 0 {
		return -r
	}
	return r
}

// switchBuffer sizes switch s's buffer as the packet backend does: the configured buffer; with
// PFC, the shared pool is what is left after each port's headroom per lossless class; on
// InfiniBand a switch holds at most its ports' VL receive buffers.
func (n *network) switchBuffer(s topo.NodeID) switchBuf {
	cfg := n.cfg
	b := switchBuf{size: float64(cfg.Buffer)}
	switch {
	case cfg.Kind == fabric.KindInfiniBand:
		vl := float64(int64(cfg.IB.VLBuffer) / fabric.IBBlock * fabric.IBBlock)
		b.size = float64(len(n.g.Nodes[s].Ports)*cfg.IB.VLs) * vl
		b.shared = b.size
	case cfg.Kind == fabric.KindRoCE && cfg.RoCE.PFC:
		classes := 0
		for p := 0; p < 8; p++ {
			if cfg.RoCE.Lossless&(1<<p) != 0 {
				classes++
			}
		}
		var reserved float64
		for p := range n.g.Nodes[s].Ports {
			reserved += n.headroom(s, p) * float64(classes)
		}
		b.shared = b.size - reserved
	default:
		b.shared = b.size
	}
	return b
}

// headroom is the PFC headroom reserved at port p of node s per lossless class: the configured
// one, or the larger of the mlx5 formula and the IEEE-style breakdown for the port's link
// (fabric/roce.go autoHeadroom).
func (n *network) headroom(s topo.NodeID, p int) float64 {
	cfg := n.cfg
	if cfg.RoCE.Headroom > 0 {
		return float64(cfg.RoCE.Headroom)
	}
	l := n.g.PortLink(s, p)
	k := [2]int64{int64(l.Rate), int64(l.Latency)}
	if h, ok := n.headroomOf[k]; ok {
		return h // the same for every link of that rate and length
	}
	cable := float64(l.Latency) / float64(units.Nanosecond) / headroom.FibreNsPerMetre
	frame := int(cfg.MTU) + cfg.HeaderBytes + cfg.FirstHeaderExtra + cfg.L1Overhead
	h := headroom.Headroom(headroom.Input{Rate: l.Rate, CableMetres: cable, MTU: frame, Response: cfg.SwitchLatency})
	if n.headroomOf == nil {
		n.headroomOf = map[[2]int64]float64{}
	}
	n.headroomOf[k] = float64(headroom.Bytes(math.Max(h.MLX5, h.IEEE)))
	return n.headroomOf[k]
}

// channel is the resource of port p of node nd.
func (n *network) channel(nd topo.NodeID, p int32) int32 { return n.chanBase[nd] + p }

// bundle returns the resource pooling the given channels (sorted, distinct), creating it once.
func (n *network) bundle(chans []int32) int32 {
	n.key = n.key[:0]
	for _, c := range chans {
		n.key = binary.LittleEndian.AppendUint32(n.key, uint32(c))
	}
	if id, ok := n.bundles[string(n.key)]; ok {
		return id
	}
	first := &n.res[chans[0]]
	b := resource{linkRate: first.linkRate, delay: first.delay, prop: first.prop, rank: first.rank, from: first.from, to: first.to,
		links: int32(len(chans)), first: chans[0], toHost: first.toHost, ecn: first.ecn, active: -1, chans: slices.Clone(chans)}
	var tos []topo.NodeID
	for _, c := range chans {
		r := &n.res[c]
		b.rate += r.rate
		b.delay = max(b.delay, r.delay)
		if r.to != b.to {
			b.to = -1
		}
		tos = append(tos, r.to)
	}
	if b.to < 0 {
		b.toSwitches = tos
	}
	// Pooled marking: a bundle's queue is its links' queues together, so its thresholds are theirs
	// times the number of links.
	k := float64(len(chans))
	b.ecn.kmin *= k
	b.ecn.kmax *= k
	id := int32(len(n.res))
	n.res = append(n.res, b)
	n.bundles[string(n.key)] = id
	return id
}

// levels sets each node's level, its hop distance from the nearest host (hosts 0, leaves 1,
// spines 2 in a leaf-spine; the tiers of a fat tree), by one breadth-first search from all hosts.
func (n *network) levels() {
	g := n.g
	n.level = make([]int32, len(g.Nodes))
	for i := range n.level {
		n.level[i] = -1
	}
	queue := make([]topo.NodeID, 0, len(g.Nodes))
	for _, h := range g.Hosts {
		n.level[h] = 0
		queue = append(queue, h)
	}
	for qi := 0; qi < len(queue); qi++ {
		u := queue[qi]
		for _, p := range g.Nodes[u].Ports {
			if n.level[p.Peer] < 0 {
				n.level[p.Peer] = n.level[u] + 1
				n.maxLevel = max(n.maxLevel, n.level[p.Peer])
				queue = append(queue, p.Peer)
			}
		}
	}
}

// rankOf orders the channel u -> v for the in-step sweep: climbing channels by the level they
// leave (2 x level), channels within a level just after those climbing into it, descending ones
// after every climbing one (4 x maxLevel - 2 x the level they reach). A minimum-hop path in a
// tree-like fabric climbs and then descends, so its ranks increase and one sweep carries bytes
// from the source to the destination; a path that does not (a valley, a lateral hop on the way
// down) is still conserved and correct, its bytes waiting one step at that hop.
func (n *network) rankOf(u, v topo.NodeID) int32 {
	lu, lv := n.level[u], n.level[v]
	switch {
	case lv > lu:
		return 2 * lu
	case lv == lu:
		return max(2*lu-1, 0) // after the climb into lu (rank 2lu-2), before the climb out (2lu)
	}
	return 4*n.maxLevel - 2*lv
}

// numRanks is one more than the largest rank.
func (n *network) numRanks() int { return int(4*n.maxLevel) + 1 }

// name describes resource r for messages: "node:port(->peer)", or the bundle's links.
func (n *network) name(r int32) string {
	if int(r) < int(n.chanBase[len(n.g.Nodes)]) {
		res := &n.res[r]
		p := r - n.chanBase[res.from]
		return fmt.Sprintf("%s:%d(->%s)", n.g.Nodes[res.from].Name, p, n.g.Nodes[res.to].Name)
	}
	res := &n.res[r]
	return fmt.Sprintf("%d links from %s", res.links, n.g.Nodes[res.from].Name)
}

// reverse is the resource of the opposite direction of r's links (a bundle's: the bundle of its
// links' reverses).
func (n *network) reverse(r int32) int32 {
	res := &n.res[r]
	if res.rev != 0 {
		return res.rev - 1
	}
	if res.pair {
		return r // no links of its own: what is counted on its reverse lands on itself, unread
	}
	var rev int32
	if res.links == 1 {
		nd := &n.g.Nodes[res.from]
		p := r - n.chanBase[res.from]
		rev = n.channel(nd.Ports[p].Peer, nd.Ports[p].PeerPort)
	} else {
		var chans []int32
		for _, c := range res.chans {
			chans = append(chans, n.reverse(c))
		}
		slices.Sort(chans)
		rev = n.bundle(chans)
	}
	n.res[r].rev = rev + 1
	return rev
}

// isPair reports whether resource r is a pair constraint.
func (n *network) isPair(r int32) bool { return int(r) < len(n.pairMark) && n.pairMark[r] }

// pairConstraint returns the resource that bounds what crosses two consecutive bundle stages a
// (the channels aChans) and b (bChans) together, or -1 where the bundles' own rates already do.
// Pooling a stage's links assumes a byte may take any link of one stage and any of the next, but
// a byte that reached switch m by a link of a leaves by one of m's links in b: the two stages carry
// at most the sum over the switches m between them of min(what a brings into m, what b takes out
// of m) (the maximum flow through them, every source and sink pooled). On an uneven core tier of
// a three-tier Clos (spine X's uplinks spread 2, 2, 2, 1, 1 over five cores, the next pod's spine
// Y's 1, 2, 2, 2, 1) that is the sum over the cores c of min(links X-c, links c-Y), below both
// bundles' rates; an adaptive-routing switch that skips a port without credits (fabric/ibroute.go)
// settles there. The constraint is a resource of its own between the two bundles, shared by every
// flow that crosses both, while the bundles stay shared with the flows that cross only one.
func (n *network) pairConstraint(a, b int32, aChans, bChans []int32) int32 {
	if n.pairs == nil {
		n.pairs = map[[2]int32]int32{}
	}
	k := [2]int32{a, b}
	if id, ok := n.pairs[k]; ok {
		return id
	}
	n.pairs[k] = -1
	ra, rb := &n.res[a], &n.res[b]
	if ra.rank+1 >= rb.rank {
		return -1 // no rank between them in the sweep (not a climb, nor a descent, seen so far)
	}
	in := map[topo.NodeID]float64{}
	for _, c := range aChans {
		in[n.res[c].to] += n.res[c].rate
	}
	out := map[topo.NodeID]float64{}
	for _, c := range bChans {
		out[n.res[c].from] += n.res[c].rate
	}
	var mids []topo.NodeID
	for m := range in {
		if out[m] > 0 {
			mids = append(mids, m)
		}
	}
	slices.Sort(mids) // map order is random; the sum's rounding must not be
	var through float64
	for _, m := range mids {
		through += min(in[m], out[m])
	}
	if through <= 0 || through >= min(ra.rate, rb.rate)*(1-1e-9) {
		return -1
	}
	p := resource{rate: through, linkRate: ra.linkRate, rank: ra.rank + 1, from: ra.from, to: -1, toSwitches: mids,
		links: max(1, int32(math.Round(through/(float64(ra.linkRate)/8)))), first: ra.first, pair: true, active: -1}
	if len(mids) == 1 {
		p.to, p.toSwitches = mids[0], nil
	}
	id := int32(len(n.res))
	n.res = append(n.res, p)
	n.pairMark = append(n.pairMark, make([]bool, len(n.res)-len(n.pairMark))...)
	n.pairMark[id] = true
	n.pairs[k] = id
	return id
}
