package backend

import (
	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

// What the packet backend does for GPU clusters (PacketOptions.GPUCluster and Scale): merged
// packets for runs of millions of packets, and stand-ins for what the servers' lossless,
// DMA-paced links do that the fabric's mechanisms do not model. docs/gpu.md has the figures.

// MaxPacketScale bounds ScalePackets: 8 x 4 KiB packets (32 KiB) keep the store-and-forward
// error per hop below a microsecond on every link of an H100 server, and fit twice into an
// InfiniBand VL's 128 KiB credit window.
const MaxPacketScale = 8

// PacketBudget is the number of data packets above which AutoScale starts to merge packets.
const PacketBudget = 1 << 20

// ScalePackets returns cfg with k-fold packets: MTU, data and ACK headers, layer-1 overhead and
// minimum frame all multiplied by k. Every ratio that sets throughput (payload / wire bytes of a
// data packet, ACK bytes per data byte) is unchanged, so bandwidth-bound times are too; what
// changes is the per-hop store-and-forward delay of a packet (k times longer) and the number of
// events (k times fewer). k <= 1 returns cfg unchanged.
func ScalePackets(cfg fabric.Config, k int) fabric.Config {
	if k <= 1 {
		return cfg
	}
	cfg.MTU *= units.Size(k)
	cfg.HeaderBytes *= k
	cfg.AckBytes *= k
	cfg.CNPBytes *= k
	cfg.L1Overhead *= k
	cfg.MinFrame *= k
	cfg.FirstHeaderExtra *= k
	return cfg
}

// MaxPacketScaleIB bounds AutoScale on the infiniband fabric: its credit window (128 KiB per
// VL and link) holds 32 real packets but only 4 of 8-fold size, and credits then throttle links
// whose round trip is longer than a few packets' serialization (2 x 8 H100 all-reduce of
// 128 MiB: busbw 372.7 GB/s with real packets, 358.9 with 2-fold, 356.3 with 4-fold, 256.1 with
// 8-fold; docs/gpu.md).
const MaxPacketScaleIB = 4

// AutoScale picks the packet scale for a graph on fabric kind: the smallest power of two (up
// to MaxPacketScale, MaxPacketScaleIB on infiniband) that brings the graph's data packets
// under PacketBudget. Runs use it only when asked (RunOptions.PacketScale = PacketScaleAuto).
func AutoScale(g *msggraph.Graph, mtu units.Size, kind fabric.Kind) int {
	limit := MaxPacketScale
	if kind == fabric.KindInfiniBand {
		limit = MaxPacketScaleIB
	}
	var pkts int64
	for i := range g.Msgs {
		pkts += (int64(g.Msgs[i].Bytes) + int64(mtu) - 1) / int64(mtu)
	}
	k := 1
	for k < limit && pkts/int64(k) > PacketBudget {
		k *= 2
	}
	return k
}

// LosslessBuffer is the switch buffer GPU runs give the generic Ethernet fabric. PCIe and NVLink
// are lossless (credit flow control), and NCCL is run on lossless networks (InfiniBand, RoCE with
// PFC); the generic fabric has no link-level flow control, so its switches get buffers deep
// enough never to drop: a queue builds where back-pressure would have stalled the sender, at the
// same throughput. Use the roce or infiniband fabric for the real mechanisms.
const LosslessBuffer = 4 * units.GiB

// LosslessRTO is the retransmission timeout of GPU runs on the generic fabric: longer than any
// queue LosslessBuffer can hold at the slowest server link.
const LosslessRTO = 10 * units.Second

// adaptToCluster returns the graph and configuration a GPU-cluster run uses on the packet
// backend: messages spread over the VLs on InfiniBand, lossless depth on generic Ethernet.
func adaptToCluster(g *msggraph.Graph, cfg fabric.Config) (*msggraph.Graph, fabric.Config) {
	if cfg.Kind == fabric.KindInfiniBand && cfg.IB.VLs > 1 {
		g = spreadVLs(g, cfg.IB.VLs)
	}
	if cfg.Kind == fabric.KindEthernet {
		// Lossless by depth (LosslessBuffer): nothing is dropped, so a retransmission timeout
		// could only fire spuriously, on a deep queue; keep it out of the way.
		cfg.Buffer = max(cfg.Buffer, LosslessBuffer)
		cfg.RTO = max(cfg.RTO, LosslessRTO)
	}
	return g, cfg
}

// pacer is the generic fabric's stand-in for how DMA engines inject: a NIC or copy engine reads
// memory only as fast as the slowest link of its path drains it, so every flow is paced at its
// path's bottleneck rate instead of its endpoint's link rate (an endpoint here is a GPU's or host
// buffer's port, faster than the NIC behind it).
type pacer struct {
	g    *topo.Graph
	rt   *topo.Routes
	rate map[[2]int32]units.Rate
}

func newPacer(g *topo.Graph, rt *topo.Routes) *pacer {
	return &pacer{g: g, rt: rt, rate: map[[2]int32]units.Rate{}}
}

func (p *pacer) Start(f *fabric.Flow) {
	k := [2]int32{f.Src(), f.Dst()}
	r, ok := p.rate[k]
	if !ok {
		g := p.g
		nodes := p.rt.FirstPath(int(f.Src()), int(f.Dst()))
		for i := 0; i+1 < len(nodes); i++ {
			for _, pt := range g.Nodes[nodes[i]].Ports {
				if pt.Peer == nodes[i+1] {
					if lr := g.Links[pt.Link].Rate; r == 0 || lr < r {
						r = lr
					}
					break
				}
			}
		}
		p.rate[k] = r
	}
	f.Rate = r
}

func (p *pacer) Sent(*fabric.Flow, *fabric.Packet)                  {}
func (p *pacer) Received(*fabric.NIC, *fabric.Flow, *fabric.Packet) {}
func (p *pacer) Notified(*fabric.Flow, *fabric.Packet)              {}

// spreadVLs returns g with message i on service level i mod vls (messages that ask for a
// service level keep it), so that every link's messages spread evenly over the VLs. The
// infiniband fabric's credit loop runs on every link, NVLink and PCIe included, and one VL's
// credit window (at most 2048 64-byte blocks, 128 KiB) over NVLink's ~1 us credit round trip
// would cap a GPU's NVLink at ~150 GB/s, far below the ~370 GB/s its own flow control sustains.
// Spreading messages over the VLs gives each link VLs x 128 KiB of window: with the default 4
// VLs NVLink runs at its rate, and the network links, whose bandwidth-delay product is below
// one window, are unaffected.
func spreadVLs(g *msggraph.Graph, vls int) *msggraph.Graph {
	out := &msggraph.Graph{Endpoints: g.Endpoints, Msgs: make([]msggraph.Message, len(g.Msgs))}
	copy(out.Msgs, g.Msgs)
	for i := range out.Msgs {
		if m := &out.Msgs[i]; m.Prio == 0 && m.Bytes > 0 {
			m.Prio = uint8(i % vls)
		}
	}
	return out
}
