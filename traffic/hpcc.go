package traffic

import (
	"bufio"
	"fmt"
	"io"
	"strconv"

	"github.com/fabricsim/fabricsim/units"
)

// hpccQueues is the number of priority groups of an HPCC ns-3 switch (SwitchMmu::qCnt = 8), so
// a flow's priority field must be 0..7.
const hpccQueues = 8

const hpccFlowFormat = "`<src> <dst> <priority> <dport> <size_bytes> <start_s>`"

// ImportHPCCFlows reads an HPCC ns-3 flow file (alibaba-edu/High-Precision-Congestion-Control
// mix/flow.txt; [HPCC]):
//
//	<flows>
//	<src> <dst> <priority> <dport> <size_bytes> <start_s>   (<flows> lines, e.g. "2 1 3 100 200000000 2")
//
// src and dst are topology node ids, mapped to dense host indices by hostOfNode (e.g.
// (*topo.Graph).HostOfNode); priority is the priority group 0..7; start is in seconds, converted
// to picoseconds exactly from the decimal text (2.000000001 s = 2000000001000 ps). Flow IDs are
// 0-based positions in the file. As in ns-3, which reads flows one after another in time order,
// start times must not decrease, and anything after the last declared flow is ignored (the
// sample file in the HPCC repository ends with notes on the format).
func ImportHPCCFlows(r io.Reader, filename string, hostOfNode func(node int) (host int, ok bool)) ([]Flow, error) {
	lr := newLineReader(r, filename, false)
	ln, f, ok := lr.next()
	if !ok {
		if lr.err != nil {
			return nil, lr.err
		}
		return nil, fmt.Errorf("%s: empty file; an HPCC flow file has line 1 `<flows>`, then one %s line per flow", filename, hpccFlowFormat)
	}
	if len(f) != 1 {
		return nil, fmt.Errorf("%s:%d: first line has %d fields, want 1: the number of flows", filename, ln, len(f))
	}
	n, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil || n < 0 || n > maxFlows {
		return nil, fmt.Errorf("%s:%d: flow count %q: want a whole number 0..%d", filename, ln, f[0], maxFlows)
	}
	flows := make([]Flow, 0, min(n, 1<<16))
	for i := 0; i < int(n); i++ {
		ln, f, ok = lr.next()
		if !ok {
			if lr.err != nil {
				return nil, lr.err
			}
			return nil, fmt.Errorf("%s:%d: file ends after %d of the %d flows declared on line 1", filename, ln, i, n)
		}
		fl, err := parseHPCCFlow(f, hostOfNode)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: flow %d: %w", filename, ln, i, err)
		}
		fl.ID = i
		if i > 0 && fl.Start < flows[i-1].Start {
			return nil, fmt.Errorf("%s:%d: flow %d starts at %s, before flow %d (%s); HPCC reads flows in file order and needs ascending start times",
				filename, ln, i, f[5]+"s", i-1, formatScaled(int64(flows[i-1].Start), 12)+"s")
		}
		flows = append(flows, fl)
	}
	return flows, nil
}

func parseHPCCFlow(f []string, hostOfNode func(int) (int, bool)) (Flow, error) {
	var fl Flow
	if len(f) != 6 {
		return fl, fmt.Errorf("%d fields, want 6: %s", len(f), hpccFlowFormat)
	}
	for k, which := range [2]string{"src", "dst"} {
		node, err := strconv.ParseInt(f[k], 10, 32)
		if err != nil || node < 0 {
			return fl, fmt.Errorf("%s node %q: want a node id (a whole number >= 0)", which, f[k])
		}
		h, ok := hostOfNode(int(node))
		if !ok {
			return fl, fmt.Errorf("%s node %d is not a host of the topology (a switch, or beyond its last node)", which, node)
		}
		if k == 0 {
			fl.Src = h
		} else {
			fl.Dst = h
		}
	}
	if fl.Src == fl.Dst {
		return fl, fmt.Errorf("sends from node %s to itself", f[0])
	}
	pg, err := strconv.ParseUint(f[2], 10, 8)
	if err != nil || pg >= hpccQueues {
		return fl, fmt.Errorf("priority %q: want a priority group 0..%d", f[2], hpccQueues-1)
	}
	fl.Prio = uint8(pg)
	dport, err := strconv.ParseUint(f[3], 10, 16)
	if err != nil {
		return fl, fmt.Errorf("dport %q: want a port number 0..65535", f[3])
	}
	fl.DPort = uint16(dport)
	size, err := strconv.ParseInt(f[4], 10, 64)
	if err != nil || size <= 0 {
		return fl, fmt.Errorf("size %q: want a whole number of bytes >= 1", f[4])
	}
	fl.Size = units.Size(size)
	start, err := parseScaled(f[5], 12)
	if err != nil {
		return fl, fmt.Errorf("start %q %v: want seconds >= 0 with at most 12 decimal places (1 ps), e.g. 2 or 2.000000001", f[5], err)
	}
	fl.Start = units.Time(start)
	return fl, nil
}

// WriteHPCCFlows writes flows in the HPCC flow.txt format read by ImportHPCCFlows (and ns-3):
// nodeOfHost maps a dense host index to its topology node id (e.g. (*topo.Graph).NodeOfHost).
// Start times are written in seconds with every picosecond kept. Flows must be in ascending start
// order with priorities 0..7 and no dependencies, which the format cannot express.
func WriteHPCCFlows(w io.Writer, flows []Flow, nodeOfHost func(host int) int) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "%d\n", len(flows))
	for i, f := range flows {
		switch {
		case len(f.Deps) > 0:
			return fmt.Errorf("write HPCC flows: flow %d (ID %d) depends on other flows; flow.txt has only start times", i, f.ID)
		case f.Prio >= hpccQueues:
			return fmt.Errorf("write HPCC flows: flow %d (ID %d) has priority %d; HPCC has priority groups 0..%d", i, f.ID, f.Prio, hpccQueues-1)
		case f.Size <= 0 || f.Start < 0:
			return fmt.Errorf("write HPCC flows: flow %d (ID %d): size %d B and start %s must be positive and non-negative", i, f.ID, int64(f.Size), f.Start)
		case i > 0 && f.Start < flows[i-1].Start:
			return fmt.Errorf("write HPCC flows: flow %d (ID %d) starts at %s, before flow %d (%s); sort flows by start time first", i, f.ID, f.Start, i-1, flows[i-1].Start)
		}
		fmt.Fprintf(bw, "%d %d %d %d %d %s\n", nodeOfHost(f.Src), nodeOfHost(f.Dst), f.Prio, f.DPort, int64(f.Size), formatScaled(int64(f.Start), 12))
	}
	return bw.Flush()
}
