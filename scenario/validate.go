package scenario

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/fabricsim/fabricsim/backend"
	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

func unwrapPathErr(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error() // "no such file or directory": the same words as every command's
	}
	return err.Error()
}

// Default link class when a topology leaves it out: 100 Gb/s, 1 us (the foundation's reference
// runs, source-independent round numbers).
var defaultLink = Link{Rate: 100 * units.Gbps, Latency: units.Microsecond}

func (s *Scenario) setLink(path string, l *Link) {
	if !s.Has(path + ".rate") {
		l.Rate = defaultLink.Rate
	}
	if !s.Has(path + ".latency") {
		l.Latency = defaultLink.Latency
	}
}

func (s *Scenario) applyDefaults() {
	if s.Name == "" {
		base := filepath.Base(s.File)
		s.Name = strings.TrimSuffix(base, filepath.Ext(base))
	}
	if !s.Has("seed") {
		s.Seed = 1
	}
	if s.Backend == "" {
		s.Backend = "packet"
	}
	t := &s.Topology
	s.setLink("topology.link", &t.Link)
	s.setLink("topology.host_link", &t.HostLink)
	if !s.Has("topology.spine_link.latency") {
		t.SpineLink.Latency = defaultLink.Latency
	}
	if t.Kind == "leaf-spine" && t.Spines > 0 && !s.Has("topology.oversubscription") && !s.Has("topology.spine_link.rate") {
		t.Oversubscription = 1
	}
	if t.Kind == "clos" {
		if !s.Has("topology.rail_optimized") {
			t.RailOptimized = true
		}
		if !s.Has("topology.spine_link.rate") {
			t.SpineLink.Rate = t.HostLink.Rate
		}
		if !s.Has("topology.core_link.rate") {
			t.CoreLink.Rate = t.SpineLink.Rate
		}
		if !s.Has("topology.core_link.latency") {
			t.CoreLink.Latency = t.SpineLink.Latency
		}
	}
	if s.Fabric.Kind == fabric.KindInfiniBand {
		s.defaultsInfiniBand()
	}
	s.applyFaultDefaults() // faults.go
	tr := &s.Traffic
	if !s.Has("traffic.size") {
		tr.Size = units.MB
	}
	for i := range tr.Flows {
		if !s.Has(indexPath("traffic.flows", i) + ".size") {
			tr.Flows[i].Size = tr.Size
		}
	}
}

func indexPath(p string, i int) string {
	return p + "[" + strconv.Itoa(i) + "]"
}

func oneOf(v string, valid ...string) bool {
	for _, x := range valid {
		if v == x {
			return true
		}
	}
	return false
}

func (s *Scenario) validate() error {
	if _, err := backend.Parse(s.Backend); err != nil {
		return s.errf("backend", "%v", err)
	}
	t := &s.Topology
	if t.Kind != "clos" {
		for _, k := range []string{"servers", "nics_per_server", "nic_ports", "rail_planes", "rail_optimized", "tiers", "radix", "servers_per_su", "spine_oversubscription", "core_link"} {
			if s.Has("topology." + k) {
				return s.errf("topology."+k, "applies to kind clos only (this topology is %s)", t.Kind)
			}
		}
	}
	switch t.Kind {
	case "":
		return s.errf("topology.kind", "missing (valid: fat-tree, leaf-spine, clos, hpcc)")
	case "fat-tree":
		if t.K < 2 || t.K%2 != 0 {
			return s.errf("topology.k", "a k-ary fat tree needs an even k >= 2, got %d", t.K)
		}
	case "leaf-spine":
		if t.Leaves < 1 {
			return s.errf("topology.leaves", "need at least 1 leaf, got %d", t.Leaves)
		}
		if t.Spines < 0 || (t.Spines == 0 && t.Leaves > 1) {
			return s.errf("topology.spines", "need at least 1 spine to join %d leaves, got %d", t.Leaves, t.Spines)
		}
		if t.HostsPerLeaf < 1 {
			return s.errf("topology.hosts_per_leaf", "need at least 1 host per leaf, got %d", t.HostsPerLeaf)
		}
		if t.Oversubscription < 0 || (s.Has("topology.oversubscription") && t.Oversubscription == 0) {
			return s.errf("topology.oversubscription", "must be positive (downlink:uplink capacity, e.g. 2 for 2:1), got %g", t.Oversubscription)
		}
	case "clos":
		switch {
		case t.Servers < 1:
			return s.errf("topology.servers", "need at least 1 server, got %d", t.Servers)
		case t.Tiers < 0 || t.Tiers > 3:
			return s.errf("topology.tiers", "want 1, 2 or 3 switch tiers (0 or absent: the fewest that hold the servers), got %d", t.Tiers)
		case t.Oversubscription < 0 || (s.Has("topology.oversubscription") && t.Oversubscription == 0):
			return s.errf("topology.oversubscription", "must be positive (leaf downlink:uplink capacity, e.g. 2 for 2:1), got %g", t.Oversubscription)
		case t.SpineOversubscription < 0 || (s.Has("topology.spine_oversubscription") && t.SpineOversubscription == 0):
			return s.errf("topology.spine_oversubscription", "must be positive (spine downlink:uplink capacity), got %g", t.SpineOversubscription)
		}
		if _, err := topo.PlanClos(t.closSpec()); err != nil {
			return s.errf("topology", "%v", err)
		}
	case "hpcc":
		if t.File == "" {
			return s.errf("topology.file", "missing: kind hpcc reads an HPCC ns-3 topology.txt named by file")
		}
	default:
		return s.errf("topology.kind", "%q is not a topology kind (valid: fat-tree, leaf-spine, clos, hpcc)", t.Kind)
	}
	if err := s.validateFabric(); err != nil { // fabric.go
		return err
	}
	tr := &s.Traffic
	switch tr.Kind {
	case "":
		return s.errf("traffic.kind", "missing (valid: permutation, shift, incast, all-to-all, flows, hpcc, htsim)")
	case "permutation", "shift", "incast", "all-to-all":
		if tr.Size <= 0 {
			return s.errf("traffic.size", "must be positive, got %v", tr.Size)
		}
	case "flows":
		if len(tr.Flows) == 0 {
			return s.errf("traffic.flows", "kind flows needs at least one flow")
		}
		for i, fl := range tr.Flows {
			p := indexPath("traffic.flows", i)
			if fl.Size <= 0 {
				return s.errf(p+".size", "must be positive, got %v", fl.Size)
			}
			if fl.Src == fl.Dst {
				return s.errf(p+".dst", "flow from host %d to itself", fl.Src)
			}
			if fl.Src < 0 || fl.Dst < 0 {
				return s.errf(p, "host indices must not be negative")
			}
		}
	case "hpcc", "htsim":
		if tr.File == "" {
			return s.errf("traffic.file", "missing: kind %s reads its flow file named by file", tr.Kind)
		}
	default:
		return s.errf("traffic.kind", "%q is not a traffic kind (valid: permutation, shift, incast, all-to-all, flows, hpcc, htsim)", tr.Kind)
	}
	if tr.Hosts < 0 {
		return s.errf("traffic.hosts", "must not be negative")
	}
	return s.validateFaults() // faults.go
}
