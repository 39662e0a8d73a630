// Package ibsm is fabricsim's InfiniBand subnet manager: it computes the linear forwarding table
// (LFT) of every switch, the destination-indexed table an InfiniBand switch looks a packet's
// DLID up in (IBA vol. 1 ch. 18, switch forwarding), with the routing engines OpenSM offers for the fabrics AI
// clusters are built as:
//
//   - minhop: every switch forwards on a minimum-hop port; among equal ones it takes the port
//     that carries the fewest destinations so far (OpenSM's min-hop balancing). Deadlock free on
//     trees, not on topologies with cycles among switches.
//   - dmodk: fat-tree destination-mod-k (Zahavi et al., "Optimized InfiniBand fat-tree routing
//     for shift all-to-all communication patterns", 2010): going up, a switch at tier t picks
//     up-port (d / prod of the up-degrees of the tiers below) mod its up-degree, so a shift
//     permutation on a full fat tree uses every link exactly once.
//   - updown: up*/down* (Schroeder et al., Autonet, 1991): switches are ranked by distance from
//     a root; every route climbs zero or more links toward the root and then descends, which
//     makes the channel dependency graph acyclic and the fabric deadlock free on any topology.
//
// Beside the LFT entry each (switch, destination) has an adaptive-routing group: every port the
// engine would have accepted (equal cost, and for updown equally legal), from which a switch with
// adaptive routing picks per packet. Hosts are addressed by their dense host index (the "LID").
//
// Everything here is a pure function of a topo.Graph: no simulator types, so the tables can be
// checked by unit tests (Verify, DependencyCycle) before a packet moves.
package ibsm

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/fabricsim/fabricsim/topo"
)

// Engine is a routing engine, by its scenario name (fabric key `routing_engine`, OpenSM's
// routing_engine option).
type Engine string

const (
	// MinHop: shortest paths, destinations balanced over the candidate ports (OpenSM minhop).
	MinHop Engine = "minhop"
	// DModK: shortest paths, the up-port chosen by the destination divided by the tier's
	// fan-out (OpenSM dmodk).
	DModK Engine = "dmodk"
	// UpDown: up*/down* paths (deadlock-free on any graph; OpenSM updn).
	UpDown Engine = "updown"
)

// Engines lists the routing engines.
var Engines = []Engine{MinHop, DModK, UpDown}

// UnmarshalText parses an engine's name; an unknown one is an error listing the valid names.
func (e *Engine) UnmarshalText(b []byte) error {
	if !Engine(b).Valid() {
		return fmt.Errorf("%q is not a routing engine (valid: minhop, dmodk, updown)", b)
	}
	*e = Engine(b)
	return nil
}

// Valid reports whether e is one of Engines.
func (e Engine) Valid() bool { return slices.Contains(Engines, e) }

// Tables are the forwarding tables of every switch of one graph.
//
// They are stored (switches x hosts entries of 6 bytes) or, for a tree too large for that
// (more than StoredEntries entries: a fat tree or Clos of tens of thousands of hosts), computed
// on demand from the tree's regularity (topo.Routes of the tree form): the candidate set of an
// entry is the tree's next-hop set, and the engine's pick follows from it in closed form (min-hop
// balancing and up*/down* hand the destinations of one candidate set out round robin in host
// order: topo.Routes.SameSetRank; D-mod-K divides). The entries are the same either way
// (TestOnDemandMatchesStored); memory is then linear in the fabric.
type Tables struct {
	Engine Engine
	g      *topo.Graph
	hosts  int
	// rt is set for tables computed on demand; div holds D-mod-K's divisors by tier.
	rt    *topo.Routes
	div   map[int]int
	row   []int32  // node -> switch row, -1 for hosts
	lft   []int16  // [row*hosts+dst] -> output port, -1 if unreachable (16 bits: half the cache footprint of 32)
	group []uint32 // [row*hosts+dst] -> AR port set id
	start []uint32 // set i is ports[start[i]:start[i+1]]
	ports []int32
	// in is set for GPU clusters: their server-internal nodes have no row (see innerPicks).
	in *innerPicks
	// Rank is, for updown, each node's distance from the root set (hosts: -1); nil otherwise.
	Rank []int32
}

