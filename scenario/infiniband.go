package scenario

import (
	"reflect"
	"strings"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/units"
)

// InfiniBand holds the keys of `fabric: {kind: infiniband, ...}` (credits, VLs, routing, IB CC).
// docs/scenario.md and docs/infiniband.md document each one.
type InfiniBand struct {
	// Generation is edr, hdr, ndr (default) or xdr: link rate and switch latency presets.
	Generation string `yaml:"generation"`
	// GRH adds the 40 B global route header to every packet (routed between subnets).
	GRH bool `yaml:"grh"`
	// VLs is the number of data VLs per port (1..15).
	VLs int `yaml:"vls"`
	// SL2VL lists the VL of SL 0, 1, ... (up to 16 entries; SLs not listed use SL mod vls).
	SL2VL []int `yaml:"sl2vl"`
	// VLBuffer and HCABuffer are a switch port's and an HCA's receive buffer per VL.
	VLBuffer  units.Size `yaml:"vl_buffer"`
	HCABuffer units.Size `yaml:"hca_buffer"`
	// VLArbHigh and VLArbLow are the VL arbitration tables; VLHighLimit is VL_HIGH_LIMIT.
	VLArbHigh   []VLArb `yaml:"vl_arb_high"`
	VLArbLow    []VLArb `yaml:"vl_arb_low"`
	VLHighLimit int     `yaml:"vl_high_limit"`
	// RoutingEngine is the subnet manager's engine: minhop, dmodk or updown.
	RoutingEngine   string `yaml:"routing_engine"`
	AdaptiveRouting bool   `yaml:"adaptive_routing"`
	// FCRefresh is the unprompted flow-control packet period on lossy links (0: 65,536 byte
	// times).
	FCRefresh units.Time `yaml:"fc_refresh"`
	IBCC      IBCC       `yaml:"ib_cc"`
}

// VLArb is one VL arbitration table entry.
type VLArb struct {
	VL     int `yaml:"vl"`
	Weight int `yaml:"weight"`
}

// IBCC is InfiniBand congestion control (IBA annex A10).
type IBCC struct {
	Enabled      bool         `yaml:"enabled"`
	Threshold    units.Size   `yaml:"threshold"`
	MarkingRate  int          `yaml:"marking_rate"`
	VictimMask   bool         `yaml:"victim_mask"`
	CCTIIncrease int          `yaml:"ccti_increase"`
	CCTILimit    int          `yaml:"ccti_limit"`
	CCTIMin      int          `yaml:"ccti_min"`
	CCTITimer    units.Time   `yaml:"ccti_timer"`
	CCTStep      units.Time   `yaml:"cct_step"`
	CCT          []units.Time `yaml:"cct"`
}

// ibKeys are the fabric keys InfiniBand owns (for rejecting them under other kinds).
func ibKeys() []string {
	var out []string
	t := reflect.TypeOf(InfiniBand{})
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		out = append(out, name)
	}
	return out
}

// rejectInfiniBandKeys reports an InfiniBand key given under another fabric kind.
func (s *Scenario) rejectInfiniBandKeys() error {
	for _, k := range ibKeys() {
		if s.Has("fabric." + k) {
			return s.errf("fabric."+k, "is an InfiniBand key; it needs `kind: infiniband` (kind is %q)", s.Fabric.Kind)
		}
	}
	return nil
}

// ibGeneration returns the chosen generation's preset, NDR when it is unknown (validation then
// reports the name).
func (s *Scenario) ibGeneration() fabric.IBGeneration {
	g, ok := fabric.LookupIBGeneration(s.Fabric.InfiniBand.Generation)
	if !ok {
		g, _ = fabric.LookupIBGeneration("ndr")
	}
	return g
}

