package fabric

import (
	"fmt"

	"github.com/fabricsim/fabricsim/ibsm"
	"github.com/fabricsim/fabricsim/transport/ibcc"
	"github.com/fabricsim/fabricsim/units"
)

// InfiniBand fabric (kind "infiniband"): a bundle of policies on the shared packet backend.
//
//   - Framing: LRH 8 + BTH 12 + ICRC 4 + VCRC 2 = 26 B per data packet (+ GRH 40 when routed,
//     + RETH 16 on a WRITE's first packet), ACK = 26 + AETH 4; no preamble, no inter-frame gap,
//     no minimum frame ([IBA] Vol. 1).
//   - Credit-based link-level flow control per VL (ibcredit.go): receive buffers per port and VL
//     in 64-byte blocks, credits returned by 6-byte flow-control packets on the reverse link.
//   - Virtual lanes: an SL-to-VL table per port (Port.SL2VL) and VL arbitration with high- and
//     low-priority weighted tables and VL_HIGH_LIMIT (ibarb.go).
//   - Subnet-manager routing: linear forwarding tables from package ibsm, optionally with
//     adaptive routing among each destination's allowed ports (ibroute.go).
//   - IB congestion control (annex A10; ibcc.go, transport/ibcc): FECN marking at switch egress,
//     BECN from the receiving HCA, per-QP CCT index and injection delay at the sender. Off by
//     default.
//
// Switches stay store-and-forward (cut-through is not modelled), like the generic fabric.

// Maximum counts of the IBA link layer.
const (
	// IBMaxVLs is the number of data VLs (VL0..VL14; VL15 is management only, [IBA] Vol. 1 §7.6).
	IBMaxVLs = 15
	// IBServiceLevels is the number of SLs (4 bits in the LRH).
	IBServiceLevels = 16
	// IBBlock is the credit unit: 64 bytes of receive buffer ([IBA] Vol. 1 §7.9).
	IBBlock = 64
	// IBMaxCreditWindow is the most blocks a receiver advertises beyond those it has received:
	// FCCL and FCTBS are 12-bit counters modulo 4096, and a receiver with 2048 or more free
	// blocks advertises ABR + 2048 (IBA vol. 1 §7.9, credit limit computation), so no more than 128 KiB per VL can be
	// outstanding on a link, however big the buffer.
	IBMaxCreditWindow = 2048
	// IBFCPacketBytes is a flow-control packet: Op, FCTBS, VL, FCCL, LPCRC ([IBA] Vol. 1 §7.9.4).
	IBFCPacketBytes = 6
)

// IB header sizes ([IBA] Vol. 1 §7.7, §9.2-9.3).
const (
	ibLRH  = 8
	ibGRH  = 40
	ibBTH  = 12
	ibRETH = 16
	ibAETH = 4
	ibICRC = 4
	ibVCRC = 2
	// ibCNP: a congestion notification packet is the BTH with BECN set plus 16 reserved bytes,
	// the format RoCEv2's CNP (annex A17) copies from IB CC (est.).
	ibCNPExtra = 16
)

// IBGeneration is one InfiniBand generation's link rate and switch latency.
type IBGeneration struct {
	Name string
	// Rate is the 4x data rate ([IBA-Vol2]).
	Rate units.Rate
	// SwitchLatency is the port-to-port latency ([QM8700], [QM9700], [Quantum-X800]).
	SwitchLatency units.Time
	Source        string
}

// IBGenerations are the presets of `generation:`.
var IBGenerations = []IBGeneration{
	{"edr", 100 * units.Gbps, 90 * units.Nanosecond, "EDR 4x 25.78125 Gb/s 64b/66b; Switch-IB 2 class ~90 ns (est., as HDR)"},
	{"hdr", 200 * units.Gbps, 90 * units.Nanosecond, "HDR 4x 53.125 Gb/s PAM4; QM8700 ~90 ns (datasheet)"},
	{"ndr", 400 * units.Gbps, 140 * units.Nanosecond, "NDR 4x 106.25 Gb/s PAM4; QM9700 130-150 ns (est.)"},
	{"xdr", 800 * units.Gbps, 140 * units.Nanosecond, "XDR 4x 200G-class; Quantum-X800 similar to NDR (est.)"},
}

// LookupIBGeneration returns the preset named name.
func LookupIBGeneration(name string) (IBGeneration, bool) {
	for _, g := range IBGenerations {
		if g.Name == name {
			return g, true
		}
	}
	return IBGeneration{}, false
}

