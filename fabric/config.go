package fabric

import (
	"fmt"
	"reflect"

	"github.com/fabricsim/fabricsim/ibsm"
	"github.com/fabricsim/fabricsim/transport/cc/dcqcn"
	"github.com/fabricsim/fabricsim/units"
	"github.com/fabricsim/fabricsim/yamlstrict"
)

// Config holds the packet backend's parameters. Every setting is written once, here and in
// RoCEConfig, IBConfig and dcqcn.Params: its `yaml` tag is the scenario key under `fabric:`
// (scenarios decode straight into these types), its default is in DefaultEthernet, DefaultRoCE
// or DefaultInfiniBand (defaults that follow from other settings in Derive), its checks in
// Validate, which names the key. A `fabric:"roce"` or `fabric:"infiniband"` tag marks the keys
// valid only with that kind, `notfor:"infiniband"` one that kind rejects. docs/scenario.md documents every key (TestDocsListEveryKey).
// The zero value is not valid; use a Default* constructor as a base.
type Config struct {
	// Kind is KindEthernet, KindRoCE or KindInfiniBand: which policies New installs.
	Kind Kind `yaml:"kind"`
	// RoCE and IB hold the kind-specific parameters (roce.go, infiniband.go).
	RoCE RoCEConfig `yaml:",inline" fabric:"roce"`
	IB   IBConfig   `yaml:",inline" fabric:"infiniband"`
	// MTU is the payload carried by a full data packet (the RDMA path MTU), in bytes.
	MTU units.Size `yaml:"mtu"`
	// HeaderBytes is the frame overhead of a data packet: every header and trailer stored in a
	// switch buffer. Default: RoCEv2 over IPv4 without VLAN, Ethernet 14 + IPv4 20 + UDP 8 +
	// BTH 12 + ICRC 4 + FCS 4 = 62 B ([IBA] Annex A17, [IEEE 802.3]).
	HeaderBytes int `yaml:"header_bytes"`
	// AckBytes is the frame size of an ACK or NAK: the data headers plus a 4 B AETH = 66 B.
	AckBytes int `yaml:"ack_bytes"`
	// CNPBytes is the frame size of a congestion notification: RoCEv2 CNP = Ethernet 14 + IPv4
	// 20 + UDP 8 + BTH 12 + 16 reserved + ICRC 4 + FCS 4 = 78 B (RoCEv2 annex A17). Derived
	// from the framing.
	CNPBytes int `yaml:"-"`
	// L1Overhead is the per-frame cost on the wire beyond the frame: Ethernet preamble 7 + start
	// delimiter 1 + inter-frame gap 12 = 20 B ([IEEE 802.3]). InfiniBand has none.
	L1Overhead int `yaml:"l1_overhead"`
	// MinFrame pads shorter frames (Ethernet: 64 B including FCS).
	MinFrame int `yaml:"-"`
	// SwitchLatency is the port-to-port latency a packet spends in a switch beyond its
	// serialization (est. 300-600 ns for Spectrum-class Ethernet, [EST]).
	SwitchLatency units.Time `yaml:"switch_latency"`
	// Buffer is each switch's shared packet buffer.
	Buffer units.Size `yaml:"buffer"`
	// BufferAlpha, when positive, caps each egress queue at alpha x the free shared buffer
	// (the dynamic threshold of Choudhury and Hahne); 0 lets one queue take the whole buffer.
	BufferAlpha float64 `yaml:"buffer_alpha"`
	// Routing picks among equal-cost next hops: ECMP (per-flow hash) or spray (per packet,
	// random).
	Routing Routing `yaml:"routing" notfor:"infiniband"`
	// SprayPolicy is how routing: spray picks a next hop per packet: at random, or the one
	// whose egress queue holds the fewest bytes (adaptive routing by queue depth).
	SprayPolicy SprayPolicy `yaml:"spray_policy" notfor:"infiniband"`
	// AckEvery is how many in-order data packets the receiver coalesces into one ACK.
	AckEvery int `yaml:"ack_every"`
	// RTO is the retransmission timeout: unacknowledged data older than this is resent from
	// the first unacknowledged byte (go-back-N).
	RTO units.Time `yaml:"rto"`
	// Priorities is the number of traffic classes (queues per port).
	Priorities int `yaml:"-"`
	// Seed drives ECMP hashing and every random choice (the scenario's top-level seed); with
	// DrawSeed set, routing only.
	Seed uint64 `yaml:"-"`
	// DrawSeed, when not 0, seeds the run's random draws apart from Seed: RED/ECN marks, random
	// loss, links' error rates and a faulted link's frame errors. Seed then drives routing alone
	// (switches' ECMP salt, QP hashes, spraying), so two runs with one Seed and different
	// DrawSeeds send every packet on the same path and draw different marks and losses: a job's
	// steps under one routing seed (docs/jitter.md). A fault schedule is the scenario's
	// (scenario.FaultsFrom draws it from the scenario seed), not the run's. 0: the draws follow
	// Seed, as they did before DrawSeed.
	DrawSeed uint64 `yaml:"-"`
	// Check turns on run-time invariant checks.
	Check bool `yaml:"-"`
	// NoProgress, when positive, stops a run that has packets queued but delivers nothing to
	// any application for this long, and reports it instead of running forever. It is checked
	// every NoProgress; an interval counts only if packets were in the network at its start, so
	// late traffic gets a whole interval for its first byte and a standstill is reported one to
	// two intervals after it begins.
	NoProgress units.Time `yaml:"no_progress"`
	// FCTEnd is the event that completes a message: its last byte delivered (FCTDelivery, the
	// default) or the ACK of its last byte back at the sender (FCTLastAck, as HPCC's ns-3 reports it).
	FCTEnd FCTEnd `yaml:"fct_end"`

	// FirstHeaderExtra is added to the header of the first data packet of every message (per
	// QP): an RDMA WRITE First/Only packet carries a 16 B RETH ([IBA] Vol. 1 §9.3). 0 = none.
	FirstHeaderExtra int `yaml:"-"`
	// DataPriority is the traffic class of messages that ask for class 0 (RoCE: 3, the lossless
	// class, [NVIDIA-RoCE]). CNPPriority, when positive, is the class CNPs travel on (RoCE: 6);
	// 0 sends them on their flow's class. ACKs and NAKs always use the flow's class.
	DataPriority uint8 `yaml:"data_priority" fabric:"roce"`
	CNPPriority  uint8 `yaml:"cnp_priority" fabric:"roce"`
	// AckPriority, when positive, is the class ACKs and NAKs travel on (HPCC's ns-3 with
	// ACK_HIGH_PRIO sends them on its top class); 0 keeps them on their flow's class.
	AckPriority uint8 `yaml:"ack_priority" fabric:"roce"`
	// Transport is the reliable transport's loss recovery: go-back-N (TransportGoBackN, or
	// TransportDefault), IRN selective repeat (TransportIRN: in-flight bytes capped at
	// IRNBDPCap; Mittal et al. SIGCOMM'18) or the reorder-tolerant receiver (TransportReorder,
	// which InfiniBand adaptive routing selects); resolved once into transport/rc's modes (network.go,
	// transportParams).
	Transport Transport `yaml:"transport" fabric:"roce"`
	// IRNBDPCap caps a flow's unacknowledged bytes under IRN; 0 derives one bandwidth-delay
	// product from the topology (host link rate x the longest base round trip).
	IRNBDPCap units.Size `yaml:"irn_bdp_cap" fabric:"roce"`
	// IRNRTOLow is IRN's timeout while at most IRNLowThreshold packets are outstanding,
	// IRNRTOHigh otherwise (100 us and 320 us, N = 3; [IRN] §3.1).
	IRNRTOLow       units.Time `yaml:"irn_rto_low" fabric:"roce"`
	IRNRTOHigh      units.Time `yaml:"irn_rto_high" fabric:"roce"`
	IRNLowThreshold int        `yaml:"irn_low_threshold" fabric:"roce"`
	// OOOWindow, when positive, is how many packets beyond the next expected one the
	// out-of-order receiver (transport: ooo) can track: a packet further ahead is dropped and
	// NAKed, and the sender goes back to the gap. 0: unlimited (placement needs no tracking).
	OOOWindow int `yaml:"ooo_window" fabric:"roce"`
	// QPsPerConn stripes each message over this many queue pairs (0 or 1: one). Every QP has its
	// own UDP source port and therefore its own ECMP hash; a message completes when all its
	// QPs have delivered. Messages with the same msggraph Conn (and endpoints) share the QPs'
	// hashes, as one connection's QPs do.
	QPsPerConn int `yaml:"qps_per_conn" fabric:"roce"`

	// Faults are the run's faults and the recovery timers (faults.go); a scenario's faults:
	// and fault_recovery: sections, resolved to the topology.
	Faults FaultPlan `yaml:"-"`
}

