package traffic

import (
	"bufio"
	"container/heap"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/fabricsim/fabricsim/units"
)

// maxHtsimNodes bounds the "Nodes N" header of a connection matrix.
const maxHtsimNodes = 1 << 24

type cmConn struct {
	line, num                   int // file line, 1-based connection number
	src, dst                    int
	id                          int // 0: none given
	size                        int64
	start                       int64
	hasSize, hasStart, hasPrio  bool
	prio                        uint8
	trigger, sendDone, recvDone int // trigger ids, 0: none
}

type cmTrigger struct {
	line, id int
	kind     string // oneshot, multishot, barrier
	count    int
}

// ImportHtsimCM reads an htsim connection matrix (Broadcom/csg-htsim, sim/datacenter/*.cm, parsed
// by ConnectionMatrix::load in connection_matrix.cpp) and returns its flows and its node count
// (hosts 0..nodes-1). The grammar htsim accepts:
//
//	Nodes <N>
//	Connections <C>
//	Triggers <T>                                     (optional; required when there are triggers)
//	<src>-><dst> [id <I>] [start <ps>] size <bytes> [prio <P>] [trigger <T>] [send_done_trigger <T>] [recv_done_trigger <T>]
//	trigger id <T> oneshot|multishot|barrier [count <K>]
//
// Attributes may come in any order; start is in picoseconds; a connection needs either a start
// time or a trigger, not both; flow and trigger ids are non-zero. A triggered flow waits for the
// flows that signal its trigger (send_done_trigger / recv_done_trigger): it gets them as Deps
// and Start 0. fabricsim treats both signals as "flow completed" (message delivered), and accepts
// the triggers that mean "after all of these flows": a oneshot trigger with one signalling flow,
// a barrier whose count equals its signalling flows, a multishot trigger with one signalling and
// one triggered flow. Others (a multishot trigger pairing flows in run-time order, a barrier that
// fires after some of its signallers, failures, the addon flag) are rejected, as are files htsim
// rejects (unknown words, count mismatches, both start and trigger, flow id 0).
//
// Flows are returned in file order except that a flow is moved after the flows it depends on.
// Flow.ID is the htsim id, or for connections without one, the next number above the largest
// id given. Beyond htsim, the importer requires a size >= 1, distinct flow ids, src != dst and
// src, dst < N; it allows '#' comments and any whitespace between fields.
func ImportHtsimCM(r io.Reader, filename string) (flows []Flow, nodes int, err error) {
	lr := newLineReader(r, filename, true)
	header := map[string]int{} // keyword -> value
	headerLine := map[string]int{}
	ln, f, ok := lr.next()
	for ; ok && !isCMBodyLine(f[0]); ln, f, ok = lr.next() {
		key := f[0]
		switch key {
		case "Nodes", "Connections", "Triggers", "Failures":
		default:
			return nil, 0, fmt.Errorf("%s:%d: unknown header keyword %q; want Nodes, Connections, Triggers or Failures, or a connection `<src>-><dst> ...`", filename, ln, key)
		}
		if len(f) != 2 {
			return nil, 0, fmt.Errorf("%s:%d: %s line has %d fields, want 2: `%s <count>`", filename, ln, key, len(f), key)
		}
		if prev, dup := headerLine[key]; dup {
			return nil, 0, fmt.Errorf("%s:%d: %s given twice (first on line %d)", filename, ln, key, prev)
		}
		limit := maxFlows
		if key == "Nodes" {
			limit = maxHtsimNodes
		}
		v, perr := strconv.Atoi(f[1])
		if perr != nil || v < 0 || v > limit {
			return nil, 0, fmt.Errorf("%s:%d: %s %q: want a whole number 0..%d", filename, ln, key, f[1], limit)
		}
		header[key], headerLine[key] = v, ln
	}
	if lr.err != nil {
		return nil, 0, lr.err
	}
	if len(headerLine) == 0 && !ok {
		return nil, 0, fmt.Errorf("%s: empty file; an htsim connection matrix starts with `Nodes <N>` and `Connections <C>` lines", filename)
	}
	if _, has := header["Nodes"]; !has {
		return nil, 0, fmt.Errorf("%s:%d: no `Nodes <N>` line before the first connection", filename, ln)
	}
	nodes = header["Nodes"]
	if nodes < 1 {
		return nil, 0, fmt.Errorf("%s:%d: Nodes 0: want at least 1 node", filename, headerLine["Nodes"])
	}
	nconns, has := header["Connections"]
	if !has {
		return nil, 0, fmt.Errorf("%s:%d: no `Connections <C>` line before the first connection", filename, ln)
	}
	if header["Failures"] > 0 {
		return nil, 0, fmt.Errorf("%s:%d: Failures %d: link and switch failures are not supported by fabricsim's importer; remove them", filename, headerLine["Failures"], header["Failures"])
	}

	conns := make([]cmConn, 0, min(nconns, 1<<16))
	var trigs []cmTrigger
	trigByID := map[int]int{}
	for ; ok; ln, f, ok = lr.next() {
		switch {
		case strings.Contains(f[0], "->"):
			if len(conns) == nconns {
				return nil, 0, fmt.Errorf("%s:%d: more connections than the %d declared on line %d", filename, ln, nconns, headerLine["Connections"])
			}
			c, err := parseCMConn(f, nodes)
			if err != nil {
				return nil, 0, fmt.Errorf("%s:%d: connection %d: %w", filename, ln, len(conns)+1, err)
			}
			c.line, c.num = ln, len(conns)+1
			conns = append(conns, c)
		case f[0] == "trigger":
			t, err := parseCMTrigger(f)
			if err != nil {
				return nil, 0, fmt.Errorf("%s:%d: trigger: %w", filename, ln, err)
			}
			if prev, dup := trigByID[t.id]; dup {
				return nil, 0, fmt.Errorf("%s:%d: trigger id %d declared twice (first on line %d)", filename, ln, t.id, trigs[prev].line)
			}
			t.line = ln
			trigByID[t.id] = len(trigs)
			trigs = append(trigs, t)
		case f[0] == "failure":
			return nil, 0, fmt.Errorf("%s:%d: failure lines are not supported by fabricsim's importer", filename, ln)
		case f[0] == "Nodes" || f[0] == "Connections" || f[0] == "Triggers" || f[0] == "Failures":
			return nil, 0, fmt.Errorf("%s:%d: header line %q after the first connection; put the header first", filename, ln, f[0])
		default:
			return nil, 0, fmt.Errorf("%s:%d: unknown line starting %q; want a connection `<src>-><dst> ...` or `trigger id <T> ...`", filename, ln, f[0])
		}
	}
	if lr.err != nil {
		return nil, 0, lr.err
	}
	if len(conns) < nconns {
		return nil, 0, fmt.Errorf("%s:%d: file ends after %d of the %d connections declared on line %d", filename, ln, len(conns), nconns, headerLine["Connections"])
	}
	if want := header["Triggers"]; len(trigs) != want {
		return nil, 0, fmt.Errorf("%s: %d trigger lines, but the Triggers line declares %d (htsim requires them to match)", filename, len(trigs), want)
	}

	// IDs: htsim ids where given, distinct; the rest numbered above the largest.
	ids := map[int]int{} // id -> line
	maxID := 0
	for _, c := range conns {
		if c.id == 0 {
			continue
		}
		if prev, dup := ids[c.id]; dup {
			return nil, 0, fmt.Errorf("%s:%d: connection %d: id %d is already used by the connection on line %d", filename, c.line, c.num, c.id, prev)
		}
		ids[c.id] = c.line
		maxID = max(maxID, c.id)
	}

	deps, err := resolveTriggers(filename, conns, trigs, trigByID)
	if err != nil {
		return nil, 0, err
	}
	order, err := depOrder(filename, conns, deps)
	if err != nil {
		return nil, 0, err
	}
	pos := make([]int, len(conns)) // file index -> output index
	for out, in := range order {
		pos[in] = out
	}
	flows = make([]Flow, len(conns))
	for out, in := range order {
		c := conns[in]
		id := c.id
		if id == 0 {
			maxID++
			id = maxID
		}
		fl := Flow{ID: id, Src: c.src, Dst: c.dst, Size: units.Size(c.size), Start: units.Time(c.start), Prio: c.prio}
		for _, d := range deps[in] {
			fl.Deps = append(fl.Deps, pos[d])
		}
		slices.Sort(fl.Deps)
		flows[out] = fl
	}
	return flows, nodes, nil
}

