package fabric

import (
	"fmt"

	"github.com/fabricsim/fabricsim/units"
)

// Config holds the packet backend's parameters. The scenario package fills it from YAML with
// defaults; the zero value is not valid, use DefaultEthernet as a base.
type Config struct {
	// Kind is "ethernet", "roce" or "infiniband": which policies New installs.
	Kind string
	// RoCE and IB hold the kind-specific parameters (roce.go, infiniband.go).
	RoCE RoCEConfig
	IB   IBConfig
	// MTU is the payload carried by a full data packet (the RDMA path MTU), in bytes.
	MTU units.Size
	// HeaderBytes is the frame overhead of a data packet: every header and trailer stored in a
	// switch buffer. Default: RoCEv2 over IPv4 without VLAN, Ethernet 14 + IPv4 20 + UDP 8 +
	// BTH 12 + ICRC 4 + FCS 4 = 62 B (DOMAIN.md §2).
	HeaderBytes int
	// AckBytes is the frame size of an ACK or NAK: the data headers plus a 4 B AETH = 66 B.
	AckBytes int
	// CNPBytes is the frame size of a congestion notification: RoCEv2 CNP = Ethernet 14 + IPv4
	// 20 + UDP 8 + BTH 12 + 16 reserved + ICRC 4 + FCS 4 = 78 B (RoCEv2 annex A17).
	CNPBytes int
	// L1Overhead is the per-frame cost on the wire beyond the frame: Ethernet preamble 7 + start
	// delimiter 1 + inter-frame gap 12 = 20 B (DOMAIN.md §2). InfiniBand has none.
	L1Overhead int
	// MinFrame pads shorter frames (Ethernet: 64 B including FCS).
	MinFrame int
	// SwitchLatency is the port-to-port latency a packet spends in a switch beyond its
	// serialization (est. 300-600 ns for Spectrum-class Ethernet, DOMAIN.md §4).
	SwitchLatency units.Time
	// Buffer is each switch's shared packet buffer.
	Buffer units.Size
	// BufferAlpha, when positive, caps each egress queue at alpha x the free shared buffer
	// (the dynamic threshold of Choudhury and Hahne); 0 lets one queue take the whole buffer.
	BufferAlpha float64
	// Routing picks among equal-cost next hops: "ecmp" (per-flow hash) or "spray" (per packet,
	// random).
	Routing string
	// AckEvery is how many in-order data packets the receiver coalesces into one ACK.
	AckEvery int
	// RTO is the retransmission timeout: unacknowledged data older than this is resent from
	// the first unacknowledged byte (go-back-N).
	RTO units.Time
	// Priorities is the number of traffic classes (queues per port).
	Priorities int
	// Seed drives ECMP hashing and every random choice.
	Seed uint64
	// Check turns on run-time invariant checks.
	Check bool
	// NoProgress, when positive, stops a run that has packets queued but delivers nothing to
	// any application for this long, and reports it instead of running forever.
	NoProgress units.Time

	// FirstHeaderExtra is added to the header of the first data packet of every message (per
	// QP): an RDMA WRITE First/Only packet carries a 16 B RETH (DOMAIN.md §2). 0 = none.
	FirstHeaderExtra int
	// DataPriority is the traffic class of messages that ask for class 0 (RoCE: 3, the lossless
	// class, DOMAIN.md §4). CNPPriority, when positive, is the class CNPs travel on (RoCE: 6);
	// 0 sends them on their flow's class. ACKs and NAKs always use the flow's class.
	DataPriority uint8
	CNPPriority  uint8
	// Transport is the reliable transport's loss recovery: "gbn" (or empty: go-back-N, the
	// receiver accepts only the next expected byte) or "irn" (selective repeat: the receiver
	// keeps out-of-order packets in a bitmap and NAKs each gap with a SACK, the sender resends
	// only the lost packets and caps its in-flight bytes at IRNBDPCap; Mittal et al. SIGCOMM'18)
	// or "ooo" (go-back-N sender, but the receiver accepts out-of-order packets without NAKing,
	// as HCAs do under adaptive routing on a lossless fabric; transport/rc).
	Transport string
	// IRNBDPCap caps a flow's unacknowledged bytes under IRN; 0 derives one bandwidth-delay
	// product from the topology (host link rate x the longest base round trip).
	IRNBDPCap units.Size
	// IRNRTOLow is IRN's timeout while at most IRNLowThreshold packets are outstanding,
	// IRNRTOHigh otherwise (100 us and 320 us, N = 3; DOMAIN.md §6, IRN §3.1).
	IRNRTOLow, IRNRTOHigh units.Time
	IRNLowThreshold       int
	// QPsPerConn stripes each message over this many queue pairs (0 or 1: one). Every QP has its
	// own UDP source port and therefore its own ECMP hash; a message completes when all its
	// QPs have delivered. Messages with the same msggraph Conn (and endpoints) share the QPs'
	// hashes, as one connection's QPs do.
	QPsPerConn int
}

