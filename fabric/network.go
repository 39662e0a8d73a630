// Package fabric is fabricsim's packet backend: every packet, every queue, every link. Hosts'
// NICs segment messages into MTU packets and pace them at line rate; links add serialization
// and propagation; switches queue packets per egress port and priority in a shared buffer and
// route them over equal-cost shortest paths. Fabric variants (PFC, ECN/DCQCN, InfiniBand
// credits, VL arbitration, subnet-manager routing) are policies (hooks.go) that the per-hop path
// calls from one place (dispatch.go); the reliable transport is transport/rc's state machines,
// which the NIC drives.
//
// A packet's life: NIC.nextData builds it (rc.Sender) -> Port.kick starts serialization ->
// Port.Handle (opTxDone) sends it across the link -> Switch.Handle (opArrive) routes and queues
// it -> ... -> NIC.Handle (opArrive) delivers it (rc.Receiver) and ACKs -> ... -> NIC.Handle
// hands the ACK to rc.Sender. Two events per packet per hop; InfiniBand credit updates travel
// without events of their own (ibcredit.go). docs/architecture.md follows one packet file by
// file.
package fabric

import (
	"fmt"
	"time"

	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/result"
	"github.com/fabricsim/fabricsim/sim"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/transport/rc"
	"github.com/fabricsim/fabricsim/units"
)

// Drop causes.
const (
	DropBuffer   = iota // tail drop: the shared buffer (or the queue's dynamic share) was full
	DropCorrupt         // the link's error rate corrupted the packet
	DropNoRoute         // no path to the destination
	DropHeadroom        // a lossless class overflowed its PFC headroom: a misconfiguration
	DropWatchdog        // flushed by the PFC watchdog from a queue paused too long
	DropRandom          // injected random loss (lossy-fabric experiments)
	DropLinkDown        // lost with a link that went down (faults.go)
	numDropCauses
)

var dropNames = [numDropCauses]string{"buffer", "corrupt", "no_route", "headroom", "pfc_watchdog", "random_loss", "link_down"}

// Stats are the run's totals.
type Stats struct {
	BytesSent          int64
	BytesDelivered     int64
	BytesRetransmitted int64
	Drops              [numDropCauses]int64
	Timeouts           int64
	NAKs               int64
	OutOfOrder         int64
	Duplicates         int64
}

// Network is a built fabric ready to run a message graph.
type Network struct {
	cfg    Config
	g      *topo.Graph
	routes *topo.Routes
	sim    *sim.Sim
	// rc is the reliable transport's settings, every flow's (transport/rc), resolved once from
	// cfg in New (the in-flight cap of selective repeat when the first graph runs).
	rc rc.Params

	Switches []*Switch // indexed by node ID (nil for hosts)
	NICs     []*NIC    // indexed by host index
	nodes    []sim.Handler
	// ports holds every port in one array, nodes in order and each node's ports in order: a
	// port's index there is its Port.gidx, which also indexes the per-port state policies keep
	// (PFC, ECN, DWRR, InfiniBand credits). portBase[node] is the gidx of the node's port 0.
	ports    []Port
	portBase []int32
	// peerNode[gidx] is the node at the other end of port gidx's link: the entity (sim.SetEntities)
	// its arrivals belong to. The kernel's entities are the nodes, by ID, and the run's global
	// entity (globalEntity: the watchdog, fault plan, samplers).
	peerNode []int32
	// par is the parallel run's state (parallel.go), nil for a sequential run; on a partition's
	// copy of the network it is shared with the main one.
	par *parRun
	// threads is the worker count asked for (SetThreads, when threadsSet; else 1); ThreadsAuto
	// applies the rule of parallel.go.
	threads    int
	threadsSet bool
	parInfo    ParallelInfo

	capture *Capture
	// faults runs the fault plan (faults.go), nil without one; faulty is set once a link has
	// gone down: arrivals then check for packets lost on the wire.
	faults   *faultState
	faulty   bool
	bins     *Bins // binned event counters (bins.go), nil unless EnableBins
	policies       // dispatch.go

	pool packetPool
	// ints holds the INT stacks on a fabric with in-band telemetry (hpcc.go), else nil; acker
	// is the congestion control that reads every ACK (HPCC), else nil.
	ints  *intPool
	acker ackObserver
	flows []*Flow // indexed by message ID (nil for delay nodes)
	eng   engine
	stats Stats

	packetHops   uint64
	dataInjected int64 // payload bytes of data packets created (conservation check)
	dataArrived  int64 // payload bytes of data packets that reached a NIC
	dataDropped  int64
	lastDelivery units.Time
	progressMark int64       // BytesDelivered at the last no-progress check
	progressHeld bool        // packets were in the network at the last no-progress check
	lastRun      *result.Run // for tests
}