func isCMBodyLine(first string) bool {
	return strings.Contains(first, "->") || first == "trigger" || first == "failure"
}

func parseCMConn(f []string, nodes int) (cmConn, error) {
	var c cmConn
	a, b, _ := strings.Cut(f[0], "->")
	for k, s := range [2]string{a, b} {
		which := [2]string{"source", "destination"}[k]
		v, err := strconv.Atoi(s)
		if err != nil || v < 0 {
			return c, fmt.Errorf("%s %q in %q: want a host number, as in 3->7", which, s, f[0])
		}
		if v >= nodes {
			return c, fmt.Errorf("%s host %d does not exist: Nodes %d declares hosts 0..%d", which, v, nodes, nodes-1)
		}
		if k == 0 {
			c.src = v
		} else {
			c.dst = v
		}
	}
	if c.src == c.dst {
		return c, fmt.Errorf("host %d sends to itself", c.src)
	}
	seen := map[string]bool{}
	for i := 1; i < len(f); i++ {
		key := f[i]
		if key == "addon" {
			return c, fmt.Errorf("the addon flag (re-arming barrier triggers) is not supported")
		}
		switch key {
		case "start", "size", "id", "prio", "trigger", "send_done_trigger", "recv_done_trigger":
		default:
			return c, fmt.Errorf("unknown field %q; want start, size, id, prio, trigger, send_done_trigger or recv_done_trigger", key)
		}
		if seen[key] {
			return c, fmt.Errorf("%s given twice", key)
		}
		seen[key] = true
		if i+1 >= len(f) {
			return c, fmt.Errorf("%s has no value", key)
		}
		i++
		val := f[i]
		switch key {
		case "start":
			v, err := parseScaled(val, 0)
			if err != nil {
				return c, fmt.Errorf("start %q %v: want picoseconds >= 0, e.g. 0 or 1000000", val, err)
			}
			c.start, c.hasStart = v, true
		case "size":
			v, err := strconv.ParseInt(val, 10, 64)
			if err != nil || v <= 0 {
				return c, fmt.Errorf("size %q: want a whole number of bytes >= 1", val)
			}
			c.size, c.hasSize = v, true
		case "prio":
			v, err := strconv.ParseUint(val, 10, 8)
			if err != nil {
				return c, fmt.Errorf("prio %q: want a priority 0..255", val)
			}
			c.prio, c.hasPrio = uint8(v), true
		default: // id and the trigger ids: positive integers
			v, err := strconv.Atoi(val)
			if err != nil || v <= 0 {
				return c, fmt.Errorf("%s %q: want a whole number >= 1 (htsim does not allow 0)", key, val)
			}
			switch key {
			case "id":
				c.id = v
			case "trigger":
				c.trigger = v
			case "send_done_trigger":
				c.sendDone = v
			case "recv_done_trigger":
				c.recvDone = v
			}
		}
	}
	switch {
	case !c.hasSize:
		return c, fmt.Errorf("no size; add `size <bytes>`")
	case !c.hasStart && c.trigger == 0:
		return c, fmt.Errorf("no start method: add `start <ps>` or `trigger <id>`")
	case c.hasStart && c.trigger != 0:
		return c, fmt.Errorf("both a start time and a trigger; give one")
	case c.trigger != 0 && c.id == 0:
		return c, fmt.Errorf("a triggered connection needs an `id`")
	}
	return c, nil
}