// DefaultEthernet is the generic Ethernet-like fabric of the foundation: RoCEv2 framing, no link
// flow control, no congestion control, tail drop, go-back-N recovery on NAK and timeout.
func DefaultEthernet() Config {
	return Config{
		Kind:          KindEthernet,
		MTU:           4096,
		HeaderBytes:   62,
		AckBytes:      66,
		CNPBytes:      78,
		L1Overhead:    20,
		MinFrame:      64,
		SwitchLatency: 500 * units.Nanosecond,
		Buffer:        32 * units.MiB,
		BufferAlpha:   0,
		Routing:       RoutingECMP,
		SprayPolicy:   SprayRandom,
		AckEvery:      1,
		RTO:           4 * units.Millisecond,
		Priorities:    1,
		NoProgress:    100 * units.Millisecond,
		FCTEnd:        FCTDelivery,
	}
}

// Defaults returns the defaults of a fabric kind with its presets: DefaultEthernet, DefaultRoCE
// with the DCQCN preset dcqcnPreset ("" = connectx), or DefaultInfiniBand of generation ("" =
// ndr). An unknown kind, generation or preset falls back to the first; Validate reports the
// name once the file's value is decoded over the result.
func Defaults(kind Kind, generation, dcqcnPreset string) Config {
	switch kind {
	case KindRoCE:
		c := DefaultRoCE()
		if p, err := dcqcn.Preset(dcqcnPreset); err == nil {
			c.RoCE.DCQCNPreset, c.RoCE.DCQCNParams = dcqcnPreset, p
		}
		return c
	case KindInfiniBand:
		c, err := DefaultInfiniBand(generation)
		if err != nil {
			c, _ = DefaultInfiniBand("ndr")
		}
		return c
	}
	return DefaultEthernet()
}