// New builds the packet-level network for graph g with routes r.
func New(g *topo.Graph, r *topo.Routes, cfg Config) (*Network, error) {
	if err := cfg.validate(false); err != nil {
		return nil, err
	}
	n := &Network{cfg: cfg, g: g, routes: r, sim: sim.New()}
	n.sim.SetPrefetcher(prefetch)
	n.spray = cfg.Routing == RoutingSpray
	n.sprayLeast = n.spray && cfg.SprayPolicy == SprayLeastQueue
	n.Switches = make([]*Switch, len(g.Nodes))
	n.NICs = make([]*NIC, len(g.Hosts))
	n.nodes = make([]sim.Handler, len(g.Nodes))
	ports := make([][]*Port, len(g.Nodes))
	n.portBase = make([]int32, len(g.Nodes)+1)
	for i := range g.Nodes {
		n.portBase[i+1] = n.portBase[i] + int32(len(g.Nodes[i].Ports))
	}
	n.ports = make([]Port, n.portBase[len(g.Nodes)])
	n.peerNode = make([]int32, len(n.ports))
	n.sim.SetEntities(len(g.Nodes)+1, n.globalEntity())
	for i := range g.Nodes {
		node := &g.Nodes[i]
		ports[i] = make([]*Port, len(node.Ports))
		for p := range node.Ports {
			l := &g.Links[node.Ports[p].Link]
			gidx := n.portBase[i] + int32(p)
			port := &n.ports[gidx]
			n.peerNode[gidx] = int32(node.Ports[p].Peer)
			*port = Port{
				net: n, Owner: node.ID, Index: int32(p), gidx: gidx, Link: l.ID, Rate: l.Rate,
				nprio: uint8(cfg.Priorities),
				delay: l.Latency, peerPort: node.Ports[p].PeerPort, errCause: DropCorrupt,
				peerEnt: int32(node.Ports[p].Peer),
			}
			if ps := 8 * units.Second; l.Rate > 0 && ps%units.Time(l.Rate) == 0 {
				port.psPerByte = ps / units.Time(l.Rate) // exact: TransmitTime(n) = n x this
			}
			port.setErrRate(l.ErrorRate)
			if l.ErrorRate > 0 {
				port.rng = sim.RNG(cfg.drawSeed(), fmt.Sprintf("link%d/%s", l.ID, node.Name))
			}
			if peer := &g.Nodes[node.Ports[p].Peer]; peer.Kind == topo.Switch {
				// A node's own latency (topo.Node.Latency: NVSwitch, PCIe switch, NIC of a GPU
				// server) replaces the fabric's switch latency; negative means none.
				switch {
				case peer.Latency > 0:
					port.delay += peer.Latency
				case peer.Latency == 0:
					port.delay += cfg.SwitchLatency
				}
			}
			ports[i][p] = port
		}
		if node.Kind == topo.Switch {
			sw := &Switch{net: n, Node: node.ID, base: n.portBase[node.ID], Name: node.Name, Ports: ports[i], salt: sim.Mix64(cfg.Seed ^ uint64(node.ID)*0x9e3779b97f4a7c15)}
			for _, p := range sw.Ports {
				p.sw = sw
			}
			n.Switches[i] = sw
			n.nodes[i] = sw
		} else {
			nic := &NIC{net: n, Host: node.Host, Node: node.ID, Port: ports[i][0]}
			ports[i][0].nic = nic
			n.NICs[node.Host] = nic
			n.nodes[i] = nic
		}
	}
	for i := range g.Nodes {
		for p, port := range ports[i] {
			port.peer = n.nodes[g.Nodes[i].Ports[p].Peer]
		}
	}
	if err := n.prepareStorm(); err != nil {
		return nil, err
	}
	var err error
	switch n.cfg.Kind {
	case KindRoCE:
		err = n.installRoCE()
	case KindInfiniBand:
		err = n.installInfiniBand()
	}
	if err != nil {
		return nil, err
	}
	if err := n.installFaults(); err != nil {
		return nil, err
	}
	n.rc = transportParams(&n.cfg)
	return n, nil
}