// Port returns the LFT entry of switch sw for destination host dst (-1 when unreachable).
func (t *Tables) Port(sw topo.NodeID, dst int) int32 {
	if t.rt != nil {
		return t.onDemand(sw, dst)
	}
	if t.inner(sw) {
		return t.innerPort(sw, dst)
	}
	return int32(t.lft[int(t.row[sw])*t.hosts+dst])
}

// Row returns switch sw's stored LFT, indexed by destination host (Row(sw)[dst] is Port(sw,
// dst)), or nil where Port computes the entry (tables on demand, a GPU server's internal node)
// or sw has no row (a host). Shared: do not modify.
func (t *Tables) Row(sw topo.NodeID) []int16 {
	if t.rt != nil || t.inner(sw) || t.row[sw] < 0 {
		return nil
	}
	r := int(t.row[sw]) * t.hosts
	return t.lft[r : r+t.hosts : r+t.hosts]
}

// Group returns the adaptive-routing group of switch sw for destination dst: the ports it may
// use for that destination, in ascending order; it contains Port(sw, dst). Shared: do not modify.
func (t *Tables) Group(sw topo.NodeID, dst int) []int32 {
	if t.rt != nil {
		return t.rt.NextHops(sw, dst)
	}
	if t.inner(sw) {
		return t.in.rt.NextHops(sw, dst)
	}
	s := t.group[int(t.row[sw])*t.hosts+dst]
	return t.ports[t.start[s]:t.start[s+1]]
}

// OnDemand says whether the tables are computed on demand rather than stored.
func (t *Tables) OnDemand() bool { return t.rt != nil }

// StoredEntries is the most switch x host entries Compute stores; larger trees get tables
// computed on demand (at 6 bytes an entry, 2^24 entries are 96 MiB: a k=16 fat tree has 0.33 M).
var StoredEntries int64 = 1 << 24

// onDemand is the LFT entry of a tree switch computed from the tree (see Tables).
func (t *Tables) onDemand(sw topo.NodeID, dst int) int32 {
	cand := t.rt.NextHops(sw, dst)
	switch len(cand) {
	case 0:
		return -1
	case 1:
		return cand[0]
	}
	g := t.g
	n := &g.Nodes[sw]
	if t.Engine == DModK {
		if up := g.Nodes[n.Ports[cand[0]].Peer]; up.Kind == topo.Switch && up.Tier > n.Tier {
			return cand[(dst/t.div[n.Tier])%len(cand)]
		}
		return cand[0]
	}
	r, _ := t.rt.SameSetRank(sw, dst)
	return cand[r%len(cand)]
}

// Compute runs routing engine engine over g.
func Compute(g *topo.Graph, engine Engine) (*Tables, error) {
	if err := g.Validate(); err != nil {
		return nil, fmt.Errorf("subnet manager: %w", err)
	}
	if !engine.Valid() {
		return nil, fmt.Errorf("subnet manager: routing engine %q unknown (valid: minhop, dmodk, updown)", engine)
	}
	if err := CheckLIDs(g); err != nil {
		return nil, err
	}
	switches := g.NumSwitches()
	if float64(switches)*float64(len(g.Hosts)) > float64(StoredEntries) {
		if t, err := computeOnDemand(g, engine); t != nil || err != nil {
			return t, err
		}
	}
	return computeStored(g, engine)
}

// computeOnDemand returns on-demand tables for a tree, or nil when g is not one.
func computeOnDemand(g *topo.Graph, engine Engine) (*Tables, error) {
	rt, err := topo.ComputeRoutes(g)
	if err != nil || !rt.Tree() {
		return nil, err
	}
	t := &Tables{Engine: engine, g: g, hosts: len(g.Hosts), rt: rt}
	for i := range g.Nodes {
		if g.Nodes[i].Kind == topo.Switch && len(g.Nodes[i].Ports) > math.MaxInt16 {
			return nil, fmt.Errorf("subnet manager: switch %s has %d ports; forwarding tables hold at most %d", g.Nodes[i].Name, len(g.Nodes[i].Ports), math.MaxInt16)
		}
	}
	switch engine {
	case DModK:
		t.div = upDivisors(g)
	case UpDown:
		// Ranks as up*/down* numbers them: distance from the highest tier's switches.
		var roots []topo.NodeID
		maxT := 0
		for i := range g.Nodes {
			if g.Nodes[i].Kind == topo.Switch {
				maxT = max(maxT, g.Nodes[i].Tier)
			}
		}
		for i := range g.Nodes {
			if g.Nodes[i].Kind == topo.Switch && g.Nodes[i].Tier == maxT {
				roots = append(roots, topo.NodeID(i))
			}
		}
		t.Rank = make([]int32, len(g.Nodes))
		switchBFS(g, roots, t.Rank, nil)
	}
	return t, nil
}

