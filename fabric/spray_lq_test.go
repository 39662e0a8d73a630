package fabric

import (
	"fmt"
	"testing"

	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/result"
	"github.com/fabricsim/fabricsim/sim"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

// degradedLeafSpine: 2 leaves of 4 hosts, 4 spines, 100 Gb/s everywhere (1:1) but one uplink,
// leaf0-spine0, at 25 Gb/s (a degraded link).
func degradedLeafSpine() *topo.Graph {
	g := &topo.Graph{Name: "degraded-leaf-spine"}
	var leaves, hosts [2]topo.NodeID
	for l := range leaves {
		leaves[l] = g.AddNode(topo.Switch, fmt.Sprintf("leaf%d", l), 1)
	}
	for l := range leaves {
		for h := 0; h < 4; h++ {
			hosts[l] = g.AddNode(topo.Host, fmt.Sprintf("host%d", 4*l+h), 0)
			g.Connect(hosts[l], leaves[l], 100*units.Gbps, units.Microsecond)
		}
	}
	for s := 0; s < 4; s++ {
		sp := g.AddNode(topo.Switch, fmt.Sprintf("spine%d", s), 2)
		for l := range leaves {
			rate := 100 * units.Gbps
			if s == 0 && l == 0 {
				rate = 25 * units.Gbps
			}
			g.Connect(leaves[l], sp, rate, units.Microsecond)
		}
	}
	return g
}

// TestSprayLeastQueue: adaptive routing by queue depth against random spraying where the paths
// differ. Four 2 MB flows from leaf0's hosts to leaf1's, each alone needing T = its wire bytes
// at 100 Gb/s: random spraying sends a quarter of every flow over the 25 Gb/s uplink, which then
// holds each flow near 4 x 25 / 4 = 25 Gb/s (the last finishes after about 4 T); least_queue
// sees that uplink's queue and sends there only what it drains, so the flows share the 325 Gb/s
// the uplinks carry (no sooner than 400 / 325 T = 1.23 T). On the 1:1 k = 8 fat-tree
// permutation, where the paths are equal, it does worse than random (docs/transports.md): the
// edge switch's choice fixes the destination pod's aggregation switch, whose downlink its local
// queues cannot see.
// fourAcross is the degraded leaf-spine's load: four 2 MB flows from the first leaf's hosts to
// the second's, and T, one flow's wire time at 100 Gb/s (4,096 B payloads, 66 B of headers and
// 20 B of preamble and gap per packet).
func fourAcross() (*msggraph.Graph, units.Time) {
	mg := &msggraph.Graph{Endpoints: 8}
	for i := 0; i < 4; i++ {
		mg.Add(msggraph.Message{Src: int32(i), Dst: int32(4 + i), Bytes: 2 * units.MB})
	}
	pkts := int64(2*units.MB+4095) / 4096
	return mg, (100 * units.Gbps).TransmitTime(units.Size(int64(2*units.MB) + pkts*(66+20)))
}

func TestSprayLeastQueue(t *testing.T) {
	mg, T := fourAcross()
	var last [2]units.Time
	for i, pol := range []SprayPolicy{SprayRandom, SprayLeastQueue} {
		cfg := DefaultRoCE()
		cfg.Seed = 1
		cfg.Routing, cfg.SprayPolicy, cfg.Transport = RoutingSpray, pol, TransportReorder
		res := runOne(t, degradedLeafSpine(), cfg, mg).lastRun
		for _, m := range res.Messages {
			last[i] = max(last[i], m.FCT())
		}
		t.Logf("%s: last FCT %v = %.2f T (T = %v); pauses %v, ECN marks %v, drops %d", pol, last[i], float64(last[i])/float64(T), T, res.Counters["pfc_pause_frames_sent"], res.Counters["ecn_marks"], res.Drops)
	}
	if float64(last[0]) < 3*float64(T) {
		t.Errorf("random spraying: last FCT %.2f T, want >= 3 T (the slow uplink holds every flow near 25 Gb/s)", float64(last[0])/float64(T))
	}
	if float64(last[1]) < 400.0/325*float64(T) || last[1] > last[0]/2 {
		t.Errorf("least_queue: last FCT %.2f T, want >= 1.23 T (capacity) and at most half random's", float64(last[1])/float64(T))
	}
}

// TestOOOWindow: the out-of-order receiver with a bounded tracking window (ooo_window). On the
// sprayed k = 8 fat-tree permutation a packet can arrive more than 64 packets ahead of the next
// expected one (measured): a 1,024-packet window changes nothing (no NAK, the p99 of unlimited
// placement), while a 64-packet window drops and NAKs the packets that overtake further, and
// go-back-N resends from the gap.
func TestOOOWindow(t *testing.T) {
	g := fatTreeK(t, 8, 100*units.Gbps, units.Microsecond)
	mg := permutationGraph(len(g.Hosts), 2*units.MB, 1)
	var p99 [3]float64
	var naks [3]int64
	for i, w := range []int{0, 1024, 64} {
		cfg := DefaultRoCE()
		cfg.Seed = 1
		cfg.Routing, cfg.Transport, cfg.OOOWindow = RoutingSpray, TransportReorder, w
		res := runOne(t, g, cfg, mg).lastRun
		s := slowdowns(res)
		p99[i], naks[i] = result.Percentile(s, 99), res.NAKs
		t.Logf("ooo_window %d: p99 %.3f, NAKs %d, resent %d B", w, p99[i], res.NAKs, res.BytesRetransmitted)
	}
	if naks[0] != 0 || naks[1] != 0 || p99[1] != p99[0] {
		t.Errorf("a 1024-packet window: NAKs %d, p99 %.3f; want none and the unlimited %.3f", naks[1], p99[1], p99[0])
	}
	if naks[2] == 0 || !(p99[2] > p99[0]) {
		t.Errorf("a 64-packet window: NAKs %d, p99 %.3f; want NAKs and a p99 above %.3f", naks[2], p99[2], p99[0])
	}
}

// layerQueues samples every microsecond, for each switch layer and direction of a k-ary fat
// tree ("ed->ag": edge to aggregation, ...), the largest queue of priority 3 on any of its
// ports.
type layerQueues struct {
	n     *Network
	until units.Time
	max   map[string]int64
}

func (q *layerQueues) Handle(ev *sim.Event) {
	for _, sw := range q.n.Switches {
		if sw == nil {
			continue
		}
		for _, p := range sw.Ports {
			me := &q.n.g.Nodes[p.Owner]
			peer := &q.n.g.Nodes[me.Ports[p.Index].Peer]
			key := me.Name[:2] + "->" + peer.Name[:2]
			q.max[key] = max(q.max[key], p.q[3].bytes)
		}
	}
	if q.n.sim.Now() < q.until {
		q.n.sim.After(units.Microsecond, q, 0, 0, nil)
	}
}

// TestSprayLeastQueueFatTree: why least_queue loses to random spraying on the 1:1 k = 8
// fat-tree permutation (p99 1.620 against 1.147, DCQCN off). It balances what each switch sees:
// the upward queues (edge to aggregation, aggregation to core) never hold more than two frames.
// But the uplink a packet takes at its edge switch fixes the aggregation switch it descends
// through in the destination pod, whose queues it cannot see; split by the source's momentary
// uplink queues rather than evenly, the flows load the downward links unequally, and their
// queues (core to aggregation, aggregation to edge) grow far beyond random spraying's.
func TestSprayLeastQueueFatTree(t *testing.T) {
	g := fatTreeK(t, 8, 100*units.Gbps, units.Microsecond)
	mg := permutationGraph(len(g.Hosts), 2*units.MB, 1)
	var q [2]map[string]int64
	var p99 [2]float64
	for i, pol := range []SprayPolicy{SprayRandom, SprayLeastQueue} {
		cfg := DefaultRoCE()
		cfg.Seed = 1
		cfg.Routing, cfg.SprayPolicy, cfg.Transport = RoutingSpray, pol, TransportReorder
		cfg.RoCE.DCQCN = false
		n := newNet(t, g, cfg)
		lq := &layerQueues{n: n, until: 400 * units.Microsecond, max: map[string]int64{}}
		n.sim.Schedule(0, lq, 0, 0, nil)
		res, err := n.Run(mg, units.MaxTime)
		if err != nil {
			t.Fatal(err)
		}
		q[i] = lq.max
		p99[i] = result.Percentile(slowdowns(res), 99)
		t.Logf("%s: p99 %.3f; largest queue up ed->ag %d B, ag->co %d B; down co->ag %d B, ag->ed %d B, ed->ho %d B",
			pol, p99[i], q[i]["ed->ag"], q[i]["ag->co"], q[i]["co->ag"], q[i]["ag->ed"], q[i]["ed->ho"])
	}
	frame := int64(4096 + 66) // a full data frame
	if q[1]["ed->ag"] > 2*frame || q[1]["ag->co"] > 2*frame {
		t.Errorf("least_queue: upward queues %d and %d B, want at most two frames", q[1]["ed->ag"], q[1]["ag->co"])
	}
	if q[1]["co->ag"] < 2*q[0]["co->ag"] || q[1]["ag->ed"] < 2*q[0]["ag->ed"] {
		t.Errorf("least_queue: downward queues %d and %d B, want at least twice random's %d and %d B", q[1]["co->ag"], q[1]["ag->ed"], q[0]["co->ag"], q[0]["ag->ed"])
	}
	if !(p99[1] > p99[0]) {
		t.Errorf("least_queue p99 %.3f, random %.3f: the fat-tree finding changed; update docs/transports.md", p99[1], p99[0])
	}
}