// validateInfiniBand checks InfiniBand parameters; called for kind infiniband.
func (s *Scenario) validateInfiniBand() error {
	f := &s.Fabric
	ib := &f.InfiniBand
	if _, ok := fabric.LookupIBGeneration(ib.Generation); !ok {
		return s.errf("fabric.generation", "%q is not an InfiniBand generation (valid: edr, hdr, ndr, xdr)", ib.Generation)
	}
	if m := int64(f.MTU); m < 256 || m > 4096 || m&(m-1) != 0 {
		return s.errf("fabric.mtu", "InfiniBand MTU %d B is not one of 256, 512, 1024, 2048, 4096", m)
	}
	if s.Has("fabric.routing") {
		return s.errf("fabric.routing", "InfiniBand routes by the subnet manager: use routing_engine (minhop, dmodk, updown) and adaptive_routing")
	}
	if ib.VLs < 1 || ib.VLs > fabric.IBMaxVLs {
		return s.errf("fabric.vls", "%d data VLs outside 1..%d (VL15 is management only)", ib.VLs, fabric.IBMaxVLs)
	}
	if len(ib.SL2VL) > fabric.IBServiceLevels {
		return s.errf("fabric.sl2vl", "%d entries; there are %d service levels", len(ib.SL2VL), fabric.IBServiceLevels)
	}
	for sl, vl := range ib.SL2VL {
		if vl < 0 || vl >= ib.VLs {
			return s.errf(indexPath("fabric.sl2vl", sl), "maps SL %d to VL %d, but only VL0..VL%d exist (vls: %d)", sl, vl, ib.VLs-1, ib.VLs)
		}
	}
	maxPkt := int64(f.MTU) + int64(f.HeaderBytes) + 16
	for _, b := range []struct {
		path string
		v    units.Size
	}{{"vl_buffer", ib.VLBuffer}, {"hca_buffer", ib.HCABuffer}} {
		if blocks := int64(b.v) / fabric.IBBlock; blocks*fabric.IBBlock < maxPkt {
			return s.errf("fabric."+b.path, "%v is %d credits of 64 B, less than one %d B packet (mtu + headers + RETH): a VL could never send", b.v, blocks, maxPkt)
		}
	}
	for _, tab := range []struct {
		path string
		t    []VLArb
	}{{"vl_arb_high", ib.VLArbHigh}, {"vl_arb_low", ib.VLArbLow}} {
		if len(tab.t) > 64 {
			return s.errf("fabric."+tab.path, "%d entries; a VL arbitration table has at most 64", len(tab.t))
		}
		for i, e := range tab.t {
			p := indexPath("fabric."+tab.path, i)
			if e.VL < 0 || e.VL >= ib.VLs {
				return s.errf(p+".vl", "VL %d does not exist (valid: 0..%d)", e.VL, ib.VLs-1)
			}
			if e.Weight < 0 || e.Weight > 255 {
				return s.errf(p+".weight", "weight %d outside 0..255 (units of 64 B)", e.Weight)
			}
		}
	}
	cfg := s.ibConfig()
	for sl, vl := range cfg.SL2VL {
		served := false
		for _, t := range [][]fabric.VLWeight{cfg.ArbHigh, cfg.ArbLow} {
			for _, e := range t {
				served = served || (e.VL == vl && e.Weight > 0)
			}
		}
		if !served {
			return s.errf("fabric.vl_arb_low", "no entry of vl_arb_high or vl_arb_low serves VL %d (used by SL %d) with a positive weight: its packets would never leave", vl, sl)
		}
	}
	if ib.VLHighLimit < 0 || ib.VLHighLimit > 255 {
		return s.errf("fabric.vl_high_limit", "%d outside 0..255 (units of 4 KiB; 255 = unlimited)", ib.VLHighLimit)
	}
	if !oneOf(ib.RoutingEngine, "minhop", "dmodk", "updown") {
		return s.errf("fabric.routing_engine", "%q is not a routing engine (valid: minhop, dmodk, updown)", ib.RoutingEngine)
	}
	if ib.FCRefresh < 0 {
		return s.errf("fabric.fc_refresh", "must not be negative")
	}
	cc := &ib.IBCC
	p := "fabric.ib_cc."
	switch {
	case cc.Threshold < 0:
		return s.errf(p+"threshold", "must not be negative")
	case cc.MarkingRate < 0 || cc.MarkingRate > 65535:
		return s.errf(p+"marking_rate", "%d outside 0..65535 (mark one in marking_rate+1)", cc.MarkingRate)
	case cc.CCTIIncrease < 1:
		return s.errf(p+"ccti_increase", "must be at least 1, got %d", cc.CCTIIncrease)
	case cc.CCTILimit < 0 || cc.CCTILimit > 16383:
		return s.errf(p+"ccti_limit", "%d outside 0..16383", cc.CCTILimit)
	case len(cc.CCT) > 0 && cc.CCTILimit >= len(cc.CCT):
		return s.errf(p+"ccti_limit", "%d indexes beyond the %d-entry cct", cc.CCTILimit, len(cc.CCT))
	case cc.CCTIMin < 0 || cc.CCTIMin > cc.CCTILimit:
		return s.errf(p+"ccti_min", "%d outside 0..ccti_limit (%d)", cc.CCTIMin, cc.CCTILimit)
	case cc.CCTITimer <= 0:
		return s.errf(p+"ccti_timer", "must be positive")
	case cc.CCTStep < 0:
		return s.errf(p+"cct_step", "must not be negative")
	}
	for i, d := range cc.CCT {
		if d < 0 {
			return s.errf(indexPath(p+"cct", i), "injection delay must not be negative")
		}
	}
	return nil
}