// transportParams maps the transport settings of c to the RC state machines' parameters.
func transportParams(c *Config) rc.Params {
	p := rc.Params{Mode: rc.GoBackN, MTU: int64(c.MTU), AckEvery: c.AckEvery, RTO: c.RTO,
		RTOLow: c.IRNRTOLow, RTOHigh: c.IRNRTOHigh, LowThreshold: int64(c.IRNLowThreshold), Cap: int64(c.IRNBDPCap)}
	switch c.Transport {
	case "irn":
		p.Mode = rc.Selective
	case "ooo":
		p.Mode = rc.Reorder
		p.ReorderWindow = int64(c.OOOWindow)
	case TransportUET:
		p.Mode = rc.RUD
	case "":
		if c.Kind == KindInfiniBand && c.IB.Adaptive {
			// Adaptive routing reorders packets; HCAs accept them in any order (docs/infiniband.md).
			p.Mode = rc.Reorder
		}
	}
	return p
}

// port returns the port with global index g (Port.gidx).
func (n *Network) port(g int32) *Port { return &n.ports[g] }

// portOf returns port p of node.
func (n *Network) portOf(node topo.NodeID, p int32) *Port { return &n.ports[n.portBase[node]+p] }

// Sim exposes the event kernel (for progress reporting and extensions).
func (n *Network) Sim() *sim.Sim { return n.sim }

func (n *Network) drop(pkt *Packet, cause int) {
	n.stats.Drops[cause]++
	if pkt.Kind == Data {
		n.dataDropped += int64(pkt.Payload)
	}
	n.pool.put(pkt)
}

// violation stops the run on a broken invariant, naming the component, time and event.
func (n *Network) violation(component, what string) {
	n.sim.Stop(fmt.Errorf("invariant violated at %v (event %d) in %s: %s", n.sim.Now(), n.sim.Events(), component, what))
}

// Run executes message graph mg and returns its results. until bounds simulated time
// (units.MaxTime for none); messages not finished by then are reported with Finish 0.
func (n *Network) Run(mg *msggraph.Graph, until units.Time) (*result.Run, error) {
	if err := mg.Validate(); err != nil {
		return nil, err
	}
	if mg.Endpoints > len(n.NICs) {
		return nil, fmt.Errorf("workload addresses %d endpoints but the topology has %d hosts", mg.Endpoints, len(n.NICs))
	}
	wall := time.Now()
	if err := n.makeFlows(mg); err != nil { // qp.go: one flow per message and QP
		return nil, err
	}
	n.eng.init(n, mg)
	n.planParallel(mg) // parallel.go: partitions when the run allows and asks for them
	n.eng.start()
	if n.cfg.NoProgress > 0 {
		n.sim.Schedule(n.cfg.NoProgress, &n.eng, opWatchdog, 0, nil)
	}
	var err error
	if n.par != nil {
		err = n.par.g.Run(until)
		n.endParallel()
	} else {
		err = n.sim.Run(until)
	}
	if fs := n.faults; fs != nil {
		n.routes = fs.baseRoutes // the ideal FCTs are the healthy fabric's
		if n.ibRouter != nil {
			n.ibRouter.t = fs.baseTables
		}
	}
	if err == nil && n.cfg.Check {
		err = n.checkEnd()
	}
	res := n.collect(mg)
	res.WallSeconds = time.Since(wall).Seconds()
	return res, err
}

