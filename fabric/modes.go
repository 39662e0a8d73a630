package fabric

import (
	"fmt"
	"math/bits"
	"reflect"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/fabricsim/fabricsim/yamlstrict"
)

// The fabric's modes are typed constants parsed where a file is read (UnmarshalText, with an
// error listing the valid values), so that a misspelt mode never reaches a run. Their values are
// the words scenarios use, which keeps them readable in compare.json and in messages.

// Kind is the fabric kind (key `kind`): which policies New installs.
type Kind string

const (
	// KindEthernet: no link-level flow control or congestion control, tail drop (DefaultEthernet).
	KindEthernet Kind = "ethernet"
	// KindRoCE: RoCEv2 with PFC, ECN and DCQCN (roce.go).
	KindRoCE Kind = "roce"
	// KindInfiniBand: credit-based link-level flow control, VLs, subnet-manager routing
	// (infiniband.go).
	KindInfiniBand Kind = "infiniband"
)

// Kinds are the fabric kinds.
var Kinds = []Kind{KindEthernet, KindRoCE, KindInfiniBand}

// UnmarshalText parses a fabric kind.
func (k *Kind) UnmarshalText(b []byte) error {
	return parseMode(k, b, "a fabric kind", Kinds)
}

// Routing is how an Ethernet switch picks among equal-cost next hops (key `routing`).
type Routing string

const (
	// RoutingECMP hashes each flow (QP) onto one next hop.
	RoutingECMP Routing = "ecmp"
	// RoutingSpray picks a next hop at random for every packet.
	RoutingSpray Routing = "spray"
)

// Routings are the valid routing policies.
var Routings = []Routing{RoutingECMP, RoutingSpray}

// UnmarshalText parses a routing policy.
func (r *Routing) UnmarshalText(b []byte) error {
	return parseMode(r, b, "a routing policy", Routings)
}

// Transport is the reliable transport's loss recovery (key `transport`).
type Transport string

const (
	// TransportDefault is go-back-N, or on an InfiniBand fabric with adaptive routing the
	// reorder-tolerant receiver (the fabric resolves it when it is built).
	TransportDefault Transport = ""
	// TransportGoBackN: the receiver accepts only the next expected byte and NAKs the first
	// gap; the sender resends from the first unacknowledged byte.
	TransportGoBackN Transport = "gbn"
	// TransportIRN is IRN's selective repeat (Mittal et al., SIGCOMM'18): the receiver keeps
	// out-of-order packets and NAKs each gap with a SACK, the sender resends only the lost ones.
	TransportIRN Transport = "irn"
	// TransportReorder is a go-back-N sender whose receiver accepts out-of-order packets
	// without NAKing, as HCAs do under adaptive routing on a lossless fabric (ibooo.go).
	TransportReorder Transport = "ooo"
	// TransportUET is Ultra Ethernet's transport (UET 1.0; fabric/uet.go): a fresh entropy value
	// on every packet, reliable unordered delivery with SACKs (rc.RUD) and, unless uet_cc says
	// none, NSCC's windows (transport/cc/nscc).
	TransportUET Transport = "uet"
)

// Transports are the loss recoveries a scenario can name (RoCE's `transport` key takes the
// first two; the reorder-tolerant receiver comes with InfiniBand adaptive routing).
var Transports = []Transport{TransportGoBackN, TransportIRN, TransportReorder, TransportUET}

// UnmarshalText parses a loss recovery.
func (t *Transport) UnmarshalText(b []byte) error {
	for _, v := range Transports {
		if string(b) == string(v) {
			*t = v
			return nil
		}
	}
	return fmt.Errorf("%q is not a loss recovery (valid: gbn = go-back-N, irn = selective repeat, ooo = go-back-N with out-of-order placement, uet = Ultra Ethernet)", b)
}

// PFCThreshold is the rule that sets a lossless class's XOFF threshold (key `pfc_threshold`).
type PFCThreshold string

const (
	// PFCStatic pauses at the configured XOFF and resumes at XON.
	PFCStatic PFCThreshold = "static"
	// PFCDynamic pauses at alpha x the switch's free shared buffer and resumes XONOffset below.
	PFCDynamic PFCThreshold = "dynamic"
)

// PFCThresholds are the valid threshold rules.
var PFCThresholds = []PFCThreshold{PFCStatic, PFCDynamic}

// UnmarshalText parses a threshold rule.
func (p *PFCThreshold) UnmarshalText(b []byte) error {
	return parseMode(p, b, "a PFC threshold rule", PFCThresholds)
}

func parseMode[T ~string](dst *T, b []byte, what string, valid []T) error {
	for _, v := range valid {
		if string(b) == string(v) {
			*dst = v
			return nil
		}
	}
	return fmt.Errorf("%q is not %s (valid: %s)", b, what, modeList(valid))
}

func modeList[T ~string](valid []T) string {
	s := make([]string, len(valid))
	for i, v := range valid {
		s[i] = string(v)
	}
	return strings.Join(s, ", ")
}

func validMode[T ~string](v T, valid []T) bool {
	for _, x := range valid {
		if v == x {
			return true
		}
	}
	return false
}

// PrioritySet is a set of the 8 Ethernet priorities, a bit per priority (bit p = priority p).
// Scenarios write it as a list: `[3]`, `[6, 7]`.
type PrioritySet uint8

// Has reports whether priority p is in the set.
func (s PrioritySet) Has(p uint8) bool { return p < 8 && s&(1<<p) != 0 }

// Len is the number of priorities in the set.
func (s PrioritySet) Len() int { return bits.OnesCount8(uint8(s)) }

// List returns the priorities in ascending order.
func (s PrioritySet) List() []int {
	var out []int
	for p := 0; p < 8; p++ {
		if s&(1<<p) != 0 {
			out = append(out, p)
		}
	}
	return out
}

// String writes the set as scenarios do: "[6, 7]".
func (s PrioritySet) String() string {
	var b strings.Builder
	b.WriteByte('[')
	for i, p := range s.List() {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(p))
	}
	b.WriteByte(']')
	return b.String()
}

// DecodeYAML reads a list of priorities 0..7, reporting a bad one at its own position.
func (s *PrioritySet) DecodeYAML(d *yamlstrict.Decoder, n *yaml.Node, path string) error {
	var list []int
	if err := d.Decode(n, reflect.ValueOf(&list).Elem(), path); err != nil {
		return err
	}
	*s = 0
	for i, p := range list {
		if p < 0 || p > 7 {
			return d.At(fmt.Sprintf("%s[%d]", path, i), "priority %d outside 0..7", p)
		}
		*s |= 1 << p
	}
	return nil
}