// computeStored runs the engine over every destination and stores the tables: a row for every
// switch, but for a GPU cluster's server-internal nodes under min-hop and D-mod-K (innerPicks).
func computeStored(g *topo.Graph, engine Engine) (*Tables, error) {
	if engine == UpDown {
		// Its candidate sets are the legal up*/down* ports, not the minimum-hop ones the
		// cluster routes give (a NIC of a PCIe server may go up, where min-hop stays inside).
		return computeRows(g, engine, nil)
	}
	in, err := innerRoutes(g)
	if err != nil {
		return nil, err
	}
	return computeRows(g, engine, in)
}

// computeRows is computeStored with the cluster routes of a GPU cluster given (nil: a row for
// every switch, the plain form TestServerFormMatchesStored compares with).
func computeRows(g *topo.Graph, engine Engine, in *topo.Routes) (*Tables, error) {
	var err error
	t := &Tables{Engine: engine, g: g, hosts: len(g.Hosts), row: make([]int32, len(g.Nodes))}
	if in != nil {
		t.in = &innerPicks{rt: in, row: make([]int32, len(g.Nodes))}
	}
	rows := 0
	for i := range g.Nodes {
		t.row[i] = -1
		if t.in != nil {
			t.in.row[i] = -1
			if g.Nodes[i].Tier == 0 {
				continue // server-internal: no row
			}
		}
		if g.Nodes[i].Kind == topo.Switch {
			if len(g.Nodes[i].Ports) > math.MaxInt16 {
				return nil, fmt.Errorf("subnet manager: switch %s has %d ports; forwarding tables hold at most %d", g.Nodes[i].Name, len(g.Nodes[i].Ports), math.MaxInt16)
			}
			t.row[i] = int32(rows)
			rows++
		}
	}
	if float64(rows)*float64(t.hosts) > 1<<31 {
		return nil, fmt.Errorf("subnet manager: %d switches x %d hosts is too large a table", rows, t.hosts)
	}
	t.lft = make([]int16, rows*t.hosts)
	t.group = make([]uint32, rows*t.hosts)
	t.start = []uint32{0, 0}
	b := builder{t: t, intern: map[string]uint32{"": 0}, load: make([][]int32, len(g.Nodes))}
	for i := range g.Nodes {
		b.load[i] = make([]int32, len(g.Nodes[i].Ports))
	}
	switch engine {
	case MinHop:
		err = b.minHop(false)
	case DModK:
		err = b.minHop(true)
	case UpDown:
		err = b.upDown()
	}
	if err != nil {
		return nil, err
	}
	return t, nil
}

type builder struct {
	t      *Tables
	intern map[string]uint32
	key    []byte
	load   [][]int32 // destinations assigned per (node, port): min-hop balancing
}

// set records switch n's entry for dst: the LFT port is the candidate with the fewest
// destinations so far (lowest port on ties), unless pick >= 0 names one.
func (b *builder) set(n topo.NodeID, dst int, cand []int32, pick int) {
	t := b.t
	if len(cand) == 0 {
		if t.row[n] >= 0 {
			t.lft[int(t.row[n])*t.hosts+dst] = -1
		}
		return
	}
	if pick < 0 {
		pick = 0
		for i, p := range cand {
			if b.load[n][p] < b.load[n][cand[pick]] {
				pick = i
			}
		}
	}
	port := cand[pick]
	b.load[n][port]++
	if t.row[n] < 0 {
		// A server-internal node: its candidate set comes from the cluster routes when asked,
		// and only a choice among several is kept.
		if len(cand) > 1 {
			t.in.setPick(t.g, t.hosts, n, dst, pick)
		}
		return
	}
	e := int(t.row[n])*t.hosts + dst
	t.lft[e] = int16(port)
	b.key = b.key[:0]
	for _, p := range cand {
		b.key = binary.LittleEndian.AppendUint32(b.key, uint32(p))
	}
	id, ok := b.intern[string(b.key)]
	if !ok {
		id = uint32(len(t.start) - 1)
		b.intern[string(b.key)] = id
		t.ports = append(t.ports, cand...)
		t.start = append(t.start, uint32(len(t.ports)))
	}
	t.group[e] = id
}

