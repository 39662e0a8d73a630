package topo

import (
	"fmt"
	"math"
)

// ClosSpec describes a folded-Clos network of one, two or three switch tiers between the NIC
// ports of GPU servers (or plain hosts): the shape of NVIDIA's DGX SuperPOD compute fabrics and
// of the k-ary fat tree. docs/topologies.md draws every variant.
//
//   - Rail-optimized (RailOptimized): servers are grouped into scalable units (SUs) of
//     ServersPerSU; NIC r of every server of an SU goes to the SU's leaf of rail r, so a
//     rail-aligned message between two servers of an SU crosses one switch. Two tiers: spines
//     shared by every leaf. Three tiers: each SU has its own spines, and core switches join the
//     SUs: the core switches of group i join spine i of every SU (DGX SuperPOD H100/B200
//     reference architectures: SUs of 32 servers, 8 rail leaves per SU, and at 16 SUs and more
//     a core tier: 16 SUs need 128 leaves, 128 spines and 64 cores of 64 ports).
//   - Top-of-rack (not RailOptimized): consecutive NIC ports share a leaf (a ToR); three tiers
//     group the leaves into pods, each leaf with one link to each of its pod's spines, which is
//     the k-ary fat tree of Al-Fares et al. (SIGCOMM'08) when Radix = k and nothing is
//     oversubscribed.
//   - Planes: with PortsPerNIC > 1 port p of every NIC goes to plane p, and with RailPlanes
//     every rail has planes of its own. Planes are independent fabrics of the same shape with
//     no switch in common (Alibaba HPN, SIGCOMM'24: two planes, one per port of a 2 x 200G NIC;
//     each plane is one InfiniBand subnet with its own subnet manager and LID space).
//
// Oversubscription at a tier is the capacity of a switch's ports toward the tier below over that
// toward the tier above; a tier's uplink count follows from it (always rounded up).
type ClosSpec struct {
	Servers int
	// NICsPerServer is the number of NICs (rails) per server; 0 means 8 rail-optimized (HGX
	// H100/B200: one NIC per GPU) and 1 otherwise (a plain fat tree of hosts).
	NICsPerServer int
	// PortsPerNIC puts port p of every NIC on plane p; 0 means 1 (one plane).
	PortsPerNIC int
	// RailPlanes gives every rail planes of its own (a rail-only fabric: ranks on different
	// rails of different servers are not joined by any switch and talk through a server).
	RailPlanes bool
	// RailOptimized builds a leaf per rail per scalable unit; otherwise leaves take consecutive
	// NIC ports (top-of-rack).
	RailOptimized bool
	// Tiers is the number of switch tiers: 1 (leaves only; every leaf an island), 2 or 3; 0
	// picks the fewest of 2 and 3 that hold the servers.
	Tiers int
	// Radix is the number of ports of every switch; 0 means 64 (a QM9700-class 64 x 400G switch).
	Radix int
	// ServersPerSU is the scalable unit of a rail-optimized fabric; 0 means as many servers as a
	// leaf has down ports.
	ServersPerSU int
	// Oversubscription is the down:up capacity of the leaves ([0]) and of the spines toward the
	// cores ([1]); a missing or zero entry means 1 (non-blocking).
	Oversubscription []float64
	// NIC is the NIC port <-> leaf link; LeafSpine and SpineCore the links above. A zero Rate
	// means the rate of the link below (and a zero spec its latency too).
	NIC, LeafSpine, SpineCore LinkSpec
	// Spines fixes the two-tier spine count per plane: 0 derives it, > 0 fixes it.
	Spines int
}

