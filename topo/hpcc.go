package topo

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/fabricsim/fabricsim/units"
)

// MaxImportNodes bounds the node count an imported topology file may declare, so that a corrupt
// header cannot make the importer allocate gigabytes.
const MaxImportNodes = 1 << 22

const hpccTopoFormat = "line 1 `<nodes> <switches> <links>`, line 2 the switch node ids, then one `<a> <b> <rate> <delay> <error_rate>` line per link"

// ImportHPCC reads an HPCC ns-3 topology file (alibaba-edu/High-Precision-Congestion-Control
// mix/topology.txt; also read by the ns-3 backends of SimAI and ASTRA-sim; [HPCC]):
//
//	<nodes> <switches> <links>
//	<switch id> ...                       (the <switches> switch node ids)
//	<a> <b> <rate> <delay> <error_rate>   (<links> lines, e.g. "0 320 100Gbps 1000ns 0.000000")
//
// Node i of the file becomes Nodes[i] ("n<i>"); nodes not listed as switches are hosts, numbered
// densely in id order. Switches get tier 1 (the file has no tiers). The rate takes the units
// package's spellings (100Gbps, 400Gb/s), the delay a unit (1000ns, 0.001ms, 1us). Like ns-3,
// which reads exactly the declared number of links, the importer ignores anything after the
// last declared link (the sample files in the HPCC repository end with a description of the
// format). Blank lines are skipped and the switch ids may wrap over several lines.
//
// Unlike ns-3, a host must have exactly one link: fabricsim models a multi-NIC server as several
// hosts. Parallel links between the same pair of nodes are kept (ns-3's HPCC keeps only the
// last one in its routing).
func ImportHPCC(r io.Reader, filename string) (*Graph, error) {
	lr := newLineReader(r, filename)
	ln, f, ok := lr.next()
	if !ok {
		if lr.err != nil {
			return nil, lr.err
		}
		return nil, fmt.Errorf("%s: empty file; an HPCC topology has %s", filename, hpccTopoFormat)
	}
	if len(f) != 3 {
		hint := ""
		if len(f) == 6 {
			hint = " (6 fields look like a SimAI topology header, which is not supported)"
		}
		return nil, fmt.Errorf("%s:%d: header has %d fields, want 3: <nodes> <switches> <links>%s", filename, ln, len(f), hint)
	}
	nodes, err := parseCount(f[0], 1, MaxImportNodes)
	if err != nil {
		return nil, fmt.Errorf("%s:%d: node count: %w", filename, ln, err)
	}
	switches, err := parseCount(f[1], 0, nodes-1)
	if err != nil {
		return nil, fmt.Errorf("%s:%d: switch count: %w (at least one of the %d nodes must be a host)", filename, ln, err, nodes)
	}
	links, err := parseCount(f[2], 0, math.MaxInt32)
	if err != nil {
		return nil, fmt.Errorf("%s:%d: link count: %w", filename, ln, err)
	}

	// Switch ids: the next `switches` fields, usually all on line 2.
	isSwitch := make(map[int32]bool, min(switches, 1<<16))
	switchLine := make(map[int32]int, min(switches, 1<<16))
	for len(isSwitch) < switches {
		ln, f, ok = lr.next()
		if !ok {
			if lr.err != nil {
				return nil, lr.err
			}
			return nil, fmt.Errorf("%s:%d: file ends after %d of the %d switch ids declared on line 1", filename, ln, len(isSwitch), switches)
		}
		for _, tok := range f {
			if len(isSwitch) == switches {
				return nil, fmt.Errorf("%s:%d: more switch ids than the %d declared on line 1 (extra id %q)", filename, ln, switches, tok)
			}
			id, err := parseID(tok, nodes)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: switch id %d: %w", filename, ln, len(isSwitch)+1, err)
			}
			if isSwitch[id] {
				return nil, fmt.Errorf("%s:%d: switch id %d is listed twice (first on line %d)", filename, ln, id, switchLine[id])
			}
			isSwitch[id] = true
			switchLine[id] = ln
		}
	}

	type linkRec struct {
		a, b    int32
		rate    units.Rate
		latency units.Time
		errRate float64
	}
	recs := make([]linkRec, 0, min(links, 1<<16))
	hostLine := make(map[int32]int)
	for i := 1; i <= links; i++ {
		ln, f, ok = lr.next()
		if !ok {
			if lr.err != nil {
				return nil, lr.err
			}
			return nil, fmt.Errorf("%s:%d: file ends after %d of the %d links declared on line 1", filename, ln, i-1, links)
		}
		if len(f) != 5 {
			return nil, fmt.Errorf("%s:%d: link %d: %d fields, want 5: <a> <b> <rate> <delay> <error_rate>", filename, ln, i, len(f))
		}
		var rec linkRec
		if rec.a, err = parseID(f[0], nodes); err != nil {
			return nil, fmt.Errorf("%s:%d: link %d: node a: %w", filename, ln, i, err)
		}
		if rec.b, err = parseID(f[1], nodes); err != nil {
			return nil, fmt.Errorf("%s:%d: link %d: node b: %w", filename, ln, i, err)
		}
		if rec.a == rec.b {
			return nil, fmt.Errorf("%s:%d: link %d joins node %d to itself", filename, ln, i, rec.a)
		}
		if rec.rate, err = units.ParseRate(f[2]); err != nil {
			return nil, fmt.Errorf("%s:%d: link %d: %w", filename, ln, i, err)
		}
		if rec.latency, err = units.ParseTime(f[3]); err != nil {
			return nil, fmt.Errorf("%s:%d: link %d: delay: %w", filename, ln, i, err)
		}
		e, perr := strconv.ParseFloat(f[4], 64)
		if perr != nil || math.IsNaN(e) || e < 0 || e > 1 {
			return nil, fmt.Errorf("%s:%d: link %d: error rate %q: want a probability between 0 and 1, e.g. 0 or 0.000001", filename, ln, i, f[4])
		}
		rec.errRate = e
		for _, x := range [2]int32{rec.a, rec.b} {
			if isSwitch[x] {
				continue
			}
			if prev, dup := hostLine[x]; dup {
				return nil, fmt.Errorf("%s:%d: link %d: host node %d already has a link (line %d); a host has exactly one NIC port (list a multi-NIC server as several hosts, or add node %d to the switch ids on line 2)",
					filename, ln, i, x, prev, x)
			}
			hostLine[x] = ln
		}
		recs = append(recs, rec)
	}
	if hosts := nodes - switches; len(hostLine) < hosts {
		// Every host needs a link; this also bounds nodes by the input size before allocating.
		for id := int32(0); ; id++ {
			if !isSwitch[id] && hostLine[id] == 0 {
				return nil, fmt.Errorf("%s: host node %d has no link; every host needs exactly one (line 1 declares %d nodes, %d of them switches, hence %d hosts, but only %d hosts appear in links)",
					filename, id, nodes, switches, hosts, len(hostLine))
			}
		}
	}

	g := &Graph{
		Name:  filename,
		Nodes: make([]Node, 0, nodes),
		Links: make([]Link, 0, len(recs)),
		Hosts: make([]NodeID, 0, nodes-switches),
	}
	for i := 0; i < nodes; i++ {
		if isSwitch[int32(i)] {
			g.AddNode(Switch, "n"+itoa(i), 1)
		} else {
			g.AddNode(Host, "n"+itoa(i), 0)
		}
	}
	for _, rec := range recs {
		id := g.Connect(NodeID(rec.a), NodeID(rec.b), rec.rate, rec.latency)
		g.Links[id].ErrorRate = rec.errRate
	}
	return g, nil
}

