package result

import (
	"slices"
	"strings"
)

// Aggregation says how the values of one counter from several runs (the classes of a step, the
// steps of a comparison) combine into one.
type Aggregation uint8

const (
	// Sum: a count or a duration; runs add up (and scale with the number of collectives).
	Sum Aggregation = iota
	// Max: a high-water mark (deepest buffer, largest index); the combination is the largest.
	Max
)

func (a Aggregation) String() string {
	if a == Max {
		return "max"
	}
	return "sum"
}

// Family groups counters that mean the same thing on different fabrics, so that a comparison
// reads one figure per family whatever the fabric: RoCE's ECN marks and InfiniBand's FECN marks
// are both congestion marks.
type Family uint8

const (
	// FamilyNone: a counter read on its own.
	FamilyNone Family = iota
	// FamilyPauseFrames: link-level PAUSE (XOFF) frames sent, refreshes included.
	FamilyPauseFrames
	// FamilyCreditStallNs: nanoseconds senders waited for link-level credits, summed over ports.
	FamilyCreditStallNs
	// FamilyCongestionMarks: packets marked as having met congestion (ECN CE, IB FECN).
	FamilyCongestionMarks
	// FamilyDrops: packets dropped, every cause.
	FamilyDrops
)

var familyNames = [...]string{"", "pause_frames", "credit_stall_ns", "congestion_marks", "drops"}

func (f Family) String() string {
	if int(f) < len(familyNames) {
		return familyNames[f]
	}
	return "family?"
}

// CounterInfo is a counter's declaration.
type CounterInfo struct {
	Name   string
	Agg    Aggregation
	Family Family
	// Doc says what the counter counts, in one line.
	Doc string
}