func parseCMTrigger(f []string) (cmTrigger, error) {
	t := cmTrigger{count: -1}
	for i := 1; i < len(f); i++ {
		switch key := f[i]; key {
		case "oneshot", "multishot", "barrier":
			if t.kind != "" {
				return t, fmt.Errorf("two types, %s and %s; give one of oneshot, multishot, barrier", t.kind, key)
			}
			t.kind = key
		case "id", "count":
			if i+1 >= len(f) {
				return t, fmt.Errorf("%s has no value", key)
			}
			i++
			v, err := strconv.Atoi(f[i])
			if err != nil || v < 0 || v > maxFlows || (key == "id" && v == 0) {
				return t, fmt.Errorf("%s %q: want a whole number >= 1", key, f[i])
			}
			if key == "id" {
				if t.id != 0 {
					return t, fmt.Errorf("id given twice")
				}
				t.id = v
			} else {
				if t.count >= 0 {
					return t, fmt.Errorf("count given twice")
				}
				t.count = v
			}
		default:
			return t, fmt.Errorf("unknown field %q; want id <T>, oneshot, multishot, barrier or count <K>", key)
		}
	}
	if t.id == 0 {
		return t, fmt.Errorf("no id; add `id <T>`")
	}
	if t.kind == "" {
		return t, fmt.Errorf("trigger %d has no type; add oneshot, multishot or barrier", t.id)
	}
	if t.kind == "barrier" && t.count < 1 {
		return t, fmt.Errorf("barrier %d needs `count <K>` with K >= 1 (the number of signals it waits for)", t.id)
	}
	return t, nil
}

