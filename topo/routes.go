package topo

import (
	"encoding/binary"
	"fmt"
	"unsafe"
)

// tableRoutes is the stored form of Routes: for every switch and every destination host, the
// next-hop port set, found by one breadth-first search per destination.
//
// Layout (compact, because the table is switches x hosts): only switches have rows; a host's only
// choice is its single NIC port. Row entry (switch, destination) is a uint32 index into a pool of
// distinct port sets, interned across the whole table (in a fat tree a handful of sets such as
// "all uplinks" or "down port 3" cover every entry), plus a uint16 hop count. That is 6 bytes
// per switch per destination host: about 2 MB for the k=16 fat tree (320 switches x 1,024
// hosts), and quadratic in the size of the network: what Routes avoids for regular trees.
type tableRoutes struct {
	g       *Graph
	hosts   int
	swIndex []int32  // node -> row, -1 for hosts
	set     []uint32 // [row*hosts+dst] -> port-set id; 0 is the empty set (nil when set16 is used)
	// set16 is set in 16 bits, used when there are fewer than 65,536 distinct port sets (always
	// for fat trees, leaf-spines and rail fabrics): half the table, so more of it stays in cache
	// on the per-hop routing lookup.
	set16    []uint16
	hops     []uint16 // [row*hosts+dst] -> links to dst; unreachableHops if none
	setStart []uint32 // port set i is ports[setStart[i]:setStart[i+1]]
	ports    []int32
}

const unreachableHops = ^uint16(0)

// hostPort is the next-hop set of a host: its only port.
var hostPort = []int32{0}

// computeTable finds, for every destination host, the minimum-hop next hops of every node by
// one breadth-first search from that host. As in HPCC's ns-3 routing (CalculateRoute in
// scratch/third.cc), paths never pass through a host: only switches forward. g must pass
// Validate (every host has exactly one port). Cost: O(hosts * (nodes + ports)) time and
// O(switches * hosts) memory.
func computeTable(g *Graph) (*tableRoutes, error) {
	H := len(g.Hosts)
	rt := &tableRoutes{g: g, hosts: H, swIndex: make([]int32, len(g.Nodes))}
	rows := 0
	for i := range g.Nodes {
		if g.Nodes[i].Kind == Switch {
			rt.swIndex[i] = int32(rows)
			rows++
		} else {
			rt.swIndex[i] = -1
		}
	}
	if float64(rows)*float64(H) > 1<<32 {
		return nil, fmt.Errorf("routes: %d switches x %d hosts is too large a table", rows, H)
	}
	rt.set = make([]uint32, rows*H)
	rt.hops = make([]uint16, rows*H)
	rt.setStart = []uint32{0, 0} // set 0: empty
	intern := map[string]uint32{"": 0}
	var key []byte
	var cur []int32

	dist := make([]int32, len(g.Nodes))
	queue := make([]NodeID, 0, len(g.Nodes))
	for d := 0; d < H; d++ {
		queue = switchDistances(g, g.Hosts[d], dist, queue)
		for i := range g.Nodes {
			row := rt.swIndex[i]
			if row < 0 {
				continue
			}
			e := int(row)*H + d
			if dist[i] < 0 {
				rt.hops[e] = unreachableHops
				continue
			}
			if dist[i] >= int32(unreachableHops) {
				return nil, fmt.Errorf("routes: %s is %d hops from host %d; paths of %d or more hops are not supported", g.Nodes[i].Name, dist[i], d, unreachableHops)
			}
			rt.hops[e] = uint16(dist[i])
			cur = cur[:0]
			key = key[:0]
			for pi, p := range g.Nodes[i].Ports {
				if dist[p.Peer] == dist[i]-1 {
					cur = append(cur, int32(pi))
					key = binary.LittleEndian.AppendUint32(key, uint32(pi))
				}
			}
			id, ok := intern[string(key)]
			if !ok {
				id = uint32(len(rt.setStart) - 1)
				intern[string(key)] = id
				rt.ports = append(rt.ports, cur...)
				rt.setStart = append(rt.setStart, uint32(len(rt.ports)))
			}
			rt.set[e] = id
		}
	}
	if len(rt.setStart)-1 <= 1<<16 {
		rt.set16 = make([]uint16, len(rt.set))
		for i, id := range rt.set {
			rt.set16[i] = uint16(id)
		}
		rt.set = nil
	}
	return rt, nil
}

func (rt *tableRoutes) nextHops(n NodeID, dstHost int) []int32 {
	if row := rt.swIndex[n]; row >= 0 {
		e := int(row)*rt.hosts + dstHost
		var s uint32
		if rt.set16 != nil {
			s = uint32(rt.set16[e])
		} else {
			s = rt.set[e]
		}
		return rt.ports[rt.setStart[s]:rt.setStart[s+1]]
	}
	if rt.hopsTo(n, dstHost) <= 0 {
		return nil
	}
	return hostPort
}

func (rt *tableRoutes) hopsTo(n NodeID, dstHost int) int {
	if row := rt.swIndex[n]; row >= 0 {
		h := rt.hops[int(row)*rt.hosts+dstHost]
		if h == unreachableHops {
			return -1
		}
		return int(h)
	}
	if rt.g.Hosts[dstHost] == n {
		return 0
	}
	peer := rt.g.Nodes[n].Ports[0].Peer
	if peer == rt.g.Hosts[dstHost] {
		return 1 // two hosts cabled back to back
	}
	if rt.swIndex[peer] < 0 {
		return -1
	}
	if h := rt.hopsTo(peer, dstHost); h >= 0 {
		return h + 1
	}
	return -1
}

func (rt *tableRoutes) distinctPortSets() int { return len(rt.setStart) - 1 }

func (rt *tableRoutes) bytes() int64 {
	return int64(len(rt.swIndex))*4 + int64(len(rt.set))*4 + int64(len(rt.set16))*2 + int64(len(rt.hops))*int64(unsafe.Sizeof(uint16(0))) +
		int64(len(rt.setStart))*4 + int64(len(rt.ports))*4
}

// switchDistances fills dist with every node's hop count to host dn over paths whose inner nodes
// are switches (-1: unreachable; only switches forward, so only switches and dn get a distance),
// by breadth-first search from dn. queue is scratch space, returned for reuse.
func switchDistances(g *Graph, dn NodeID, dist []int32, queue []NodeID) []NodeID {
	for i := range dist {
		dist[i] = -1
	}
	dist[dn] = 0
	queue = append(queue[:0], dn)
	for qi := 0; qi < len(queue); qi++ {
		n := queue[qi]
		for _, p := range g.Nodes[n].Ports {
			if dist[p.Peer] < 0 && g.Nodes[p.Peer].Kind == Switch {
				dist[p.Peer] = dist[n] + 1
				queue = append(queue, p.Peer)
			}
		}
	}
	return queue
}
