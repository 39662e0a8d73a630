package gpu

import (
	"fmt"

	"github.com/fabricsim/fabricsim/analytic"
	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/flow"
	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

// Backends Run accepts.
const (
	BackendPacket   = "packet"
	BackendAnalytic = "analytic"
	BackendFlow     = "flow"
)

// Routes returns the cluster's shortest-path tables, computed once.
func (c *Cluster) Routes() (*topo.Routes, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.routes == nil {
		r, err := topo.ComputeRoutes(c.Graph)
		if err != nil {
			return nil, err
		}
		c.routes = r
	}
	return c.routes, nil
}

// MaxPacketScale bounds ScalePackets: 8 x 4 KiB packets (32 KiB) keep the store-and-forward
// error per hop below a microsecond on every link of an H100 server, and fit twice into an
// InfiniBand VL's 128 KiB credit window.
const MaxPacketScale = 8

// PacketBudget is the number of data packets above which ScalePackets starts to merge packets.
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

// MaxPacketScaleIB bounds ScalePackets on the infiniband fabric: its credit window (128 KiB per
// VL and link) holds 32 real packets but only 4 of 8-fold size, and credits then throttle links
// whose round trip is longer than a few packets' serialization (2 x 8 H100 all-reduce of
// 128 MiB: busbw 372.0 GB/s with real packets, 360.5 with 2-fold, 363.3 with 4-fold, 260.3 with
// 8-fold).
const MaxPacketScaleIB = 4

// AutoScale picks the packet scale for a graph on fabric kind: the smallest power of two (up
// to MaxPacketScale, MaxPacketScaleIB on infiniband) that brings the graph's data packets
// under PacketBudget.
func AutoScale(g *msggraph.Graph, mtu units.Size, kind string) int {
	limit := MaxPacketScale
	if kind == "infiniband" {
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

// RunOptions say how to run a graph on a cluster.
type RunOptions struct {
	// Backend is "packet" (default), "flow" or "analytic".
	Backend string
	// Fabric is the packet backend's configuration (the analytic backend uses its switch
	// latency); its framing must be the cluster's (Spec.Framing).
	Fabric fabric.Config
	// PacketScale merges packets (ScalePackets); 0 picks AutoScale, 1 keeps real packets.
	PacketScale int
}

// RunResult is one run's outcome.
type RunResult struct {
	// Time is the makespan: when the last message completed.
	Time units.Time
	// PacketScale is the scale the packet backend used (1 on the analytic backend).
	PacketScale int
	Events      uint64
	Drops       int64
}

// Run executes g on the cluster.
func (c *Cluster) Run(g *msggraph.Graph, o RunOptions) (RunResult, error) {
	r, err := c.Routes()
	if err != nil {
		return RunResult{}, err
	}
	switch o.Backend {
	case "", BackendPacket:
		k := o.PacketScale
		if k == 0 {
			k = AutoScale(g, o.Fabric.MTU, o.Fabric.Kind)
		}
		cfg := ScalePackets(o.Fabric, k)
		if cfg.Kind == "infiniband" && cfg.IB.VLs > 1 {
			g = spreadVLs(g, cfg.IB.VLs)
		}
		if cfg.Kind == "ethernet" {
			// Lossless by depth (LosslessBuffer): nothing is dropped, so a retransmission timeout
			// could only fire spuriously, on a deep queue; keep it out of the way.
			cfg.Buffer = max(cfg.Buffer, LosslessBuffer)
			cfg.RTO = max(cfg.RTO, LosslessRTO)
		}
		net, err := fabric.New(c.Graph, r, cfg)
		if err != nil {
			return RunResult{}, err
		}
		if cfg.Kind == "ethernet" {
			net.SetCongestionControl(&pacer{c: c, rt: r, rate: map[[2]int32]units.Rate{}})
		}
		res, err := net.Run(g, units.MaxTime)
		if err != nil {
			return RunResult{}, err
		}
		for i := range res.Messages {
			if g.Msgs[i].Bytes > 0 && res.Messages[i].Finish == 0 {
				return RunResult{}, fmt.Errorf("message %d (%s) did not complete", i, g.Msgs[i].Tag)
			}
		}
		return RunResult{Time: res.SimTime, PacketScale: k, Events: res.Events, Drops: res.Drops}, nil
	case BackendFlow:
		cfg := o.Fabric
		if cfg.Kind == "infiniband" && cfg.IB.VLs > 1 {
			g = spreadVLs(g, cfg.IB.VLs)
		}
		if cfg.Kind == "ethernet" {
			cfg.Buffer = max(cfg.Buffer, LosslessBuffer) // as on the packet backend
		}
		res, err := flow.Run(c.Graph, r, cfg, g, flow.Options{})
		if err != nil {
			return RunResult{}, err
		}
		return RunResult{Time: res.SimTime, PacketScale: 1, Events: res.Events, Drops: res.Drops}, nil
	case BackendAnalytic:
		res, err := analytic.Run(g, NewAnalytic(c, r, o.Fabric.SwitchLatency))
		if err != nil {
			return RunResult{}, err
		}
		return RunResult{Time: res.Makespan, PacketScale: 1}, nil
	}
	return RunResult{}, fmt.Errorf("backend %q unknown (want packet, flow or analytic)", o.Backend)
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

// pacer is the generic fabric's stand-in for how DMA engines inject: a NIC or copy engine reads
// memory only as fast as the slowest link of its path drains it, so every flow is paced at its
// path's bottleneck rate instead of its endpoint's link rate (an endpoint here is a GPU's or host
// buffer's port, faster than the NIC behind it).
type pacer struct {
	c    *Cluster
	rt   *topo.Routes
	rate map[[2]int32]units.Rate
}

func (p *pacer) Start(f *fabric.Flow) {
	k := [2]int32{f.Src(), f.Dst()}
	r, ok := p.rate[k]
	if !ok {
		g := p.c.Graph
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
// service level keep it), so that every link's messages spread evenly over the VLs. The infiniband fabric's credit loop runs on every link,
// NVLink and PCIe included, and one VL's credit window (at most 2048 64-byte blocks, 128 KiB)
// over NVLink's ~1 us credit round trip would cap a GPU's NVLink at ~150 GB/s, far below the
// ~370 GB/s its own flow control sustains. Spreading messages over the VLs gives each link
// VLs x 128 KiB of window: with the default 4 VLs NVLink runs at its rate, and the network
// links, whose bandwidth-delay product is below one window, are unaffected.
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
