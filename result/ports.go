package result

import (
	"bufio"
	"fmt"
	"io"
)

// PortCounters is one port and priority's link-level activity: PFC PAUSE frames sent (XOFF,
// refreshes included) and XONs, PAUSE frames received and the time the port's egress was
// paused, ECN CE marks made at its egress queue, and lossless drops for lack of headroom (RoCE);
// the time the port could not start a packet for lack of link credits (InfiniBand, Prio = VL).
type PortCounters struct {
	Port           string  `json:"port"` // node:index(->peer)
	Prio           int     `json:"prio"`
	PausesSent     int64   `json:"pauses_sent"`
	ResumesSent    int64   `json:"resumes_sent"`
	PausesReceived int64   `json:"pauses_received"`
	PausedNs       float64 `json:"paused_ns"`
	ECNMarks       int64   `json:"ecn_marks"`
	HeadroomDrops  int64   `json:"headroom_drops"`
	CreditStallNs  float64 `json:"credit_stall_ns"`
}

// WritePortsCSV writes ports.csv: one row per port and priority (VL on InfiniBand) with any
// link-level activity; a run without any (a generic Ethernet fabric, an uncongested one) gets
// the header alone.
func (r *Run) WritePortsCSV(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "port,prio,pauses_sent,resumes_sent,pauses_received,paused_ns,ecn_marks,headroom_drops,credit_stall_ns")
	for _, p := range r.Ports {
		fmt.Fprintf(bw, "%s,%d,%d,%d,%d,%.3f,%d,%d,%.3f\n", p.Port, p.Prio, p.PausesSent, p.ResumesSent, p.PausesReceived, p.PausedNs, p.ECNMarks, p.HeadroomDrops, p.CreditStallNs)
	}
	return bw.Flush()
}
