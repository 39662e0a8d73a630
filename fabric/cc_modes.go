package fabric

import (
	"github.com/fabricsim/fabricsim/transport/cc/dcqcn"
	"github.com/fabricsim/fabricsim/yamlstrict"
)

// The modes of issue 19's choices (ECN marking point, CNP transport, FCT end), kept apart from
// modes.go; each parses with the valid values in its error.

// ECNMarkPoint is when a switch's RED marker looks at the egress queue (key `ecn_mark`).
type ECNMarkPoint string

const (
	// ECNMarkEnqueue marks a packet by the queue it joins, as the DCQCN and DCTCP papers'
	// congestion points do ([DCQCN] §3.1, [DCTCP] §3.1: "upon its arrival").
	ECNMarkEnqueue ECNMarkPoint = "enqueue"
	// ECNMarkDequeue marks a packet by the queue it leaves behind as it starts transmitting,
	// as HPCC's ns-3 switch does (SwitchNode::SwitchNotifyDequeue, [HPCC-ns3]).
	ECNMarkDequeue ECNMarkPoint = "dequeue"
)

// ECNMarkPoints are the valid marking points.
var ECNMarkPoints = []ECNMarkPoint{ECNMarkEnqueue, ECNMarkDequeue}

// UnmarshalText parses a marking point.
func (m *ECNMarkPoint) UnmarshalText(b []byte) error {
	return parseMode(m, b, "an ECN marking point", ECNMarkPoints)
}

// CNPMode is how a receiver tells a sender about CE-marked packets (key `cnp`).
type CNPMode string

const (
	// CNPPacket sends RoCEv2 CNP packets, at most one per QP per dcqcn_cnp_interval ([IBA]
	// Annex A17.9).
	CNPPacket CNPMode = "packet"
	// CNPAckFlag sets a flag on the ACK or NAK the CE-marked packet causes: no extra packet, no
	// rate limit (HPCC's ns-3: RdmaHw::ReceiveUdp's SetCnp, [HPCC-ns3]).
	CNPAckFlag CNPMode = "ack-flag"
)

// CNPModes are the valid CNP transports.
var CNPModes = []CNPMode{CNPPacket, CNPAckFlag}

// UnmarshalText parses a CNP transport.
func (m *CNPMode) UnmarshalText(b []byte) error {
	return parseMode(m, b, "a CNP transport", CNPModes)
}

// FCTEnd is the event that ends a message's flow completion time (key `fct_end`).
type FCTEnd string

const (
	// FCTDelivery: the last byte is delivered at the receiver.
	FCTDelivery FCTEnd = "delivery"
	// FCTLastAck: the ACK of the last byte reaches the sender, where HPCC's ns-3 ends a flow
	// (rdma-hw.cc: QpComplete from ReceiveAck). Dependent messages start then too.
	FCTLastAck FCTEnd = "last-ack"
)

// FCTEnds are the valid ends.
var FCTEnds = []FCTEnd{FCTDelivery, FCTLastAck}

// UnmarshalText parses an FCT end.
func (m *FCTEnd) UnmarshalText(b []byte) error {
	return parseMode(m, b, "an FCT end", FCTEnds)
}

// PacketOnly returns an error naming the first setting only the packet backend models (the
// DCQCN models other than paper, CNPs on ACKs, the ECN dequeue marker, the ACK class, fct_end
// last-ack), or nil. Other backends refuse such a fabric rather than ignore the setting.
func (c *Config) PacketOnly() error {
	e := yamlstrict.Errorf
	const why = "only the packet backend models it (run with --backend packet)"
	if c.Kind == KindRoCE {
		r := &c.RoCE
		switch {
		case r.DCQCN && r.DCQCNModel != "" && r.DCQCNModel != dcqcn.ModelPaper:
			return e("dcqcn_model", "%s: %s", r.DCQCNModel, why)
		case r.CNP == CNPAckFlag:
			return e("cnp", "%s: %s", r.CNP, why)
		case r.ECN && r.ECNMark == ECNMarkDequeue:
			return e("ecn_mark", "%s: %s", r.ECNMark, why)
		case r.INT || r.HPCC:
			return e("hpcc", "in-band telemetry and HPCC: %s", why)
		case r.DCTCP:
			return e("dctcp", "DCTCP windows: %s", why)
		case r.Swift:
			return e("swift", "Swift windows: %s", why)
		case r.Timely:
			return e("timely", "TIMELY rates: %s", why)
		case c.AckPriority != 0:
			return e("ack_priority", "%d: %s", c.AckPriority, why)
		case c.Transport == TransportUET:
			return e("transport", "%s (Ultra Ethernet): %s", c.Transport, why)
		case c.OOOWindow > 0:
			return e("ooo_window", "%d: %s", c.OOOWindow, why)
		}
	}
	if c.SprayPolicy == SprayLeastQueue {
		return e("spray_policy", "%s: %s", c.SprayPolicy, why)
	}
	if c.FCTEnd == FCTLastAck {
		return e("fct_end", "%s: %s", c.FCTEnd, why)
	}
	return nil
}
