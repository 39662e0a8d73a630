package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/fabricsim/fabricsim/result"
	"github.com/fabricsim/fabricsim/units"
)

// printIB adds the InfiniBand fabric's lines to the run summary: credit stalls (in total, per VL
// and the port VLs that waited longest), adaptive routing and reordering, and congestion
// control's FECN/BECN. Every figure is also in summary.json's counters (docs/infiniband.md).
func printIB(w io.Writer, res *result.Run) {
	c := res.Counters
	total, ok := c["ib_credit_stall_ns"]
	if !ok {
		return
	}
	ns := func(v float64) units.Time { return units.Time(v * 1000) }
	type stall struct {
		name string
		ns   float64
	}
	var perVL []string
	var ports []stall
	for k, v := range c {
		rest, ok := strings.CutPrefix(k, "ib_credit_stall_ns.")
		if !ok {
			continue
		}
		if v == 0 {
			continue
		}
		if !strings.Contains(rest, ".") { // "vl0", not "node.port1.vl0"
			perVL = append(perVL, fmt.Sprintf("%s %v", rest, ns(v)))
		} else {
			ports = append(ports, stall{rest, v})
		}
	}
	sort.Strings(perVL)
	fmt.Fprintf(w, "  credits   %v stalled for lack of credits in total over all ports", ns(total))
	if len(perVL) > 1 { // split by VL only where more than one VL waited
		fmt.Fprintf(w, " (%s)", strings.Join(perVL, ", "))
	}
	fmt.Fprintf(w, "; %.0f credit updates; fullest VL buffer %v\n", c["ib_fc_packets"], units.Size(c["ib_max_vl_buffer_bytes"]))
	if len(ports) > 0 {
		// Longest first; names break ties so that the lines do not depend on map order.
		sort.Slice(ports, func(i, j int) bool {
			if ports[i].ns != ports[j].ns {
				return ports[i].ns > ports[j].ns
			}
			return ports[i].name < ports[j].name
		})
		fmt.Fprintf(w, "  stalls    %-28s %12s\n", "most credit-stalled port.vl", "stalled")
		for _, p := range ports[:min(5, len(ports))] {
			fmt.Fprintf(w, "            %-28s %12v\n", p.name, ns(p.ns))
		}
	}
	if d := c["ib_ar_decisions"]; d > 0 {
		fmt.Fprintf(w, "  routing   adaptive: %.0f choices, %.0f away from the forwarding table's port", d, c["ib_ar_deviations"])
		if r, ok := c["ib_reordered_packets"]; ok {
			fmt.Fprintf(w, "; %.0f packets arrived out of order", r)
		}
		fmt.Fprintln(w)
	}
	if _, ok := c["ib_becn_sent"]; ok {
		fmt.Fprintf(w, "  ib cc     %.0f FECN marks, %.0f BECN sent, %.0f received; highest CCT index at the end %.0f\n",
			c["ib_fecn_marked"], c["ib_becn_sent"], c["ib_becn_received"], c["ib_ccti_max_final"])
	}
}
