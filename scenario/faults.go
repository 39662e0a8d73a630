package scenario

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/sim"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
	"github.com/fabricsim/fabricsim/yamlstrict"
)

// FaultSpec is one entry of the faults: list (docs/faults.md). Links are named by their two
// nodes ("leaf0-spine1", either order; "#2" for the second of parallel links), switches and
// hosts as the topology names them (docs/topologies.md: host<h>, leaf<i>, spine<i>, edge<p>_<j>,
// agg<p>_<i>, core<c> ...); "random" picks one with the fault's seed.
type FaultSpec struct {
	// Kind is link_down, link_flap, switch_down, link_degrade, pfc_storm or slow_receiver.
	Kind string `yaml:"kind"`
	// Link is the link of link_down, link_flap and link_degrade.
	Link string `yaml:"link"`
	// Switch is the switch of switch_down.
	Switch string `yaml:"switch"`
	// Host is the NIC of pfc_storm and slow_receiver (host index).
	Host int `yaml:"host"`
	// At is when the fault begins; For how long it lasts (0 or absent: to the end of the run).
	At  units.Time `yaml:"at"`
	For units.Time `yaml:"for"`
	// Period, Down and Count shape a flap: down for Down at the start of each of Count periods.
	Period units.Time `yaml:"period"`
	Down   units.Time `yaml:"down"`
	Count  int        `yaml:"count"`
	// Rate and ErrorRate degrade a link: its new rate, its frame loss probability. Rate is also
	// the rate a slow receiver drains at.
	Rate      units.Rate `yaml:"rate"`
	ErrorRate float64    `yaml:"error_rate"`
	// BER is an InfiniBand link's pre-FEC bit error rate (link_degrade); LLR has the link resend
	// what its FEC leaves uncorrected instead of losing it (docs/faults.md).
	BER float64 `yaml:"ber"`
	LLR bool    `yaml:"llr"`
	// Seed draws a "random" link or switch (default: the scenario's seed).
	Seed uint64 `yaml:"seed"`
}

// faultKinds are the valid kinds, as the file writes them.
func faultKinds() string {
	var s []string
	for _, k := range fabric.FaultKinds {
		s = append(s, k.Name)
	}
	return strings.Join(s, ", ")
}

// applyFaultDefaults fills the recovery timers the file leaves out and each flap's down time
// (half its period) and count (1).
func (s *Scenario) applyFaultDefaults() {
	def := fabric.DefaultFaultRecovery()
	rv, dv := reflect.ValueOf(&s.FaultRecovery).Elem(), reflect.ValueOf(def)
	for _, f := range yamlstrict.Fields(rv.Type()) {
		if !s.Has("fault_recovery." + f.Key) {
			rv.FieldByIndex(f.Index).Set(dv.FieldByIndex(f.Index))
		}
	}
	for i := range s.Faults {
		f := &s.Faults[i]
		p := indexPath("faults", i)
		if f.Kind == "link_flap" {
			if !s.Has(p + ".down") {
				f.Down = f.Period / 2
			}
			if !s.Has(p + ".count") {
				f.Count = 1
			}
		}
		if !s.Has(p + ".seed") {
			f.Seed = s.Seed
		}
		if !s.Has(p + ".host") {
			f.Host = -1
		}
	}
}