// resolveTriggers returns, per connection (file index), the connections it waits for.
func resolveTriggers(filename string, conns []cmConn, trigs []cmTrigger, trigByID map[int]int) ([][]int, error) {
	signallers := map[int][]int{}
	targets := map[int][]int{}
	for i, c := range conns {
		for _, t := range []int{c.trigger, c.sendDone, c.recvDone} {
			if _, ok := trigByID[t]; t != 0 && !ok {
				return nil, fmt.Errorf("%s:%d: connection %d: trigger %d is not declared by a `trigger id %d <type>` line", filename, c.line, c.num, t, t)
			}
		}
		if c.trigger != 0 {
			targets[c.trigger] = append(targets[c.trigger], i)
		}
		if c.sendDone != 0 {
			signallers[c.sendDone] = append(signallers[c.sendDone], i)
		}
		if c.recvDone != 0 && c.recvDone != c.sendDone {
			signallers[c.recvDone] = append(signallers[c.recvDone], i)
		}
	}
	deps := make([][]int, len(conns))
	for _, t := range trigs {
		S, T := signallers[t.id], targets[t.id]
		if len(T) == 0 {
			continue
		}
		never := fmt.Errorf("%s:%d: trigger %d is signalled by %d connections, so it never fires and the connection on line %d never starts", filename, t.line, t.id, len(S), conns[T[0]].line)
		switch t.kind {
		case "oneshot":
			if len(S) == 0 {
				return nil, never
			}
			if len(S) > 1 {
				return nil, fmt.Errorf("%s:%d: oneshot trigger %d is signalled by %d connections (lines %d and %d, ...) but fires once (htsim asserts on the second signal); use `barrier count %d` to wait for all of them",
					filename, t.line, t.id, len(S), conns[S[0]].line, conns[S[1]].line, len(S))
			}
		case "barrier":
			if t.count > len(S) {
				return nil, fmt.Errorf("%s:%d: barrier %d waits for %d signals but only %d connections signal it, so the connection on line %d never starts", filename, t.line, t.id, t.count, len(S), conns[T[0]].line)
			}
			if t.count < len(S) {
				return nil, fmt.Errorf("%s:%d: barrier %d fires after the first %d of its %d signalling connections, which depends on run-time order; fabricsim can only wait for all of them (count %d)", filename, t.line, t.id, t.count, len(S), len(S))
			}
		case "multishot":
			if len(S) == 0 {
				return nil, never
			}
			if len(S) != 1 || len(T) != 1 {
				return nil, fmt.Errorf("%s:%d: multishot trigger %d starts its k-th connection on its k-th signal (%d signalling, %d triggered), an order set at run time; fabricsim accepts multishot only with one signalling and one triggered connection",
					filename, t.line, t.id, len(S), len(T))
			}
		}
		for _, tg := range T {
			deps[tg] = S
		}
	}
	return deps, nil
}

// depOrder returns connection indices in file order, except that each comes after its deps
// (Kahn's algorithm, always taking the earliest ready connection); a cycle is an error.
func depOrder(filename string, conns []cmConn, deps [][]int) ([]int, error) {
	backward := true
	for i, ds := range deps {
		for _, d := range ds {
			if d >= i {
				backward = false
			}
		}
	}
	order := make([]int, 0, len(conns))
	if backward {
		for i := range conns {
			order = append(order, i)
		}
		return order, nil
	}
	waiting := make([]int, len(conns))
	users := make([][]int, len(conns))
	ready := &intHeap{}
	for i, ds := range deps {
		waiting[i] = len(ds)
		for _, d := range ds {
			users[d] = append(users[d], i)
		}
		if len(ds) == 0 {
			heap.Push(ready, i)
		}
	}
	for ready.Len() > 0 {
		i := heap.Pop(ready).(int)
		order = append(order, i)
		for _, u := range users[i] {
			if waiting[u]--; waiting[u] == 0 {
				heap.Push(ready, u)
			}
		}
	}
	if len(order) < len(conns) {
		for i := range conns {
			if waiting[i] > 0 {
				return nil, fmt.Errorf("%s:%d: connection %d waits, through its trigger, on connections that wait on it: a trigger cycle, so none of them would ever start", filename, conns[i].line, conns[i].num)
			}
		}
	}
	return order, nil
}