// ClosPlan is the shape Clos builds, available before building so a caller can check sizes and
// memory and write the counts out (every count is per plane unless named otherwise).
type ClosPlan struct {
	Tiers  int
	Planes int
	// RailsPerPlane is the number of rails whose ports share a plane: NICsPerServer, or 1 with
	// RailPlanes.
	RailsPerPlane int
	HostsPerPlane int
	// ServersPerSU is the scalable unit (rail-optimized); SUs = ceil(Servers / ServersPerSU).
	ServersPerSU int
	// DownPerLeaf is the most NIC ports a leaf has (D1), UpPerLeaf its uplinks (U1).
	DownPerLeaf, UpPerLeaf int
	Leaves                 int
	// Spines: two tiers, all of the plane's; three tiers, Pods x SpinesPerPod.
	Spines int
	// Three tiers: pods of LeavesPerPod leaves (the SUs of a rail-optimized fabric), each with
	// SpinesPerPod spines; a spine takes DownPerSpine leaf links and has UpPerSpine uplinks;
	// core group i (SpinesPerPod groups of CoresPerGroup) joins spine i of every pod.
	Pods, LeavesPerPod, SpinesPerPod int
	DownPerSpine, UpPerSpine         int
	CoresPerGroup, Cores             int
	// Totals over every plane.
	Hosts, Switches, Links int
}

// withDefaults fills the spec's zero values and checks the result.
func (spec ClosSpec) withDefaults() (ClosSpec, error) {
	s := spec
	if s.NICsPerServer == 0 {
		s.NICsPerServer = 1
		if s.RailOptimized {
			s.NICsPerServer = 8
		}
	}
	if s.PortsPerNIC == 0 {
		s.PortsPerNIC = 1
	}
	if s.Radix == 0 {
		s.Radix = 64
	}
	o := make([]float64, 2)
	for i, x := range s.Oversubscription {
		if i >= 2 {
			return s, fmt.Errorf("clos: %d oversubscription ratios given; a Clos has at most two tiers with uplinks (leaf, spine)", len(s.Oversubscription))
		}
		if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
			return s, fmt.Errorf("clos: %s oversubscription %v: want a positive ratio such as 1, 3 or 1.5 (down:up capacity)", tierName(i+1), x)
		}
		o[i] = x
	}
	for i := range o {
		if o[i] == 0 {
			o[i] = 1
		}
	}
	s.Oversubscription = o
	if s.LeafSpine.Rate == 0 {
		if s.LeafSpine.Latency == 0 {
			s.LeafSpine.Latency = s.NIC.Latency
		}
		s.LeafSpine.Rate = s.NIC.Rate
	}
	if s.SpineCore.Rate == 0 {
		if s.SpineCore.Latency == 0 {
			s.SpineCore.Latency = s.LeafSpine.Latency
		}
		s.SpineCore.Rate = s.LeafSpine.Rate
	}
	switch {
	case s.Servers < 1 || s.Servers > maxGeneratedNodes:
		return s, fmt.Errorf("clos: servers=%d: must be between 1 and %d", s.Servers, maxGeneratedNodes)
	case s.NICsPerServer < 1 || s.NICsPerServer > 1024:
		return s, fmt.Errorf("clos: nics_per_server=%d: must be between 1 and 1024 (8 on HGX servers)", s.NICsPerServer)
	case s.PortsPerNIC < 1 || s.PortsPerNIC > 8:
		return s, fmt.Errorf("clos: ports_per_nic=%d: must be between 1 and 8 (2 for a dual-plane fabric)", s.PortsPerNIC)
	case s.Radix < 2 || s.Radix > 1<<16:
		return s, fmt.Errorf("clos: radix=%d: ports per switch must be between 2 and 65536 (e.g. 64)", s.Radix)
	case s.Tiers < 0 || s.Tiers > 3:
		return s, fmt.Errorf("clos: tiers=%d: want 1, 2 or 3 switch tiers (0 picks the fewest that fit)", s.Tiers)
	case s.ServersPerSU < 0:
		return s, fmt.Errorf("clos: servers_per_su=%d: must not be negative (0 = a leaf's down ports)", s.ServersPerSU)
	case s.ServersPerSU > 0 && !s.RailOptimized:
		return s, fmt.Errorf("clos: servers_per_su applies to rail-optimized fabrics only")
	case s.Spines < 0:
		return s, fmt.Errorf("clos: spines=%d: use a positive count or 0 to derive it", s.Spines)
	case s.Spines > 0 && s.Tiers == 3:
		return s, fmt.Errorf("clos: spines fixes the spine count of two tiers; three tiers derive it from the radix")
	}
	for _, c := range []struct {
		l    LinkSpec
		what string
	}{{s.NIC, "clos NIC link"}, {s.LeafSpine, "clos leaf-spine link"}, {s.SpineCore, "clos spine-core link"}} {
		if err := c.l.check(c.what); err != nil {
			return s, err
		}
	}
	return s, nil
}

