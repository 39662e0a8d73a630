package scenario

import (
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/units"
)

func errEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return err
	}
	return io.EOF
}

func yamlMsg(err error) string {
	return strings.TrimPrefix(err.Error(), "yaml: ")
}

func unwrapPathErr(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		if errors.Is(err, fs.ErrNotExist) {
			return "no such file"
		}
		return pe.Err.Error()
	}
	return err.Error()
}

// Default link class when a topology leaves it out: 100 Gb/s, 1 us (the foundation's reference
// runs, DOMAIN.md-independent round numbers).
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
	f := &s.Fabric
	if f.Kind == "" {
		f.Kind = "ethernet"
	}
	d := fabric.DefaultEthernet()
	def := func(path string, set func()) {
		if !s.Has("fabric." + path) {
			set()
		}
	}
	def("mtu", func() { f.MTU = d.MTU })
	def("header_bytes", func() { f.HeaderBytes = d.HeaderBytes })
	def("ack_bytes", func() { f.AckBytes = d.AckBytes })
	def("l1_overhead", func() { f.L1Overhead = d.L1Overhead })
	def("switch_latency", func() { f.SwitchLatency = d.SwitchLatency })
	def("buffer", func() { f.Buffer = d.Buffer })
	def("buffer_alpha", func() { f.BufferAlpha = d.BufferAlpha })
	def("routing", func() { f.Routing = d.Routing })
	def("ack_every", func() { f.AckEvery = d.AckEvery })
	def("rto", func() { f.RTO = d.RTO })
	def("no_progress", func() { f.NoProgress = d.NoProgress })
	switch f.Kind {
	case "roce":
		s.defaultsRoCE()
	case "infiniband":
		s.defaultsInfiniBand()
	}
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
	if s.Backend != "packet" && s.Backend != "flow" {
		return s.errf("backend", "%q is not a backend (valid: packet, flow)", s.Backend)
	}
	t := &s.Topology
	switch t.Kind {
	case "":
		return s.errf("topology.kind", "missing (valid: fat-tree, leaf-spine, hpcc)")
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
	case "hpcc":
		if t.File == "" {
			return s.errf("topology.file", "missing: kind hpcc reads an HPCC ns-3 topology.txt named by file")
		}
	default:
		return s.errf("topology.kind", "%q is not a topology kind (valid: fat-tree, leaf-spine, hpcc)", t.Kind)
	}
	f := &s.Fabric
	if f.Kind != "infiniband" {
		if err := s.rejectInfiniBandKeys(); err != nil { // scenario/infiniband.go
			return err
		}
	}
	if f.Kind != "roce" {
		if err := s.rejectRoCEKeys(); err != nil { // scenario/roce.go
			return err
		}
	}
	switch f.Kind {
	case "ethernet":
	case "roce":
		if err := s.validateRoCE(); err != nil {
			return err
		}
	case "infiniband":
		if err := s.validateInfiniBand(); err != nil {
			return err
		}
	default:
		return s.errf("fabric.kind", "%q is not a fabric kind (valid: ethernet, roce, infiniband)", f.Kind)
	}
	if f.MTU < 64 || f.MTU > 9216 {
		return s.errf("fabric.mtu", "payload MTU %d B outside 64..9216", f.MTU)
	}
	for _, c := range []struct {
		path string
		v    int
	}{{"header_bytes", f.HeaderBytes}, {"ack_bytes", f.AckBytes}, {"l1_overhead", f.L1Overhead}} {
		if c.v < 0 || c.v > 1024 {
			return s.errf("fabric."+c.path, "%d B outside 0..1024", c.v)
		}
	}
	if f.AckBytes < 1 {
		return s.errf("fabric.ack_bytes", "an ACK has at least 1 byte")
	}
	if int64(f.Buffer) < int64(f.MTU)+int64(f.HeaderBytes) {
		return s.errf("fabric.buffer", "%v cannot hold one %d B packet", f.Buffer, int64(f.MTU)+int64(f.HeaderBytes))
	}
	if f.BufferAlpha < 0 || f.BufferAlpha > 64 {
		return s.errf("fabric.buffer_alpha", "%g outside 0..64 (0 = static threshold)", f.BufferAlpha)
	}
	if !oneOf(f.Routing, "ecmp", "spray") {
		return s.errf("fabric.routing", "%q is not a routing policy (valid: ecmp, spray)", f.Routing)
	}
	if f.AckEvery < 1 {
		return s.errf("fabric.ack_every", "must be at least 1, got %d", f.AckEvery)
	}
	if f.RTO <= 0 {
		return s.errf("fabric.rto", "must be positive")
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
	return nil
}