// counters declares every counter a backend may put in Run.Counters, and the totals of Run
// that comparisons keep beside them (drops, timeouts, naks, bytes_retransmitted). A name with a
// dot is a breakdown of the counter before the dot (ib_credit_stall_ns.vl0): it aggregates as
// its base and belongs to no family, so that a family total does not count it twice.
var counters = func() map[string]CounterInfo {
	m := map[string]CounterInfo{}
	for _, c := range []CounterInfo{
		// Every fabric (fabric/network.go).
		{"out_of_order_packets", Sum, FamilyNone, "data packets that arrived ahead of the next expected one"},
		{"duplicate_packets", Sum, FamilyNone, "data packets that arrived twice"},
		{"max_switch_buffer_bytes", Max, FamilyNone, "the most bytes any switch's shared buffer held"},
		// Run totals, as comparisons carry them.
		{"drops", Sum, FamilyDrops, "packets dropped, every cause"},
		{"timeouts", Sum, FamilyNone, "retransmission timeouts"},
		{"naks", Sum, FamilyNone, "NAKs sent"},
		{"bytes_retransmitted", Sum, FamilyNone, "payload bytes sent again"},
		// RoCEv2: PFC (fabric/pfc.go), ECN (ecn.go), DCQCN (dcqcn.go).
		{"pfc_pause_frames_sent", Sum, FamilyPauseFrames, "PFC XOFF frames sent, refreshes included"},
		{"pfc_resume_frames_sent", Sum, FamilyNone, "PFC XON frames sent"},
		{"pfc_frames_received", Sum, FamilyNone, "PFC frames received"},
		{"pfc_paused_time_ns", Sum, FamilyNone, "time egress queues were paused, summed over ports and priorities"},
		{"pfc_headroom_drops", Sum, FamilyNone, "lossless packets dropped for lack of headroom"},
		{"pfc_max_headroom_used_bytes", Max, FamilyNone, "the most headroom any ingress port and priority used"},
		{"pfc_watchdog_triggers", Sum, FamilyNone, "queues the PFC watchdog flushed"},
		{"fault_link_downs", Sum, FamilyNone, "links that went down (faults)"},
		{"fault_link_ups", Sum, FamilyNone, "links that came back up (faults)"},
		{"fault_reroutes", Sum, FamilyNone, "routing changes after link state changes: subnet manager sweeps, ECMP reconvergence"},
		{"fault_lost_on_wire_packets", Sum, FamilyNone, "packets lost on a link as it went down"},
		{"fault_lost_at_down_port_packets", Sum, FamilyNone, "packets dropped at a port whose link was down (queued there, or forwarded to it before the reroute)"},
		{"fault_pfc_storm_victim_ports", Sum, FamilyNone, "port-priorities other than the one facing a storming NIC that received PAUSE"},
		{"fault_pfc_storm_victim_paused_ns", Sum, FamilyNone, "time those victim port-priorities were paused, summed"},
		{"fault_slow_receiver_max_buffer_bytes", Max, FamilyNone, "the most bytes a slow receiver's NIC buffer held"},
		{"fault_slow_receiver_pauses", Sum, FamilyNone, "PFC pauses a slow receiver's NIC started (refreshes not counted)"},
		{"pfc_headroom_misconfigured", Max, FamilyNone, "1 when a port's headroom is below what its cable needs"},
		{"ecn_marks", Sum, FamilyCongestionMarks, "packets ECN CE-marked at switch egress"},
		{"cnps_sent", Sum, FamilyNone, "DCQCN congestion notifications sent (CNP packets, or flagged ACKs with cnp: ack-flag)"},
		{"cnps_received", Sum, FamilyNone, "DCQCN congestion notifications received"},
		{"dcqcn_rate_decreases", Sum, FamilyNone, "DCQCN rate cuts"},
		{"hpcc_rate_updates", Sum, FamilyNone, "HPCC rate changes from the INT on ACKs (fabric/hpcc.go)"},
		{"dctcp_window_cuts", Sum, FamilyNone, "DCTCP window cuts on echoed ECN marks, at most one per window (fabric/dctcp.go)"},
		{"swift_endpoint_decreases", Sum, FamilyNone, "Swift endpoint-window decreases on host delay above swift_endpoint_target, at most one per RTT (fabric/swift.go)"},
		{"timely_completions", Sum, FamilyNone, "TIMELY completion events (a segment's last byte acknowledged), each one rate update (fabric/timely.go)"},
		{"timely_rate_decreases", Sum, FamilyNone, "TIMELY rate decreases: RTT above T_high or a positive RTT gradient (fabric/timely.go)"},
		{"swift_window_decreases", Sum, FamilyNone, "Swift multiplicative window decreases on delay above target, at most one per RTT (fabric/swift.go)"},
		// InfiniBand: credits (fabric/ibcredit.go), routing (ibroute.go), IB CC (ibcc.go).
		{"ib_credit_stall_ns", Sum, FamilyCreditStallNs, "time ports with a packet waited for credits, summed over ports and VLs"},
		{"ib_fc_packets", Sum, FamilyNone, "flow-control (credit) packets sent"},
		{"ib_max_vl_buffer_bytes", Max, FamilyNone, "the most bytes any VL receive buffer held"},
		{"ib_ar_decisions", Sum, FamilyNone, "adaptive-routing decisions"},
		{"ib_ar_deviations", Sum, FamilyNone, "adaptive-routing decisions that left the linear forwarding table's port"},
		{"ib_reordered_packets", Sum, FamilyNone, "data packets delivered out of order under adaptive routing"},
		{"ib_fecn_marked", Sum, FamilyCongestionMarks, "packets FECN-marked by IB congestion control"},
		{"ib_becn_sent", Sum, FamilyNone, "BECN notifications sent"},
		{"ib_becn_received", Sum, FamilyNone, "BECN notifications received"},
		{"ib_ccti_max_final", Max, FamilyNone, "the largest congestion-control table index at the end of the run"},
	} {
		m[c.Name] = c
	}
	return m
}()

// Counter returns the declaration of a counter by name, and whether it is declared. A dotted
// name (a breakdown) gets its base counter's aggregation and no family.
func Counter(name string) (CounterInfo, bool) {
	base, _, dotted := strings.Cut(name, ".")
	c, ok := counters[base]
	if dotted {
		c.Name, c.Family = name, FamilyNone
	}
	return c, ok
}

// Counters returns every declared counter, sorted by name.
func Counters() []CounterInfo {
	out := make([]CounterInfo, 0, len(counters))
	for _, c := range counters {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b CounterInfo) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// AggregationOf is the declared aggregation of a counter; an undeclared one is summed.
func AggregationOf(name string) Aggregation {
	c, _ := Counter(name)
	return c.Agg
}

// Combine adds counter x of one run into acc by the counter's aggregation: Sum adds x times
// weight (the run standing for weight runs), Max keeps the largest x.
func Combine(acc map[string]float64, name string, x, weight float64) {
	if AggregationOf(name) == Max {
		acc[name] = max(acc[name], x)
		return
	}
	acc[name] += x * weight
}

// FamilyTotal is the sum of the counters of family f in m, in name order (so the result is
// the same bits every time).
func FamilyTotal(m map[string]float64, f Family) float64 {
	names := make([]string, 0, 4)
	for k := range m {
		if c, _ := Counter(k); c.Family == f {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	var x float64
	for _, k := range names {
		x += m[k]
	}
	return x
}
