package topo

import (
	"fmt"
	"math"

	"github.com/fabricsim/fabricsim/units"
)

// LeafSpineSpec describes a two-tier leaf-spine (folded Clos) fabric.
type LeafSpineSpec struct {
	Leaves       int
	Spines       int // 0 only with a single leaf (a one-switch fabric)
	HostsPerLeaf int
	Host         LinkSpec // host <-> leaf
	// Uplink is the leaf <-> spine link. A zero Uplink.Rate is derived from Oversubscription,
	// or equals Host.Rate when Oversubscription is also unset.
	Uplink LinkSpec
	// Oversubscription is downlink capacity / uplink capacity per leaf:
	// HostsPerLeaf*Host.Rate / (Spines*LinksPerSpine*Uplink.Rate). 0 means unset.
	Oversubscription float64
	// LinksPerSpine is the number of parallel links from every leaf to every spine (0 means 1).
	LinksPerSpine int
}

// LeafSpine builds a leaf-spine fabric: every leaf connects to every spine with LinksPerSpine
// parallel links. Nodes are hosts ("host<h>", tier 0), leaves ("leaf<i>", tier 1) and spines
// ("spine<i>", tier 2); host h hangs off leaf h/HostsPerLeaf. Leaf ports: hosts first, then
// uplinks by spine; spine port l*LinksPerSpine+m is the m-th link to leaf l.
//
// Uplink rate and oversubscription o are tied by
//
//	uplink rate = HostsPerLeaf*hostRate / (Spines*LinksPerSpine*o).
//
// Give either (the other is derived; a derived rate must be a whole number of bits per second)
// or both (they must agree within a relative 1e-9).
func LeafSpine(spec LeafSpineSpec) (*Graph, error) {
	s := spec
	if s.Leaves < 1 || s.HostsPerLeaf < 1 {
		return nil, fmt.Errorf("leaf-spine: leaves=%d hosts_per_leaf=%d: both must be at least 1", s.Leaves, s.HostsPerLeaf)
	}
	if s.Spines < 0 || (s.Spines == 0 && s.Leaves > 1) {
		return nil, fmt.Errorf("leaf-spine: spines=%d: need at least 1 spine to join %d leaves (0 is allowed only for a single leaf)", s.Spines, s.Leaves)
	}
	if s.LinksPerSpine == 0 {
		s.LinksPerSpine = 1
	}
	if s.LinksPerSpine < 0 {
		return nil, fmt.Errorf("leaf-spine: links_per_spine=%d: must be at least 1", s.LinksPerSpine)
	}
	if err := s.Host.check("leaf-spine host link"); err != nil {
		return nil, err
	}
	if math.IsNaN(s.Oversubscription) || math.IsInf(s.Oversubscription, 0) || s.Oversubscription < 0 {
		return nil, fmt.Errorf("leaf-spine: oversubscription %v: must be a positive ratio such as 1, 3 or 1.5 (downlink/uplink capacity per leaf)", s.Oversubscription)
	}
	nodes := float64(s.Leaves)*float64(s.HostsPerLeaf) + float64(s.Leaves) + float64(s.Spines)
	nlinks := float64(s.Leaves)*float64(s.HostsPerLeaf) + float64(s.Leaves)*float64(s.Spines)*float64(s.LinksPerSpine)
	if nodes > maxGeneratedNodes || nlinks > maxGeneratedNodes {
		return nil, fmt.Errorf("leaf-spine: %d leaves x %d hosts, %d spines x %d links: %.0f nodes and %.0f links exceed the limit of %d",
			s.Leaves, s.HostsPerLeaf, s.Spines, s.LinksPerSpine, nodes, nlinks, maxGeneratedNodes)
	}
	if s.Spines > 0 {
		down := float64(s.HostsPerLeaf) * float64(s.Host.Rate)
		upLinks := float64(s.Spines) * float64(s.LinksPerSpine)
		switch {
		case s.Uplink.Rate == 0 && s.Oversubscription == 0:
			s.Uplink.Rate = s.Host.Rate
		case s.Uplink.Rate == 0:
			r := down / (upLinks * s.Oversubscription)
			w := math.Round(r)
			if math.Abs(r-w) > wholeTolerance(r) || w < 1 || w > math.MaxInt64/2 {
				return nil, fmt.Errorf("leaf-spine: uplink rate = hosts_per_leaf*host_rate/(spines*links_per_spine*oversubscription) = %d*%s/(%d*%d*%v) = %.6f bit/s is not a whole number of bits per second; give uplink rate explicitly or choose another oversubscription",
					s.HostsPerLeaf, s.Host.Rate, s.Spines, s.LinksPerSpine, s.Oversubscription, r)
			}
			s.Uplink.Rate = units.Rate(w)
		case s.Oversubscription != 0:
			got := down / (upLinks * float64(s.Uplink.Rate))
			if math.Abs(got-s.Oversubscription) > 1e-9*s.Oversubscription {
				return nil, fmt.Errorf("leaf-spine: oversubscription %v disagrees with the link rates, which give %d*%s/(%d*%d*%s) = %v; set one of uplink rate and oversubscription, or make them agree",
					s.Oversubscription, s.HostsPerLeaf, s.Host.Rate, s.Spines, s.LinksPerSpine, s.Uplink.Rate, got)
			}
		}
		if err := s.Uplink.check("leaf-spine uplink"); err != nil {
			return nil, err
		}
	} else if s.Oversubscription != 0 || s.Uplink.Rate != 0 {
		return nil, fmt.Errorf("leaf-spine: uplink rate or oversubscription given but spines=0: a single leaf has no uplinks")
	}

	hosts := s.Leaves * s.HostsPerLeaf
	g := &Graph{
		Name:  fmt.Sprintf("leafspine-%dx%d", s.Leaves, s.Spines),
		Nodes: make([]Node, 0, hosts+s.Leaves+s.Spines),
		Links: make([]Link, 0, hosts+s.Leaves*s.Spines*s.LinksPerSpine),
		Hosts: make([]NodeID, 0, hosts),
	}
	for h := 0; h < hosts; h++ {
		g.AddNode(Host, "host"+itoa(h), 0)
	}
	for i := 0; i < s.Leaves; i++ {
		g.AddNode(Switch, "leaf"+itoa(i), 1)
	}
	for i := 0; i < s.Spines; i++ {
		g.AddNode(Switch, "spine"+itoa(i), 2)
	}
	leaf := func(i int) NodeID { return NodeID(hosts + i) }
	spine := func(i int) NodeID { return NodeID(hosts + s.Leaves + i) }
	for h := 0; h < hosts; h++ {
		g.Connect(NodeID(h), leaf(h/s.HostsPerLeaf), s.Host.Rate, s.Host.Latency)
	}
	for l := 0; l < s.Leaves; l++ {
		for sp := 0; sp < s.Spines; sp++ {
			for m := 0; m < s.LinksPerSpine; m++ {
				g.Connect(leaf(l), spine(sp), s.Uplink.Rate, s.Uplink.Latency)
			}
		}
	}
	return g, nil
}

// wholeTolerance is how far a float computed from exact integers may sit from a whole number and
// still be one: a few units in the last place, and never less than a thousandth of a bit/s.
func wholeTolerance(x float64) float64 {
	ulp := math.Nextafter(math.Abs(x), math.Inf(1)) - math.Abs(x)
	return math.Max(1e-3, 4*ulp)
}
