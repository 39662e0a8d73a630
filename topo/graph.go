// Package topo describes a cluster network as a graph of hosts and switches joined by
// full-duplex links, builds the common data-centre shapes (k-ary fat tree, leaf-spine, rail-
// optimized), imports peer simulators' topology files, and computes the shortest-path next hops
// that routing policies (ECMP, linear forwarding tables, adaptive routing) choose among.
//
// A node's ports are numbered in the order its links were connected; port p of node n is the
// end of link Nodes[n].Ports[p].Link. Hosts are also numbered densely (0..len(Hosts)-1) because
// traffic and results speak of "host 17", while node IDs mix hosts and switches.
package topo

import (
	"fmt"

	"github.com/fabricsim/fabricsim/units"
)

// NodeID indexes Graph.Nodes.
type NodeID int32

// LinkID indexes Graph.Links.
type LinkID int32

// Kind says what a node is.
type Kind uint8

const (
	// Host is an endpoint with a NIC (for GPU clusters: one NIC port of a server).
	Host Kind = iota
	// Switch forwards packets between its ports.
	Switch
)

func (k Kind) String() string {
	if k == Host {
		return "host"
	}
	return "switch"
}

// Port is one end of a link as seen from its node.
type Port struct {
	Link     LinkID
	Peer     NodeID // node at the other end
	PeerPort int32  // port index on the peer
}

// Node is a host or a switch.
type Node struct {
	ID   NodeID
	Kind Kind
	Name string // unique, e.g. "host17", "edge3", "core0"
	// Tier is 0 for hosts, 1 for edge/leaf/ToR switches, 2 for aggregation/spine, 3 for core.
	// Imported topologies without tiers use 1 for every switch.
	Tier int
	// Host is the dense host index for hosts, -1 for switches.
	Host int32
	// Plane is the independent network plane a node belongs to in a multi-plane fabric (each
	// NIC port, or each rail, on a fabric of its own; 0 in a single-plane Clos), -1 where it
	// does not apply (graphs not built by Clos, server internals).
	Plane int32
	Ports []Port
	// Server is the GPU server a host (NIC) belongs to in a rail-optimized cluster, and Rail the
	// rail (NIC index within the server, and the rail a leaf switch serves). Both are -1 where
	// they do not apply: switches without a rail, and every node of a non-GPU topology. The GPU
	// layer maps GPU g of server s to host s*NICsPerServer+g.
	Server int32
	Rail   int32
	// Latency is this node's own port-to-port forwarding latency for the packet backend: 0 means
	// the fabric's SwitchLatency (every network switch), a positive value replaces it, and a
	// negative value means none. GPU servers (package gpu) use it for NVSwitch, PCIe switches,
	// NICs and root complexes, whose latencies differ from a network switch's.
	Latency units.Time
}

// Link is a full-duplex point-to-point link; both directions have the same rate and latency.
type Link struct {
	ID      LinkID
	A, B    NodeID
	APort   int32 // port index on A
	BPort   int32 // port index on B
	Rate    units.Rate
	Latency units.Time // one-way propagation delay
	// ErrorRate is the probability that a packet is corrupted and dropped (HPCC topology.txt's
	// last column); 0 for a clean link.
	ErrorRate float64
	// LengthM is the cable length in metres where known (cost and PFC headroom use it); 0 means
	// unknown, in which case Latency / 5 ns per metre is a fair estimate for fibre.
	LengthM float64
	// Reach is the cable's length class (in rack, in row, across the hall), which decides the
	// medium a bill of materials prices (DAC, AOC, transceivers and fibre); ReachUnknown where
	// the generator does not know.
	Reach Reach
}

// Reach is a cable length class.
type Reach uint8

const (
	// ReachUnknown: not set (imported topologies, hand-built graphs).
	ReachUnknown Reach = iota
	// ReachRack: both ends in one rack, a few metres: passive copper (DAC) reaches.
	ReachRack
	// ReachRow: between racks of one row or neighbouring rows, up to some 30 m: active optical
	// cables or short-reach transceivers.
	ReachRow
	// ReachHall: across the data hall to a central network row, 50-500 m: transceivers and
	// structured fibre.
	ReachHall
)

func (r Reach) String() string {
	switch r {
	case ReachRack:
		return "rack"
	case ReachRow:
		return "row"
	case ReachHall:
		return "hall"
	}
	return "unknown"
}

// Graph is a whole network.
type Graph struct {
	Name  string
	Nodes []Node
	Links []Link
	// Hosts lists the host nodes by dense host index.
	Hosts []NodeID
}

// AddNode appends a node and returns its ID.
func (g *Graph) AddNode(kind Kind, name string, tier int) NodeID {
	id := NodeID(len(g.Nodes))
	n := Node{ID: id, Kind: kind, Name: name, Tier: tier, Host: -1, Server: -1, Rail: -1, Plane: -1}
	if kind == Host {
		n.Host = int32(len(g.Hosts))
		g.Hosts = append(g.Hosts, id)
	}
	g.Nodes = append(g.Nodes, n)
	return id
}

// Connect joins a and b with a new full-duplex link and returns its ID.
func (g *Graph) Connect(a, b NodeID, rate units.Rate, latency units.Time) LinkID {
	id := LinkID(len(g.Links))
	ap := int32(len(g.Nodes[a].Ports))
	bp := int32(len(g.Nodes[b].Ports))
	g.Nodes[a].Ports = append(g.Nodes[a].Ports, Port{Link: id, Peer: b, PeerPort: bp})
	g.Nodes[b].Ports = append(g.Nodes[b].Ports, Port{Link: id, Peer: a, PeerPort: ap})
	g.Links = append(g.Links, Link{ID: id, A: a, B: b, APort: ap, BPort: bp, Rate: rate, Latency: latency})
	return id
}

// HostNode returns the node of dense host index h.
func (g *Graph) HostNode(h int) NodeID { return g.Hosts[h] }

// NumSwitches counts switch nodes.
func (g *Graph) NumSwitches() int { return len(g.Nodes) - len(g.Hosts) }

// PortLink returns the link behind port p of node n.
func (g *Graph) PortLink(n NodeID, p int) *Link { return &g.Links[g.Nodes[n].Ports[p].Link] }

// Validate checks structural invariants: link ends agree with node ports, every host has
// exactly one port (a multi-port server is modelled as several hosts), rates are positive.
func (g *Graph) Validate() error {
	if len(g.Hosts) == 0 {
		return fmt.Errorf("topology %q has no hosts", g.Name)
	}
	for i := range g.Links {
		l := &g.Links[i]
		if l.Rate <= 0 {
			return fmt.Errorf("link %d (%s-%s): rate must be positive", i, g.Nodes[l.A].Name, g.Nodes[l.B].Name)
		}
		if l.Latency < 0 {
			return fmt.Errorf("link %d (%s-%s): latency must not be negative", i, g.Nodes[l.A].Name, g.Nodes[l.B].Name)
		}
		if l.A == l.B {
			return fmt.Errorf("link %d joins %s to itself", i, g.Nodes[l.A].Name)
		}
	}
	for _, h := range g.Hosts {
		if n := len(g.Nodes[h].Ports); n != 1 {
			return fmt.Errorf("host %s has %d links; a host has exactly one NIC port", g.Nodes[h].Name, n)
		}
	}
	return nil
}
