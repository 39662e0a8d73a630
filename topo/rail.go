package topo

import (
	"fmt"
	"math"
)

// NoSpines as RailSpec.Spines builds no spine tier: every rail (and every leaf) is an island, and
// no route exists between hosts on different leaves. A scenario's explicit "spines: 0" maps here.
const NoSpines = -1

// RailSpec describes a rail-optimized GPU cluster ([H100] servers): NIC i of every server connects
// to a leaf switch of rail i, and spines join the leaves.
type RailSpec struct {
	Servers int
	// NICsPerServer is the number of rails (one compute NIC per GPU); 0 means 8 (HGX/DGX
	// H100/H200: 8 x ConnectX-7 400G, [H100]).
	NICsPerServer int
	NIC           LinkSpec // NIC <-> rail leaf
	// Radix is the number of ports per switch; 0 means 64 (a QM9700-class 64 x 400G switch).
	Radix int
	// Oversubscription is downlink / uplink capacity at each rail leaf; 0 means 1 (1:1).
	Oversubscription float64
	// Spine is the leaf <-> spine link; a zero Rate means the NIC rate, and a zero spec the NIC
	// spec.
	Spine LinkSpec
	// Spines is the number of spine switches: 0 derives it (see RailOptimized), > 0 fixes it,
	// NoSpines builds none.
	Spines int
}

// RailPlan is the shape RailOptimized builds for a RailSpec, available before building so a
// caller can check memory (EstimateMemory(p.Hosts, p.Switches, p.Links)).
type RailPlan struct {
	Rails         int // = NICsPerServer
	DownPerLeaf   int // NIC ports a leaf can take (D)
	UpPerLeaf     int // spine uplinks per leaf (U)
	LeavesPerRail int // L = ceil(Servers / D)
	Spines        int // S
	Hosts         int // Servers * Rails (one host per NIC)
	Switches      int // Rails*L + S
	Links         int // Hosts + Rails*L*U
}

// PlanRail applies RailOptimized's formulas (documented there) without building anything.
func PlanRail(spec RailSpec) (RailPlan, error) {
	s, err := spec.withDefaults()
	if err != nil {
		return RailPlan{}, err
	}
	p := RailPlan{Rails: s.NICsPerServer}
	n, u := float64(s.NIC.Rate), float64(s.Spine.Rate)
	uplinksFor := func(down int) int {
		return int(math.Ceil(float64(down)*n/(s.Oversubscription*u) - 1e-9))
	}
	if s.Spines == NoSpines {
		p.DownPerLeaf = s.Radix
	} else {
		for d := s.Radix - 1; d >= 1; d-- {
			if d+uplinksFor(d) <= s.Radix {
				p.DownPerLeaf = d
				break
			}
		}
		if p.DownPerLeaf == 0 {
			return RailPlan{}, fmt.Errorf("rail-optimized: radix %d cannot hold even one NIC port plus its uplinks at oversubscription %v", s.Radix, s.Oversubscription)
		}
	}
	p.LeavesPerRail = (s.Servers + p.DownPerLeaf - 1) / p.DownPerLeaf
	leaves := p.Rails * p.LeavesPerRail
	p.Hosts = s.Servers * s.NICsPerServer
	if s.Spines != NoSpines {
		p.UpPerLeaf = uplinksFor(min(p.DownPerLeaf, s.Servers))
		total := leaves * p.UpPerLeaf
		p.Spines = s.Spines
		if p.Spines == 0 {
			p.Spines = (total + s.Radix - 1) / s.Radix
		}
		if per := (total + p.Spines - 1) / p.Spines; per > s.Radix {
			return RailPlan{}, fmt.Errorf("rail-optimized: %d spines cannot take %d leaf uplinks (%d leaves x %d): %d ports per spine exceeds radix %d; use at least %d spines",
				p.Spines, total, leaves, p.UpPerLeaf, per, s.Radix, (total+s.Radix-1)/s.Radix)
		}
		if p.Spines > p.UpPerLeaf {
			return RailPlan{}, fmt.Errorf("rail-optimized: %d servers x %d rails need %d leaves with %d uplinks each, spread over %d spines, more than a leaf's %d uplinks, so not every leaf reaches every spine: a two-tier fabric of radix-%d switches holds at most %d leaves (%d NICs here); use fewer servers, a larger radix, more oversubscription or three tiers (topo.Clos)",
				s.Servers, s.NICsPerServer, leaves, p.UpPerLeaf, p.Spines, p.UpPerLeaf, s.Radix, s.Radix, s.Radix*p.DownPerLeaf)
		}
	}
	p.Switches = leaves + p.Spines
	p.Links = p.Hosts + leaves*p.UpPerLeaf
	if float64(p.Hosts)+float64(p.Switches) > maxGeneratedNodes || p.Links > maxGeneratedNodes {
		return RailPlan{}, fmt.Errorf("rail-optimized: %d hosts and %d switches exceed the limit of %d nodes", p.Hosts, p.Switches, maxGeneratedNodes)
	}
	return p, nil
}