// validateFaults checks what can be checked without the topology.
func (s *Scenario) validateFaults() error {
	r := &s.FaultRecovery
	switch {
	case r.SMSweepInterval <= 0:
		return s.errf("fault_recovery.sm_sweep_interval", "must be positive (OpenSM's default: 10s)")
	case r.SMReroute < 0:
		return s.errf("fault_recovery.sm_reroute", "must not be negative")
	case r.BFDInterval <= 0:
		return s.errf("fault_recovery.bfd_interval", "must be positive (FRR's default: 300ms)")
	case r.BFDMultiplier < 1 || r.BFDMultiplier > 255:
		return s.errf("fault_recovery.bfd_multiplier", "%d outside 1..255 (RFC 5880 Detect Mult; FRR's default: 3)", r.BFDMultiplier)
	case r.RouteConvergence < 0:
		return s.errf("fault_recovery.route_convergence", "must not be negative")
	case r.IBTimeout < 0 || r.IBTimeout > 31:
		return s.errf("fault_recovery.ib_timeout", "%d outside 0..31 (the QP's 5-bit local ACK timeout exponent, 4.096us x 2^ib_timeout, 0 infinite; NCCL_IB_TIMEOUT's default: 20)", r.IBTimeout)
	case r.IBRetryCnt < 0 || r.IBRetryCnt > 7:
		return s.errf("fault_recovery.ib_retry_cnt", "%d outside 0..7 (the QP's 3-bit retry count; NCCL_IB_RETRY_CNT's default: 7)", r.IBRetryCnt)
	}
	if len(s.Faults) > 0 && s.Backend == "analytic" {
		return s.errf("faults", "the analytic backend does not model faults (valid with faults: packet, flow, auto)")
	}
	for i, f := range s.Faults {
		p := indexPath("faults", i)
		needs := map[string][]string{
			"link_down": {"link"}, "link_flap": {"link", "period"}, "switch_down": {"switch"},
			"link_degrade": {"link"}, "pfc_storm": {"host"}, "slow_receiver": {"host", "rate"},
		}
		keys, ok := needs[f.Kind]
		if !ok {
			if f.Kind == "" {
				return s.errf(p+".kind", "missing (valid: %s)", faultKinds())
			}
			return s.errf(p+".kind", "%q is not a fault kind (valid: %s)", f.Kind, faultKinds())
		}
		for _, k := range keys {
			if !s.Has(p + "." + k) {
				return s.errf(p, "%s needs %s", f.Kind, k)
			}
		}
		for _, k := range []string{"link", "switch", "host", "period", "down", "count", "rate", "error_rate", "ber", "llr"} {
			if s.Has(p+"."+k) && !faultTakes(f.Kind, k) {
				return s.errf(p+"."+k, "does not apply to %s", f.Kind)
			}
		}
		switch {
		case f.At < 0:
			return s.errf(p+".at", "must not be negative")
		case f.For < 0:
			return s.errf(p+".for", "must not be negative (0 or absent: to the end of the run)")
		case s.Duration > 0 && f.At >= s.Duration:
			return s.errf(p+".at", "%v is after the run ends (duration %v): a fault must begin within 0..%v", f.At, s.Duration, s.Duration)
		case f.Kind == "link_flap" && (f.Down <= 0 || f.Down >= f.Period):
			return s.errf(p+".down", "%v: a flap is down for part of its period %v (valid: 0 < down < period)", f.Down, f.Period)
		case f.Kind == "link_flap" && f.Count < 1:
			return s.errf(p+".count", "must be at least 1, got %d", f.Count)
		case f.Kind == "link_degrade" && f.Rate == 0 && f.ErrorRate == 0 && f.BER == 0:
			return s.errf(p, "link_degrade needs rate (a lower one), error_rate (0 < e < 1) or ber (InfiniBand)")
		case s.Has(p+".ber") && !(f.BER > 0 && f.BER < 0.5):
			return s.errf(p+".ber", "%g: a pre-FEC bit error rate is in (0, 0.5), e.g. 1e-5", f.BER)
		case s.Has(p+".ber") && s.stormPerVariant:
			return s.errf(p+".ber", "applies to InfiniBand links only, which a compare's variants need not all be; use it with fabricsim run")
		case s.Has(p+".ber") && s.Fabric.Kind != fabric.KindInfiniBand:
			return s.errf(p+".ber", "is an InfiniBand link's bit error rate before its RS-FEC (the fabric is %s; use error_rate)", s.Fabric.Kind)
		case s.Has(p+".llr") && !s.Has(p+".ber"):
			return s.errf(p+".llr", "link-level retry resends what the FEC leaves of a bit error rate: give ber too")
		case (f.Kind == "link_degrade" || f.Kind == "slow_receiver") && f.Rate < 0 || f.Kind == "slow_receiver" && f.Rate == 0:
			return s.errf(p+".rate", "must be positive")
		case f.Kind == "link_degrade" && !(f.ErrorRate >= 0 && f.ErrorRate < 1):
			return s.errf(p+".error_rate", "%g outside [0,1)", f.ErrorRate)
		case f.Kind == "pfc_storm" && !s.stormPerVariant && (s.Fabric.Kind != fabric.KindRoCE || !s.Fabric.RoCE.PFC):
			return s.errf(p+".kind", "a PFC storm needs fabric kind roce with pfc: true (the fabric is %s)", s.Fabric.Kind)
		case f.Kind == "pfc_storm" && s.Fabric.RoCE.StormHost >= 0:
			return s.errf(p, "the fabric section has pfc_storm_host too: give the storm once")
		}
		for j := 0; j < i; j++ {
			if f.Kind == "pfc_storm" && s.Faults[j].Kind == "pfc_storm" {
				return s.errf(p, "one pfc_storm per run is modelled (faults[%d] is one)", j)
			}
		}
	}
	return nil
}