// checkEnd verifies conservation once the event queue is drained.
func (n *Network) checkEnd() error {
	if n.pending() > 0 {
		return nil // stopped early (time limit): conservation holds only with packets counted in flight
	}
	if n.pool.live != 0 {
		return fmt.Errorf("invariant violated at end: %d packets neither delivered nor dropped", n.pool.live)
	}
	if n.dataInjected != n.dataArrived+n.dataDropped {
		return fmt.Errorf("invariant violated at end: %d payload bytes injected, %d arrived + %d dropped", n.dataInjected, n.dataArrived, n.dataDropped)
	}
	var want int64
	for i, f := range n.flows {
		if f == nil {
			continue
		}
		if !f.rcv.Complete() {
			return fmt.Errorf("invariant violated at end: message %d incomplete with no events left (%d of %d B delivered)", i, f.rcv.Next(), f.snd.Size())
		}
		want += f.snd.Size()
	}
	if n.stats.BytesDelivered != want {
		return fmt.Errorf("invariant violated at end: delivered %d B, messages total %d B", n.stats.BytesDelivered, want)
	}
	return nil
}

func (n *Network) collect(mg *msggraph.Graph) *result.Run {
	res := &result.Run{
		Backend: "packet", Events: n.sim.Events(), PacketHops: n.packetHops, SimTime: n.eng.lastFinish, EndTime: n.sim.Now(),
		BytesSent: n.stats.BytesSent, BytesDelivered: n.stats.BytesDelivered,
		BytesRetransmitted: n.stats.BytesRetransmitted, Timeouts: n.stats.Timeouts, NAKs: n.stats.NAKs,
		DropsByCause: map[string]int64{}, Counters: map[string]float64{},
	}
	for c, v := range n.stats.Drops {
		if c == DropLinkDown && n.faults == nil {
			continue // only runs with faults have the cause
		}
		res.Drops += v
		res.DropsByCause[dropNames[c]] = v
	}
	res.Counters["out_of_order_packets"] = float64(n.stats.OutOfOrder)
	res.Counters["duplicate_packets"] = float64(n.stats.Duplicates)
	var maxBuf int64
	for _, s := range n.Switches {
		if s != nil && s.MaxBufUsed > maxBuf {
			maxBuf = s.MaxBufUsed
		}
	}
	res.Counters["max_switch_buffer_bytes"] = float64(maxBuf)
	for _, p := range []any{n.fc, n.marker, n.deqMarker, n.cc, n.sched, n.router} {
		if r, ok := p.(Reporter); ok {
			r.Report(res)
		}
	}
	if n.faults != nil {
		n.faults.Report(res)
	}
	ideal := newIdealCache(n)
	res.Messages = make([]result.Message, len(mg.Msgs))
	for i := range mg.Msgs {
		m := &mg.Msgs[i]
		rm := result.Message{ID: int32(i), Src: m.Src, Dst: m.Dst, Bytes: int64(m.Bytes), Prio: m.Prio, Tag: m.Tag,
			Start: n.eng.started[i], Finish: n.eng.finish[i]}
		if m.Bytes > 0 {
			rm.IdealFCT = ideal.fct(m.Src, m.Dst, int64(m.Bytes))
		}
		res.Messages[i] = rm
	}
	return res
}
