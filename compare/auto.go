package compare

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/fabricsim/fabricsim/backend"
	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/units"
)

// chooseBackend resolves the backend a compare runs on. A named one (packet, flow, analytic)
// runs as named; auto estimates the packet backend's cost of every simulation the compare is
// about to run (each variant's graphs, once per network run: runs is the steps, or fewer where
// steps share network runs, noise.go) and lets backend.Choose pick one backend
// for all variants: the comparison stays between fabrics, never between backends. fromFlag
// says whether --backend (Options.Backend) named it rather than the scenario.
//
// Under auto it also returns, per graph (class), the packet backend's estimate of one run of
// it: the largest over the variants (classPlan decides on it).
func (s *Scenario) chooseBackend(ctx context.Context, name backend.Name, fromFlag bool, opt Options, variants []*Variant, vnet []*backend.Network, graphs []*msggraph.Graph, runs int) (backend.Choice, []backend.Estimate, error) {
	classes := s.jobClasses()
	if s.hasStorm() && name == backend.Flow {
		return backend.Choice{}, nil, &Error{File: s.File, Msg: "backend flow: the scenario has a pfc_storm fault, which only the packet backend models; use --backend packet or auto"}
	}
	if len(s.Faults) > 0 && name == backend.Analytic {
		return backend.Choice{}, nil, &Error{File: s.File, Msg: fmt.Sprintf("backend %s: the scenario has faults, which the analytic backend does not model; use --backend packet, flow or auto", name)}
	}
	if name != backend.Auto {
		if classes && name == backend.Analytic {
			return backend.Choice{}, nil, &Error{File: s.File, Msg: fmt.Sprintf("backend %s: the jobs run in traffic classes (jobs[].class), which the packet and flow backends model; use --backend packet, flow or auto", name)}
		}
		if name == backend.Flow {
			// A setting only the packet backend models would otherwise fail the compare
			// half-way, at its first simulation of that variant: refuse it before any runs.
			for _, v := range variants {
				if why := backend.PacketOnly(&v.Fabric); why != "" {
					return backend.Choice{}, nil, &Error{File: s.File, Field: "variants." + v.Name, Msg: "backend flow: " + why + ", or leave the variant out (--variants)"}
				}
			}
		}
		why := "the scenario's backend"
		if fromFlag {
			why = "--backend"
		}
		return backend.Choice{Backend: name, Reason: fmt.Sprintf("%s: %s", name, why)}, nil, nil
	}
	var total backend.Estimate
	// Variants on the same network with the same MTU send the same packets: estimate once.
	type key struct {
		net *backend.Network
		mtu units.Size
		g   int
	}
	seen := map[key]backend.Estimate{}
	largest := make([]backend.Estimate, len(graphs))
	for vi, v := range variants {
		for gi, g := range graphs {
			if ctx.Err() != nil {
				return backend.Choice{}, nil, ctx.Err() // Run says it was interrupted
			}
			k := key{vnet[vi], v.Fabric.MTU, gi}
			e, ok := seen[k]
			if !ok {
				var err error
				if e, err = backend.EstimateJob(&backend.Job{Work: g, Net: vnet[vi], Fabric: v.Fabric}); err != nil {
					return backend.Choice{}, nil, fmt.Errorf("backend auto, variant %s: %w", v.Name, err)
				}
				seen[k] = e
			}
			if e.Seconds > largest[gi].Seconds || e.Seconds == largest[gi].Seconds && e.PacketHops > largest[gi].PacketHops {
				largest[gi] = e
			}
			for range runs {
				total = total.Add(e)
			}
		}
	}
	c, err := backend.Choose(total, opt.AutoBudget)
	if err != nil {
		return backend.Choice{}, nil, &Error{File: s.File, Msg: "--auto-budget: " + err.Error()}
	}
	if s.hasStorm() {
		return backend.ChoosePacket("a pfc_storm fault, which only the packet backend models", total), largest, nil
	}
	for _, v := range variants {
		if why := backend.PacketOnly(&v.Fabric); why != "" {
			return backend.ChoosePacket("variant "+v.Name+": "+why, total), largest, nil
		}
	}
	return c, largest, nil
}

// jobClasses says whether a shared-cluster scenario puts its jobs in traffic classes (any
// job's class set): the analytic backend has one class per link; the packet and flow backends
// schedule the classes as the fabric does (flow/classes.go).
func (s *Scenario) jobClasses() bool {
	for _, j := range s.Jobs {
		if j.Class != 0 {
			return true
		}
	}
	return false
}

// DefaultClassBudget is the most estimated packet-backend time (one core) of one run of a class
// that auto, in a compare it runs on the flow backend, gives the packet backend instead
// (classPlan; docs/compare.md, "Backend auto, class by class"). 5 s: it takes the 1,024-GPU
// jitter example's EP all-to-all (4.6 s estimated), a class on which the flow backend's accurate
// adaptive-routing model costs more than the packet backend (docs/flow.md, rows 17-19, and
// "Classes on the packet backend under auto": that compare's CPU 104 -> 25 s), and leaves the
// 1,024-GPU examples' ring classes (6.9-47 s estimated) to the flow backend, whose ring prefixes
// cost a fraction of that. A judgment between those figures, not a fit.
const DefaultClassBudget = 5 * time.Second