// faultTakes says whether fault kind takes key.
func faultTakes(kind, key string) bool {
	switch key {
	case "link":
		return kind == "link_down" || kind == "link_flap" || kind == "link_degrade"
	case "switch":
		return kind == "switch_down"
	case "host":
		return kind == "pfc_storm" || kind == "slow_receiver"
	case "period", "down", "count":
		return kind == "link_flap"
	case "rate":
		return kind == "link_degrade" || kind == "slow_receiver"
	case "error_rate", "ber", "llr":
		return kind == "link_degrade"
	}
	return true
}

// ResolveFaults turns the faults into the packet backend's plan over graph g: names to links
// and nodes, random choices drawn. Build calls it with the scenario's topology; nccl-tests with
// the GPU cluster built around it (whose network switches keep their names).
func (s *Scenario) ResolveFaults(g *topo.Graph) (fabric.FaultPlan, error) {
	plan := fabric.FaultPlan{Recovery: s.FaultRecovery}
	if len(s.Faults) == 0 {
		return plan, nil
	}
	links := map[string]topo.LinkID{}
	for l := range g.Links {
		name := fabric.LinkName(g, topo.LinkID(l))
		links[name] = topo.LinkID(l)
		a, b, _ := strings.Cut(name, "-")
		if hash := strings.Index(b, "#"); hash >= 0 {
			links[b[:hash]+"-"+a+b[hash:]] = topo.LinkID(l)
		} else {
			links[b+"-"+a] = topo.LinkID(l)
		}
	}
	nodes := map[string]topo.NodeID{}
	for i := range g.Nodes {
		nodes[g.Nodes[i].Name] = topo.NodeID(i)
	}
	for i, f := range s.Faults {
		p := indexPath("faults", i)
		kind := fabric.FaultKind(0)
		for _, k := range fabric.FaultKinds {
			if k.Name == f.Kind {
				kind = k.Kind
			}
		}
		out := fabric.Fault{Kind: kind, At: f.At, For: f.For, Period: f.Period, Down: f.Down, Count: f.Count, Rate: f.Rate, ErrorRate: f.ErrorRate, BER: f.BER, LLR: f.LLR, Link: -1, Node: -1}
		rng := sim.RNG(f.Seed, fmt.Sprintf("faults[%d]", i))
		switch kind {
		case fabric.FaultLinkDown, fabric.FaultLinkFlap, fabric.FaultLinkDegrade:
			if f.Link == "random" {
				var fabricLinks []topo.LinkID
				for l := range g.Links {
					if L := &g.Links[l]; g.Nodes[L.A].Kind == topo.Switch && g.Nodes[L.B].Kind == topo.Switch {
						fabricLinks = append(fabricLinks, topo.LinkID(l))
					}
				}
				if len(fabricLinks) == 0 {
					return plan, s.errf(p+".link", "random: the topology has no switch-to-switch link to choose from")
				}
				out.Link = fabricLinks[rng.IntN(len(fabricLinks))]
				break
			}
			l, ok := links[f.Link]
			if !ok {
				return plan, s.errf(p+".link", "%q is not a link of this topology (%d links, named by their two nodes: %s, ...; or random)",
					f.Link, len(g.Links), exampleLinks(g))
			}
			out.Link = l
		case fabric.FaultSwitchDown:
			if f.Switch == "random" {
				// Switches without hosts: a leaf's failure would cut its hosts off for good.
				var cand []topo.NodeID
				for n := range g.Nodes {
					if g.Nodes[n].Kind == topo.Switch && !hasHost(g, topo.NodeID(n)) {
						cand = append(cand, topo.NodeID(n))
					}
				}
				if len(cand) == 0 {
					return plan, s.errf(p+".switch", "random: every switch has hosts; name one")
				}
				out.Node = cand[rng.IntN(len(cand))]
				break
			}
			n, ok := nodes[f.Switch]
			if !ok || g.Nodes[n].Kind != topo.Switch {
				return plan, s.errf(p+".switch", "%q is not a switch of this topology (switches are named as %s, ...; or random)", f.Switch, exampleSwitches(g))
			}
			out.Node = n
		case fabric.FaultPFCStorm, fabric.FaultSlowReceiver:
			if f.Host < 0 || f.Host >= len(g.Hosts) {
				return plan, s.errf(p+".host", "host %d does not exist (valid: 0..%d)", f.Host, len(g.Hosts)-1)
			}
			out.Node = g.Hosts[f.Host]
		}
		plan.Faults = append(plan.Faults, out)
	}
	return plan, nil
}

