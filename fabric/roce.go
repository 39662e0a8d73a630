package fabric

import (
	"fmt"
	"math"

	"github.com/fabricsim/fabricsim/headroom"
	"github.com/fabricsim/fabricsim/sim"
	"github.com/fabricsim/fabricsim/transport/cc/dcqcn"
	"github.com/fabricsim/fabricsim/transport/cc/dctcp"
	"github.com/fabricsim/fabricsim/transport/cc/hpcc"
	"github.com/fabricsim/fabricsim/transport/cc/nscc"
	"github.com/fabricsim/fabricsim/transport/cc/swift"
	"github.com/fabricsim/fabricsim/transport/cc/timely"
	"github.com/fabricsim/fabricsim/units"
)

// RoCEv2 framing ([IBA] Annex A17, [IEEE 802.3], [IEEE 802.1Q]): Ethernet 14 (+ 802.1Q 4 when PFC classifies by PCP) + IPv4 20
// or IPv6 40 + UDP 8 + BTH 12 + ICRC 4 + FCS 4; RETH 16 on WRITE First/Only; AETH 4 on ACK/NAK;
// a CNP carries 16 reserved bytes after the BTH (RoCEv2 annex A17).
const (
	RETHBytes = 16
	AETHBytes = 4
)

// RoCEFraming returns the frame bytes around a data packet's payload, an ACK/NAK frame and a
// CNP frame for the given IP version and VLAN tagging.
func RoCEFraming(ipv6, vlan bool) (data, ack, cnp int) {
	data = 14 + 20 + 8 + 12 + 4 + 4
	if ipv6 {
		data += 20
	}
	if vlan {
		data += 4
	}
	return data, data + AETHBytes, data + 16
}

// RoCEMTU is the RDMA path MTU a RoCE NIC uses on a netdev MTU: the largest IB MTU (256 ..
// 4096) not above netdev - 96 ([IBA] Annex A17: 1500 -> 1024, >= 4192 -> 4096); 0 if none fits.
func RoCEMTU(netdev int) int {
	best := 0
	for m := 256; m <= 4096; m *= 2 {
		if m <= netdev-96 {
			best = m
		}
	}
	return best
}

