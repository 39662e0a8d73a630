// Package datapath rewrites the network messages of a message graph (GPU to GPU across
// servers) into the chain of transfers that a data path really makes ([GPUDirect]):
//
//   - gpudirect: the NIC reads the sender GPU's memory and writes the receiver GPU's memory
//     over PCIe peer-to-peer. The message stays as it is: its route (package gpu) already runs
//     GPU PCIe port -> PCIe switch -> NIC -> network -> NIC -> PCIe switch -> GPU, so PCIe contention
//     is simulated with the network's. When the GPU's nearest NIC sits on the other CPU socket
//     (a PCIe-only server), the route crosses the inter-socket link, which carries peer-to-peer
//     traffic at about half the rate (gpu.Server.InterSocket).
//   - rdma-host: the GPU's data is first copied to pinned host memory (device-to-host over the
//     GPU's PCIe link and the PCIe switch's uplink, plus gpu.Server.CopyLatency), the NIC sends
//     from host memory to host memory (the uplink again, the other way), and the receiver
//     copies it to its GPU. Every byte crosses the PCIe switch's uplink twice on each side, in
//     opposite directions, so a node that sends and receives at once (every ring collective)
//     loads each direction of the uplink with two streams.
//   - host-staged: rdma-host plus a CPU copy from the staging buffer into the NIC's registered
//     buffer (gpu.Server.CPUCopy bandwidth, CPUCopyLatency per message), mirrored at the
//     receiver. The CPU copies are delay nodes chained per GPU: one proxy thread per GPU
//     copies, both ways, one message at a time, so a GPU's staged traffic (sent plus received)
//     cannot exceed CPUCopy. Memory-bandwidth contention between threads is not modelled.
//
// Messages inside a server (NVLink) and delay nodes are left alone.
package datapath

import (
	"fmt"

	"github.com/fabricsim/fabricsim/cluster"
	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/units"
)

// Mode is a data path.
type Mode uint8

const (
	// GPUDirect is GPUDirect RDMA: NIC to GPU memory over PCIe peer-to-peer.
	GPUDirect Mode = iota
	// RDMAHost is RDMA from and to pinned host memory, with device-host copies.
	RDMAHost
	// HostStaged adds a CPU copy into the NIC buffer on each side.
	HostStaged
)

var names = []string{"gpudirect", "rdma-host", "host-staged"}