// classPlan is auto's choice class by class where it runs a compare on the flow backend in class
// fidelity: a class whose packet-backend estimate of one run (backend.EstimateJob on the class's
// graph, the largest over the variants, so that every variant runs the class alike and the
// compare stays one between fabrics) is within the budget runs on the packet backend, its
// collectives' times entering the step as a flow run's would; the others run on the flow
// backend. A run of a class is the packet backend's whole class, the same job `--backend packet`
// runs (simulateClass), so its figures are that backend's.
type classPlan struct {
	budget time.Duration
	est    []backend.Estimate // per class
	packet []bool             // per class: runs on the packet backend
	keys   []string           // per class, for the reason
	cls    []*class           // per class: its groups, for a job's alone run (follow)
	// followed says the plan took the shared run's decisions (follow); unmatched are the
	// classes it decided on its own estimates, having no counterpart there.
	followed  bool
	unmatched []string
}

// follow makes a job's alone run decide each class as the shared run did (shared, its plan):
// the shared class with the same key (kind, dimension, stage, size) whose groups include every
// group of this one (the job's ranks are the same alone and shared: jobsPlan), whose estimate
// covers every job's groups and is larger. A job's slowdown then compares its step alone and
// shared run class by class on the same backend. A class with no such counterpart keeps its own
// decision and is named in the reason.
func (p *classPlan) follow(shared *classPlan) {
	p.followed = true
	for c, cl := range p.cls {
		m := -1
		for sc, scl := range shared.cls {
			if scl.Key != cl.Key {
				continue
			}
			all := true
			for gk := range cl.group {
				if _, ok := scl.group[gk]; !ok {
					all = false
					break
				}
			}
			if all {
				m = sc
				break
			}
		}
		if m < 0 {
			p.unmatched = append(p.unmatched, p.keys[c])
			continue
		}
		p.packet[c] = shared.packet[m]
	}
}

// newClassPlan decides each class of est (chooseBackend's largest estimates) against budget
// (0: DefaultClassBudget).
func newClassPlan(est []backend.Estimate, keys []string, budget time.Duration) *classPlan {
	if budget == 0 {
		budget = DefaultClassBudget
	}
	p := &classPlan{budget: budget, est: est, packet: make([]bool, len(est)), keys: keys}
	for c, e := range est {
		p.packet[c] = e.CPU() <= budget
	}
	return p
}

// backendOf is the backend that runs class c: name (the compare's) unless the plan gives it to
// the packet backend. A nil plan runs every class on name.
func (p *classPlan) backendOf(c int, name backend.Name) backend.Name {
	if p != nil && p.packet[c] {
		return backend.Packet
	}
	return name
}

// counts is how many classes run on each backend.
func (p *classPlan) counts() map[backend.Name]int {
	n := map[backend.Name]int{}
	for _, pk := range p.packet {
		if pk {
			n[backend.Packet]++
		} else {
			n[backend.Flow]++
		}
	}
	return n
}

// reason says what the plan decided and why: the counts, the budget and the range of the
// estimates on each side of it ("1 class on packet (estimated 11.4 M packet events, about 4.6 s
// a run), 4 classes on flow (estimated 20.3 M to 22 M packet events, about 8.1 s to 8.8 s a
// run): packet where one run's estimate (the largest over the variants) is within the 5 s class
// budget").
func (p *classPlan) reason() string {
	side := func(packet bool) string {
		var lo, hi backend.Estimate
		n := 0
		for c, e := range p.est {
			if p.packet[c] != packet {
				continue
			}
			if n == 0 || e.Seconds < lo.Seconds {
				lo = e
			}
			if n == 0 || e.Seconds > hi.Seconds {
				hi = e
			}
			n++
		}
		name := backend.Flow
		if packet {
			name = backend.Packet
		}
		what := "classes"
		if n == 1 {
			what = "class"
		}
		if n == 0 {
			return fmt.Sprintf("0 classes on %s", name)
		}
		ev, cpu := backend.EventsString(lo.Events()), backend.ApproxString(lo.CPU())
		if n > 1 && hi.Seconds != lo.Seconds {
			ev = backend.EventsString(lo.Events()) + " to " + backend.EventsString(hi.Events())
			cpu = backend.ApproxString(lo.CPU()) + " to " + backend.ApproxString(hi.CPU())
		}
		return fmt.Sprintf("%d %s on %s (estimated %s packet events, about %s a run)", n, what, name, ev, cpu)
	}
	if p.followed {
		r := fmt.Sprintf("%s, %s: each class as the shared run decided it (packet where its estimate there, the largest over the variants, is within the %s class budget)",
			side(true), side(false), backend.SecondsString(p.budget))
		if len(p.unmatched) > 0 {
			r += fmt.Sprintf("; on this run's own estimate, having no class of the shared run with its groups: %s", strings.Join(p.unmatched, ", "))
		}
		return r
	}
	return fmt.Sprintf("%s, %s: packet where one run's estimate (the largest over the variants) is within the %s class budget",
		side(true), side(false), backend.SecondsString(p.budget))
}

// packetKeys are the classes the plan runs on the packet backend, for the fidelity notes.
func (p *classPlan) packetKeys() string {
	var ks []string
	for c, pk := range p.packet {
		if pk {
			ks = append(ks, p.keys[c])
		}
	}
	return strings.Join(ks, ", ")
}

// annotate marks each class of f with its backend and estimate, and says in a note which
// classes ran on the packet backend.
func (p *classPlan) annotate(f *Fidelity) {
	for c := range f.Classes {
		ci := &f.Classes[c]
		ci.Backend = p.backendOf(c, backend.Flow)
		ci.PacketEvents, ci.PacketSeconds = p.est[c].Events(), p.est[c].Seconds
	}
	if ks := p.packetKeys(); ks != "" {
		f.Notes = append(f.Notes, fmt.Sprintf("Backend auto ran these classes on the packet backend, every packet, in every variant: their estimated packet-backend time for one run is within the %s class budget (--class-budget; docs/compare.md): %s. Their collectives' times enter the step as the flow backend's would.", backend.SecondsString(p.budget), ks))
	}
}