// RoCEConfig holds the RoCEv2 fabric's parameters (framing, PFC, ECN, DCQCN, scheduling, loss);
// each `yaml` tag is its key under `fabric:` with `kind: roce`. The transport (Config.Transport:
// gbn or irn), the data and CNP classes and QPs per connection are in Config.
type RoCEConfig struct {
	// NetdevMTU is the Ethernet MTU; the RDMA path MTU (Config.MTU) defaults to the largest IB
	// MTU that fits it (RoCEMTU). IPv6 and VLAN set the framing (RoCEFraming): 40 B instead of
	// 20 B IP headers, an 802.1Q tag (needed for PCP-based PFC).
	NetdevMTU int  `yaml:"netdev_mtu"`
	IPv6      bool `yaml:"ipv6"`
	VLAN      bool `yaml:"vlan"`

	// PFC turns on priority flow control for the classes in Lossless.
	PFC      bool        `yaml:"pfc"`
	Lossless PrioritySet `yaml:"pfc_priorities"`
	// PFCThreshold picks the XOFF rule: alpha x the free shared buffer (PFCDynamic) or the
	// static XOFF. XON is the static resume threshold; with the dynamic rule XON = XOFF -
	// XONOffset.
	PFCThreshold PFCThreshold `yaml:"pfc_threshold"`
	PFCAlpha     float64      `yaml:"pfc_alpha"`
	XOFF         units.Size   `yaml:"pfc_xoff"`
	XON          units.Size   `yaml:"pfc_xon"`
	XONOffset    units.Size   `yaml:"pfc_xon_offset"`
	// Headroom is reserved per ingress port and lossless priority for bytes that arrive after
	// XOFF; 0 sizes each port by the larger of the mlx5 formula and the IEEE-style breakdown
	// (headroom package) for its link rate, cable (latency / 5 ns per m) and the switch latency.
	Headroom units.Size `yaml:"pfc_headroom"`
	// PauseQuanta is the pause time of an XOFF in quanta of 512 bit times (65535 = 335 us at
	// 100G); an XOFF is refreshed every PauseRefresh (0: half the pause time) while it holds.
	PauseQuanta  uint16     `yaml:"pfc_pause_quanta"`
	PauseRefresh units.Time `yaml:"pfc_refresh"`
	// Watchdog, when positive, flushes a queue paused continuously this long and lets it ignore
	// PAUSE for WatchdogRestore (the switch PFC watchdog that breaks pause storms).
	Watchdog        units.Time `yaml:"pfc_watchdog"`
	WatchdogRestore units.Time `yaml:"pfc_watchdog_restore"`
	// StormHost, when >= 0, is a NIC that stops draining at StormAt and sends PAUSE for every
	// lossless class for StormFor (a pause storm from a stuck receiver).
	StormHost int32      `yaml:"pfc_storm_host"`
	StormAt   units.Time `yaml:"pfc_storm_start"`
	StormFor  units.Time `yaml:"pfc_storm_duration"`

	// ECN turns on RED marking at switch egress: probability 0 below Kmin, rising linearly to
	// Pmax at Kmax, 1 above ([DCQCN]). Kmin/Kmax 0 scale with each port's rate as HPCC's
	// ns-3 scripts do: 100 KB and 400 KB per 25 Gb/s.
	ECN  bool       `yaml:"ecn"`
	Kmin units.Size `yaml:"ecn_kmin"`
	Kmax units.Size `yaml:"ecn_kmax"`
	Pmax float64    `yaml:"ecn_pmax"`
	// ECNMap, when set, gives thresholds per link rate (HPCC ns-3's KMIN_MAP, KMAX_MAP,
	// PMAX_MAP); a port whose rate is not listed scales the nearest entry by its rate.
	ECNMap []ECNThreshold `yaml:"-"`
	// ECNMark is when the marker reads the queue: as a packet joins it (enqueue, the default)
	// or as it leaves (dequeue, HPCC's ns-3).
	ECNMark ECNMarkPoint `yaml:"ecn_mark"`

	// DCQCN turns on the DCQCN reaction and notification points with these parameters (keys
	// dcqcn_g, dcqcn_rate_ai, ...); DCQCNPreset names the preset the keys not written take.
	DCQCN       bool         `yaml:"dcqcn"`
	DCQCNPreset string       `yaml:"dcqcn_preset"`
	DCQCNParams dcqcn.Params `yaml:",inline"`
	// DCQCNModel is the reaction point's state machine (paper, connectx, ns3: package dcqcn's
	// Model); CNP is how the receiver signals: CNP packets or a flag on ACKs.
	DCQCNModel dcqcn.Model `yaml:"dcqcn_model"`
	CNP        CNPMode     `yaml:"cnp"`

	// INT makes every switch egress append a hop record to each data packet (in-band network
	// telemetry, 42 B on data and ACK frames); HPCC runs HPCC's senders on it ([HPCC]) with
	// HPCCParams (keys hpcc_eta, ...). HPCC needs INT and excludes DCQCN.
	INT        bool        `yaml:"int"`
	HPCC       bool        `yaml:"hpcc"`
	HPCCParams hpcc.Params `yaml:",inline"`

	// DCTCP runs DCTCP-style windows ([DCTCP]; fabric/dctcp.go) with DCTCPParams (dctcp_g):
	// ECN echoed on ACKs, the window cut by alpha/2 once per window. It excludes DCQCN and HPCC.
	DCTCP       bool         `yaml:"dctcp"`
	DCTCPParams dctcp.Params `yaml:",inline"`

	// Swift runs Swift's delay-based windows ([Swift]; fabric/swift.go) with SwiftParams
	// (swift_*): send stamps echoed on ACKs, the window from the delay against a target. It
	// excludes DCQCN, HPCC and DCTCP.
	Swift       bool         `yaml:"swift"`
	SwiftParams swift.Params `yaml:",inline"`

	// UETCC is the congestion control of transport: uet (fabric/uet.go): NSCC's window with
	// NSCCParams (uet_target_delay), or none. UETOOOThreshold is how many packets SACKed beyond
	// a gap declare it lost (0: 1.5 BDP in packets, at least 5).
	UETCC           UETCC       `yaml:"uet_cc"`
	UETOOOThreshold int         `yaml:"uet_ooo_threshold"`
	NSCCParams      nscc.Params `yaml:",inline"`
	// UETLoadBalance picks each packet's entropy value: fresh (oblivious spraying) or recycled
	// from unmarked ACKs (REPS).
	UETLoadBalance UETLoadBalance `yaml:"uet_load_balance"`

	// Timely runs TIMELY's RTT-gradient rates ([TIMELY]; fabric/timely.go) with TimelyParams
	// (timely_*): segments paced at the rate, each segment's completion RTT echoed on its ACK.
	// It excludes DCQCN, HPCC, DCTCP, Swift and INT.
	Timely       bool          `yaml:"timely"`
	TimelyParams timely.Params `yaml:",inline"`

	// Strict is the set of strict-priority classes (served highest first); the others share the
	// rest by deficit round robin with Weights.
	Strict  PrioritySet `yaml:"strict_priorities"`
	Weights [8]int      `yaml:"weights"`

	// RandomLoss drops this fraction of frames on every link (DropRandom), for lossy-fabric
	// experiments.
	RandomLoss float64 `yaml:"random_loss"`
	// QPAwareHash spreads the QPs of one connection over distinct equal-cost next hops
	// (hop = (hash(connection) + QP) mod candidates) instead of hashing each QP independently.
	QPAwareHash bool `yaml:"qp_aware_hash"`
}