// Derive fills the settings whose defaults follow from other settings, for each key written
// reports as not given (keys as under `fabric:`; a list entry as "sl2vl[3]"): RoCE's MTU from
// netdev_mtu, the framing from ipv6/vlan (InfiniBand: grh), PFC's XON offset from the frame,
// InfiniBand's SL-to-VL table and low-priority arbitration from vls, IB CC's index limit from
// the table. CNPBytes always follows the framing.
func (c *Config) Derive(written func(key string) bool) {
	def := func(key string, set func()) {
		if !written(key) {
			set()
		}
	}
	switch c.Kind {
	case KindRoCE:
		r := &c.RoCE
		def("mtu", func() { c.MTU = units.Size(RoCEMTU(r.NetdevMTU)) })
		data, ack, cnp := RoCEFraming(r.IPv6, r.VLAN)
		def("header_bytes", func() { c.HeaderBytes = data })
		def("ack_bytes", func() { c.AckBytes = ack })
		c.CNPBytes = cnp
		def("pfc_xon_offset", func() { r.XONOffset = units.Size(2 * (int(c.MTU) + c.HeaderBytes)) })
	case KindInfiniBand:
		ib := &c.IB
		def("header_bytes", func() { c.HeaderBytes = IBHeaderBytes(ib.GRH) })
		def("ack_bytes", func() { c.AckBytes = c.HeaderBytes + ibAETH })
		c.CNPBytes = c.HeaderBytes + ibCNPExtra
		vls := max(ib.VLs, 1)
		for sl := range ib.SL2VL {
			def(fmt.Sprintf("sl2vl[%d]", sl), func() { ib.SL2VL[sl] = uint8(sl % vls) })
		}
		def("vl_arb_low", func() { ib.ArbLow = defaultArbLow(vls) })
		if len(ib.CC.Table) > 0 {
			def("ib_cc.ccti_limit", func() { ib.CC.CCTILimit = len(ib.CC.Table) - 1 })
		}
	}
}

