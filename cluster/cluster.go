// Package cluster builds a GPU cluster as one topology: the servers of package gpu (GPUs joined
// by an NVLink domain, a PCIe switch joining each GPU to its NIC, CPU sockets with host memory)
// and a cluster network between them (rail-optimized, or any topology whose hosts are the NICs).
//
// A server is not a black box with a bandwidth: it is nodes and links in the same topo.Graph as
// the network, so that the packet backend simulates NVLink and PCIe contention packet by packet,
// exactly as it simulates a network switch port. Per server s, with G GPUs:
//
//	gpu<g>       host    the GPU's NVLink port: the rank endpoint collectives address
//	gpudma<g>    host    the GPU's PCIe port, where NICs and copy engines read and write its
//	                     memory (absent without NVLink: then gpu<g> is the PCIe port)
//	nvswitch     switch  the NVLink domain (one node for the NVSwitch chips)
//	pcie<g>      switch  the PCIe switch shared by GPU g and its NIC
//	nic<k>       switch  the NIC: PCIe on one side, the network port on the other
//	rootport<g>  switch  the CPU root port the PCIe switch hangs off
//	socket<k>    switch  the CPU socket's root complex and memory controller
//	hostmem<g>   host    the pinned host buffer GPU g stages through (rdma-host, host-staged)
//
// Links: gpu<g>-nvswitch (NVLink, per GPU and direction), gpudma<g>-pcie<g> (the GPU's x16 at the
// peer-to-peer rate), pcie<g>-nic<k> and pcie<g>-rootport<g> (PCIe x16), rootport<g>-socket<k>
// and rootport<g>-hostmem<g> (memory bandwidth), socket<k>-socket<k+1> (the rate PCIe
// peer-to-peer traffic gets across the CPUs). Server link rates are effective data rates; Build
// scales them by the fabric's framing so that full packets deliver exactly those rates.
//
// Routes are the packet backend's minimum-hop paths (topo.ComputeRoutes), and the shape above
// makes them the ones NCCL uses: GPU to GPU in a server over NVLink; GPU g's PCIe port to GPU g
// of another server through its own NIC (rail-aligned; a neighbour's NIC is two links further);
// a host buffer to the network through its GPU's NIC. docs/gpu.md has the figures and sources.
package cluster

