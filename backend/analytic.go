package backend

import (
	"context"
	"time"

	"github.com/fabricsim/fabricsim/analytic"
	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/result"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

// AnalyticOptions are the analytic backend's own options.
type AnalyticOptions struct {
	// Network, when set, is the alpha-beta network the fluid model runs on instead of the
	// PathNetwork of the job's topology (compare gives its uniform leaf-spine stand-in).
	Network analytic.Network
}

type analyticBackend struct{}

func (analyticBackend) Name() Name { return Analytic }

// Run runs the job on the max-min fluid model (analytic.RunContext) and fills a result.Run:
// every message's start and finish, its ideal FCT on the model's network, the bytes. It has no
// counters (Counters is nil) and says in Omitted what of the fabric's configuration it left out.
func (analyticBackend) Run(ctx context.Context, j *Job) (*result.Run, error) {
	if err := ctx.Err(); err != nil {
		return nil, interrupted(ctx)
	}
	if err := refuseFaults(Analytic, &j.Fabric); err != nil {
		return nil, err
	}
	net := j.Analytic.Network
	if net == nil {
		routes, err := j.Net.Routes()
		if err != nil {
			return nil, err
		}
		net = NewPathNetwork(j.Net.Graph, routes, j.Fabric)
	}
	wall := time.Now()
	r, err := analytic.RunContext(ctx, j.Work, net)
	if err != nil && ctx.Err() == nil {
		return nil, err
	}
	if err != nil {
		err = interrupted(ctx)
	}
	until, cut := units.MaxTime, false
	if j.Until > 0 {
		until = j.Until
		// What completes after Until is not done by then; what completed before is unaffected by
		// anything later (a fluid model is causal too).
		r.Makespan = 0
		for i, f := range r.Finish {
			if f > until {
				r.Finish[i], cut = 0, true
			}
			r.Makespan = max(r.Makespan, r.Finish[i])
		}
	}
	res := analyticResult(j.Work, net, r, until)
	if cut {
		res.EndTime = until
	}
	res.Scenario, res.Seed = j.Scenario, j.Seed
	res.Omitted = AnalyticOmits(j.Fabric)
	res.WallSeconds = time.Since(wall).Seconds()
	return res, err
}

// analyticResult turns the fluid model's completion times into a result.Run. A message starts
// as the packet backend starts it: when its dependencies are done and its Start has come, plus
// its Delay (a zero-byte node reports the span it occupied, ready .. ready + Delay).
func analyticResult(g *msggraph.Graph, net analytic.Network, r analytic.Result, until units.Time) *result.Run {
	res := &result.Run{Backend: string(Analytic), SimTime: r.Makespan, EndTime: r.Makespan,
		Messages: make([]result.Message, len(g.Msgs))}
	for i := range g.Msgs {
		m := &g.Msgs[i]
		rm := result.Message{ID: int32(i), Src: m.Src, Dst: m.Dst, Bytes: int64(m.Bytes), Prio: m.Prio, Tag: m.Tag,
			Finish: r.Finish[i]}
		ready, ok := m.Start, true
		for _, d := range m.Deps {
			if r.Finish[d] == 0 && g.Msgs[d].Bytes > 0 {
				ok = false
			}
			ready = max(ready, r.Finish[d])
		}
		if ok && ready <= until {
			rm.Start = ready
			if m.Bytes > 0 {
				rm.Start += m.Delay
			}
		}
		if m.Bytes > 0 {
			rm.IdealFCT = net.Latency(m.Src, m.Dst) + net.Bandwidth(m.Src, m.Dst).TransmitTime(m.Bytes)
			if r.Finish[i] > 0 {
				res.BytesSent += int64(m.Bytes)
				res.BytesDelivered += int64(m.Bytes)
			}
		}
		res.Messages[i] = rm
	}
	return res
}

// AnalyticOmits names the mechanisms cfg turns on that the fluid model leaves out: it has no
// queues, so nothing that reacts to a queue (PFC, ECN, congestion control, credits, adaptive
// routing) and no loss. Empty for a configuration without them (the generic Ethernet fabric).
func AnalyticOmits(cfg fabric.Config) []string {
	var out []string
	switch cfg.Kind {
	case fabric.KindRoCE:
		if cfg.RoCE.PFC {
			out = append(out, "PFC")
		}
		if cfg.RoCE.ECN {
			out = append(out, "ECN marking")
		}
		if cfg.RoCE.DCQCN {
			out = append(out, "DCQCN congestion control")
		}
		if cfg.RoCE.RandomLoss > 0 {
			out = append(out, "random loss")
		}
	case fabric.KindInfiniBand:
		out = append(out, "credit-based flow control")
		if cfg.IB.CC.Enabled {
			out = append(out, "IB congestion control")
		}
		if cfg.IB.Adaptive {
			out = append(out, "adaptive routing")
		}
	}
	if cfg.Routing == fabric.RoutingSpray {
		out = append(out, "packet spraying")
	}
	return out
}

// PathNetwork is the analytic model of a topology (analytic.Network and analytic.Ports), so that
// the message graphs the packet backend runs run there too. Each endpoint pair gets the path the
// packet backend's routes take first (topo.Routes.FirstPath):
//
//   - Bandwidth is the payload rate of the path's slowest link (link rate x MTU / wire bytes of
//     a full packet), which for a GPU server's links is its effective rate (package gpu).
//   - Latency is what the packet backend adds to a lone message beyond bytes/bandwidth: every
//     link's propagation delay, every node's forwarding latency, and one full packet's
//     serialization on each link but the slowest (the store-and-forward pipeline fill).
//   - The transmit port is the slowest link of the path's first half, the receive port the
//     slowest of its second half (the last one on a tie): the NIC's network port for a message
//     between servers, the NVLink port for one inside a server. Messages that share such a
//     link share its capacity max-min fairly.
//
// Contention on other links (a PCIe uplink carrying both a copy and a NIC's traffic, a spine)
// is the packet backend's business; the backends agree where the network is uncongested.
type PathNetwork struct {
	g             *topo.Graph
	routes        *topo.Routes
	mtu           units.Size
	wire          int64 // bytes on the wire of a full packet
	switchLatency units.Time
	cache         map[[2]int32]pathInfo
}

type pathInfo struct {
	lat    units.Time
	bw     units.Rate
	tx, rx analytic.Port
}

// NewPathNetwork returns the analytic view of topology g with routes r under fabric cfg's
// framing; cfg's switch latency applies to switches without a topo.Node.Latency of their own.
func NewPathNetwork(g *topo.Graph, r *topo.Routes, cfg fabric.Config) *PathNetwork {
	return &PathNetwork{g: g, routes: r, mtu: cfg.MTU, wire: int64(cfg.MTU) + int64(cfg.HeaderBytes) + int64(cfg.L1Overhead),
		switchLatency: cfg.SwitchLatency, cache: map[[2]int32]pathInfo{}}
}

func (a *PathNetwork) path(src, dst int32) pathInfo {
	k := [2]int32{src, dst}
	if p, ok := a.cache[k]; ok {
		return p
	}
	g := a.g
	nodes := a.routes.FirstPath(int(src), int(dst))
	var p pathInfo
	if len(nodes) < 2 {
		p = pathInfo{bw: 1, tx: analytic.Port{ID: -1, Rate: 1}, rx: analytic.Port{ID: -2, Rate: 1}}
		a.cache[k] = p
		return p
	}
	type hop struct {
		rate units.Rate
		id   int64
	}
	hops := make([]hop, 0, len(nodes)-1)
	for i := 0; i+1 < len(nodes); i++ {
		from, to := nodes[i], nodes[i+1]
		var l *topo.Link
		for _, pt := range g.Nodes[from].Ports {
			if pt.Peer == to {
				l = &g.Links[pt.Link]
				break
			}
		}
		dir := int64(0)
		if l.A != from {
			dir = 1
		}
		hops = append(hops, hop{l.Rate, int64(l.ID)*2 + dir})
		p.lat += l.Latency
		if n := &g.Nodes[to]; n.Kind == topo.Switch {
			switch {
			case n.Latency > 0:
				p.lat += n.Latency
			case n.Latency == 0:
				p.lat += a.switchLatency
			}
		}
	}
	slow := 0
	for i, h := range hops {
		if h.rate < hops[slow].rate {
			slow = i
		}
	}
	for i, h := range hops {
		if i != slow {
			p.lat += h.rate.TransmitTime(units.Size(a.wire))
		}
	}
	payload := func(r units.Rate) units.Rate { return units.Rate(int64(r) * int64(a.mtu) / a.wire) }
	p.bw = payload(hops[slow].rate)
	half := (len(hops) - 1) / 2
	tx, rx := 0, half+1
	for i := 0; i <= half; i++ {
		if hops[i].rate < hops[tx].rate {
			tx = i
		}
	}
	for i := half + 1; i < len(hops); i++ {
		if hops[i].rate <= hops[rx].rate {
			rx = i
		}
	}
	if len(hops) == 1 {
		rx = 0
	}
	p.tx = analytic.Port{ID: hops[tx].id, Rate: payload(hops[tx].rate)}
	p.rx = analytic.Port{ID: hops[rx].id, Rate: payload(hops[rx].rate)}
	a.cache[k] = p
	return p
}

// Latency implements analytic.Network.
func (a *PathNetwork) Latency(src, dst int32) units.Time { return a.path(src, dst).lat }

// Bandwidth implements analytic.Network.
func (a *PathNetwork) Bandwidth(src, dst int32) units.Rate { return a.path(src, dst).bw }

// TxPort implements analytic.Ports.
func (a *PathNetwork) TxPort(src, dst int32) analytic.Port { return a.path(src, dst).tx }

// RxPort implements analytic.Ports.
func (a *PathNetwork) RxPort(src, dst int32) analytic.Port { return a.path(src, dst).rx }