// parseCount parses a non-negative decimal count in [lo, hi].
func parseCount(s string, lo, hi int) (int, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a whole number", s)
	}
	if v < int64(lo) || v > int64(hi) {
		return 0, fmt.Errorf("%d is outside %d..%d", v, lo, hi)
	}
	return int(v), nil
}

// parseID parses a node id in [0, nodes).
func parseID(s string, nodes int) (int32, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a node id (want 0..%d)", s, nodes-1)
	}
	if v < 0 || v >= int64(nodes) {
		return 0, fmt.Errorf("node id %d is out of range 0..%d (line 1 declares %d nodes)", v, nodes-1, nodes)
	}
	return int32(v), nil
}

// WriteHPCCTopology writes g in the HPCC ns-3 topology.txt format read by ImportHPCC (and ns-3):
// node ids are g's NodeIDs; rates as in "100Gbps", delays in ns (or ps where not a whole ns),
// error rates in Go's shortest float form. Re-importing reproduces g's kinds, links, rates,
// delays and error rates; host dense indices match when g's hosts are in ascending node order,
// as every generator in this package makes them. Names and tiers are not part of the format.
func WriteHPCCTopology(w io.Writer, g *Graph) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "%d %d %d\n", len(g.Nodes), g.NumSwitches(), len(g.Links))
	first := true
	for i := range g.Nodes {
		if g.Nodes[i].Kind == Switch {
			if !first {
				bw.WriteByte(' ')
			}
			bw.WriteString(itoa(i))
			first = false
		}
	}
	bw.WriteByte('\n')
	for i := range g.Links {
		l := &g.Links[i]
		if l.Rate <= 0 || l.Latency < 0 {
			return fmt.Errorf("write HPCC topology: link %d (%s-%s) has rate %d bit/s and delay %d ps; want a positive rate and a non-negative delay",
				i, g.Nodes[l.A].Name, g.Nodes[l.B].Name, int64(l.Rate), int64(l.Latency))
		}
		delay := strconv.FormatInt(int64(l.Latency), 10) + "ps"
		if l.Latency%units.Nanosecond == 0 {
			delay = strconv.FormatInt(int64(l.Latency/units.Nanosecond), 10) + "ns"
		}
		fmt.Fprintf(bw, "%d %d %s %s %s\n", l.A, l.B, l.Rate, delay, strconv.FormatFloat(l.ErrorRate, 'g', -1, 64))
	}
	return bw.Flush()
}
