package backend

import (
	"context"
	"fmt"
	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/flow"
	"math"
	"time"

	"github.com/fabricsim/fabricsim/result"
)

// Auto is not an engine but a choice between two: the packet backend where the job's estimated
// packet-level cost fits a time budget, the flow backend beyond it (Choose has the rule,
// docs/architecture.md "Choosing a backend: auto" the calibration). The result names the backend
// that ran and why (result.Run.Backend, BackendReason).
const Auto Name = "auto"

// DefaultAutoBudget is the budget auto gives the packet backend when none is set: a minute of
// one core, what `fabricsim compare` is meant to take on a laptop.
const DefaultAutoBudget = 60 * time.Second

// EventsPerPacketHop is the packet backend's events per data packet and link crossed: each hop
// costs the port's transmission and the next node's arrival, and the ACKs, CNPs, credit updates
// and pause frames going back add about as many again. Measured against EstimateJob's
// packet-hops (docs/architecture.md, "Choosing a backend: auto"): 4.0 on the 64-GPU dense
// compare, 4.2 on the congested MoE compare, 2.5 (InfiniBand, adaptive routing) to 6.2 (an
// incast with drops) on the run examples.
const EventsPerPacketHop = 4

// PacketEventsPerSecond is what one core of the packet backend gets through on a run whose
// traffic touches hosts NICs: 2.5 M events per CPU second at 1,024, growing as 1/sqrt(hosts)
// below (the engine's working set, flows and queues, misses the caches less), at most 10 M.
// Fitted to the packet backend's measured rates on GPU-cluster runs (docs/architecture.md,
// "Choosing a backend: auto"): 2.4-2.7 M at 1,024 GPUs (the default compare's variants, one of
// its ring classes), 7.6 M on one rail of that class (128 NICs), 10.3 M on the 64-GPU dense
// compare; a congested small run is slower than the fit (the 24-GPU MoE compare: 6.2 M, its
// estimate 1.7x short). The flat 10 M used before was 4x short at 1,024 GPUs.
func PacketEventsPerSecond(hosts int) float64 {
	return min(PacketEventsPerSecondMax, packetEventsPerSecond1024*math.Sqrt(1024/float64(max(hosts, 1))))
}

const (
	// PacketEventsPerSecondMax is the packet backend's rate on small runs (64 NICs or fewer).
	PacketEventsPerSecondMax = 10e6
	// packetEventsPerSecond1024 is its rate at 1,024 NICs.
	packetEventsPerSecond1024 = 2.5e6
)

// AutoOptions are auto's own options.
type AutoOptions struct {
	// Budget is the most estimated packet-backend CPU time auto accepts before it runs the flow
	// backend instead (0: DefaultAutoBudget; negative is an error).
	Budget time.Duration
}

// Estimate is the packet backend's cost of some work, estimated before running it from the
// message graphs alone (EstimateJob): data packets of the job's MTU, the links they cross, and
// from those the events and one core's time.
type Estimate struct {
	// Packets is the number of MTU-sized data packets (a message of b bytes: ceil(b / MTU)).
	Packets float64
	// PacketHops is the links those packets cross: each message's packets times the links on a
	// shortest path between its endpoints.
	PacketHops float64
	// Seconds is one core's time for them: each job's events at PacketEventsPerSecond of the
	// hosts its messages touch.
	Seconds float64
}

// Add sums two estimates (a compare adds its variants', steps' and classes' jobs).
func (e Estimate) Add(o Estimate) Estimate {
	return Estimate{Packets: e.Packets + o.Packets, PacketHops: e.PacketHops + o.PacketHops, Seconds: e.Seconds + o.Seconds}
}

// Events is the estimated number of packet-backend events: PacketHops x EventsPerPacketHop.
func (e Estimate) Events() float64 { return e.PacketHops * EventsPerPacketHop }

// CPU is the estimated time one core of the packet backend takes (Seconds).
func (e Estimate) CPU() time.Duration {
	s := e.Seconds
	if s > float64(math.MaxInt64)/1e9 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(s * 1e9)
}

// EstimateJob estimates the packet backend's cost of job j with real packets of the job's
// fabric MTU (merged packets, PacketOptions.Scale, are not counted: auto decides on real ones).
// It needs the network's routes for the hop counts.
func EstimateJob(j *Job) (Estimate, error) {
	if j.Work == nil || j.Net == nil || j.Net.Graph == nil {
		return Estimate{}, fmt.Errorf("auto backend: a job needs a message graph and a network")
	}
	routes, err := j.Net.Routes()
	if err != nil {
		return Estimate{}, err
	}
	mtu := int64(j.Fabric.MTU)
	if mtu <= 0 {
		return Estimate{}, fmt.Errorf("auto backend: fabric MTU %d: want a positive packet size", mtu)
	}
	var e Estimate
	hops := map[[2]int32]int{}
	touched := map[int32]bool{} // the hosts the messages touch
	for i := range j.Work.Msgs {
		m := &j.Work.Msgs[i]
		if m.Bytes <= 0 || m.Src == m.Dst {
			continue
		}
		k := [2]int32{m.Src, m.Dst}
		h, ok := hops[k]
		if !ok {
			h = max(routes.ShortestPathHops(int(m.Src), int(m.Dst)), 0)
			hops[k] = h
			touched[m.Src], touched[m.Dst] = true, true
		}
		p := float64((int64(m.Bytes) + mtu - 1) / mtu)
		e.Packets += p
		e.PacketHops += p * float64(h)
	}
	e.Seconds = e.Events() / PacketEventsPerSecond(len(touched))
	return e, nil
}