// defaultsInfiniBand fills InfiniBand defaults for kind infiniband. The generation preset sets the
// switch latency and the rate of every topology link class whose rate the file leaves out
// (topology.link, topology.host_link; a leaf-spine's spine_link rate then follows from the
// oversubscription); rates written in the file, and HPCC topology files, are kept.
func (s *Scenario) defaultsInfiniBand() {
	f := &s.Fabric
	ib := &f.InfiniBand
	if !s.Has("fabric.generation") {
		ib.Generation = "ndr"
	}
	gen := s.ibGeneration()
	d, _ := fabric.DefaultInfiniBand(gen.Name)
	def := func(path string, set func()) {
		if !s.Has(path) {
			set()
		}
	}
	def("topology.link.rate", func() { s.Topology.Link.Rate = gen.Rate })
	def("topology.host_link.rate", func() { s.Topology.HostLink.Rate = gen.Rate })
	def("fabric.switch_latency", func() { f.SwitchLatency = gen.SwitchLatency })
	def("fabric.header_bytes", func() { f.HeaderBytes = fabric.IBHeaderBytes(ib.GRH) })
	def("fabric.ack_bytes", func() { f.AckBytes = f.HeaderBytes + 4 })
	def("fabric.l1_overhead", func() { f.L1Overhead = 0 })
	def("fabric.vls", func() { ib.VLs = d.IB.VLs })
	def("fabric.vl_buffer", func() { ib.VLBuffer = d.IB.VLBuffer })
	def("fabric.hca_buffer", func() { ib.HCABuffer = d.IB.HCABuffer })
	def("fabric.routing_engine", func() { ib.RoutingEngine = d.IB.Routing })
	cc := &ib.IBCC
	dc := &d.IB.CC
	p := "fabric.ib_cc."
	def(p+"threshold", func() { cc.Threshold = dc.Threshold })
	def(p+"marking_rate", func() { cc.MarkingRate = dc.MarkingRate })
	def(p+"ccti_increase", func() { cc.CCTIIncrease = dc.CCTIIncrease })
	def(p+"ccti_limit", func() {
		cc.CCTILimit = dc.CCTILimit
		if len(cc.CCT) > 0 {
			cc.CCTILimit = len(cc.CCT) - 1
		}
	})
	def(p+"ccti_min", func() { cc.CCTIMin = dc.CCTIMin })
	def(p+"ccti_timer", func() { cc.CCTITimer = dc.CCTITimer })
	def(p+"cct_step", func() { cc.CCTStep = dc.TableStep })
}

// ibConfig builds the backend's IBConfig from the keys (defaults already applied).
func (s *Scenario) ibConfig() fabric.IBConfig {
	ib := &s.Fabric.InfiniBand
	var c fabric.IBConfig
	vls := max(ib.VLs, 1)
	c.SetDefaultVLs(vls)
	c.Generation = ib.Generation
	for sl, vl := range ib.SL2VL {
		c.SL2VL[sl] = uint8(vl)
	}
	conv := func(t []VLArb) []fabric.VLWeight {
		out := make([]fabric.VLWeight, len(t))
		for i, e := range t {
			out[i] = fabric.VLWeight{VL: uint8(e.VL), Weight: uint8(e.Weight)}
		}
		return out
	}
	// Tables the file leaves out keep their defaults: high empty, every VL in low at weight 64.
	if s.Has("fabric.vl_arb_high") {
		c.ArbHigh = conv(ib.VLArbHigh)
	}
	if s.Has("fabric.vl_arb_low") {
		c.ArbLow = conv(ib.VLArbLow)
	}
	c.HighLimit = ib.VLHighLimit
	c.VLBuffer, c.HCABuffer = ib.VLBuffer, ib.HCABuffer
	c.Routing = ib.RoutingEngine
	c.Adaptive = ib.AdaptiveRouting
	c.FCRefresh = ib.FCRefresh
	cc := &ib.IBCC
	c.CC = fabric.IBCCConfig{Enabled: cc.Enabled, Threshold: cc.Threshold, MarkingRate: cc.MarkingRate, VictimMask: cc.VictimMask,
		CCTIIncrease: cc.CCTIIncrease, CCTILimit: cc.CCTILimit, CCTIMin: cc.CCTIMin, CCTITimer: cc.CCTITimer,
		Table: cc.CCT, TableStep: cc.CCTStep}
	return c
}

// infinibandConfig copies the InfiniBand parameters into the packet backend's configuration.
func (s *Scenario) infinibandConfig(c *fabric.Config) {
	d, _ := fabric.DefaultInfiniBand(s.ibGeneration().Name)
	c.Priorities = d.Priorities
	c.MinFrame = 0
	c.CNPBytes = c.HeaderBytes + (d.CNPBytes - d.HeaderBytes)
	c.FirstHeaderExtra = d.FirstHeaderExtra
	c.IB = s.ibConfig()
}