// bfs fills dist with hop counts to node dn through switches only (hosts never forward).
func bfs(g *topo.Graph, dn topo.NodeID, dist []int32, queue []topo.NodeID) []topo.NodeID {
	for i := range dist {
		dist[i] = -1
	}
	dist[dn] = 0
	queue = append(queue[:0], dn)
	for qi := 0; qi < len(queue); qi++ {
		n := queue[qi]
		for _, p := range g.Nodes[n].Ports {
			if dist[p.Peer] < 0 && g.Nodes[p.Peer].Kind == topo.Switch {
				dist[p.Peer] = dist[n] + 1
				queue = append(queue, p.Peer)
			}
		}
	}
	return queue
}

// upDegree returns, per tier, the largest number of ports a switch of that tier has toward a
// higher tier, and the D-mod-K divisor of each tier: the product of the up-degrees below it.
func upDivisors(g *topo.Graph) map[int]int {
	up := map[int]int{}
	maxTier := 0
	for i := range g.Nodes {
		n := &g.Nodes[i]
		if n.Kind != topo.Switch {
			continue
		}
		c := 0
		for _, p := range n.Ports {
			if g.Nodes[p.Peer].Kind == topo.Switch && g.Nodes[p.Peer].Tier > n.Tier {
				c++
			}
		}
		if c > up[n.Tier] {
			up[n.Tier] = c
		}
		if n.Tier > maxTier {
			maxTier = n.Tier
		}
	}
	div := map[int]int{}
	d := 1
	for tier := 0; tier <= maxTier; tier++ {
		div[tier] = d
		if u := up[tier]; u > 0 && d < 1<<40 {
			d *= u
		}
	}
	return div
}

// minHop fills min-hop tables; with dmodk, upward choices follow destination mod k.
func (b *builder) minHop(dmodk bool) error {
	g := b.t.g
	dist := make([]int32, len(g.Nodes))
	var queue []topo.NodeID
	var cand []int32
	var div map[int]int
	if dmodk {
		div = upDivisors(g)
	}
	for d, dn := range g.Hosts {
		queue = bfs(g, dn, dist, queue)
		for i := range g.Nodes {
			n := &g.Nodes[i]
			if n.Kind != topo.Switch {
				continue
			}
			cand = cand[:0]
			up := true
			if dist[i] > 0 {
				for pi, p := range n.Ports {
					if dist[p.Peer] == dist[i]-1 {
						cand = append(cand, int32(pi))
						if g.Nodes[p.Peer].Kind != topo.Switch || g.Nodes[p.Peer].Tier <= n.Tier {
							up = false
						}
					}
				}
			}
			pick := -1
			if dmodk && len(cand) > 0 {
				if up {
					pick = (d / div[n.Tier]) % len(cand)
				} else {
					pick = 0
				}
			}
			b.set(n.ID, d, cand, pick)
		}
	}
	return nil
}