// VLWeight is one entry of a VL arbitration table: VL and weight in 64-byte units (0..255;
// IBA vol. 1 §7.6.9). A weight of 0 skips the entry.
type VLWeight struct {
	VL     uint8 `yaml:"vl"`
	Weight uint8 `yaml:"weight"`
}

// IBConfig holds the InfiniBand fabric's parameters (credits, VLs, routing, IB CC); each `yaml`
// tag is its key under `fabric:` with `kind: infiniband`.
type IBConfig struct {
	// Generation names the preset the rates and latency came from ("ndr" ...).
	Generation string `yaml:"generation"`
	// GRH adds the 40 B global route header to every packet (routed between subnets); it sets
	// the default HeaderBytes (IBHeaderBytes).
	GRH bool `yaml:"grh"`
	// VLs is the number of data VLs per port, 1..15 (ConnectX default 4, [ConnectX-DCQCN]).
	VLs int `yaml:"vls"`
	// SL2VL maps each service level to a VL on every port (the subnet manager programs the same
	// table everywhere, as OpenSM's qos_sl2vl does); a test or extension may give single ports
	// their own table through Port.SL2VL. A scenario may list the first SLs only.
	SL2VL [IBServiceLevels]uint8 `yaml:"sl2vl,partial"`
	// VLBuffer is a switch port's receive buffer per VL; HCABuffer an HCA's. Both are rounded
	// down to whole 64-byte blocks and must hold one full packet.
	VLBuffer  units.Size `yaml:"vl_buffer"`
	HCABuffer units.Size `yaml:"hca_buffer"`
	// ArbHigh and ArbLow are the VL arbitration tables; HighLimit is VL_HIGH_LIMIT: the high-
	// priority bytes, in 4 KiB units, that may be sent while a low-priority packet waits
	// (255 = unlimited, 0 = one packet).
	ArbHigh   []VLWeight `yaml:"vl_arb_high"`
	ArbLow    []VLWeight `yaml:"vl_arb_low"`
	HighLimit int        `yaml:"vl_high_limit"`
	// Routing is the subnet manager's engine: ibsm.MinHop, DModK or UpDown.
	Routing ibsm.Engine `yaml:"routing_engine"`
	// Adaptive turns on adaptive routing: switches pick, per data packet, the least loaded port
	// among the destination's allowed ports. The receiver then accepts out-of-order packets.
	Adaptive bool `yaml:"adaptive_routing"`
	// FCRefresh is the period of the flow-control packets a port sends unprompted on a lossy
	// link, so that a lost credit update cannot stall it (IBA vol. 1 §7.9: at least every 65,536
	// symbol times). 0 derives 65,536 byte times at the link rate. Unused on clean links.
	FCRefresh units.Time `yaml:"fc_refresh"`
	// CC is IB congestion control.
	CC IBCCConfig `yaml:"ib_cc"`
}

// IBCCConfig is IB congestion control (IBA annex A10).
type IBCCConfig struct {
	Enabled bool `yaml:"enabled"`
	// Threshold is the queue depth (bytes on the packet's VL at a switch egress port) above
	// which the port marks FECN (annex A10 encodes it as 0..15 of an implementation-defined
	// scale; est.).
	Threshold units.Size `yaml:"threshold"`
	// MarkingRate: one in MarkingRate+1 eligible packets is marked (0 marks every one).
	MarkingRate int `yaml:"marking_rate"`
	// VictimMask also marks at ports that are congested only because they lack credits (victims
	// of congestion further down); off, only the root of congestion marks.
	VictimMask bool `yaml:"victim_mask"`
	// The source CA's reaction: see transport/ibcc.
	CCTIIncrease int        `yaml:"ccti_increase"`
	CCTILimit    int        `yaml:"ccti_limit"`
	CCTIMin      int        `yaml:"ccti_min"`
	CCTITimer    units.Time `yaml:"ccti_timer"`
	// Table is the CCT (injection delay per index); empty derives a linear table of
	// CCTILimit+1 entries with step TableStep.
	Table     []units.Time `yaml:"cct"`
	TableStep units.Time   `yaml:"cct_step"`
}