// DefaultEthernet is the generic Ethernet-like fabric of the foundation: RoCEv2 framing, no link
// flow control, no congestion control, tail drop, go-back-N recovery on NAK and timeout.
func DefaultEthernet() Config {
	return Config{
		Kind:          "ethernet",
		MTU:           4096,
		HeaderBytes:   62,
		AckBytes:      66,
		CNPBytes:      78,
		L1Overhead:    20,
		MinFrame:      64,
		SwitchLatency: 500 * units.Nanosecond,
		Buffer:        32 * units.MiB,
		BufferAlpha:   0,
		Routing:       "ecmp",
		AckEvery:      1,
		RTO:           4 * units.Millisecond,
		Priorities:    1,
		NoProgress:    100 * units.Millisecond,
	}
}

// Validate checks the parameters; the scenario loader reports errors with file positions, this
// is the backstop for programmatic use.
func (c *Config) Validate() error {
	switch c.Kind {
	case "ethernet", "roce", "infiniband":
	default:
		return fmt.Errorf("fabric kind %q unknown (valid: ethernet, roce, infiniband)", c.Kind)
	}
	switch {
	case c.MTU < 1:
		return fmt.Errorf("mtu must be positive, got %d", c.MTU)
	case c.HeaderBytes < 0 || c.AckBytes < 1 || c.L1Overhead < 0 || c.MinFrame < 0:
		return fmt.Errorf("framing sizes must not be negative")
	case c.Buffer < units.Size(int64(c.MTU)+int64(c.HeaderBytes)):
		return fmt.Errorf("switch buffer %v is smaller than one packet", c.Buffer)
	case c.BufferAlpha < 0:
		return fmt.Errorf("buffer alpha must not be negative")
	case c.Routing != "ecmp" && c.Routing != "spray":
		return fmt.Errorf("routing %q unknown (valid: ecmp, spray)", c.Routing)
	case c.AckEvery < 1:
		return fmt.Errorf("ack_every must be at least 1")
	case c.RTO <= 0:
		return fmt.Errorf("rto must be positive")
	case c.Priorities < 1 || c.Priorities > 8 && !(c.Kind == "infiniband" && c.Priorities == 16):
		return fmt.Errorf("priorities must be 1..8 (16 service levels on infiniband)")
	case int(c.DataPriority) >= c.Priorities || int(c.CNPPriority) >= c.Priorities:
		return fmt.Errorf("data priority %d and CNP priority %d must be below the %d priorities", c.DataPriority, c.CNPPriority, c.Priorities)
	case c.Transport != "" && c.Transport != "gbn" && c.Transport != "irn" && c.Transport != "ooo":
		return fmt.Errorf("transport %q unknown (valid: gbn, irn, ooo)", c.Transport)
	case c.Transport == "irn" && (c.IRNRTOLow <= 0 || c.IRNRTOHigh <= 0 || c.IRNBDPCap < 0):
		return fmt.Errorf("irn needs positive RTOs and a non-negative BDP cap")
	case c.QPsPerConn < 0 || c.QPsPerConn > 1024:
		return fmt.Errorf("qps_per_conn must be 1..1024")
	case c.FirstHeaderExtra < 0:
		return fmt.Errorf("framing sizes must not be negative")
	}
	return nil
}

// frame returns the buffer size and wire size of a frame with the given payload and header bytes.
func (c *Config) frame(payload, header int) (size, wire int32) {
	s := payload + header
	if s < c.MinFrame {
		s = c.MinFrame
	}
	return int32(s), int32(s + c.L1Overhead)
}
