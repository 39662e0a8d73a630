package fabric

import (
	"fmt"

	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/sim"
	"github.com/fabricsim/fabricsim/units"
)

// engine walks the message graph: a message starts when its dependencies are done, its start
// time has come and its delay has passed; it completes when its last byte is delivered.
type engine struct {
	n          *Network
	g          *msggraph.Graph
	waiting    []int32 // dependencies not yet complete
	readyAt    []units.Time
	depStart   []int32 // CSR: dependents of message i are depList[depStart[i]:depStart[i+1]]
	depList    []int32
	started    []units.Time
	finish     []units.Time
	done       int
	lastFinish units.Time
}

func (e *engine) init(n *Network, g *msggraph.Graph) {
	e.n, e.g = n, g
	m := len(g.Msgs)
	e.waiting = make([]int32, m)
	e.readyAt = make([]units.Time, m)
	e.started = make([]units.Time, m)
	e.finish = make([]units.Time, m)
	for i := range g.Msgs {
		e.waiting[i] = int32(len(g.Msgs[i].Deps))
	}
	e.depStart, e.depList = g.Dependents()
	for i := range g.Msgs {
		e.readyAt[i] = g.Msgs[i].Start
	}
}

// start schedules the messages that wait for nothing (after init, and after a parallel run has
// made the partitions' copies of the engine).
func (e *engine) start() {
	for i := range e.g.Msgs {
		if e.waiting[i] == 0 {
			e.schedule(int32(i))
		}
	}
}

func (e *engine) schedule(i int32) {
	m := &e.g.Msgs[i]
	at := e.readyAt[i] + m.Delay
	if now := e.n.sim.Now(); at < now {
		at = now
	}
	// The start is an event of the source host, in the partition that runs it (parallel.go).
	src := int32(e.n.g.Hosts[m.Src])
	e.n.sim.ScheduleTo(src, at, e.n.engineOf(src), opMsgStart, i, nil)
}

// Handle starts a message or runs the no-progress watchdog.
func (e *engine) Handle(ev *sim.Event) {
	n := e.n
	switch ev.Op {
	case opMsgStart:
		i := ev.I
		e.started[i] = n.sim.Now()
		if e.g.Msgs[i].Bytes == 0 {
			// A delay node (compute) reports the span it occupied: ready .. ready+Delay.
			e.started[i] -= e.g.Msgs[i].Delay
			e.complete(i)
			return
		}
		for f := n.flows[i]; f != nil; f = n.qpAfter(f) {
			n.NICs[f.src].startFlow(f)
		}
	case opWatchdog:
		if e.done == len(e.g.Msgs) {
			return
		}
		// An interval is judged only if packets were in the network at both of its ends: traffic
		// that starts late (HPCC flow files start at 2 s) or just before a check has had a whole
		// interval to deliver its first byte before it can be called stuck.
		// With faults, a link that is down holds traffic even when no packet is in the network;
		// while the fault plan still has events to run (a reroute to come) nothing is judged.
		held := n.pool.live > 0 || n.faults.isolating()
		if n.faults.waiting() {
			held = false
		}
		if held && n.progressHeld && n.stats.BytesDelivered == n.progressMark {
			if n.faults.isolating() {
				n.sim.Stop(fmt.Errorf("no byte delivered for %v at %v with links down (%s) and no reroute to come: a host cut off from its peers, or retransmissions that never get through (%d of %d messages complete)",
					n.cfg.NoProgress, n.sim.Now(), n.faults.downList(), e.done, len(e.g.Msgs)))
				return
			}
			if x, ok := n.fc.(StallExplainer); ok {
				if why := x.ExplainStall(); why != "" {
					n.sim.Stop(fmt.Errorf("%s: no byte delivered for %v at %v, %d packets held (%d of %d messages complete)",
						why, n.cfg.NoProgress, n.sim.Now(), n.pool.live, e.done, len(e.g.Msgs)))
					return
				}
			}
			n.sim.Stop(fmt.Errorf("no progress for %v at %v: %d packets in the network and no byte delivered (%d of %d messages complete)",
				n.cfg.NoProgress, n.sim.Now(), n.pool.live, e.done, len(e.g.Msgs)))
			return
		}
		n.progressMark, n.progressHeld = n.stats.BytesDelivered, held
		n.sim.After(n.cfg.NoProgress, e, opWatchdog, 0, nil)
	}
}

// complete records message i's completion and releases its dependents.
func (e *engine) complete(i int32) {
	n := e.n
	now := n.sim.Now()
	if n.cfg.Check && e.finish[i] != 0 {
		n.violation(fmt.Sprintf("message %d", i), "completed twice")
		return
	}
	e.finish[i] = now
	if now > e.lastFinish {
		e.lastFinish = now
	}
	e.done++
	for _, d := range e.depList[e.depStart[i]:e.depStart[i+1]] {
		if now > e.readyAt[d] {
			e.readyAt[d] = now
		}
		e.waiting[d]--
		if e.waiting[d] == 0 {
			e.schedule(d)
		}
	}
}

// Progress returns how many messages are complete out of how many.
func (n *Network) Progress() (done, total int) { return n.eng.done, len(n.eng.g.Msgs) }