// Key is one scenario key of the fabric section.
type Key struct {
	// Name is the key under `fabric:` ("pfc_xoff", "ib_cc.threshold").
	Name string
	// Kind is the fabric kind the key belongs to, "" for every kind; NotFor a kind that has
	// no use for a key of every kind (InfiniBand routes by routing_engine, not routing).
	Kind   Kind
	NotFor Kind
	// Index locates the field in Config (reflect.Value.FieldByIndex).
	Index []int
}

// drawSeed seeds the run's random draws (ECN marks, losses): DrawSeed, or Seed where it is 0.
func (c *Config) drawSeed() uint64 {
	if c.DrawSeed != 0 {
		return c.DrawSeed
	}
	return c.Seed
}

// For reports whether the key is a setting of fabric kind.
func (k Key) For(kind Kind) bool {
	return (k.Kind == "" || k.Kind == kind) && k.NotFor != kind
}

// Keys lists the fabric section's keys in Config's field order, nested sections (ib_cc) by
// their dotted names.
func Keys() []Key {
	var out []Key
	var walk func(t reflect.Type, prefix string, index []int, kind Kind)
	walk = func(t reflect.Type, prefix string, index []int, kind Kind) {
		for _, f := range yamlstrict.Fields(t) {
			k := kind
			// The kind tag sits on the field or on an inline struct it came through.
			for i := range f.Index {
				if v := t.FieldByIndex(f.Index[:i+1]).Tag.Get("fabric"); v != "" {
					k = Kind(v)
				}
			}
			idx := append(append([]int(nil), index...), f.Index...)
			name := yamlstrict.Join(prefix, f.Key)
			if f.Type.Kind() == reflect.Struct && f.Type.PkgPath() == t.PkgPath() {
				walk(f.Type, name, idx, k)
				continue
			}
			out = append(out, Key{Name: name, Kind: k, NotFor: Kind(f.Tag.Get("notfor")), Index: idx})
		}
	}
	walk(reflect.TypeOf(Config{}), "", nil, "")
	return out
}

// Validate checks the parameters. A bad value is a *yamlstrict.FieldError naming its scenario
// key, which the scenario loader places at the key's line and column.
func (c *Config) Validate() error { return c.validate(true) }

