package main

import (
	"fmt"
	"io"
	"sort"

	"github.com/fabricsim/fabricsim/result"
	"github.com/fabricsim/fabricsim/units"
)

// printRoCE adds the RoCE fabric's lines to the run summary: PFC, ECN/DCQCN, and the ports that
// spent the longest paused (the full table is ports.csv with --out).
func printRoCE(w io.Writer, res *result.Run) {
	c := res.Counters
	if _, ok := c["pfc_pause_frames_sent"]; ok {
		fmt.Fprintf(w, "  pfc       %.0f PAUSE and %.0f XON sent, %v paused in total over all ports, %.0f watchdog triggers\n",
			c["pfc_pause_frames_sent"], c["pfc_resume_frames_sent"], units.Time(c["pfc_paused_time_ns"]*1000), c["pfc_watchdog_triggers"])
		if c["pfc_headroom_drops"] > 0 {
			fmt.Fprintf(w, "  WARNING   %.0f lossless packets dropped for lack of PFC headroom: the headroom is misconfigured (see 'fabricsim headroom')\n", c["pfc_headroom_drops"])
		}
	}
	if _, ok := c["ecn_marks"]; ok {
		fmt.Fprintf(w, "  ecn       %.0f CE marks, %.0f CNPs, %.0f DCQCN rate cuts\n", c["ecn_marks"], c["cnps_sent"], c["dcqcn_rate_decreases"])
	}
	if u, ok := c["hpcc_rate_updates"]; ok {
		fmt.Fprintf(w, "  hpcc      %.0f rate updates from INT\n", u)
	}
	if u, ok := c["dctcp_window_cuts"]; ok {
		fmt.Fprintf(w, "  dctcp     %.0f window cuts on echoed marks\n", u)
	}
	if u, ok := c["swift_window_decreases"]; ok {
		fmt.Fprintf(w, "  swift     %.0f window decreases on delay above target\n", u)
	}
	if u, ok := c["swift_endpoint_decreases"]; ok {
		fmt.Fprintf(w, "  swift     %.0f endpoint-window decreases on host delay above target\n", u)
	}
	if u, ok := c["timely_completions"]; ok {
		fmt.Fprintf(w, "  timely    %.0f completion events, %.0f rate decreases\n", u, c["timely_rate_decreases"])
	}
	var ports []result.PortCounters // the PFC and ECN rows (InfiniBand's carry credit stalls only)
	for _, p := range res.Ports {
		if p.PausesSent|p.ResumesSent|p.PausesReceived|p.ECNMarks|p.HeadroomDrops != 0 || p.PausedNs != 0 {
			ports = append(ports, p)
		}
	}
	if len(ports) == 0 {
		return
	}
	sort.SliceStable(ports, func(i, j int) bool { return ports[i].PausedNs > ports[j].PausedNs })
	fmt.Fprintf(w, "  ports     %-28s %4s %8s %8s %8s %12s %8s\n", "most paused", "prio", "sent", "xon", "rcvd", "paused", "marks")
	for _, p := range ports[:min(5, len(ports))] {
		fmt.Fprintf(w, "            %-28s %4d %8d %8d %8d %12v %8d\n", p.Port, p.Prio, p.PausesSent, p.ResumesSent, p.PausesReceived, units.Time(p.PausedNs*1000), p.ECNMarks)
	}
}