// Choice is what auto decided: the backend that runs, and why, in words for the terminal and
// the result files.
type Choice struct {
	Backend Name
	Reason  string
}

// Choose is auto's rule: the packet backend when estimate e's CPU time on one core is within
// budget (0: DefaultAutoBudget), the flow backend above it. The rule counts one core so that the
// choice, and so the output, is the same on every machine; a compare spreads its simulations
// over the cores and finishes sooner. A negative budget is an error.
func Choose(e Estimate, budget time.Duration) (Choice, error) {
	if budget < 0 {
		return Choice{}, fmt.Errorf("auto budget %v: want a positive duration (e.g. 60s, 5m)", budget)
	}
	if budget == 0 {
		budget = DefaultAutoBudget
	}
	cpu := e.CPU()
	what := fmt.Sprintf("estimated %s packet events, about %s on the packet backend", events(e.Events()), approx(cpu))
	if cpu <= budget {
		return Choice{Packet, fmt.Sprintf("packet: %s, within the %s budget", what, seconds(budget))}, nil
	}
	return Choice{Flow, fmt.Sprintf("flow: %s, above the %s budget", what, seconds(budget))}, nil
}

// SecondsString prints a budget as Choose's reasons do, for other reasons to match (compare's
// choice class by class).
func SecondsString(d time.Duration) string { return seconds(d) }

// EventsString prints an event count as Choose's reasons do.
func EventsString(x float64) string { return events(x) }

// ApproxString prints an estimated time as Choose's reasons do.
func ApproxString(d time.Duration) string { return approx(d) }

// seconds prints a budget: whole seconds as "60 s", anything else as Go writes it ("1.5s", "200ms").
func seconds(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%d s", d/time.Second)
	}
	return d.String()
}

// events prints an event count in words' precision: 310 M, 2.4 G, 870 k.
func events(x float64) string {
	switch {
	case x >= 1e9:
		return fmt.Sprintf("%.3g G", x/1e9)
	case x >= 1e6:
		return fmt.Sprintf("%.3g M", x/1e6)
	case x >= 1e3:
		return fmt.Sprintf("%.3g k", x/1e3)
	}
	return fmt.Sprintf("%.0f", x)
}

// approx prints a duration rounded for a reader: 140 s, 2.5 s, 0.036 s, 25 min, 3.1 h.
func approx(d time.Duration) string {
	s := d.Seconds()
	switch {
	case s >= 2*3600:
		return fmt.Sprintf("%.2g h", s/3600)
	case s >= 600:
		return fmt.Sprintf("%.0f min", s/60)
	case s >= 10:
		return fmt.Sprintf("%.0f s", s)
	}
	return fmt.Sprintf("%.2g s", s)
}

type autoBackend struct{}

func (autoBackend) Name() Name { return Auto }

// Run estimates the job (EstimateJob), chooses (Choose with the job's Auto.Budget) and runs the
// chosen backend; the result says which in Backend and why in BackendReason.
func (autoBackend) Run(ctx context.Context, j *Job) (*result.Run, error) {
	e, err := EstimateJob(j)
	if err != nil {
		return nil, err
	}
	c, err := Choose(e, j.Auto.Budget)
	if err != nil {
		return nil, err
	}
	if why := PacketOnly(&j.Fabric); why != "" {
		c = ChoosePacket(why, e)
	}
	b, err := Lookup(c.Backend)
	if err != nil {
		return nil, err
	}
	res, err := b.Run(ctx, j)
	if res != nil {
		res.BackendReason = c.Reason
	}
	return res, err
}

// PacketOnly says why a fabric configuration must run on the packet backend whatever its
// size ("" when the flow backend models all of it): the faults the flow backend does not model
// (flow.FaultsUnsupported: a PFC storm, a slow receiver on a lossy fabric) and the packet-only
// settings of fabric.Config.PacketOnly (ECN at dequeue, the ns-3 and ConnectX DCQCN models, CNP
// as an ACK flag, ACK priority, HPCC, fct_end last-ack). Auto then runs packet instead of giving
// a flow run that would refuse them. Links down, flapping or degraded and failed switches run on
// either (docs/faults.md, "On the flow backend").
func PacketOnly(cfg *fabric.Config) string {
	if err := flow.FaultsUnsupported(cfg); err != nil {
		return err.Error()
	}
	if err := cfg.PacketOnly(); err != nil {
		return err.Error()
	}
	return ""
}

// ChoosePacket is the choice auto makes for a job that needs the packet backend.
func ChoosePacket(why string, e Estimate) Choice {
	return Choice{Packet, fmt.Sprintf("packet: %s (estimated %s packet events, about %s on the packet backend)", why, events(e.Events()), approx(e.CPU()))}
}