// DefaultInfiniBand returns the InfiniBand fabric of generation gen ("edr", "hdr", "ndr",
// "xdr") with the defaults docs/infiniband.md explains. Topology link rates are the caller's.
func DefaultInfiniBand(gen string) (Config, error) {
	g, ok := LookupIBGeneration(gen)
	if !ok {
		return Config{}, fmt.Errorf("infiniband generation %q unknown (valid: edr, hdr, ndr, xdr)", gen)
	}
	c := DefaultEthernet()
	c.Kind = KindInfiniBand
	c.MTU = 4096
	c.HeaderBytes = ibLRH + ibBTH + ibICRC + ibVCRC
	c.AckBytes = c.HeaderBytes + ibAETH
	c.CNPBytes = c.HeaderBytes + ibCNPExtra
	c.FirstHeaderExtra = ibRETH
	c.L1Overhead = 0
	c.MinFrame = 0
	c.SwitchLatency = g.SwitchLatency
	c.Priorities = IBServiceLevels
	c.IB = IBConfig{
		Generation: gen,
		VLs:        4,
		VLBuffer:   IBMaxCreditWindow * IBBlock,
		HCABuffer:  IBMaxCreditWindow * IBBlock,
		HighLimit:  0,
		Routing:    ibsm.MinHop,
		CC: IBCCConfig{
			Threshold:    32 * units.KiB,
			MarkingRate:  0,
			CCTIIncrease: 1,
			CCTILimit:    127,
			CCTIMin:      0,
			CCTITimer:    2 * units.Microsecond,
			TableStep:    20 * units.Nanosecond,
		},
	}
	c.IB.SetDefaultVLs(4)
	return c, nil
}

// SetDefaultVLs sets n data VLs with SL i on VL i mod n and every VL in the low-priority table
// with weight 64 (one 4 KiB MTU per turn), the high-priority table empty.
func (ib *IBConfig) SetDefaultVLs(n int) {
	ib.VLs = n
	for sl := range ib.SL2VL {
		ib.SL2VL[sl] = uint8(sl % n)
	}
	ib.ArbHigh = nil
	ib.ArbLow = defaultArbLow(n)
}

// IBHeaderBytes is the data-packet overhead with or without a GRH.
func IBHeaderBytes(grh bool) int {
	h := ibLRH + ibBTH + ibICRC + ibVCRC
	if grh {
		h += ibGRH
	}
	return h
}

// ccParams turns the CC settings into the state machine's parameters.
func (c *IBCCConfig) ccParams() *ibcc.Params {
	p := &ibcc.Params{CCTIIncrease: c.CCTIIncrease, CCTILimit: c.CCTILimit, CCTIMin: c.CCTIMin, CCTITimer: c.CCTITimer, Table: c.Table}
	if len(p.Table) == 0 {
		p.Table = ibcc.LinearTable(c.CCTILimit+1, c.TableStep)
	}
	return p
}

// installInfiniBand installs the InfiniBand policies (credit flow control, VL arbitration,
// subnet-manager routing, IB CC) on a built network.
func (n *Network) installInfiniBand() error {
	ib := &n.cfg.IB // checked by Config.Validate
	if ib.Adaptive && n.cfg.Transport == TransportDefault {
		// Adaptive routing reorders packets; HCAs accept them in any order ([NCCL]).
		n.cfg.Transport = "ooo"
	}
	tables, err := ibsm.Compute(n.g, ib.Routing)
	if err != nil {
		return err
	}
	sl2vl := ib.SL2VL // one table shared by every port
	for g := range n.ports {
		n.ports[g].SL2VL = &sl2vl
	}
	n.sim.SetPrefetcher(prefetchIB)
	fc := newIBCredits(n)
	n.SetLinkFlowControl(fc)
	n.SetScheduler(newIBArbiter(n, fc))
	n.SetRouter(newIBRouter(n, tables, fc, ib.Adaptive))
	if ib.CC.Enabled {
		n.marker = &ibMarker{fc: fc, threshold: int64(ib.CC.Threshold), every: int64(ib.CC.MarkingRate) + 1, victims: ib.CC.VictimMask}
		n.cc = &ibCC{n: n, p: ib.CC.ccParams()}
	}
	// The shared-buffer invariant of Switch.Handle checks against cfg.Buffer: on InfiniBand a
	// switch holds at most the sum of its ports' receive buffers.
	var most int64
	for _, s := range n.Switches {
		if s != nil {
			most = max(most, int64(len(s.Ports))*int64(ib.VLs)*(int64(ib.VLBuffer)/IBBlock*IBBlock))
		}
	}
	n.cfg.Buffer = units.Size(most)
	return nil
}

// VLOf returns the VL service level sl uses on this port's link (its SL2VL table; identity when
// the port has none).
func (p *Port) VLOf(sl uint8) uint8 {
	if p.SL2VL == nil {
		return sl
	}
	return p.SL2VL[sl&(IBServiceLevels-1)]
}

// ibBlocks is the number of 64-byte blocks a frame of size bytes takes (sizes are never
// negative; unsigned, the division is a shift).
func ibBlocks(size int32) int64 { return int64((uint32(size) + IBBlock - 1) / IBBlock) }