// ECNThreshold is the RED marking of ports of one link rate.
type ECNThreshold struct {
	Rate       units.Rate
	Kmin, Kmax units.Size
	Pmax       float64
}

// DefaultRoCE is RoCEv2 as deployed in AI clusters ([IBA] Annex A17, [NVIDIA-RoCE], [ConnectX-DCQCN]): 8 priorities, data on
// lossless priority 3 with PFC (dynamic XOFF, alpha 1/8), CNPs on strict priority 6, ECN RED
// with HPCC's rate-scaled thresholds, DCQCN with ConnectX defaults, go-back-N recovery, VLAN-
// tagged IPv4 framing, 4096 B path MTU.
func DefaultRoCE() Config {
	c := DefaultEthernet()
	c.Kind = KindRoCE
	c.Priorities = 8
	c.DataPriority = 3
	c.CNPPriority = 6
	c.HeaderBytes, c.AckBytes, c.CNPBytes = RoCEFraming(false, true)
	c.FirstHeaderExtra = RETHBytes
	c.Transport = TransportGoBackN
	c.IRNRTOLow, c.IRNRTOHigh, c.IRNLowThreshold = 100*units.Microsecond, 320*units.Microsecond, 3
	c.QPsPerConn = 1
	c.RoCE = RoCEConfig{
		NetdevMTU: 4200, VLAN: true,
		PFC: true, Lossless: 1 << 3, PFCThreshold: PFCDynamic, PFCAlpha: 1.0 / 8,
		XOFF: 200 * units.KB, XON: 180 * units.KB, XONOffset: 2 * 4162,
		PauseQuanta: 65535, WatchdogRestore: 200 * units.Millisecond,
		StormHost: -1,
		ECN:       true, Pmax: 0.2,
		ECNMark: ECNMarkEnqueue,
		DCQCN:   true, DCQCNPreset: "connectx", DCQCNParams: dcqcn.ConnectX(),
		DCQCNModel: dcqcn.ModelPaper, CNP: CNPPacket,
		HPCCParams: hpcc.Defaults(), DCTCPParams: dctcp.Defaults(), SwiftParams: swift.Defaults(),
		UETCC: UETNSCC, UETLoadBalance: UETOblivious,
		TimelyParams: timely.Defaults(), Strict: 1<<6 | 1<<7,
		Weights: [8]int{1, 1, 1, 1, 1, 1, 1, 1},
	}
	return c
}

// roce is the installed RoCEv2 fabric: what its policies share. They keep per-port state in
// arrays indexed by Port.gidx.
type roce struct {
	n   *Network
	cfg *RoCEConfig
}

