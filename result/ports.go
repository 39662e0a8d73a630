package result

import (
	"bufio"
	"fmt"
	"io"
)

// PortCounters is one port and priority's link-level activity: PFC PAUSE frames sent (XOFF,
// refreshes included) and XONs, PAUSE frames received and the time the port's egress was
// paused, ECN CE marks made at its egress queue, and lossless drops for lack of headroom.
type PortCounters struct {
	Port           string  `json:"port"` // node:index(->peer)
	Prio           int     `json:"prio"`
	PausesSent     int64   `json:"pauses_sent"`
	ResumesSent    int64   `json:"resumes_sent"`
	PausesReceived int64   `json:"pauses_received"`
	PausedNs       float64 `json:"paused_ns"`
	ECNMarks       int64   `json:"ecn_marks"`
	HeadroomDrops  int64   `json:"headroom_drops"`
}

// WritePortsCSV writes ports.csv: one row per port and priority with any activity.
func (r *Run) WritePortsCSV(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "port,prio,pauses_sent,resumes_sent,pauses_received,paused_ns,ecn_marks,headroom_drops")
	for _, p := range r.Ports {
		fmt.Fprintf(bw, "%s,%d,%d,%d,%d,%.3f,%d,%d\n", p.Port, p.Prio, p.PausesSent, p.ResumesSent, p.PausesReceived, p.PausedNs, p.ECNMarks, p.HeadroomDrops)
	}
	return bw.Flush()
}
