package topo

import "fmt"

// FatTreeLinks gives each tier of a fat tree its own link spec (e.g. 400G host links under 800G
// switch-to-switch links).
type FatTreeLinks struct {
	HostEdge LinkSpec // host <-> edge (ToR)
	EdgeAgg  LinkSpec // edge <-> aggregation
	AggCore  LinkSpec // aggregation <-> core
}

// FatTreeSize returns the element counts of a k-ary fat tree (Al-Fares et al., SIGCOMM'08,
// section 3.2): k^3/4 hosts; k pods of k/2 edge and k/2 aggregation switches plus (k/2)^2 core
// switches = 5k^2/4 switches; k^3/4 host links + k^3/4 edge-agg links + k^3/4 agg-core links =
// 3k^3/4 links. It does not check k; FatTree does.
func FatTreeSize(k int) (hosts, switches, links int) {
	h := k / 2
	hosts = k * h * h
	switches = k*k + h*h
	links = 3 * hosts
	return
}

// FatTree builds the 3-tier k-ary fat tree of Al-Fares et al. (SIGCOMM'08) with one link spec for
// every tier. See FatTreeTiered.
func FatTree(k int, link LinkSpec) (*Graph, error) {
	return FatTreeTiered(k, FatTreeLinks{HostEdge: link, EdgeAgg: link, AggCore: link})
}

// FatTreeTiered builds a k-ary fat tree: k pods, each with k/2 edge switches (tier 1) and k/2
// aggregation switches (tier 2) fully meshed within the pod, (k/2)^2 core switches (tier 3), and
// k/2 hosts under each edge switch. Aggregation switch i of every pod connects to core switches
// i*(k/2) .. i*(k/2)+k/2-1, so core switch c reaches every pod through aggregation switch
// c/(k/2).
//
// Numbering: nodes are hosts, then edge, aggregation and core switches. Host h =
// p*(k/2)^2 + j*(k/2) + x is host x of edge j in pod p, so consecutive hosts share an edge
// switch. Names are "host<h>", "edge<p>_<j>", "agg<p>_<i>", "core<c>". Ports are in a fixed
// order that linear forwarding tables can rely on: an edge switch has its hosts on ports
// 0..k/2-1 and aggregation switches 0..k/2-1 on ports k/2..k-1; an aggregation switch has edge
// switches 0..k/2-1 on ports 0..k/2-1 and its core switches in ascending order on ports
// k/2..k-1; core switch c has pod p on port p.
//
// k must be even and at least 2.
func FatTreeTiered(k int, links FatTreeLinks) (*Graph, error) {
	if k < 2 || k%2 != 0 {
		return nil, fmt.Errorf("fat tree k=%d: k (switch radix) must be an even number >= 2, e.g. 4, 8, 16", k)
	}
	if k > 1024 {
		return nil, fmt.Errorf("fat tree k=%d: k must be at most 1024 (%d hosts would not fit in memory)", k, k*k*k/4)
	}
	for _, c := range []struct {
		s    LinkSpec
		what string
	}{{links.HostEdge, "fat tree host-edge link"}, {links.EdgeAgg, "fat tree edge-aggregation link"}, {links.AggCore, "fat tree aggregation-core link"}} {
		if err := c.s.check(c.what); err != nil {
			return nil, err
		}
	}
	h := k / 2
	hosts, switches, nlinks := FatTreeSize(k)
	g := &Graph{
		Name:  fmt.Sprintf("fattree-k%d", k),
		Nodes: make([]Node, 0, hosts+switches),
		Links: make([]Link, 0, nlinks),
		Hosts: make([]NodeID, 0, hosts),
	}
	for i := 0; i < hosts; i++ {
		g.AddNode(Host, "host"+itoa(i), 0)
	}
	edge := func(p, j int) NodeID { return NodeID(hosts + p*h + j) }
	agg := func(p, i int) NodeID { return NodeID(hosts + k*h + p*h + i) }
	core := func(c int) NodeID { return NodeID(hosts + k*k + c) }
	for p := 0; p < k; p++ {
		for j := 0; j < h; j++ {
			g.AddNode(Switch, fmt.Sprintf("edge%d_%d", p, j), 1)
		}
	}
	for p := 0; p < k; p++ {
		for i := 0; i < h; i++ {
			g.AddNode(Switch, fmt.Sprintf("agg%d_%d", p, i), 2)
		}
	}
	for c := 0; c < h*h; c++ {
		g.AddNode(Switch, "core"+itoa(c), 3)
	}
	// Host links first, so every edge switch numbers its host ports before its uplinks.
	for hh := 0; hh < hosts; hh++ {
		p, j := hh/(h*h), (hh/h)%h
		g.Connect(NodeID(hh), edge(p, j), links.HostEdge.Rate, links.HostEdge.Latency)
	}
	for p := 0; p < k; p++ {
		for j := 0; j < h; j++ {
			for i := 0; i < h; i++ {
				g.Connect(edge(p, j), agg(p, i), links.EdgeAgg.Rate, links.EdgeAgg.Latency)
			}
		}
	}
	for p := 0; p < k; p++ {
		for i := 0; i < h; i++ {
			for c := i * h; c < i*h+h; c++ {
				g.Connect(agg(p, i), core(c), links.AggCore.Rate, links.AggCore.Latency)
			}
		}
	}
	return g, nil
}