// validate checks the parameters; with realFrames false it leaves out the limits of real frames
// (payload MTU, header sizes), which New does because runs may merge packets into k-fold ones
// (gpu.ScalePackets).
func (c *Config) validate(realFrames bool) error {
	if !validMode(c.Kind, Kinds) {
		return yamlstrict.Errorf("kind", "%q is not a fabric kind (valid: %s)", c.Kind, modeList(Kinds))
	}
	switch c.Kind {
	case KindRoCE:
		if err := c.validateRoCE(); err != nil {
			return err
		}
	case KindInfiniBand:
		if err := c.validateIB(realFrames); err != nil {
			return err
		}
	}
	e := yamlstrict.Errorf
	if realFrames {
		if c.MTU < 64 || c.MTU > 9216 {
			return e("mtu", "payload MTU %d B outside 64..9216", c.MTU)
		}
		for _, f := range []struct {
			key string
			v   int
		}{{"header_bytes", c.HeaderBytes}, {"ack_bytes", c.AckBytes}, {"l1_overhead", c.L1Overhead}} {
			if f.v < 0 || f.v > 1024 {
				return e(f.key, "%d B outside 0..1024", f.v)
			}
		}
	}
	switch {
	case c.MTU < 1:
		return e("mtu", "must be positive, got %d", c.MTU)
	case c.HeaderBytes < 0 || c.L1Overhead < 0:
		return e("header_bytes", "framing sizes must not be negative")
	case c.AckBytes < 1:
		return e("ack_bytes", "an ACK has at least 1 byte")
	case c.MinFrame < 0 || c.FirstHeaderExtra < 0 || c.CNPBytes < 0:
		return e("", "framing sizes must not be negative")
	case int64(c.Buffer) < int64(c.MTU)+int64(c.HeaderBytes):
		return e("buffer", "%v cannot hold one %d B packet", c.Buffer, int64(c.MTU)+int64(c.HeaderBytes))
	case c.BufferAlpha < 0 || c.BufferAlpha > 64:
		return e("buffer_alpha", "%g outside 0..64 (0 = static threshold)", c.BufferAlpha)
	case !validMode(c.Routing, Routings):
		return e("routing", "%q is not a routing policy (valid: %s)", c.Routing, modeList(Routings))
	case c.SprayPolicy != "" && !validMode(c.SprayPolicy, SprayPolicies):
		return e("spray_policy", "%q is not a spraying policy (valid: %s)", c.SprayPolicy, modeList(SprayPolicies))
	case c.SprayPolicy == SprayLeastQueue && c.Routing != RoutingSpray:
		return e("spray_policy", "least_queue chooses among the next hops of a spraying switch: set routing: spray")
	case c.AckEvery < 1:
		return e("ack_every", "must be at least 1, got %d", c.AckEvery)
	case c.RTO <= 0:
		return e("rto", "must be positive")
	case c.Priorities < 1 || c.Priorities > 8 && !(c.Kind == KindInfiniBand && c.Priorities == IBServiceLevels):
		return e("", "priorities must be 1..8 (16 service levels on infiniband), got %d", c.Priorities)
	case int(c.DataPriority) >= c.Priorities || int(c.CNPPriority) >= c.Priorities:
		return e("data_priority", "data priority %d and CNP priority %d must be below the %d priorities", c.DataPriority, c.CNPPriority, c.Priorities)
	case c.Transport != TransportDefault && !validMode(c.Transport, Transports):
		return e("transport", "%q is not a loss recovery (valid: %s)", c.Transport, modeList(Transports))
	case c.Transport == TransportIRN && (c.IRNRTOLow <= 0 || c.IRNRTOHigh <= 0 || c.IRNBDPCap < 0):
		return e("irn_rto_low", "IRN needs positive timeouts (defaults 100us and 320us) and a BDP cap >= 0")
	case c.QPsPerConn < 0 || c.QPsPerConn > 1024:
		return e("qps_per_conn", "%d outside 1..1024", c.QPsPerConn)
	case c.FCTEnd != "" && !validMode(c.FCTEnd, FCTEnds):
		return e("fct_end", "%q is not an FCT end (valid: %s)", c.FCTEnd, modeList(FCTEnds))
	}
	return nil
}