import (
	"fmt"

	"github.com/fabricsim/fabricsim/backend"
	"github.com/fabricsim/fabricsim/gpu"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

// Framing is what the packet backend adds to every packet's payload: Build scales the server's
// link rates by (MTU + Header + L1) / MTU so that a full packet stream delivers exactly the
// effective data rates of gpu.Server (NVLink and PCIe have their own framing, which the effective
// rates already account for; the fabric's RoCE or IB headers do not cross them in reality).
type Framing struct {
	MTU        units.Size
	Header, L1 int
}

// NetworkKind is how Build makes a cluster's network between the NICs.
type NetworkKind string

const (
	// NetRail is a two-tier rail-optimized network (topo.RailSpec); "" means it too.
	NetRail NetworkKind = "rail"
	// NetClos is a topo.Clos: one to three tiers, scalable units, planes.
	NetClos NetworkKind = "clos"
	// NetGraph uses Network.Graph as it is.
	NetGraph NetworkKind = "graph"
)

// Network is the cluster network between the servers' NICs.
type Network struct {
	// Kind is NetRail (the default), NetClos or NetGraph.
	Kind NetworkKind
	// Rail-optimized: leaf radix, leaf oversubscription, spine count (topo.RailSpec) and the
	// latency of the NIC and spine links.
	Radix            int
	Oversubscription float64
	Spines           int
	LinkLatency      units.Time
	// Graph, for NetGraph, is a network whose hosts are the NICs' ports: host
	// (s*NICs+k)*P+p is port p of NIC k of server s, P the ports per NIC (a scenario's
	// leaf-spine, fat tree or HPCC topology, with P = 1).
	Graph *topo.Graph
	// Clos, for NetClos, shapes the network (topo.ClosSpec); Build fills in the servers, the
	// NICs per server and, where zero, the NIC link (the server's NIC rate and LinkLatency) and
	// the radix, oversubscription and spine count above.
	Clos topo.ClosSpec
}

// Spec is a whole cluster.
type Spec struct {
	Servers int
	Server  gpu.Server
	Net     Network
	Framing Framing
}

// Cluster is a built GPU cluster: one topo.Graph with the servers' insides and the network.
//
// Endpoints (host indices): GPU r's rank endpoint is host r (rank r, server r/GPUs-per-server),
// the GPU's NVLink port. With NVLink, hosts GPUs..2*GPUs-1 are the GPUs' PCIe ports ("DMA
// endpoints": where a NIC or a copy engine reads and writes GPU memory); without NVLink the rank
// endpoint is the PCIe port itself. Then come the pinned host buffers, one per GPU.
type Cluster struct {
	Spec   Spec
	Server gpu.Server // with defaults filled
	Graph  *topo.Graph
	// GPUs is the number of GPUs.
	GPUs int
	// Framing used to scale the server links' rates.
	Framing Framing

	dma, mem int // first host index of the DMA endpoints and of the host buffers

	net *backend.Network // Graph, with its routes computed on first use
}

// GPUHost is the rank endpoint of local GPU g of server s.
func (c *Cluster) GPUHost(s, g int) int32 { return int32(s*c.Server.GPUs + g) }

// DMA is the PCIe endpoint of GPU rank r (r itself on a server without NVLink).
func (c *Cluster) DMA(r int32) int32 { return int32(c.dma) + r }

// HostMem is the pinned host buffer of GPU rank r.
func (c *Cluster) HostMem(r int32) int32 { return int32(c.mem) + r }

// RankOf maps any endpoint (rank, DMA or host buffer) to its GPU's rank.
func (c *Cluster) RankOf(h int32) int32 {
	switch {
	case int(h) >= c.mem:
		return h - int32(c.mem)
	case int(h) >= c.dma:
		return h - int32(c.dma)
	}
	return h
}

// ServerOf is the server of endpoint h.
func (c *Cluster) ServerOf(h int32) int { return int(c.RankOf(h)) / c.Server.GPUs }

// IsDMA says whether endpoint h is a GPU's PCIe endpoint.
func (c *Cluster) IsDMA(h int32) bool { return int(h) >= c.dma && int(h) < c.mem }

// IsRank says whether endpoint h is a GPU's rank endpoint.
func (c *Cluster) IsRank(h int32) bool { return h >= 0 && int(h) < c.GPUs }

// Servers is the number of servers.
func (c *Cluster) Servers() int { return c.GPUs / c.Server.GPUs }

// Endpoints is the number of endpoints a message graph on this cluster addresses.
func (c *Cluster) Endpoints() int { return len(c.Graph.Hosts) }

// Route maps a message between two rank endpoints to the endpoints that carry it: the NVLink
// ports inside a server with NVLink, the PCIe (DMA) ports otherwise (GPUDirect RDMA).
func (c *Cluster) Route(src, dst int32) (int32, int32) {
	if c.IsRank(src) && c.IsRank(dst) && (c.ServerOf(src) != c.ServerOf(dst) || !c.HasNVLink()) {
		return c.DMA(src), c.DMA(dst)
	}
	return src, dst
}

// HasNVLink says whether the servers' GPUs are joined by NVLink (then rank and DMA endpoints
// differ).
func (c *Cluster) HasNVLink() bool { return c.dma != 0 }

// Network is the cluster's topology as backends take it, its routes computed once, on first
// use, and shared by every run on the cluster.
func (c *Cluster) Network() *backend.Network { return c.net }

// Routes returns the cluster's shortest-path tables, computed once.
func (c *Cluster) Routes() (*topo.Routes, error) { return c.net.Routes() }

// Build builds the cluster graph.
func Build(spec Spec) (*Cluster, error) {
	srv, err := spec.Server.WithDefaults()
	if err != nil {
		return nil, err
	}
	if spec.Servers < 1 {
		return nil, fmt.Errorf("cluster: %d servers: want at least 1", spec.Servers)
	}
	fr := spec.Framing
	if fr.MTU <= 0 {
		fr = Framing{MTU: 4096, Header: 62, L1: 20}
	}
	net := spec.Net.Graph
	if spec.Net.Kind == "" || spec.Net.Kind == NetRail {
		lat := spec.Net.LinkLatency
		if lat == 0 {
			lat = 500 * units.Nanosecond // est.: ~100 m of fibre and the optics, [EST]
		}
		rs := topo.RailSpec{Servers: spec.Servers, NICsPerServer: srv.NICs, NIC: topo.LinkSpec{Rate: srv.NICRate, Latency: lat},
			Radix: spec.Net.Radix, Oversubscription: spec.Net.Oversubscription, Spines: spec.Net.Spines}
		if spec.Servers == 1 {
			rs.Spines = topo.NoSpines
		}
		net, err = topo.RailOptimized(rs)
		if err != nil && rs.Spines == 0 {
			// Too large for two tiers: the same fabric with a core tier (topo.Clos), if it holds.
			cs := topo.ClosSpec{Servers: rs.Servers, NICsPerServer: rs.NICsPerServer, RailOptimized: true, Radix: rs.Radix, NIC: rs.NIC}
			if rs.Oversubscription > 0 {
				cs.Oversubscription = []float64{rs.Oversubscription}
			}
			if p, perr := topo.PlanClos(cs); perr == nil && p.Tiers == 3 {
				net, err = topo.Clos(cs)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("cluster network: %w", err)
		}
	} else if spec.Net.Kind == NetClos {
		cs := spec.Net.Clos
		cs.Servers, cs.NICsPerServer = spec.Servers, srv.NICs
		if cs.NIC.Rate == 0 {
			cs.NIC.Rate = srv.NICRate
		}
		if cs.NIC.Latency == 0 {
			cs.NIC.Latency = spec.Net.LinkLatency
			if cs.NIC.Latency == 0 {
				cs.NIC.Latency = 500 * units.Nanosecond // as for "rail"
			}
		}
		if cs.Radix == 0 {
			cs.Radix = spec.Net.Radix
		}
		if len(cs.Oversubscription) == 0 && spec.Net.Oversubscription != 0 {
			cs.Oversubscription = []float64{spec.Net.Oversubscription}
		}
		if cs.Spines == 0 {
			cs.Spines = spec.Net.Spines
		}
		if net, err = topo.Clos(cs); err != nil {
			return nil, fmt.Errorf("cluster network: %w", err)
		}
	} else if spec.Net.Kind != NetGraph || net == nil {
		return nil, fmt.Errorf("cluster network kind %q: want rail, clos, or graph with a Graph", spec.Net.Kind)
	}
	nicPorts := spec.Servers * srv.NICs
	if len(net.Hosts) == 0 || len(net.Hosts)%nicPorts != 0 {
		return nil, fmt.Errorf("cluster network %s has %d NIC ports, but %d servers x %d NICs need %d (or a multiple: ports per NIC)",
			net.Name, len(net.Hosts), spec.Servers, srv.NICs, nicPorts)
	}
	portsPerNIC := len(net.Hosts) / nicPorts
	G := srv.GPUs
	N := spec.Servers
	scale := func(r units.Rate) units.Rate {
		// Link rate whose full-MTU packet stream carries r of payload.
		wire := int64(fr.MTU) + int64(fr.Header) + int64(fr.L1)
		return units.Rate((int64(r)*wire + int64(fr.MTU) - 1) / int64(fr.MTU))
	}
	nvlink := srv.NVLink.Rate > 0 && G > 1
	// Sizes known ahead (a 16,384-server cluster has 800,000 nodes: no growing by doubling).
	perServerNodes := G*3 + srv.NICs + srv.Sockets + 1 + 2*G
	perServerLinks := srv.Sockets + 5*G + srv.NICs
	g := &topo.Graph{Name: fmt.Sprintf("gpu-%dx%d-%s", N, G, net.Name),
		Nodes: make([]topo.Node, 0, N*perServerNodes+len(net.Nodes)),
		Links: make([]topo.Link, 0, N*perServerLinks+len(net.Links)),
		Hosts: make([]topo.NodeID, 0, 3*N*G)}
	endpoints := func(kind string) {
		for s := 0; s < N; s++ {
			for i := 0; i < G; i++ {
				id := g.AddNode(topo.Host, fmt.Sprintf("srv%d_%s%d", s, kind, i), 0)
				g.Nodes[id].Server, g.Nodes[id].Rail = int32(s), int32(i)
			}
		}
	}
	c := &Cluster{Spec: spec, Server: srv, Graph: g, GPUs: N * G, Framing: fr}
	endpoints("gpu")
	if nvlink {
		c.dma = N * G
		endpoints("gpudma")
	}
	c.mem = len(g.Hosts)
	endpoints("hostmem")
	// The network's switches keep their names, tiers, rails and planes; its hosts (NIC ports)
	// become NIC nodes, one per NIC with a link per port.
	netNode := make([]topo.NodeID, len(net.Nodes))
	nicNode := make([]topo.NodeID, nicPorts)
	for i := range nicNode {
		nicNode[i] = -1
	}
	for i := range net.Nodes {
		n := &net.Nodes[i]
		if n.Kind == topo.Host {
			nic := int(n.Host) / portsPerNIC
			if nicNode[nic] < 0 {
				s, k := nic/srv.NICs, nic%srv.NICs
				id := g.AddNode(topo.Switch, fmt.Sprintf("srv%d_nic%d", s, k), 0)
				g.Nodes[id].Server, g.Nodes[id].Rail = int32(s), int32(k)
				g.Nodes[id].Latency = orNone(srv.NICLatency)
				nicNode[nic] = id
			}
			netNode[i] = nicNode[nic]
			continue
		}
		id := g.AddNode(topo.Switch, n.Name, n.Tier)
		g.Nodes[id].Rail, g.Nodes[id].Plane = n.Rail, n.Plane
		g.Nodes[id].Latency = n.Latency
		netNode[i] = id
	}
	for i := range net.Links {
		l := &net.Links[i]
		id := g.Connect(netNode[l.A], netNode[l.B], l.Rate, l.Latency)
		g.Links[id].ErrorRate, g.Links[id].LengthM, g.Links[id].Reach = l.ErrorRate, l.LengthM, l.Reach
	}
	sw := func(name string, s int, lat units.Time) topo.NodeID {
		id := g.AddNode(topo.Switch, fmt.Sprintf("srv%d_%s", s, name), 0)
		g.Nodes[id].Server = int32(s)
		g.Nodes[id].Latency = orNone(lat)
		return id
	}
	for s := 0; s < N; s++ {
		sockets := make([]topo.NodeID, srv.Sockets)
		for k := range sockets {
			sockets[k] = sw(fmt.Sprintf("socket%d", k), s, srv.RootComplexLatency)
		}
		for k := 1; k < srv.Sockets; k++ {
			g.Connect(sockets[k-1], sockets[k], scale(srv.InterSocket.Rate), srv.InterSocket.Latency)
		}
		var nvs topo.NodeID = -1
		if nvlink {
			nvs = sw("nvswitch", s, srv.NVSwitchLatency)
		}
		for i := 0; i < G; i++ {
			r := c.GPUHost(s, i)
			psw := sw(fmt.Sprintf("pcie%d", i), s, srv.PCIeSwitchLatency)
			if nvlink {
				g.Connect(g.Hosts[r], nvs, scale(srv.NVLink.Rate), srv.NVLink.Latency)
			}
			g.Connect(g.Hosts[c.DMA(r)], psw, scale(srv.P2PRate()), srv.PCIe.Latency)
			if k := srv.NICOf(i); k >= 0 {
				g.Connect(psw, nicNode[s*srv.NICs+k], scale(srv.PCIe.Rate), srv.PCIe.Latency)
			}
			rp := sw(fmt.Sprintf("rootport%d", i), s, srv.RootComplexLatency)
			g.Connect(psw, rp, scale(srv.PCIe.Rate), srv.PCIe.Latency)
			g.Connect(rp, sockets[srv.SocketOf(i)], scale(srv.HostMemory.Rate), 0)
			g.Connect(rp, g.Hosts[c.HostMem(r)], scale(srv.HostMemory.Rate), srv.HostMemory.Latency)
		}
	}
	if err := g.Validate(); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	c.net = backend.NewNetwork(g, nil)
	return c, nil
}

// orNone maps a zero latency to topo.Node's "none" (negative), so that a server part with no
// latency does not get the network's switch latency.
func orNone(t units.Time) units.Time {
	if t == 0 {
		return -1
	}
	return t
}