func (m Mode) String() string {
	if int(m) < len(names) {
		return names[m]
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// Parse reads a data path name.
func Parse(s string) (Mode, error) {
	for i, n := range names {
		if s == n {
			return Mode(i), nil
		}
	}
	return 0, fmt.Errorf("unknown data path %q (want gpudirect, rdma-host or host-staged)", s)
}

// copiesInFlight is how many device-host copies a GPU keeps in flight per direction.
const copiesInFlight = 2

// Apply returns g, as nccl.Compile lowers it (messages between servers go from GPU PCIe
// endpoint to GPU PCIe endpoint: GPUDirect), with every message between GPUs of different
// servers replaced by its data path's chain. The returned graph is g itself for GPUDirect. Dependencies on a replaced
// message become dependencies on the last message of its chain (the data is in the receiver
// GPU's memory).
func Apply(g *msggraph.Graph, c *cluster.Cluster, m Mode) (*msggraph.Graph, error) {
	if m == GPUDirect {
		return g, nil
	}
	if m != RDMAHost && m != HostStaged {
		return nil, fmt.Errorf("data path %v unknown", m)
	}
	if g.Endpoints > c.Endpoints() {
		return nil, fmt.Errorf("data path: graph addresses %d endpoints, the cluster has %d", g.Endpoints, c.Endpoints())
	}
	srv := c.Server
	out := &msggraph.Graph{Endpoints: c.Endpoints(), Msgs: make([]msggraph.Message, 0, 3*len(g.Msgs))}
	newID := make([]msggraph.ID, len(g.Msgs))
	// A chain's network message keeps the original connection, made unique per GPU pair
	// because the host-buffer endpoints are shared by every connection of the GPU pair.
	type connKey struct {
		src, dst, conn int32
	}
	conns := map[connKey]int32{}
	var nextConn int32 = 1
	for _, x := range g.Msgs {
		if x.Conn > nextConn {
			nextConn = x.Conn
		}
	}
	nextConn++
	remap := func(deps []msggraph.ID) []msggraph.ID {
		if len(deps) == 0 {
			return nil
		}
		d := make([]msggraph.ID, len(deps))
		for i, x := range deps {
			d[i] = newID[x]
		}
		return d
	}
	cpu := func(bytes units.Size) units.Time { return srv.CPUCopyLatency + srv.CPUCopy.TransmitTime(bytes) }
	// One proxy thread per GPU does that GPU's CPU copies, both ways, one at a time in the order
	// the collective posts them: each copy also waits for the GPU's previous one.
	lastCopy := map[int32]msggraph.ID{}
	copyNode := func(ep int32, bytes units.Size, after msggraph.ID, start units.Time, tag string) msggraph.ID {
		deps := []msggraph.ID{after}
		if prev, ok := lastCopy[ep]; ok {
			deps = append(deps, prev)
		}
		id := out.Add(msggraph.Message{Src: ep, Dst: ep, Start: start, Delay: cpu(bytes), Deps: deps, Tag: tag})
		lastCopy[ep] = id
		return id
	}
	// Copies between a GPU and host memory run on a copy stream per GPU and direction, in the
	// order they are posted, with two in flight (double buffering hides each copy's launch
	// latency behind the previous one): copy j also waits for copy j-2.
	d2h, h2d := map[int32][]msggraph.ID{}, map[int32][]msggraph.ID{}
	stream := func(q map[int32][]msggraph.ID, ep int32, deps []msggraph.ID) []msggraph.ID {
		if l := q[ep]; len(l) >= copiesInFlight {
			return append(append([]msggraph.ID(nil), deps...), l[len(l)-copiesInFlight])
		}
		return deps
	}
	for i, x := range g.Msgs {
		deps := remap(x.Deps)
		if x.Bytes == 0 || !c.IsDMA(x.Src) || !c.IsDMA(x.Dst) || c.ServerOf(x.Src) == c.ServerOf(x.Dst) {
			y := x
			y.Deps = deps
			newID[i] = out.Add(y)
			continue
		}
		hs, hd := c.HostMem(c.RankOf(x.Src)), c.HostMem(c.RankOf(x.Dst))
		tag := x.Tag
		// Device-to-host copy of the sender's data, on the GPU's copy stream.
		id := out.Add(msggraph.Message{Src: x.Src, Dst: hs, Bytes: x.Bytes, Start: x.Start, Delay: x.Delay + srv.CopyLatency,
			Deps: stream(d2h, x.Src, deps), Prio: x.Prio, Tag: tag + "/d2h"})
		d2h[x.Src] = append(d2h[x.Src], id)
		if m == HostStaged {
			id = copyNode(hs, x.Bytes, id, x.Start, tag+"/cpu-copy-tx")
		}
		conn := int32(0)
		if x.Conn != 0 {
			k := connKey{x.Src, x.Dst, x.Conn}
			var ok bool
			if conn, ok = conns[k]; !ok {
				conn = nextConn
				nextConn++
				conns[k] = conn
			}
		}
		id = out.Add(msggraph.Message{Src: hs, Dst: hd, Bytes: x.Bytes, Start: x.Start, Deps: []msggraph.ID{id}, Prio: x.Prio, Conn: conn, Tag: tag + "/net"})
		if m == HostStaged {
			id = copyNode(hd, x.Bytes, id, x.Start, tag+"/cpu-copy-rx")
		}
		newID[i] = out.Add(msggraph.Message{Src: hd, Dst: x.Dst, Bytes: x.Bytes, Start: x.Start, Delay: srv.CopyLatency,
			Deps: stream(h2d, x.Dst, []msggraph.ID{id}), Prio: x.Prio, Tag: tag + "/h2d"})
		h2d[x.Dst] = append(h2d[x.Dst], newID[i])
	}
	if err := out.Validate(); err != nil {
		return nil, fmt.Errorf("data path %v: %w", m, err)
	}
	return out, nil
}
