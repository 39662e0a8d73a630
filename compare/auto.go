package compare

import (
	"fmt"

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
func (s *Scenario) chooseBackend(name backend.Name, fromFlag bool, opt Options, variants []*Variant, vnet []*backend.Network, graphs []*msggraph.Graph, runs int) (backend.Choice, error) {
	classes := s.jobClasses()
	if s.hasStorm() && name == backend.Flow {
		return backend.Choice{}, &Error{File: s.File, Msg: "backend flow: the scenario has a pfc_storm fault, which only the packet backend models; use --backend packet or auto"}
	}
	if len(s.Faults) > 0 && name == backend.Analytic {
		return backend.Choice{}, &Error{File: s.File, Msg: fmt.Sprintf("backend %s: the scenario has faults, which the analytic backend does not model; use --backend packet, flow or auto", name)}
	}
	if name != backend.Auto {
		if classes && name == backend.Analytic {
			return backend.Choice{}, &Error{File: s.File, Msg: fmt.Sprintf("backend %s: the jobs run in traffic classes (jobs[].class), which the packet and flow backends model; use --backend packet, flow or auto", name)}
		}
		if name == backend.Flow {
			// A setting only the packet backend models would otherwise fail the compare
			// half-way, at its first simulation of that variant: refuse it before any runs.
			for _, v := range variants {
				if why := backend.PacketOnly(&v.Fabric); why != "" {
					return backend.Choice{}, &Error{File: s.File, Field: "variants." + v.Name, Msg: "backend flow: " + why + ", or leave the variant out (--variants)"}
				}
			}
		}
		why := "the scenario's backend"
		if fromFlag {
			why = "--backend"
		}
		return backend.Choice{Backend: name, Reason: fmt.Sprintf("%s: %s", name, why)}, nil
	}
	var total backend.Estimate
	// Variants on the same network with the same MTU send the same packets: estimate once.
	type key struct {
		net *backend.Network
		mtu units.Size
		g   int
	}
	seen := map[key]backend.Estimate{}
	for vi, v := range variants {
		for gi, g := range graphs {
			k := key{vnet[vi], v.Fabric.MTU, gi}
			e, ok := seen[k]
			if !ok {
				var err error
				if e, err = backend.EstimateJob(&backend.Job{Work: g, Net: vnet[vi], Fabric: v.Fabric}); err != nil {
					return backend.Choice{}, fmt.Errorf("backend auto, variant %s: %w", v.Name, err)
				}
				seen[k] = e
			}
			for range runs {
				total = total.Add(e)
			}
		}
	}
	c, err := backend.Choose(total, opt.AutoBudget)
	if err != nil {
		return backend.Choice{}, &Error{File: s.File, Msg: "--auto-budget: " + err.Error()}
	}
	if s.hasStorm() {
		return backend.ChoosePacket("a pfc_storm fault, which only the packet backend models", total), nil
	}
	for _, v := range variants {
		if why := backend.PacketOnly(&v.Fabric); why != "" {
			return backend.ChoosePacket("variant "+v.Name+": "+why, total), nil
		}
	}
	return c, nil
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
