// Package nccl lays collectives out on a GPU cluster (package cluster) as NCCL does: rings that
// cross servers rail-aligned, one channel per GPU of a server, NCCL's Simple-protocol chunks,
// PXN, broadcast and reduce as chains along a ring. Compile turns one collective call into the
// message graph every backend runs, its messages moved onto the endpoints that carry them
// (NVLink ports inside a server, GPUDirect PCIe ports between servers). docs/gpu.md has the
// figures and sources.
package nccl

import (
	"fmt"

	"github.com/fabricsim/fabricsim/cluster"
	"github.com/fabricsim/fabricsim/collective"
	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/units"
)

// Options tune how Compile lays a collective out on the cluster.
type Options struct {
	// Algo is the algorithm (collective.Default: ring for all-reduce, all-gather,
	// reduce-scatter, broadcast; direct for all-to-all and send/recv).
	Algo collective.Algo
	// Channels is the number of rings (each its own connection); 0 means one per GPU of a
	// server for ring collectives (NCCL uses one or two rings per NIC on an 8-NIC H100 node)
	// and 1 for the others.
	Channels int
	// ChunkBytes is the pipelining unit; 0 means 512 KiB, NCCL's Simple-protocol step (its
	// 4 MiB NCCL_BUFFSIZE over NCCL_STEPS = 8).
	ChunkBytes units.Size
	// Root is the root rank of broadcast and reduce.
	Root int
	// PXN sends a message between GPUs on different rails of different servers as NCCL's PXN
	// does (NCCL 2.12+, NCCL_PXN_DISABLE=0): over NVLink to the GPU of the sender's server on
	// the destination's rail, then from there through that rail's NIC. Without it the message
	// leaves through the sender's own NIC and crosses rails at a spine. Needs NVLink.
	PXN bool
}

// DefaultChunk is NCCL's Simple-protocol step size (NCCL_BUFFSIZE 4 MiB / NCCL_STEPS 8).
const DefaultChunk = 512 * units.KiB

// Rings returns the rank order of each ring channel. Within a server a ring visits every GPU
// over NVLink; between servers it crosses on one rail, GPU j to GPU j, so that the network hop
// is rail-aligned as in NCCL's rings (each ring enters and leaves a node through a NIC near the
// GPUs it starts and ends at). Channel c enters even-numbered servers at GPU c and walks down
// to GPU c+1, and enters odd-numbered servers at GPU c+1 and walks up to GPU c: the hop from an
// even to an odd server uses rail c+1, the hop back rail c, so the G channels use every NIC
// once in each direction. With an odd number of servers the hop from the last server back to
// the first changes rails (it takes one of the equal-cost PXN-like paths).
func Rings(c *cluster.Cluster, channels int) [][]int32 {
	G, N := c.Server.GPUs, c.Servers()
	out := make([][]int32, channels)
	for ch := 0; ch < channels; ch++ {
		order := make([]int32, 0, c.GPUs)
		a := ch % G
		for s := 0; s < N; s++ {
			for i := 0; i < G; i++ {
				var local int
				switch {
				case N == 1:
					local = (a + i) % G
				case s%2 == 0:
					local = ((a-i)%G + G) % G
				default:
					local = (a + 1 + i) % G
				}
				order = append(order, c.GPUHost(s, local))
			}
		}
		out[ch] = order
	}
	return out
}

// Compile builds the message graph of one collective call of bytes (nccl-tests' S, see
// collective.Spec.Bytes) over every GPU of the cluster. GPU r is rank r (server-major, as mpirun
// places nccl-tests' ranks).
func Compile(c *cluster.Cluster, op collective.Op, bytes units.Size, o Options) (*msggraph.Graph, error) {
	g := &msggraph.Graph{Endpoints: c.Endpoints()}
	chunk := o.ChunkBytes
	if chunk == 0 {
		chunk = DefaultChunk
	}
	ranks := make([]int32, c.GPUs)
	for r := range ranks {
		ranks[r] = int32(r)
	}
	algo := o.Algo
	ring := algo == collective.Ring || algo == collective.Default && (op == collective.AllReduce || op == collective.AllGather || op == collective.ReduceScatter)
	if !ring {
		ch := o.Channels
		if ch == 0 {
			ch = 1
		}
		spec := collective.Spec{Op: op, Algo: algo, Ranks: ranks, Bytes: bytes, Channels: ch, ChunkBytes: chunk, Root: o.Root,
			ServerOf: func(r int) int { return r / c.Server.GPUs }}
		if op == collective.Broadcast || op == collective.Reduce {
			// Chain along ring 0, starting at the root.
			order := Rings(c, 1)[0]
			pos := 0
			for i, h := range order {
				if int(h) == o.Root {
					pos = i
				}
			}
			spec.Ranks, spec.Root = order, pos
		}
		if _, err := collective.Compile(g, spec); err != nil {
			return nil, err
		}
		if op == collective.Broadcast || op == collective.Reduce {
			window(g, ConnWindow)
		}
		if o.PXN {
			g = pxn(c, g)
		}
		return lower(c, g), nil
	}
	ch := o.Channels
	if ch == 0 {
		ch = c.Server.GPUs
	}
	rings := Rings(c, ch)
	// Split S over the channels in whole elements of the op's granularity: per-channel sizes
	// must keep all-gather and reduce-scatter blocks equal.
	unit := int64(1)
	if op == collective.AllGather || op == collective.ReduceScatter {
		unit = int64(c.GPUs)
	}
	total := int64(bytes) / unit
	for i := 0; i < ch; i++ {
		part := total / int64(ch)
		if int64(i) < total%int64(ch) {
			part++
		}
		if part == 0 {
			continue
		}
		spec := collective.Spec{Op: op, Algo: collective.Ring, Ranks: rings[i], Bytes: units.Size(part * unit), Channels: 1,
			ChunkBytes: chunk, ConnBase: int32(i), Tag: fmt.Sprintf("%s/ch%d", op, i)}
		if _, err := collective.Compile(g, spec); err != nil {
			return nil, err
		}
	}
	if o.PXN {
		g = pxn(c, g)
	}
	return lower(c, g), nil
}