// validateRoCE checks the RoCE settings (Config's own and RoCEConfig's).
func (c *Config) validateRoCE() error {
	r := &c.RoCE
	e := yamlstrict.Errorf
	if _, err := dcqcn.Preset(r.DCQCNPreset); err != nil {
		return e("dcqcn_preset", "%q is not a DCQCN preset (valid: %s)", r.DCQCNPreset, dcqcn.Presets)
	}
	if RoCEMTU(r.NetdevMTU) == 0 {
		return e("netdev_mtu", "%d B leaves no RoCE MTU (the largest IB MTU <= netdev_mtu - 96 must be at least 256: netdev_mtu >= 352)", r.NetdevMTU)
	}
	if c.Priorities != 8 {
		return e("", "roce needs 8 priorities, got %d", c.Priorities)
	}
	switch {
	case c.IRNRTOLow <= 0 || c.IRNRTOHigh <= 0:
		return e("irn_rto_low", "IRN timeouts must be positive (defaults 100us and 320us)")
	case c.IRNRTOLow > c.IRNRTOHigh:
		return e("irn_rto_low", "%v above irn_rto_high %v", c.IRNRTOLow, c.IRNRTOHigh)
	case c.IRNBDPCap < 0 || c.IRNLowThreshold < 0:
		return e("irn_bdp_cap", "must not be negative (0 = one bandwidth-delay product of the topology)")
	case c.QPsPerConn < 1 || c.QPsPerConn > 1024:
		return e("qps_per_conn", "%d outside 1..1024", c.QPsPerConn)
	case c.OOOWindow < 0:
		return e("ooo_window", "%d is negative (0 = unlimited)", c.OOOWindow)
	case c.OOOWindow > 0 && c.Transport != TransportReorder:
		return e("ooo_window", "bounds the out-of-order receiver: set transport: ooo, or leave it out")
	case !(r.RandomLoss >= 0 && r.RandomLoss < 1):
		return e("random_loss", "%g outside [0,1) (a fraction of frames per link)", r.RandomLoss)
	case c.DataPriority > 7:
		return e("data_priority", "priority %d outside 0..7", c.DataPriority)
	case c.CNPPriority > 7:
		return e("cnp_priority", "priority %d outside 0..7", c.CNPPriority)
	case c.AckPriority > 7:
		return e("ack_priority", "priority %d outside 0..7", c.AckPriority)
	case !validMode(r.ECNMark, ECNMarkPoints):
		return e("ecn_mark", "%q is not an ECN marking point (valid: %s)", r.ECNMark, modeList(ECNMarkPoints))
	case !validMode(r.CNP, CNPModes):
		return e("cnp", "%q is not a CNP transport (valid: %s)", r.CNP, modeList(CNPModes))
	case !r.DCQCNModel.Valid():
		return e("dcqcn_model", "%q is not a DCQCN model (valid: %s)", r.DCQCNModel, modeList(dcqcn.Models))
	}
	for i, w := range r.Weights {
		if w < 1 || w > 1000 {
			return e(fmt.Sprintf("weights[%d]", i), "weight %d outside 1..1000", w)
		}
	}
	if r.PFC {
		if r.Lossless == 0 {
			return e("pfc_priorities", "PFC needs at least one lossless priority (RoCE uses 3)")
		}
		switch r.PFCThreshold {
		case PFCStatic:
			if r.XOFF <= 0 {
				return e("pfc_xoff", "must be positive")
			}
			if r.XON > r.XOFF {
				return e("pfc_xon", "%v above pfc_xoff %v: XON must be at most XOFF", r.XON, r.XOFF)
			}
		case PFCDynamic:
			if !(r.PFCAlpha > 0 && r.PFCAlpha <= 64) {
				return e("pfc_alpha", "%g outside (0,64] (XOFF = alpha x free shared buffer; 1/8 .. 1 is common)", r.PFCAlpha)
			}
		default:
			return e("pfc_threshold", "%q is not a PFC threshold rule (valid: %s)", r.PFCThreshold, modeList(PFCThresholds))
		}
		classes := int64(r.Lossless.Len())
		switch {
		case r.XONOffset < 0 || r.Headroom < 0:
			return e("pfc_headroom", "sizes must not be negative")
		case int64(r.Headroom)*classes >= int64(c.Buffer):
			return e("pfc_headroom", "%v per port and class x %d lossless classes is larger than the %v switch buffer", r.Headroom, classes, c.Buffer)
		case r.PauseQuanta < 1:
			return e("pfc_pause_quanta", "%d outside 1..65535 (quanta of 512 bit times)", r.PauseQuanta)
		case r.PauseRefresh < 0 || r.Watchdog < 0 || r.WatchdogRestore < 0:
			return e("pfc_watchdog", "durations must not be negative")
		case r.StormHost < -1:
			return e("pfc_storm_host", "host %d does not exist (-1 = no storm)", r.StormHost)
		}
	} else if r.StormHost >= 0 {
		return e("pfc_storm_host", "a pause storm needs pfc: true")
	}
	if r.ECN {
		if !(r.Pmax > 0 && r.Pmax <= 1) {
			return e("ecn_pmax", "%g outside (0,1]", r.Pmax)
		}
		if r.Kmin > r.Kmax {
			return e("ecn_kmin", "%v above ecn_kmax %v: Kmin must be at most Kmax", r.Kmin, r.Kmax)
		}
	}
	if r.HPCC {
		switch {
		case !r.INT:
			return e("hpcc", "HPCC needs in-band telemetry from the switches: set int: true")
		case r.DCQCN:
			return e("hpcc", "HPCC and DCQCN would both set the senders' rates: set dcqcn: false")
		}
		if err := r.HPCCParams.Validate(); err != nil {
			return err
		}
	}
	if r.DCTCP {
		switch {
		case r.DCQCN:
			return e("dctcp", "DCTCP and DCQCN would both set the senders' pace: set dcqcn: false")
		case r.HPCC:
			return e("dctcp", "DCTCP and HPCC would both set the senders' windows: choose one")
		case !r.ECN:
			return e("dctcp", "DCTCP needs ecn: true (its switches mark at K: ecn_kmin = ecn_kmax = K, ecn_pmax 1)")
		}
		if err := r.DCTCPParams.Validate(); err != nil {
			return err
		}
	}
	if r.Swift {
		switch {
		case r.DCQCN:
			return e("swift", "Swift and DCQCN would both set the senders' pace: set dcqcn: false")
		case r.HPCC || r.DCTCP:
			return e("swift", "Swift, HPCC and DCTCP would each set the senders' windows: choose one")
		case r.INT:
			return e("swift", "Swift's send stamp and INT share the packet's word: set int: false")
		}
		if err := r.SwiftParams.Validate(); err != nil {
			return err
		}
	}
	if err := c.validateUET(); err != nil {
		return err
	}
	if r.Timely {
		switch {
		case r.DCQCN:
			return e("timely", "TIMELY and DCQCN would both set the senders' rates: set dcqcn: false")
		case r.HPCC || r.DCTCP || r.Swift:
			return e("timely", "TIMELY, HPCC, DCTCP and Swift would each set the senders' pace: choose one")
		case r.INT:
			return e("timely", "TIMELY's send stamp and INT share the packet's word: set int: false")
		}
		if err := r.TimelyParams.Validate(); err != nil {
			return err
		}
	}
	if r.DCQCN {
		if !r.ECN {
			return e("dcqcn", "DCQCN needs ecn: true (its congestion point is ECN marking)")
		}
		return r.DCQCNParams.Validate()
	}
	return nil
}