func (spec RailSpec) withDefaults() (RailSpec, error) {
	s := spec
	if s.NICsPerServer == 0 {
		s.NICsPerServer = 8
	}
	if s.Radix == 0 {
		s.Radix = 64
	}
	if s.Oversubscription == 0 {
		s.Oversubscription = 1
	}
	if s.Spine.Rate == 0 {
		if s.Spine.Latency == 0 {
			s.Spine.Latency = s.NIC.Latency
		}
		s.Spine.Rate = s.NIC.Rate
	}
	switch {
	case s.Servers < 1 || s.Servers > maxGeneratedNodes:
		return s, fmt.Errorf("rail-optimized: servers=%d: must be between 1 and %d", s.Servers, maxGeneratedNodes)
	case s.NICsPerServer < 1 || s.NICsPerServer > 1024:
		return s, fmt.Errorf("rail-optimized: nics_per_server=%d: must be between 1 and 1024 (default 8)", s.NICsPerServer)
	case s.Radix < 2 || s.Radix > 1<<16:
		return s, fmt.Errorf("rail-optimized: radix=%d: ports per switch must be between 2 and 65536 (e.g. 64)", s.Radix)
	case math.IsNaN(s.Oversubscription) || math.IsInf(s.Oversubscription, 0) || s.Oversubscription <= 0:
		return s, fmt.Errorf("rail-optimized: oversubscription %v: must be a positive ratio such as 1, 3 or 7 (leaf downlink/uplink capacity)", s.Oversubscription)
	case s.Spines < NoSpines:
		return s, fmt.Errorf("rail-optimized: spines=%d: use a positive count, 0 to derive it, or NoSpines (%d) for isolated rails", s.Spines, NoSpines)
	}
	if err := s.NIC.check("rail-optimized NIC link"); err != nil {
		return s, err
	}
	if err := s.Spine.check("rail-optimized spine link"); err != nil {
		return s, err
	}
	return s, nil
}

// RailOptimized builds a two-tier rail-optimized cluster. Each host node is one NIC: host
// h = s*NICsPerServer + i is NIC i of server s, with Node.Server = s and Node.Rail = i, so GPU g
// of server s is host s*NICsPerServer+g. With R = Radix, o = Oversubscription, n = NIC rate and
// u = spine rate:
//
//	D (NIC ports per leaf)  = the largest d with d + ceil(d*n/(o*u)) <= R   (R/2 at 1:1, equal rates)
//	L (leaves per rail)     = ceil(Servers / D); server s uses leaf s/D of each rail
//	U (uplinks per leaf)    = ceil(min(D, Servers)*n/(o*u))
//	S (spines)              = ceil(NICsPerServer*L*U / R)   unless Spines > 0 is given
//
// Uplink m of leaf l (leaves numbered rail by rail) goes to spine (l*U+m) mod S, so every spine
// has at most R ports and, because S <= U is required, every leaf reaches every spine: any two
// leaves are two hops apart. A fabric too large for two tiers (S > U) is an error.
//
// Example: 128 servers x 8 NICs at 400G, R = 64, 1:1 -> D = 32, L = 4, 32 leaves with 32 NIC
// ports and U = 32 uplinks each, S = 1024/64 = 16 spines; 1024 NIC links + 1024 leaf-spine links
// (each leaf has 2 parallel links to each spine).
//
// Nodes are the hosts ("host<h>", tier 0), then leaves ("rail<r>_leaf<j>", tier 1, Rail = r),
// then spines ("spine<i>", tier 2). With Spines == NoSpines there is no spine tier and D = R.
func RailOptimized(spec RailSpec) (*Graph, error) {
	p, err := PlanRail(spec)
	if err != nil {
		return nil, err
	}
	s, _ := spec.withDefaults()
	rails, L := p.Rails, p.LeavesPerRail
	g := &Graph{
		Name:  fmt.Sprintf("rail-%dx%d", s.Servers, rails),
		Nodes: make([]Node, 0, p.Hosts+p.Switches),
		Links: make([]Link, 0, p.Links),
		Hosts: make([]NodeID, 0, p.Hosts),
	}
	for sv := 0; sv < s.Servers; sv++ {
		for r := 0; r < rails; r++ {
			id := g.AddNode(Host, "host"+itoa(sv*rails+r), 0)
			g.Nodes[id].Server, g.Nodes[id].Rail = int32(sv), int32(r)
		}
	}
	leaf := func(r, j int) NodeID { return NodeID(p.Hosts + r*L + j) }
	for r := 0; r < rails; r++ {
		for j := 0; j < L; j++ {
			id := g.AddNode(Switch, fmt.Sprintf("rail%d_leaf%d", r, j), 1)
			g.Nodes[id].Rail = int32(r)
		}
	}
	for i := 0; i < p.Spines; i++ {
		g.AddNode(Switch, "spine"+itoa(i), 2)
	}
	for sv := 0; sv < s.Servers; sv++ {
		for r := 0; r < rails; r++ {
			g.Connect(NodeID(sv*rails+r), leaf(r, sv/p.DownPerLeaf), s.NIC.Rate, s.NIC.Latency)
		}
	}
	if p.Spines > 0 {
		firstSpine := p.Hosts + rails*L
		for l := 0; l < rails*L; l++ {
			for m := 0; m < p.UpPerLeaf; m++ {
				sp := (l*p.UpPerLeaf + m) % p.Spines
				g.Connect(NodeID(p.Hosts+l), NodeID(firstSpine+sp), s.Spine.Rate, s.Spine.Latency)
			}
		}
	}
	return g, nil
}