// ConnWindow is how many chunks of one connection may be in flight at once in the chains of
// broadcast and reduce. A queue pair serves its work requests in order; the packet backend's
// NIC would otherwise interleave every ready chunk of a connection packet by packet, and the
// chain would move each hop's whole buffer before the next hop starts (16 MiB broadcast on
// 2 x 8 H100: 882 us, 434 us with the window, 385 us on the analytic backend, which serves a
// connection in order). Two in flight keep the link busy across the gap between one chunk's last
// byte and the next one's start. Rings, all-to-all and send/recv are left alone: ring steps
// depend on each other already and their loops must overlap, and a direct exchange's chunks
// have no hop to pipeline into.
const ConnWindow = 2

// window makes message j of each connection (same source, destination and non-zero Conn, in
// graph order) also wait for message j-w of that connection.
func window(g *msggraph.Graph, w int) *msggraph.Graph {
	type key struct{ src, dst, conn int32 }
	seen := map[key][]msggraph.ID{}
	for i := range g.Msgs {
		m := &g.Msgs[i]
		if m.Bytes == 0 || m.Conn == 0 {
			continue
		}
		k := key{m.Src, m.Dst, m.Conn}
		if l := seen[k]; len(l) >= w {
			m.Deps = append(append([]msggraph.ID(nil), m.Deps...), l[len(l)-w])
		}
		seen[k] = append(seen[k], msggraph.ID(i))
	}
	return g
}

// lower moves every message between two GPUs onto the endpoints that carry it (Route): NVLink
// ports inside a server, PCIe ports (GPUDirect RDMA) between servers.
func lower(c *cluster.Cluster, g *msggraph.Graph) *msggraph.Graph {
	for i := range g.Msgs {
		m := &g.Msgs[i]
		if m.Bytes > 0 {
			m.Src, m.Dst = c.Route(m.Src, m.Dst)
		}
	}
	return g
}

// pxnConnBase offsets the connection ids of PXN's network legs, which run between the
// intermediate GPU and the destination and must not share a queue with that GPU's own messages.
const pxnConnBase = 1 << 24

// pxn splits every message between rank endpoints of different servers and different local
// GPU indices into an NVLink leg to the sender server's GPU on the destination's rail and a
// rail-aligned network leg from there; dependencies on the message move to the network leg.
func pxn(c *cluster.Cluster, g *msggraph.Graph) *msggraph.Graph {
	if !c.HasNVLink() {
		return g
	}
	G := int32(c.Server.GPUs)
	out := &msggraph.Graph{Endpoints: g.Endpoints, Msgs: make([]msggraph.Message, 0, len(g.Msgs)*2)}
	newID := make([]msggraph.ID, len(g.Msgs))
	type key struct{ src, dst, conn int32 }
	conns := map[key]int32{}
	for i, m := range g.Msgs {
		deps := make([]msggraph.ID, len(m.Deps))
		for j, d := range m.Deps {
			deps[j] = newID[d]
		}
		m.Deps = deps
		if m.Bytes == 0 || !c.IsRank(m.Src) || !c.IsRank(m.Dst) || c.ServerOf(m.Src) == c.ServerOf(m.Dst) || m.Src%G == m.Dst%G {
			newID[i] = out.Add(m)
			continue
		}
		via := m.Src - m.Src%G + m.Dst%G
		leg := m
		leg.Dst, leg.Tag = via, m.Tag+"/pxn-nvlink"
		id := out.Add(leg)
		k := key{m.Src, m.Dst, m.Conn}
		conn, ok := conns[k]
		if !ok {
			conn = pxnConnBase + int32(len(conns))
			conns[k] = conn
		}
		net := m
		net.Src, net.Delay, net.Deps, net.Conn, net.Tag = via, 0, []msggraph.ID{id}, conn, m.Tag+"/pxn-net"
		newID[i] = out.Add(net)
	}
	return out
}