// validateIB checks the InfiniBand settings.
func (c *Config) validateIB(realFrames bool) error {
	ib := &c.IB
	e := yamlstrict.Errorf
	if _, ok := LookupIBGeneration(ib.Generation); !ok {
		return e("generation", "%q is not an InfiniBand generation (valid: edr, hdr, ndr, xdr)", ib.Generation)
	}
	if m := int64(c.MTU); realFrames && (m < 256 || m > 4096 || m&(m-1) != 0) {
		return e("mtu", "InfiniBand MTU %d B is not one of 256, 512, 1024, 2048, 4096", m)
	}
	if c.Priorities != IBServiceLevels {
		return e("", "infiniband: priorities must be %d (one per service level), got %d", IBServiceLevels, c.Priorities)
	}
	if ib.VLs < 1 || ib.VLs > IBMaxVLs {
		return e("vls", "%d data VLs outside 1..%d (VL15 is management only)", ib.VLs, IBMaxVLs)
	}
	for sl, vl := range ib.SL2VL {
		if int(vl) >= ib.VLs {
			return e(fmt.Sprintf("sl2vl[%d]", sl), "maps SL %d to VL %d, but only VL0..VL%d exist (vls: %d)", sl, vl, ib.VLs-1, ib.VLs)
		}
	}
	maxPkt := int64(c.MTU) + int64(c.HeaderBytes) + int64(c.FirstHeaderExtra)
	for _, b := range []struct {
		key string
		v   units.Size
	}{{"vl_buffer", ib.VLBuffer}, {"hca_buffer", ib.HCABuffer}} {
		if blocks := int64(b.v) / IBBlock; blocks*IBBlock < maxPkt {
			return e(b.key, "%v is %d credits of 64 B, less than one %d B packet (mtu + headers + RETH): a VL could never send", b.v, blocks, maxPkt)
		}
	}
	for _, tab := range []struct {
		key string
		t   []VLWeight
	}{{"vl_arb_high", ib.ArbHigh}, {"vl_arb_low", ib.ArbLow}} {
		if len(tab.t) > 64 {
			return e(tab.key, "%d entries; a VL arbitration table has at most 64", len(tab.t))
		}
		for i, en := range tab.t {
			if int(en.VL) >= ib.VLs {
				return e(fmt.Sprintf("%s[%d].vl", tab.key, i), "VL %d does not exist (valid: 0..%d)", en.VL, ib.VLs-1)
			}
		}
	}
	// Every VL an SL maps to must get turns, or its packets would never leave.
	for sl, vl := range ib.SL2VL {
		served := false
		for _, t := range [][]VLWeight{ib.ArbHigh, ib.ArbLow} {
			for _, en := range t {
				served = served || (en.VL == vl && en.Weight > 0)
			}
		}
		if !served {
			return e("vl_arb_low", "no entry of vl_arb_high or vl_arb_low serves VL %d (used by SL %d) with a positive weight: its packets would never leave", vl, sl)
		}
	}
	switch {
	case ib.HighLimit < 0 || ib.HighLimit > 255:
		return e("vl_high_limit", "%d outside 0..255 (units of 4 KiB; 255 = unlimited)", ib.HighLimit)
	case !ib.Routing.Valid():
		return e("routing_engine", "%q is not a routing engine (valid: %s)", ib.Routing, modeList(ibsm.Engines))
	case ib.FCRefresh < 0:
		return e("fc_refresh", "must not be negative")
	}
	return yamlstrict.Within("ib_cc", ib.CC.Validate())
}