func hasHost(g *topo.Graph, n topo.NodeID) bool {
	for _, p := range g.Nodes[n].Ports {
		if g.Nodes[p.Peer].Kind == topo.Host {
			return true
		}
	}
	return false
}

// exampleLinks names a few switch-to-switch links of g (or any, if none).
func exampleLinks(g *topo.Graph) string {
	var out []string
	for l := range g.Links {
		L := &g.Links[l]
		if g.Nodes[L.A].Kind == topo.Switch && g.Nodes[L.B].Kind == topo.Switch && len(out) < 3 {
			out = append(out, fabric.LinkName(g, topo.LinkID(l)))
		}
	}
	if len(out) == 0 {
		out = append(out, fabric.LinkName(g, 0))
	}
	return strings.Join(out, ", ")
}

func exampleSwitches(g *topo.Graph) string {
	var out []string
	for n := range g.Nodes {
		if g.Nodes[n].Kind == topo.Switch && len(out) < 3 {
			out = append(out, g.Nodes[n].Name)
		}
	}
	return strings.Join(out, ", ")
}

// FaultAfterEnd is the error of fault i, which begins at at, after the run ended at end: at the
// fault's at key.
func (s *Scenario) FaultAfterEnd(i int, at, end units.Time) error {
	return s.errf(indexPath("faults", i)+".at", "%v is after the run ended at %v (every message was done): a fault must begin before the last message completes, or set duration", at, end)
}

// FaultsFrom checks a faults: list and fault_recovery: section that another kind of file (a
// compare scenario) decoded with d at the same top-level keys, so that they take a run
// scenario's defaults, checks and names. The faults are filled in place; a pfc_storm is checked
// for itself only (the compare applies it to the variants that are RoCE with PFC). The returned
// Scenario resolves them on a graph (ResolveFaults) and reports a fault after the end
// (FaultAfterEnd).
func FaultsFrom(d *yamlstrict.Decoder, seed uint64, faults []FaultSpec, rec fabric.FaultRecovery) (*Scenario, error) {
	s := &Scenario{d: d, Seed: seed, Backend: "packet", Faults: faults, FaultRecovery: rec, stormPerVariant: true}
	s.Fabric.RoCE.StormHost = -1
	s.applyFaultDefaults()
	if err := s.validateFaults(); err != nil {
		return nil, err
	}
	return s, nil
}