func tierName(t int) string {
	switch t {
	case 1:
		return "leaf"
	case 2:
		return "spine"
	case 3:
		return "core"
	}
	return fmt.Sprintf("tier-%d", t)
}

// ceilRatio is ceil(a/b) of positive reals, forgiving the rounding error of exact quotients.
func ceilRatio(a, b float64) int { return int(math.Ceil(a/b - 1e-9)) }

// PlanClos applies Clos's rules (documented there) without building anything.
func PlanClos(spec ClosSpec) (ClosPlan, error) {
	s, err := spec.withDefaults()
	if err != nil {
		return ClosPlan{}, err
	}
	K := s.Radix
	o1, o2 := s.Oversubscription[0], s.Oversubscription[1]
	n, u1, u2 := float64(s.NIC.Rate), float64(s.LeafSpine.Rate), float64(s.SpineCore.Rate)
	p := ClosPlan{Planes: s.PortsPerNIC, RailsPerPlane: s.NICsPerServer}
	if s.RailPlanes {
		p.Planes *= s.NICsPerServer
		p.RailsPerPlane = 1
	}
	p.HostsPerPlane = s.Servers * p.RailsPerPlane
	p.Hosts = p.HostsPerPlane * p.Planes
	leafUp := func(down int) int { return ceilRatio(float64(down)*n, o1*u1) }
	spineUp := func(down int) int { return ceilRatio(float64(down)*u1, o2*u2) }
	// The most down ports a switch can have and still fit its uplinks into the radix.
	maxDown := func(up func(int) int) int {
		for d := K - 1; d >= 1; d-- {
			if d+up(d) <= K {
				return d
			}
		}
		return 0
	}
	d1 := K
	if s.Tiers != 1 {
		if d1 = maxDown(leafUp); d1 == 0 {
			return ClosPlan{}, fmt.Errorf("clos: at leaf oversubscription %v a radix-%d leaf cannot hold even one NIC port and its uplinks (1 + %d > %d ports); lower the oversubscription or raise the radix",
				o1, K, leafUp(1), K)
		}
	}
	if s.RailOptimized {
		su := s.ServersPerSU
		if su == 0 {
			su = d1
		}
		if su > d1 {
			return ClosPlan{}, fmt.Errorf("clos: servers_per_su=%d: a radix-%d leaf at %v:1 takes at most %d servers of its rail (and %d uplinks); use at most %d servers per SU, a larger radix or more oversubscription",
				su, K, o1, d1, leafUp(d1), d1)
		}
		p.ServersPerSU = su
		p.DownPerLeaf = min(su, s.Servers)
		p.Leaves = p.RailsPerPlane * ceilDiv(s.Servers, su)
	} else {
		p.DownPerLeaf = min(d1, p.HostsPerPlane)
		p.Leaves = ceilDiv(p.HostsPerPlane, d1)
	}
	links := p.HostsPerPlane
	tiers := s.Tiers
	if tiers != 1 {
		p.UpPerLeaf = leafUp(p.DownPerLeaf)
		total := p.Leaves * p.UpPerLeaf
		p.Spines = s.Spines
		if p.Spines == 0 {
			p.Spines = ceilDiv(total, K)
		}
		fits2 := p.Spines <= p.UpPerLeaf && ceilDiv(total, p.Spines) <= K
		switch {
		case tiers == 0 && fits2:
			tiers = 2
		case tiers == 0 && s.Spines > 0:
			tiers = 2 // a fixed spine count means two tiers; the checks below explain what is wrong
		case tiers == 0:
			tiers = 3
		}
		if tiers == 2 {
			if per := ceilDiv(total, p.Spines); per > K {
				return ClosPlan{}, fmt.Errorf("clos: %d spines cannot take %d leaf uplinks (%d leaves x %d): %d ports per spine exceeds radix %d; use at least %d spines",
					p.Spines, total, p.Leaves, p.UpPerLeaf, per, K, ceilDiv(total, K))
			}
			if p.Spines > p.UpPerLeaf {
				return ClosPlan{}, fmt.Errorf("clos: %d leaves with %d uplinks each need %d spines, more than a leaf's %d uplinks, so not every leaf reaches every spine: two tiers of radix-%d switches hold at most %d leaves (%d NIC ports per plane); use three tiers, a larger radix, more oversubscription or more planes",
					p.Leaves, p.UpPerLeaf, p.Spines, p.UpPerLeaf, K, K, K*p.DownPerLeaf)
			}
			links += p.Leaves * p.UpPerLeaf
		}
	}
	if tiers == 3 {
		p.Spines = 0
		d2max := maxDown(spineUp)
		if d2max == 0 {
			return ClosPlan{}, fmt.Errorf("clos: at spine oversubscription %v a radix-%d spine cannot hold even one leaf link and its uplinks; lower the oversubscription or raise the radix", o2, K)
		}
		if s.RailOptimized && p.RailsPerPlane > 1 {
			p.LeavesPerPod = p.RailsPerPlane
			p.Pods = ceilDiv(s.Servers, p.ServersPerSU)
			for p.SpinesPerPod = max(1, ceilDiv(p.LeavesPerPod*p.UpPerLeaf, d2max)); p.SpinesPerPod <= p.UpPerLeaf; p.SpinesPerPod++ {
				if p.LeavesPerPod*ceilDiv(p.UpPerLeaf, p.SpinesPerPod) <= d2max {
					break
				}
			}
			if p.SpinesPerPod > p.UpPerLeaf {
				return ClosPlan{}, fmt.Errorf("clos: an SU's %d leaves with %d uplinks each do not fit radix-%d spines of %d down ports while every leaf reaches every spine of its SU; lower the leaf oversubscription, use fewer rails per plane or a larger radix",
					p.LeavesPerPod, p.UpPerLeaf, K, d2max)
			}
		} else {
			p.SpinesPerPod = p.UpPerLeaf
			p.LeavesPerPod = min(d2max, p.Leaves)
			p.Pods = ceilDiv(p.Leaves, p.LeavesPerPod)
		}
		p.DownPerSpine = p.LeavesPerPod * ceilDiv(p.UpPerLeaf, p.SpinesPerPod)
		p.UpPerSpine = spineUp(p.DownPerSpine)
		p.CoresPerGroup = ceilDiv(p.Pods*p.UpPerSpine, K)
		if p.CoresPerGroup > p.UpPerSpine {
			maxPods := K // ceil(pods*U2/R) <= U2 holds up to R pods
			return ClosPlan{}, fmt.Errorf("clos: %d NIC ports per plane need %d pods; three tiers of radix-%d switches at %v:1 and %v:1 join at most %d pods (%d NIC ports per plane) while every spine reaches every core of its group; use a larger radix, more planes (ports_per_nic, rail_planes) or more oversubscription",
				p.HostsPerPlane, p.Pods, K, o1, o2, maxPods, maxPods*p.LeavesPerPod*p.DownPerLeaf)
		}
		p.Spines = p.Pods * p.SpinesPerPod
		p.Cores = p.SpinesPerPod * p.CoresPerGroup
		links += p.Leaves*p.UpPerLeaf + p.Spines*p.UpPerSpine
	}
	// One tier: leaves with nothing above them, so more than one per rail would share no switch.
	switch {
	case tiers == 1 && s.RailOptimized && p.Leaves > p.RailsPerPlane:
		return ClosPlan{}, fmt.Errorf("clos: one tier of radix-%d switches (a leaf per rail) joins at most %d servers, not %d; use two or three tiers (0 picks the fewest that fit) or a larger radix",
			K, p.ServersPerSU, s.Servers)
	case tiers == 1 && !s.RailOptimized && p.Leaves > 1:
		return ClosPlan{}, fmt.Errorf("clos: one tier of radix-%d switches joins at most %d NIC ports per plane, not %d; use two or three tiers (0 picks the fewest that fit) or a larger radix",
			K, K, p.HostsPerPlane)
	}
	if tiers < 3 && len(spec.Oversubscription) > 1 && spec.Oversubscription[1] > 0 {
		return ClosPlan{}, fmt.Errorf("clos: spine oversubscription %v: the spines of this %d-tier Clos are its top tier, with no uplinks to oversubscribe; use three tiers or drop it",
			spec.Oversubscription[1], tiers)
	}
	p.Tiers = tiers
	p.Switches = (p.Leaves + p.Spines + p.Cores) * p.Planes
	totalLinks := float64(links) * float64(p.Planes)
	if float64(p.Hosts)+float64(p.Switches) > maxGeneratedNodes || totalLinks > maxGeneratedNodes {
		return ClosPlan{}, fmt.Errorf("clos: %d NIC ports and %d switches exceed the limit of %d nodes", p.Hosts, p.Switches, maxGeneratedNodes)
	}
	p.Links = int(totalLinks)
	return p, nil
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// Clos builds the network PlanClos describes.
//
// Hosts are NIC ports: host h = (s*NICsPerServer + k)*PortsPerNIC + p is port p of NIC k of
// server s, with Node.Server = s, Node.Rail = k and Node.Plane its plane (p, or
// k*PortsPerNIC + p with RailPlanes). Then come each plane's switches: its leaves (tier 1;
// rail-optimized: rail by rail, SU by SU, named "rail<r>_leaf<j>"; otherwise "leaf<j>"), its
// spines (tier 2, "spine<i>"; three tiers: SU or pod by pod, "pod<q>_spine<i>") and its cores
// (tier 3, group by group, "core<i>_<c>"); names carry a "p<plane>_" prefix when there are
// several planes. Sizing, with R = Radix, o1 and o2 the leaf and spine oversubscription and
// n, u1, u2 the NIC, leaf-spine and spine-core rates:
//
//	D1 (NIC ports per leaf) = the largest d with d + ceil(d*n/(o1*u1)) <= R    (R/2 at 1:1)
//	U1 (uplinks per leaf)   = ceil(D1*n/(o1*u1))
//	two tiers:   S = ceil(leaves*U1/R) spines; uplink m of leaf l goes to spine (l*U1+m) mod S,
//	             which needs S <= U1 so that every leaf reaches every spine
//	three tiers: a pod (an SU when rail-optimized) of P leaves shares its own spines: P = the
//	             rails, each leaf spreading its U1 uplinks over the SU's spines round robin;
//	             otherwise (and on a plane of one rail) P = D2 leaves with one link to each of
//	             U1 spines; a spine has
//	             D2 = P*ceil(U1/spines per pod) leaf links and U2 = ceil(D2*u1/(o2*u2)) uplinks,
//	             uplink m of spine i of pod q goes to core (q*U2+m) mod C of group i, with
//	             C = ceil(pods*U2/R) <= U2 cores per group.
//
// Ports are numbered hosts first, then uplinks (in the order above), then downlinks from above.
// Links carry their reach class: NIC links to rail leaves ReachRow, to top-of-rack leaves
// ReachRack, leaf-spine ReachRow, spine-core ReachHall.
func Clos(spec ClosSpec) (*Graph, error) {
	p, err := PlanClos(spec)
	if err != nil {
		return nil, err
	}
	s, _ := spec.withDefaults()
	name := "clos"
	if s.RailOptimized {
		name = "rail"
	}
	g := &Graph{
		Name:  fmt.Sprintf("%s-%dx%d-%dtier", name, s.Servers, s.NICsPerServer*s.PortsPerNIC, p.Tiers),
		Nodes: make([]Node, 0, p.Hosts+p.Switches),
		Links: make([]Link, 0, p.Links),
		Hosts: make([]NodeID, 0, p.Hosts),
	}
	planeOf := func(k, port int) int {
		if s.RailPlanes {
			return k*s.PortsPerNIC + port
		}
		return port
	}
	for sv := 0; sv < s.Servers; sv++ {
		for k := 0; k < s.NICsPerServer; k++ {
			for port := 0; port < s.PortsPerNIC; port++ {
				id := g.AddNode(Host, "host"+itoa(len(g.Hosts)), 0)
				g.Nodes[id].Server, g.Nodes[id].Rail, g.Nodes[id].Plane = int32(sv), int32(k), int32(planeOf(k, port))
			}
		}
	}
	prefix := func(plane int) string {
		if p.Planes > 1 {
			return fmt.Sprintf("p%d_", plane)
		}
		return ""
	}
	perPlane := p.Leaves + p.Spines + p.Cores
	leafBase := func(plane int) int { return p.Hosts + plane*perPlane }
	spineBase := func(plane int) int { return leafBase(plane) + p.Leaves }
	coreBase := func(plane int) int { return spineBase(plane) + p.Spines }
	sus := 0
	if s.RailOptimized {
		sus = ceilDiv(s.Servers, p.ServersPerSU)
	}
	for plane := 0; plane < p.Planes; plane++ {
		pre := prefix(plane)
		for l := 0; l < p.Leaves; l++ {
			var id NodeID
			if s.RailOptimized {
				rail, j := l/sus, l%sus
				if s.RailPlanes {
					rail = plane / s.PortsPerNIC
				}
				id = g.AddNode(Switch, fmt.Sprintf("%srail%d_leaf%d", pre, rail, j), 1)
				g.Nodes[id].Rail = int32(rail)
			} else {
				id = g.AddNode(Switch, fmt.Sprintf("%sleaf%d", pre, l), 1)
			}
			g.Nodes[id].Plane = int32(plane)
		}
		for i := 0; i < p.Spines; i++ {
			nm := fmt.Sprintf("%sspine%d", pre, i)
			if p.Tiers == 3 {
				nm = fmt.Sprintf("%spod%d_spine%d", pre, i/p.SpinesPerPod, i%p.SpinesPerPod)
			}
			id := g.AddNode(Switch, nm, 2)
			g.Nodes[id].Plane = int32(plane)
		}
		for c := 0; c < p.Cores; c++ {
			id := g.AddNode(Switch, fmt.Sprintf("%score%d_%d", pre, c/p.CoresPerGroup, c%p.CoresPerGroup), 3)
			g.Nodes[id].Plane = int32(plane)
		}
	}
	hostReach := ReachRack
	if s.RailOptimized {
		hostReach = ReachRow
	}
	connect := func(a, b NodeID, l LinkSpec, r Reach) {
		id := g.Connect(a, b, l.Rate, l.Latency)
		g.Links[id].Reach = r
	}
	// NIC links, in host order, so every leaf numbers its NIC ports before its uplinks.
	for h := range g.Hosts {
		n := &g.Nodes[g.Hosts[h]]
		plane := int(n.Plane)
		var leaf int
		if s.RailOptimized {
			r := int(n.Rail)
			if s.RailPlanes {
				r = 0
			}
			leaf = r*sus + int(n.Server)/p.ServersPerSU
		} else {
			// The plane-local ordinal of this port: servers in order, a server's rails in order.
			r := int(n.Rail)
			if s.RailPlanes {
				r = 0
			}
			leaf = (int(n.Server)*p.RailsPerPlane + r) / p.DownPerLeaf
		}
		connect(NodeID(h), NodeID(leafBase(plane)+leaf), s.NIC, hostReach)
	}
	for plane := 0; plane < p.Planes; plane++ {
		lb, sb, cb := leafBase(plane), spineBase(plane), coreBase(plane)
		switch p.Tiers {
		case 2:
			for l := 0; l < p.Leaves; l++ {
				for m := 0; m < p.UpPerLeaf; m++ {
					connect(NodeID(lb+l), NodeID(sb+(l*p.UpPerLeaf+m)%p.Spines), s.LeafSpine, ReachRow)
				}
			}
		case 3:
			podOf := func(l int) int {
				if s.RailOptimized && p.RailsPerPlane > 1 {
					return l % sus
				}
				return l / p.LeavesPerPod
			}
			for l := 0; l < p.Leaves; l++ {
				q := podOf(l)
				for m := 0; m < p.UpPerLeaf; m++ {
					connect(NodeID(lb+l), NodeID(sb+q*p.SpinesPerPod+m%p.SpinesPerPod), s.LeafSpine, ReachRow)
				}
			}
			for sp := 0; sp < p.Spines; sp++ {
				q, i := sp/p.SpinesPerPod, sp%p.SpinesPerPod
				for m := 0; m < p.UpPerSpine; m++ {
					connect(NodeID(sb+sp), NodeID(cb+i*p.CoresPerGroup+(q*p.UpPerSpine+m)%p.CoresPerGroup), s.SpineCore, ReachHall)
				}
			}
		}
	}
	return g, nil
}
