package result

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"

	"github.com/fabricsim/fabricsim/units"
)

// Summary is summary.json: the figures a user or a sweep compares across runs. It holds only
// what the scenario and seed determine (the same bytes on every run); the host time a run took
// is in Timing (timing.json).
type Summary struct {
	Scenario           string             `json:"scenario"`
	Seed               uint64             `json:"seed"`
	Backend            string             `json:"backend"`
	BackendReason      string             `json:"backend_reason,omitempty"` // why, when --backend auto chose it
	SimTimeNs          float64            `json:"sim_time_ns"`
	Flows              int                `json:"flows"`
	Unfinished         int                `json:"unfinished,omitempty"`
	FCTNs              Dist               `json:"fct_ns"`
	Slowdown           SlowdownDist       `json:"slowdown"`
	BytesSent          int64              `json:"bytes_sent"`
	BytesDelivered     int64              `json:"bytes_delivered"`
	BytesRetransmitted int64              `json:"bytes_retransmitted"`
	Drops              int64              `json:"drops"`
	DropsByCause       map[string]int64   `json:"drops_by_cause"`
	Timeouts           int64              `json:"timeouts"`
	NAKs               int64              `json:"naks"`
	Events             uint64             `json:"events"`
	PacketHops         uint64             `json:"packet_hops"`
	Counters           map[string]float64 `json:"counters,omitempty"`
}

// SlowdownDist is FCT over ideal FCT.
type SlowdownDist struct {
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

// Summary computes the summary over messages that carry bytes.
func (r *Run) Summary() Summary {
	var fct, slow []float64
	flows, unfinished := 0, 0
	for i := range r.Messages {
		m := &r.Messages[i]
		if m.Bytes == 0 {
			continue
		}
		flows++
		if !m.Done() {
			unfinished++ // an interrupted or time-limited run: no FCT to count
			continue
		}
		f := m.FCT().Nanoseconds()
		fct = append(fct, f)
		if m.IdealFCT > 0 {
			slow = append(slow, float64(m.FCT())/float64(m.IdealFCT))
		}
	}
	sd := Summarize(slow)
	drops := r.DropsByCause
	if drops == nil {
		drops = map[string]int64{}
	}
	return Summary{
		Scenario: r.Scenario, Seed: r.Seed, Backend: r.Backend, BackendReason: r.BackendReason,
		SimTimeNs: r.SimTime.Nanoseconds(), Flows: flows, Unfinished: unfinished, FCTNs: Summarize(fct),
		Slowdown:  SlowdownDist{P50: sd.P50, P99: sd.P99, Max: sd.Max, Mean: sd.Mean},
		BytesSent: r.BytesSent, BytesDelivered: r.BytesDelivered, BytesRetransmitted: r.BytesRetransmitted,
		Drops: r.Drops, DropsByCause: drops, Timeouts: r.Timeouts, NAKs: r.NAKs,
		Events: r.Events, PacketHops: r.PacketHops, Counters: r.Counters,
	}
}

// Metrics flattens the summary into dotted names ("fct_ns.p99", "drops") for sweeps.
func (s Summary) Metrics() map[string]float64 {
	m := map[string]float64{
		"sim_time_ns": s.SimTimeNs, "flows": float64(s.Flows),
		"fct_ns.min": s.FCTNs.Min, "fct_ns.p50": s.FCTNs.P50, "fct_ns.p90": s.FCTNs.P90,
		"fct_ns.p99": s.FCTNs.P99, "fct_ns.max": s.FCTNs.Max, "fct_ns.mean": s.FCTNs.Mean,
		"slowdown.p50": s.Slowdown.P50, "slowdown.p99": s.Slowdown.P99,
		"slowdown.max": s.Slowdown.Max, "slowdown.mean": s.Slowdown.Mean,
		"bytes_sent": float64(s.BytesSent), "bytes_delivered": float64(s.BytesDelivered),
		"bytes_retransmitted": float64(s.BytesRetransmitted), "drops": float64(s.Drops),
		"timeouts": float64(s.Timeouts), "naks": float64(s.NAKs),
		"events": float64(s.Events), "packet_hops": float64(s.PacketHops),
	}
	for k, v := range s.DropsByCause {
		m["drops."+k] = float64(v)
	}
	for k, v := range s.Counters {
		m[k] = v
	}
	return m
}

// WriteJSON writes the summary as indented JSON with sorted keys (deterministic bytes).
func (s Summary) WriteJSON(w io.Writer) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}