// upDown fills up*/down* tables. Roots: the switches of the highest tier when the graph has
// tiers, else the switch with the smallest eccentricity (lowest ID on ties). Node keys order
// (rank, ID); a link is "up" toward the smaller key. A switch with a descending-only path to the
// destination takes the shortest such path; otherwise it climbs toward the shortest legal path.
func (b *builder) upDown() error {
	t := b.t
	g := t.g
	N := len(g.Nodes)
	rank := make([]int32, N)
	for i := range rank {
		rank[i] = -1
	}
	var roots []topo.NodeID
	minT, maxT := 1<<30, -1
	for i := range g.Nodes {
		if g.Nodes[i].Kind == topo.Switch {
			minT = min(minT, g.Nodes[i].Tier)
			maxT = max(maxT, g.Nodes[i].Tier)
		}
	}
	if maxT < 0 {
		return fmt.Errorf("subnet manager: up*/down* needs at least one switch")
	}
	queue := make([]topo.NodeID, 0, N)
	if maxT > minT {
		for i := range g.Nodes {
			if g.Nodes[i].Kind == topo.Switch && g.Nodes[i].Tier == maxT {
				roots = append(roots, topo.NodeID(i))
			}
		}
	} else {
		best, bestEcc := topo.NodeID(-1), int32(1<<30)
		for i := range g.Nodes {
			if g.Nodes[i].Kind != topo.Switch {
				continue
			}
			queue = switchBFS(g, []topo.NodeID{topo.NodeID(i)}, rank, queue)
			ecc := int32(0)
			for j := range rank {
				if g.Nodes[j].Kind == topo.Switch {
					if rank[j] < 0 {
						ecc = 1 << 29 // disconnected: never a root
					}
					ecc = max(ecc, rank[j])
				}
			}
			if ecc < bestEcc {
				best, bestEcc = topo.NodeID(i), ecc
			}
		}
		roots = []topo.NodeID{best}
	}
	queue = switchBFS(g, roots, rank, queue)
	t.Rank = rank
	less := func(a, c topo.NodeID) bool { // a is nearer the root than c
		return rank[a] < rank[c] || (rank[a] == rank[c] && a < c)
	}
	order := make([]topo.NodeID, 0, N)
	for i := range g.Nodes {
		if g.Nodes[i].Kind == topo.Switch {
			if rank[i] < 0 {
				if g.Nodes[i].Tier == 0 && g.Nodes[i].Server >= 0 {
					// A GPU cluster's NVSwitch hangs off GPUs only: no switch path to the core.
					return fmt.Errorf("subnet manager: up*/down* ranks switches by their switch-only distance from the core, and %s inside a GPU server has none (it hangs off GPUs only); use routing_engine minhop or dmodk for a GPU cluster", g.Nodes[i].Name)
				}
				return fmt.Errorf("subnet manager: switch %s is not connected to the root %s", g.Nodes[i].Name, g.Nodes[roots[0]].Name)
			}
			order = append(order, topo.NodeID(i))
		}
	}
	sort.Slice(order, func(i, j int) bool { return less(order[i], order[j]) })
	// Planes that share no switch are separate subnets: a switch routes only the hosts of its own
	// (comp: the connected set of switches, each host in its switch's).
	comp := switchComponents(g)
	const inf = int32(1 << 30)
	down := make([]int32, N)
	legal := make([]int32, N)
	var cand []int32
	for d, dn := range g.Hosts {
		dc := comp[g.Nodes[dn].Ports[0].Peer]
		// down[x]: hops from x to the destination descending only (reverse BFS over down links).
		for i := range down {
			down[i], legal[i] = inf, inf
		}
		down[dn] = 0
		queue = append(queue[:0], dn)
		for qi := 0; qi < len(queue); qi++ {
			x := queue[qi]
			for _, p := range g.Nodes[x].Ports {
				s := p.Peer
				if g.Nodes[s].Kind != topo.Switch || down[s] != inf {
					continue
				}
				if g.Nodes[x].Kind == topo.Host || less(s, x) { // s -> x descends
					down[s] = down[x] + 1
					queue = append(queue, s)
				}
			}
		}
		// legal[s]: shortest up*/down* route, climbing first when no descending path exists.
		for _, s := range order {
			if down[s] != inf {
				legal[s] = down[s]
				continue
			}
			for _, p := range g.Nodes[s].Ports {
				if u := p.Peer; g.Nodes[u].Kind == topo.Switch && less(u, s) && legal[u]+1 < legal[s] {
					legal[s] = legal[u] + 1
				}
			}
			if legal[s] == inf && comp[s] == dc {
				return fmt.Errorf("subnet manager: up*/down*: %s has no legal route to host %d", g.Nodes[s].Name, d)
			}
		}
		for _, s := range order {
			cand = cand[:0]
			for pi, p := range g.Nodes[s].Ports {
				u := p.Peer
				if down[s] != inf {
					if (u == dn || (g.Nodes[u].Kind == topo.Switch && less(s, u))) && down[u] == down[s]-1 {
						cand = append(cand, int32(pi))
					}
				} else if g.Nodes[u].Kind == topo.Switch && less(u, s) && legal[u] == legal[s]-1 {
					cand = append(cand, int32(pi))
				}
			}
			b.set(s, d, cand, -1)
		}
	}
	return nil
}

// switchComponents numbers the connected sets of switches (over switch-to-switch links); hosts
// get -1.
func switchComponents(g *topo.Graph) []int32 {
	comp := make([]int32, len(g.Nodes))
	for i := range comp {
		comp[i] = -1
	}
	var queue []topo.NodeID
	next := int32(0)
	for i := range g.Nodes {
		if g.Nodes[i].Kind != topo.Switch || comp[i] >= 0 {
			continue
		}
		comp[i] = next
		queue = append(queue[:0], topo.NodeID(i))
		for qi := 0; qi < len(queue); qi++ {
			for _, p := range g.Nodes[queue[qi]].Ports {
				if g.Nodes[p.Peer].Kind == topo.Switch && comp[p.Peer] < 0 {
					comp[p.Peer] = next
					queue = append(queue, p.Peer)
				}
			}
		}
		next++
	}
	return comp
}