// Validate checks the IB congestion control settings (whether enabled or not: a file that turns
// it on later should not find its values wrong then).
func (cc *IBCCConfig) Validate() error {
	e := yamlstrict.Errorf
	switch {
	case cc.Threshold < 0:
		return e("threshold", "must not be negative")
	case cc.MarkingRate < 0 || cc.MarkingRate > 65535:
		return e("marking_rate", "%d outside 0..65535 (mark one in marking_rate+1)", cc.MarkingRate)
	case cc.CCTIIncrease < 1:
		return e("ccti_increase", "must be at least 1, got %d", cc.CCTIIncrease)
	case cc.CCTILimit < 0 || cc.CCTILimit > 16383:
		return e("ccti_limit", "%d outside 0..16383", cc.CCTILimit)
	case len(cc.Table) > 0 && cc.CCTILimit >= len(cc.Table):
		return e("ccti_limit", "%d indexes beyond the %d-entry cct", cc.CCTILimit, len(cc.Table))
	case cc.CCTIMin < 0 || cc.CCTIMin > cc.CCTILimit:
		return e("ccti_min", "%d outside 0..ccti_limit (%d)", cc.CCTIMin, cc.CCTILimit)
	case cc.CCTITimer <= 0:
		return e("ccti_timer", "must be positive")
	case cc.TableStep < 0:
		return e("cct_step", "must not be negative")
	}
	for i, d := range cc.Table {
		if d < 0 {
			return e(fmt.Sprintf("cct[%d]", i), "injection delay must not be negative")
		}
	}
	return nil
}

// defaultArbLow is the low-priority VL arbitration table that serves VLs 0..vls-1 with weight
// 64 each (one 4 KiB MTU per turn).
func defaultArbLow(vls int) []VLWeight {
	t := make([]VLWeight, vls)
	for v := range t {
		t[v] = VLWeight{VL: uint8(v), Weight: 64}
	}
	return t
}

// frame returns the buffer size and wire size of a frame with the given payload and header bytes.
func (c *Config) frame(payload, header int) (size, wire int32) {
	s := payload + header
	if s < c.MinFrame {
		s = c.MinFrame
	}
	return int32(s), int32(s + c.L1Overhead)
}
