// Package result is the one result schema every backend (packet, flow, analytic) fills, and the
// summaries and files computed from it: summary.json, flows.csv and HPCC ns-3's fct.txt. Reports
// and comparisons read only this package's types, never a backend's internals.
package result

import (
	"math"
	"sort"

	"github.com/fabricsim/fabricsim/units"
)

// Message is the outcome of one message (a flow, a collective step's transfer).
type Message struct {
	ID       int32
	Src, Dst int32
	Bytes    int64
	// Start is when the message was offered to the sender's NIC; Finish when its last byte was
	// delivered to the receiving application.
	Start, Finish units.Time
	// IdealFCT is the message's completion time alone on an idle network (closed form).
	IdealFCT units.Time
	Prio     uint8
	Tag      string
}

// FCT is the message's completion time.
func (m *Message) FCT() units.Time { return m.Finish - m.Start }

// Done reports whether the message completed (a run stopped early leaves some undone; a message
// that carries bytes cannot complete at time zero).
func (m *Message) Done() bool { return m.Finish > 0 || (m.Bytes == 0 && m.Finish >= m.Start) }

// Run is one backend run of one scenario.
type Run struct {
	Scenario string
	Seed     uint64
	Backend  string
	// BackendReason says why Backend ran the job when it was chosen for it (--backend auto:
	// "flow: estimated 310 M packet events, ..."); empty when the user named the backend.
	BackendReason string
	// SimTime is when the last message completed.
	SimTime units.Time
	// EndTime is the simulated time the run stopped at: after SimTime when the event queue
	// drained later (ACKs, timers), before the last completion when it was interrupted.
	EndTime    units.Time
	Events     uint64
	PacketHops uint64
	// WallSeconds is the host time the run took (excluded from determinism checks).
	WallSeconds float64
	Messages    []Message

	BytesSent          int64 // payload bytes put on the wire by senders, retransmissions included
	BytesDelivered     int64 // payload bytes delivered in order to receiving applications
	BytesRetransmitted int64
	Drops              int64
	DropsByCause       map[string]int64
	Timeouts           int64
	NAKs               int64
	// Counters holds fabric-specific totals (PFC pauses, ECN marks, credit stalls ...), by
	// stable snake_case name, each declared in counters.go with its aggregation and family. Nil
	// when the backend counts nothing (analytic): then drops, timeouts, NAKs and retransmissions
	// were not modelled either, rather than zero.
	Counters map[string]float64
	// Ports lists per port and priority link-level activity (PFC, ECN) where there was any.
	Ports []PortCounters

	// PacketScale is how many real packets the packet backend merged into one (0 or 1: none).
	PacketScale int
	// Omitted names the mechanisms of the fabric configuration that the backend left out of
	// this run ("PFC", "credit-based flow control" ...): the analytic backend's fluid model has
	// no queues, so a fabric's congestion control, PFC and credits make no difference there.
	// Empty when the backend modelled everything the configuration turns on.
	Omitted []string
	// NoDraws is set by the flow backend when the run drew no random number (no ECN mark reached
	// DCQCN's notification point, no loss was modelled): its result then depends on the seed
	// only through the routes (flow.SameRoutes). Not written out.
	NoDraws bool `json:"-"`
	// NoQueues is set by the flow backend when no switch buffer held a byte during the run: which
	// links met at which switch made no difference to it. Not written out.
	NoQueues bool `json:"-"`
	// Stopped is set by the flow backend when the run stopped at a control loop's first act
	// (flow.Options.StopOnControl): its messages and counters are the run's so far. Not written
	// out.
	Stopped bool `json:"-"`
}

// Dist summarizes a distribution.
type Dist struct {
	Min  float64 `json:"min"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

// Percentile returns the p-th percentile (0..100) of sorted values by the nearest-rank method,
// which always returns a value that occurred.
func Percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	if rank < 1 {
		rank = 1
	}
	if rank > len(sorted) {
		rank = len(sorted)
	}
	return sorted[rank-1]
}

// Summarize computes a Dist of vals (which it sorts).
func Summarize(vals []float64) Dist {
	if len(vals) == 0 {
		return Dist{}
	}
	sort.Float64s(vals)
	sum := 0.0
	for _, v := range vals {
		sum += v
	}
	return Dist{
		Min: vals[0], P50: Percentile(vals, 50), P90: Percentile(vals, 90), P99: Percentile(vals, 99),
		Max: vals[len(vals)-1], Mean: sum / float64(len(vals)),
	}
}