// switchBFS fills rank with hop distances from the roots over switch-to-switch links.
func switchBFS(g *topo.Graph, roots []topo.NodeID, rank []int32, queue []topo.NodeID) []topo.NodeID {
	for i := range rank {
		rank[i] = -1
	}
	queue = queue[:0]
	for _, r := range roots {
		rank[r] = 0
		queue = append(queue, r)
	}
	for qi := 0; qi < len(queue); qi++ {
		n := queue[qi]
		for _, p := range g.Nodes[n].Ports {
			if g.Nodes[p.Peer].Kind == topo.Switch && rank[p.Peer] < 0 {
				rank[p.Peer] = rank[n] + 1
				queue = append(queue, p.Peer)
			}
		}
	}
	return queue
}

// Path follows the LFTs from srcHost to dstHost and returns the nodes visited, or an error on a
// missing entry or a forwarding loop.
func (t *Tables) Path(srcHost, dstHost int) ([]topo.NodeID, error) {
	g := t.g
	n := g.Hosts[srcHost]
	path := []topo.NodeID{n}
	n = g.Nodes[n].Ports[0].Peer
	path = append(path, n)
	for n != g.Hosts[dstHost] {
		if g.Nodes[n].Kind != topo.Switch {
			return path, fmt.Errorf("host %d -> host %d: reached host %s", srcHost, dstHost, g.Nodes[n].Name)
		}
		p := t.Port(n, dstHost)
		if p < 0 {
			return path, fmt.Errorf("host %d -> host %d: %s has no route", srcHost, dstHost, g.Nodes[n].Name)
		}
		n = g.Nodes[n].Ports[p].Peer
		path = append(path, n)
		if len(path) > len(g.Nodes)+1 {
			return path, fmt.Errorf("host %d -> host %d: forwarding loop", srcHost, dstHost)
		}
	}
	return path, nil
}

// Verify checks that every host reaches every other host of its subnet through the LFTs without
// a loop, and that every adaptive-routing group holds its LFT port.
func (t *Tables) Verify() error {
	comp := switchComponents(t.g)
	subnet := func(h int) int32 { return comp[t.g.Nodes[t.g.Hosts[h]].Ports[0].Peer] }
	for s := 0; s < t.hosts; s++ {
		for d := 0; d < t.hosts; d++ {
			if s == d || subnet(s) != subnet(d) {
				continue // the same host, or another plane's (another subnet)
			}
			if _, err := t.Path(s, d); err != nil {
				return err
			}
		}
	}
	for i := range t.g.Nodes {
		if t.g.Nodes[i].Kind != topo.Switch {
			continue
		}
		for d := 0; d < t.hosts; d++ {
			p := t.Port(topo.NodeID(i), d)
			if p < 0 {
				continue
			}
			found := false
			for _, q := range t.Group(topo.NodeID(i), d) {
				found = found || q == p
			}
			if !found {
				return fmt.Errorf("%s: LFT port %d for host %d is not in its adaptive-routing group", t.g.Nodes[i].Name, p, d)
			}
		}
	}
	return nil
}