// Timing is timing.json: how long the run took on this host. It varies from run to run, so it
// is kept apart from the deterministic outputs (summary.json, flows.csv, ports.csv).
type Timing struct {
	WallSeconds     float64 `json:"wall_seconds"`
	Events          uint64  `json:"events"`
	EventsPerSecond float64 `json:"events_per_second"`
}

// Timing returns the run's host timing.
func (r *Run) Timing() Timing {
	t := Timing{WallSeconds: r.WallSeconds, Events: r.Events}
	if r.WallSeconds > 0 {
		t.EventsPerSecond = float64(r.Events) / r.WallSeconds
	}
	return t
}

// WriteJSON writes timing.json.
func (t Timing) WriteJSON(w io.Writer) error {
	b, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// ns formats picoseconds as nanoseconds exactly ("1234.56").
func ns(t units.Time) string {
	neg := ""
	if t < 0 {
		neg, t = "-", -t
	}
	whole, frac := int64(t)/1000, int64(t)%1000
	if frac == 0 {
		return neg + strconv.FormatInt(whole, 10)
	}
	s := fmt.Sprintf("%s%d.%03d", neg, whole, frac)
	for s[len(s)-1] == '0' {
		s = s[:len(s)-1]
	}
	return s
}

// WriteFlowsCSV writes flows.csv: id,src,dst,size_bytes,start_ns,fct_ns,ideal_fct_ns, one row
// per message that carries bytes, in message order. Times are exact (picosecond resolution).
func (r *Run) WriteFlowsCSV(w io.Writer) error {
	bw := bufio.NewWriter(w)
	bw.WriteString("id,src,dst,size_bytes,start_ns,fct_ns,ideal_fct_ns\n")
	for i := range r.Messages {
		m := &r.Messages[i]
		if m.Bytes == 0 {
			continue
		}
		fct := "" // unfinished (the run was interrupted or hit its duration)
		if m.Done() {
			fct = ns(m.FCT())
		}
		fmt.Fprintf(bw, "%d,%d,%d,%d,%s,%s,%s\n", m.ID, m.Src, m.Dst, m.Bytes, ns(m.Start), fct, ns(m.IdealFCT))
	}
	return bw.Flush()
}

// WriteHPCCFct writes per-flow results in HPCC ns-3's fct.txt format ([HPCC]):
// "%08x %08x %u %u %lu %lu %lu %lu" = sip dip sport dport size start_ns fct_ns standalone_fct_ns,
// where node n's IP is 0x0b000001 + (n << 8). nodeOf maps a host index to its topology node ID
// (HPCC numbers hosts and switches together). Flows are ordered by finish time as ns-3 writes
// them when they complete. sport/dport: HPCC assigns sport per flow; we write 10000+flow ID and
// the flow's dport 100 (HPCC's default in its flow files).
func (r *Run) WriteHPCCFct(w io.Writer, nodeOf func(host int32) int) error {
	return r.WriteHPCCFctStandalone(w, nodeOf, func(m *Message) int64 { return int64(m.IdealFCT) / 1000 })
}

// WriteHPCCFctStandalone is WriteHPCCFct with the last column, the standalone FCT in ns, from
// standalone (fabricsim's ideal FCT, or HPCC's own formula: runner.HPCCStandalone).
func (r *Run) WriteHPCCFctStandalone(w io.Writer, nodeOf func(host int32) int, standalone func(m *Message) int64) error {
	idx := make([]int, 0, len(r.Messages))
	for i := range r.Messages {
		if r.Messages[i].Bytes > 0 && r.Messages[i].Done() {
			idx = append(idx, i)
		}
	}
	sort.SliceStable(idx, func(a, b int) bool { return r.Messages[idx[a]].Finish < r.Messages[idx[b]].Finish })
	bw := bufio.NewWriter(w)
	for _, i := range idx {
		m := &r.Messages[i]
		sip := 0x0b000001 + uint32(nodeOf(m.Src))<<8
		dip := 0x0b000001 + uint32(nodeOf(m.Dst))<<8
		fmt.Fprintf(bw, "%08x %08x %d %d %d %d %d %d\n", sip, dip, 10000+int(m.ID), 100, m.Bytes,
			int64(m.Start)/1000, int64(m.FCT())/1000, standalone(m))
	}
	return bw.Flush()
}