func (r *roce) portName(g int32) string {
	p := r.n.port(g)
	nd := &r.n.g.Nodes[p.Owner]
	peer := &r.n.g.Nodes[nd.Ports[p.Index].Peer]
	return fmt.Sprintf("%s:%d(->%s)", nd.Name, p.Index, peer.Name)
}

// installRoCE installs the RoCEv2 policies (PFC, ECN marking, DCQCN, scheduling) on a built
// network.
func (n *Network) installRoCE() error {
	c := &n.cfg.RoCE // checked by Config.Validate
	r := &roce{n: n, cfg: c}
	if c.PFC {
		fc, err := newPFC(r)
		if err != nil {
			return err
		}
		n.SetLinkFlowControl(fc)
	}
	if c.ECN {
		if c.ECNMark == ECNMarkDequeue {
			n.deqMarker = newECN(r)
		} else {
			n.SetMarker(newECN(r))
		}
	}
	if c.DCQCN {
		n.cc = newDCQCN(r)
	}
	if c.INT {
		n.ints = &intPool{}
		n.pool.ints = n.ints
	}
	if c.HPCC {
		h := newHPCC(r)
		n.cc, n.acker = h, h
	}
	if c.DCTCP {
		d := newDCTCP(r)
		n.cc, n.acker = d, d
	}
	if c.Swift {
		s := newSwift(r)
		n.cc, n.acker = s, s
	}
	if n.cfg.Transport == TransportUET {
		u := newUET(r)
		n.cc, n.acker = u, u
	}
	if c.Timely {
		t := newTimely(r)
		n.cc, n.acker = t, t
	}
	n.SetScheduler(newDWRR(r))
	if c.RandomLoss > 0 {
		n.SetRandomLoss(c.RandomLoss)
	}
	if c.QPAwareHash {
		n.SetRouter(qpAwareRouter{})
	}
	return nil
}

// SetRandomLoss drops fraction p of the frames every port transmits (counted as random_loss),
// on top of each link's own error rate.
func (n *Network) SetRandomLoss(p float64) {
	for i := range n.g.Nodes {
		for _, port := range n.Ports(int32(i)) {
			port.setErrRate(1 - (1-port.errRate)*(1-p))
			port.errCause = DropRandom
			if port.rng == nil {
				port.rng = sim.RNG(n.cfg.drawSeed(), fmt.Sprintf("loss/%d/%d", port.Owner, port.Index))
			}
		}
	}
}

// qpAwareRouter places QP q of a connection on candidate (hash(connection) + q) mod k, so that a
// connection's QPs use distinct uplinks (Meta, SIGCOMM'24: QP-aware ECMP). qpHash makes a
// packet's Hash the connection's hash plus its QP.
type qpAwareRouter struct{}

func (qpAwareRouter) Route(s *Switch, pkt *Packet, hops []int32) int32 {
	switch len(hops) {
	case 0:
		return -1
	case 1:
		return hops[0]
	}
	conn := uint32(pkt.Hash) - uint32(pkt.QP)
	return hops[int((sim.Mix64(uint64(conn)^s.salt)+uint64(pkt.QP))%uint64(len(hops)))]
}

// autoHeadroom is the headroom reserved at port p per lossless class when none is configured.
func autoHeadroom(n *Network, p *Port) int64 {
	return AutoHeadroom(&n.cfg, p.Rate, n.g.Links[p.Link].Latency)
}

// AutoHeadroom is the headroom a port of the given rate and link latency reserves per lossless
// class when pfc_headroom is 0: the larger of the mlx5 formula and the IEEE-style breakdown
// (package headroom) for its cable (latency at 5 ns per m), a full frame and the switch latency
// as the response delay, rounded up.
func AutoHeadroom(c *Config, rate units.Rate, latency units.Time) int64 {
	cable := float64(latency) / float64(units.Nanosecond) / headroom.FibreNsPerMetre
	frame := int(c.MTU) + c.HeaderBytes + c.FirstHeaderExtra + c.L1Overhead
	h := headroom.Headroom(headroom.Input{Rate: rate, CableMetres: cable, MTU: frame, Response: c.SwitchLatency})
	return headroom.Bytes(math.Max(h.MLX5, h.IEEE))
}