// DependencyCycle builds the channel dependency graph of the routes (Dally and Seitz, 1987: a
// channel is a directed link; channel a depends on b when a packet holding a may next request b)
// and returns a cycle of channels, as "node:port" strings, or nil when it is acyclic, which
// means credit-based flow control cannot deadlock. With adaptive, every port of every group counts.
func (t *Tables) DependencyCycle(adaptive bool) []string {
	g := t.g
	base := make([]int, len(g.Nodes)+1)
	for i := range g.Nodes {
		base[i+1] = base[i] + len(g.Nodes[i].Ports)
	}
	adj := make([]map[int]bool, base[len(g.Nodes)])
	ch := func(n topo.NodeID, p int32) int { return base[n] + int(p) }
	outs := func(n topo.NodeID, d int) []int32 {
		if adaptive {
			return t.Group(n, d)
		}
		if p := t.Port(n, d); p >= 0 {
			return []int32{p}
		}
		return nil
	}
	for d := 0; d < t.hosts; d++ {
		for i := range g.Nodes {
			s := topo.NodeID(i)
			if g.Nodes[s].Kind != topo.Switch {
				continue
			}
			next := outs(s, d)
			// Channels into s that a packet for d may hold: from hosts (sources), or from
			// switches whose routes for d include s.
			for _, p := range g.Nodes[s].Ports {
				u := p.Peer
				var into int
				if g.Nodes[u].Kind == topo.Host {
					into = ch(u, 0)
				} else {
					ok := false
					for _, q := range outs(u, d) {
						ok = ok || g.Nodes[u].Ports[q].Peer == s
					}
					if !ok {
						continue
					}
					into = ch(u, p.PeerPort)
				}
				for _, q := range next {
					if adj[into] == nil {
						adj[into] = map[int]bool{}
					}
					adj[into][ch(s, q)] = true
				}
			}
		}
	}
	// Iterative DFS with colours.
	color := make([]uint8, len(adj))
	parent := make([]int, len(adj))
	name := func(c int) string {
		n := sort.Search(len(g.Nodes), func(i int) bool { return base[i+1] > c })
		return fmt.Sprintf("%s:%d", g.Nodes[n].Name, c-base[n])
	}
	for root := range adj {
		if color[root] != 0 {
			continue
		}
		type frame struct {
			c    int
			next []int
		}
		stack := []frame{{root, keys(adj[root])}}
		color[root] = 1
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			if len(top.next) == 0 {
				color[top.c] = 2
				stack = stack[:len(stack)-1]
				continue
			}
			v := top.next[0]
			top.next = top.next[1:]
			switch color[v] {
			case 0:
				color[v] = 1
				parent[v] = top.c
				stack = append(stack, frame{v, keys(adj[v])})
			case 1:
				cycle := []string{name(v)}
				for c := top.c; c != v; c = parent[c] {
					cycle = append(cycle, name(c))
				}
				return cycle
			}
		}
	}
	return nil
}

func keys(m map[int]bool) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}

// MaxUnicastLIDs is the number of unicast LIDs of one subnet: 0x0001-0xBFFF (InfiniBand
// Architecture Specification vol. 1, 4.1.3 "Local identifiers"); every HCA port and every switch
// (its management port 0) takes one at LMC 0.
const MaxUnicastLIDs = 0xBFFF

// CheckLIDs returns an error when a subnet of g needs more unicast LIDs than one subnet holds. A
// subnet is a connected set of network switches (Tier >= 1; an imported graph's switches all
// are) with the ports that hang off it: a host's NIC port, or in a GPU cluster a NIC's network
// port. Planes that share no switch (topo.Clos PortsPerNIC, RailPlanes) are separate subnets,
// each with its own subnet manager.
func CheckLIDs(g *topo.Graph) error {
	seen := make([]bool, len(g.Nodes))
	net := func(id topo.NodeID) bool { n := &g.Nodes[id]; return n.Kind == topo.Switch && n.Tier >= 1 }
	var queue []topo.NodeID
	for i := range g.Nodes {
		if seen[i] || !net(topo.NodeID(i)) {
			continue
		}
		switches, ports := 0, 0
		seen[i] = true
		queue = append(queue[:0], topo.NodeID(i))
		for qi := 0; qi < len(queue); qi++ {
			n := queue[qi]
			switches++
			for _, p := range g.Nodes[n].Ports {
				switch {
				case !net(p.Peer):
					ports++ // an HCA port: a host, or a GPU server's NIC
				case !seen[p.Peer]:
					seen[p.Peer] = true
					queue = append(queue, p.Peer)
				}
			}
		}
		if switches+ports > MaxUnicastLIDs {
			plane := ""
			if pl := g.Nodes[i].Plane; pl >= 0 {
				plane = fmt.Sprintf(" (plane %d)", pl)
			}
			return fmt.Errorf("infiniband: the subnet of %s%s needs %d LIDs (%d HCA ports and %d switches), more than the %d unicast LIDs one subnet holds (IBA vol. 1, 4.1.3); split the fabric into planes, each its own subnet: two ports per NIC on two planes (nic_ports: 2, --nic-ports 2) or a plane per rail (rail_planes, --rail-planes)",
				g.Nodes[i].Name, plane, switches+ports, ports, switches, MaxUnicastLIDs)
		}
	}
	return nil
}
