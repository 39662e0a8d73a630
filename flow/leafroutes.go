package flow

import (
	"encoding/binary"
	"fmt"

	"github.com/fabricsim/fabricsim/topo"
)

// LeafRoutes are the minimum-hop next hops of topo.Routes (same sets, same order) stored per
// destination switch instead of per destination host. A host has one link, so every switch but
// the host's own reaches it through the switch it hangs off (its edge switch), and the next hops
// toward the host are those toward that switch. The table is switches x edge switches (x 4 bytes
// and a hop count), where topo.Routes is switches x hosts: 1/8 to 1/64 of it on GPU clusters,
// whose leaves carry 8 to 64 hosts.
type LeafRoutes struct {
	g        *topo.Graph
	edges    int
	swRow    []int32 // node -> row (switches), -1 for hosts
	edgeOf   []int32 // host -> edge index, -1 if the host's peer is another host
	hostPort [][1]int32
	set      []uint32 // [row*edges+edge] -> port set
	setStart []uint32
	ports    []int32
}

// NewLeafRoutes computes the tables with one breadth-first search (over switches) per edge switch.
func NewLeafRoutes(g *topo.Graph) (*LeafRoutes, error) {
	if err := g.Validate(); err != nil {
		return nil, fmt.Errorf("routes: %w", err)
	}
	lr := &LeafRoutes{g: g, swRow: make([]int32, len(g.Nodes)), edgeOf: make([]int32, len(g.Hosts)),
		hostPort: make([][1]int32, len(g.Hosts)), setStart: []uint32{0, 0}}
	edgeIdx := map[topo.NodeID]int32{}
	var edges []topo.NodeID
	rows := 0
	for i := range g.Nodes {
		lr.swRow[i] = -1
		if g.Nodes[i].Kind == topo.Switch {
			lr.swRow[i] = int32(rows)
			rows++
		}
	}
	for h, hn := range g.Hosts {
		pt := g.Nodes[hn].Ports[0]
		lr.edgeOf[h] = -1
		if g.Nodes[pt.Peer].Kind != topo.Switch {
			continue
		}
		k, ok := edgeIdx[pt.Peer]
		if !ok {
			k = int32(len(edges))
			edgeIdx[pt.Peer] = k
			edges = append(edges, pt.Peer)
		}
		lr.edgeOf[h] = k
		lr.hostPort[h][0] = pt.PeerPort
	}
	lr.edges = len(edges)
	if float64(rows)*float64(lr.edges) > 1<<32 {
		return nil, fmt.Errorf("routes: %d switches x %d edge switches is too large a table", rows, lr.edges)
	}
	lr.set = make([]uint32, rows*lr.edges)
	intern := map[string]uint32{"": 0}
	dist := make([]int32, len(g.Nodes))
	queue := make([]topo.NodeID, 0, len(g.Nodes))
	var key []byte
	var cur []int32
	for k, en := range edges {
		for i := range dist {
			dist[i] = -1
		}
		dist[en] = 0
		queue = append(queue[:0], en)
		for qi := 0; qi < len(queue); qi++ {
			n := queue[qi]
			for _, p := range g.Nodes[n].Ports {
				if dist[p.Peer] < 0 && g.Nodes[p.Peer].Kind == topo.Switch {
					dist[p.Peer] = dist[n] + 1
					queue = append(queue, p.Peer)
				}
			}
		}
		for i := range g.Nodes {
			row := lr.swRow[i]
			if row < 0 || dist[i] <= 0 {
				continue
			}
			cur, key = cur[:0], key[:0]
			for pi, p := range g.Nodes[i].Ports {
				if g.Nodes[p.Peer].Kind == topo.Switch && dist[p.Peer] == dist[i]-1 {
					cur = append(cur, int32(pi))
					key = binary.LittleEndian.AppendUint32(key, uint32(pi))
				}
			}
			id, ok := intern[string(key)]
			if !ok {
				id = uint32(len(lr.setStart) - 1)
				intern[string(key)] = id
				lr.ports = append(lr.ports, cur...)
				lr.setStart = append(lr.setStart, uint32(len(lr.ports)))
			}
			lr.set[int(row)*lr.edges+k] = id
		}
	}
	return lr, nil
}

var hostSelf = []int32{0}

// NextHops implements NextHopper with topo.Routes' sets: the ports of n on minimum-hop paths to
// host dstHost (empty when n is that host or cannot reach it).
func (lr *LeafRoutes) NextHops(n topo.NodeID, dstHost int) []int32 {
	g := lr.g
	k := lr.edgeOf[dstHost]
	row := lr.swRow[n]
	if row < 0 {
		if g.Hosts[dstHost] == n {
			return nil
		}
		return hostSelf
	}
	if k < 0 {
		return nil
	}
	if pt := g.Nodes[g.Hosts[dstHost]].Ports[0]; pt.Peer == n {
		return lr.hostPort[dstHost][:]
	}
	s := lr.set[int(row)*lr.edges+int(k)]
	return lr.ports[lr.setStart[s]:lr.setStart[s+1]]
}

// Bytes is the memory the tables hold.
func (lr *LeafRoutes) Bytes() int64 {
	return int64(len(lr.swRow))*4 + int64(len(lr.edgeOf))*4 + int64(len(lr.hostPort))*4 + int64(len(lr.set))*4 +
		int64(len(lr.setStart))*4 + int64(len(lr.ports))*4
}