type intHeap []int

func (h intHeap) Len() int           { return len(h) }
func (h intHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h intHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *intHeap) Push(x any)        { *h = append(*h, x.(int)) }
func (h *intHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// WriteHtsimCM writes flows as an htsim connection matrix over nodes hosts, readable by htsim and
// ImportHtsimCM. Flow IDs are written as htsim ids when all are positive and distinct, otherwise
// flows are numbered 1..n. A flow with Deps gets a trigger: oneshot for one dependency, a barrier
// counting them for several; each dependency signals through recv_done_trigger, so a flow can
// be depended on by flows with one and the same dependency set only, and a flow with Deps must
// have Start 0 (htsim allows a start time or a trigger, not both).
func WriteHtsimCM(w io.Writer, flows []Flow, nodes int) error {
	ids := make([]int, len(flows))
	seen := map[int]bool{}
	useOwn := true
	for i, f := range flows {
		if f.ID <= 0 || seen[f.ID] {
			useOwn = false
		}
		seen[f.ID] = true
		ids[i] = f.ID
	}
	if !useOwn {
		for i := range ids {
			ids[i] = i + 1
		}
	}
	// One trigger per distinct dependency set, numbered in order of first use.
	trigOf := map[string]int{}
	var trigSize []int
	flowTrig := make([]int, len(flows))
	signals := make([]int, len(flows)) // trigger each flow signals on completion, 0: none
	for i, f := range flows {
		if f.Src < 0 || f.Src >= nodes || f.Dst < 0 || f.Dst >= nodes || f.Src == f.Dst || f.Size <= 0 {
			return fmt.Errorf("write htsim: flow %d (ID %d): %d->%d, %d B: want distinct hosts 0..%d and a size >= 1", i, f.ID, f.Src, f.Dst, int64(f.Size), nodes-1)
		}
		if len(f.Deps) == 0 {
			continue
		}
		if f.Start != 0 {
			return fmt.Errorf("write htsim: flow %d (ID %d) has dependencies and start %s; htsim takes a start time or a trigger, not both", i, f.ID, f.Start)
		}
		key := fmt.Sprint(slices.Sorted(slices.Values(f.Deps)))
		t, ok := trigOf[key]
		if !ok {
			t = len(trigSize) + 1
			trigOf[key] = t
			trigSize = append(trigSize, len(f.Deps))
			for _, d := range f.Deps {
				if d < 0 || d >= len(flows) {
					return fmt.Errorf("write htsim: flow %d (ID %d) depends on flow %d, outside 0..%d", i, f.ID, d, len(flows)-1)
				}
				if signals[d] != 0 {
					return fmt.Errorf("write htsim: flow %d (ID %d) is a dependency of two different sets of flows; an htsim connection signals one trigger per event", d, flows[d].ID)
				}
				signals[d] = t
			}
		}
		flowTrig[i] = t
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "Nodes %d\nConnections %d\n", nodes, len(flows))
	if len(trigSize) > 0 {
		fmt.Fprintf(bw, "Triggers %d\n", len(trigSize))
	}
	for i, f := range flows {
		fmt.Fprintf(bw, "%d->%d id %d", f.Src, f.Dst, ids[i])
		if flowTrig[i] != 0 {
			fmt.Fprintf(bw, " trigger %d", flowTrig[i])
		} else {
			fmt.Fprintf(bw, " start %d", int64(f.Start))
		}
		fmt.Fprintf(bw, " size %d", int64(f.Size))
		if f.Prio != 0 {
			fmt.Fprintf(bw, " prio %d", f.Prio)
		}
		if signals[i] != 0 {
			fmt.Fprintf(bw, " recv_done_trigger %d", signals[i])
		}
		bw.WriteByte('\n')
	}
	for t, n := range trigSize {
		if n == 1 {
			fmt.Fprintf(bw, "trigger id %d oneshot\n", t+1)
		} else {
			fmt.Fprintf(bw, "trigger id %d barrier count %d\n", t+1, n)
		}
	}
	return bw.Flush()
}
