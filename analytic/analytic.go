// Package analytic is fabricsim's fastest backend: it runs a message graph (package msggraph)
// with an alpha-beta cost model on a fluid network.
//
// A lone message from src to dst takes Latency(src, dst) + bytes / Bandwidth(src, dst).
// Messages that overlap in time share their endpoints' capacities max-min fairly: each
// message draws on a transmit port at its source and a receive port at its destination, and
// the rates are the max-min fair allocation over those ports (each message also capped at its
// path Bandwidth). So the n concurrent messages of a ring step each get the full per-rank
// bandwidth, while n senders into one receiver (incast) share it. Latency is a pure delay
// added after a message's last byte leaves its source; the network has no queues, no loss and
// no congestion control: those are the packet backend's business.
//
// Messages on one connection (same Src, Dst and non-zero Conn) are served in order, one at a
// time, as a queue pair serves its work requests; each message with Conn 0 is a connection of
// its own.
//
// The run is event-driven over the DAG. Rates change only when a message starts or stops
// sending, and then only for the messages connected to it through shared ports, so a ring of
// a thousand ranks costs O(1) per event (about 2 s for a million messages).
//
// Package backend adapts it to the backend seam (backend/analytic.go: the path model of a
// topology, the result.Run it fills).
package analytic

import (
	"container/heap"
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/units"
)

// Network gives the alpha-beta parameters of every endpoint pair.
type Network interface {
	// Latency is the one-way delay from src to dst, added after the last byte is sent.
	Latency(src, dst int32) units.Time
	// Bandwidth is the rate a lone message from src to dst gets; it also caps the message when
	// others share its endpoints.
	Bandwidth(src, dst int32) units.Rate
}

// Port is a capacity that concurrent messages share: a NIC's transmit or receive side, or a
// GPU's NVLink.
type Port struct {
	// ID names the port; messages whose ports have the same ID (transmit and receive ports are
	// separate name spaces) share its Rate.
	ID   int64
	Rate units.Rate
}

// Ports is optionally implemented by a Network whose endpoints have more than one way in or
// out (for example NVLink to the GPUs of the same server and a NIC to the rest). Without it,
// every endpoint has one transmit and one receive port whose capacity is the largest Bandwidth
// of the messages using it at the time.
type Ports interface {
	TxPort(src, dst int32) Port
	RxPort(src, dst int32) Port
}

// Uniform is a network where every pair has the same latency and every endpoint the same
// bandwidth: the textbook alpha-beta model.
type Uniform struct {
	Lat units.Time // alpha: one-way latency
	BW  units.Rate // beta^-1: per-endpoint bandwidth, each direction
}

// Latency implements Network.
func (u Uniform) Latency(_, _ int32) units.Time { return u.Lat }

// Bandwidth implements Network.
func (u Uniform) Bandwidth(_, _ int32) units.Rate { return u.BW }

// Result is what a run produced.
type Result struct {
	// Finish is when each message completed: its last byte delivered (transmission end plus
	// latency), or for a zero-byte node, ready time plus Delay.
	Finish []units.Time
	// Makespan is the latest Finish.
	Makespan units.Time
}

// Run executes g on net and returns each message's completion time.
func Run(g *msggraph.Graph, net Network) (Result, error) {
	return RunContext(context.Background(), g, net)
}

// RunContext is Run that stops when ctx is cancelled: it then returns the completion times of
// the messages done so far (0 for the others) and ctx's error.
func RunContext(ctx context.Context, g *msggraph.Graph, net Network) (Result, error) {
	if g == nil || net == nil {
		return Result{}, fmt.Errorf("analytic: nil graph or network")
	}
	if err := g.Validate(); err != nil {
		return Result{}, fmt.Errorf("analytic: %w", err)
	}
	e := newEngine(g, net)
	e.ctx = ctx
	err := e.run()
	if err != nil && ctx.Err() == nil {
		return Result{}, err
	}
	var r Result
	r.Finish = e.finish
	for _, f := range e.finish {
		r.Makespan = max(r.Makespan, f)
	}
	return r, err
}

const (
	evReady    = iota // all deps complete and Start reached: wait Delay, then offer
	evOffer           // first byte offered to the source: join the connection queue
	evComplete        // last byte delivered
)

type event struct {
	t    units.Time
	seq  uint64
	kind uint8
	id   int32
}

type eventHeap []event

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	if h[i].t != h[j].t {
		return h[i].t < h[j].t
	}
	return h[i].seq < h[j].seq
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(event)) }
func (h *eventHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

type connKey struct {
	src, dst, conn int32
}

type connQueue struct {
	waiting []int32
	busy    bool
}

// port is a shared capacity (one side of an endpoint) and the flows using it.
type port struct {
	rate  float64 // fixed capacity (bits/s) when the network implements Ports; else 0
	flows []*flow
	dirty bool
	seen  uint64 // component search epoch
	// scratch for the water-filling
	left  float64
	count int
}

// flow is a message being transmitted. Its remaining bits are rem at time t0 and fall at rate.
type flow struct {
	id     int32
	rem    float64 // bits still to send at t0
	t0     units.Time
	rate   float64 // bits per second
	cap    float64 // path bandwidth, bits per second
	tx, rx *port
	finish units.Time // projected end of transmission at the current rate
	ver    uint32     // bumped whenever finish changes; stale heap entries are skipped
	seen   uint64
	ended  bool
}

type flowEntry struct {
	t   units.Time
	id  int32
	ver uint32
	f   *flow
}

type flowHeap []flowEntry

func (h flowHeap) Len() int { return len(h) }
func (h flowHeap) Less(i, j int) bool {
	if h[i].t != h[j].t {
		return h[i].t < h[j].t
	}
	return h[i].id < h[j].id
}
func (h flowHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *flowHeap) Push(x any)   { *h = append(*h, x.(flowEntry)) }

// push and pop are heap.Push and heap.Pop without boxing an entry in an interface (an
// allocation each: a run pushes an entry per flow of every component it re-allocates).
func (h *flowHeap) push(x flowEntry) {
	*h = append(*h, x)
	for i := len(*h) - 1; i > 0; {
		parent := (i - 1) / 2
		if !h.Less(i, parent) {
			break
		}
		h.Swap(i, parent)
		i = parent
	}
}

func (h *flowHeap) pop() flowEntry {
	old := *h
	n := len(old) - 1
	top := old[0]
	old[0] = old[n]
	old[n] = flowEntry{}
	*h = old[:n]
	for i := 0; ; {
		l := 2*i + 1
		if l >= n {
			break
		}
		c := l
		if r := l + 1; r < n && h.Less(r, l) {
			c = r
		}
		if !h.Less(c, i) {
			break
		}
		h.Swap(i, c)
		i = c
	}
	return top
}

func (h *flowHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

type engine struct {
	g          *msggraph.Graph
	net        Network
	ports      Ports
	finish     []units.Time
	pending    []int32 // unfinished deps
	readyAt    []units.Time
	dependents [][]int32
	events     eventHeap
	seq        uint64
	conns      map[connKey]*connQueue
	portMap    map[[2]int64]*port
	dirty      []*port
	flows      flowHeap
	live       int // flows transmitting: the heap is compacted when stale entries outnumber them
	// scratch of allocate, reused: a component's ports and flows
	compPorts []*port
	compFlows []*flow
	epoch     uint64
	completed int
	ctx       context.Context // the run stops when it is cancelled (looked at every ctxEvery steps)
}

// ctxEvery is how many steps of the event loop pass between two looks at the context.
const ctxEvery = 1 << 12

func newEngine(g *msggraph.Graph, net Network) *engine {
	n := len(g.Msgs)
	e := &engine{g: g, net: net, finish: make([]units.Time, n), pending: make([]int32, n),
		readyAt: make([]units.Time, n), dependents: make([][]int32, n), conns: map[connKey]*connQueue{},
		portMap: map[[2]int64]*port{}}
	e.ports, _ = net.(Ports)
	for i, m := range g.Msgs {
		e.pending[i] = int32(len(m.Deps))
		e.readyAt[i] = m.Start
		for _, d := range m.Deps {
			e.dependents[d] = append(e.dependents[d], int32(i))
		}
	}
	return e
}

func (e *engine) push(t units.Time, kind uint8, id int32) {
	e.seq++
	heap.Push(&e.events, event{t: t, seq: e.seq, kind: kind, id: id})
}

// nextFlowEnd drops stale entries and returns the earliest projected end of transmission.
func (e *engine) nextFlowEnd() units.Time {
	for len(e.flows) > 0 {
		top := e.flows[0]
		if top.f.ended || top.ver != top.f.ver {
			e.flows.pop()
			continue
		}
		return top.t
	}
	return units.MaxTime
}

func (e *engine) run() error {
	for i := range e.g.Msgs {
		if e.pending[i] == 0 {
			e.push(e.readyAt[i], evReady, int32(i))
		}
	}
	for step := 1; ; step++ {
		if step%ctxEvery == 0 && e.ctx != nil && e.ctx.Err() != nil {
			return e.ctx.Err()
		}
		next := e.nextFlowEnd()
		if len(e.events) > 0 {
			next = min(next, e.events[0].t)
		}
		if next == units.MaxTime {
			break
		}
		now := next
		// Transmissions that end now leave; their completion comes after the path latency.
		for e.nextFlowEnd() <= now {
			f := e.flows.pop().f
			if err := e.end(now, f); err != nil {
				return err
			}
		}
		for len(e.events) > 0 && e.events[0].t == now {
			ev := heap.Pop(&e.events).(event)
			if err := e.handle(now, ev); err != nil {
				return err
			}
		}
		if len(e.dirty) > 0 {
			e.allocate(now)
		}
	}
	if e.completed != len(e.g.Msgs) {
		for i := range e.g.Msgs {
			if e.pending[i] > 0 {
				return fmt.Errorf("analytic: message %d (%s) never became ready", i, e.g.Msgs[i].Tag)
			}
		}
		return fmt.Errorf("analytic: %d of %d messages did not complete (a port with no capacity?)", len(e.g.Msgs)-e.completed, len(e.g.Msgs))
	}
	return nil
}

func (e *engine) markDirty(p *port) {
	if !p.dirty {
		p.dirty = true
		e.dirty = append(e.dirty, p)
	}
}

func removeFlow(p *port, f *flow) {
	for i, x := range p.flows {
		if x == f {
			last := len(p.flows) - 1
			copy(p.flows[i:], p.flows[i+1:])
			p.flows[last] = nil
			p.flows = p.flows[:last]
			return
		}
	}
}

// end finishes f's transmission at t.
func (e *engine) end(t units.Time, f *flow) error {
	f.ended = true
	e.live--
	removeFlow(f.tx, f)
	removeFlow(f.rx, f)
	e.markDirty(f.tx)
	e.markDirty(f.rx)
	m := &e.g.Msgs[f.id]
	e.push(t+e.net.Latency(m.Src, m.Dst), evComplete, f.id)
	if m.Conn != 0 {
		q := e.conns[connKey{m.Src, m.Dst, m.Conn}]
		q.busy = false
		return e.startNext(t, q)
	}
	return nil
}

func (e *engine) handle(now units.Time, ev event) error {
	m := &e.g.Msgs[ev.id]
	switch ev.kind {
	case evReady:
		switch {
		case m.Bytes == 0:
			e.push(now+m.Delay, evComplete, ev.id)
		case m.Delay > 0:
			e.push(now+m.Delay, evOffer, ev.id)
		default:
			return e.offer(now, ev.id)
		}
	case evOffer:
		return e.offer(now, ev.id)
	case evComplete:
		e.finish[ev.id] = now
		e.completed++
		for _, d := range e.dependents[ev.id] {
			e.readyAt[d] = max(e.readyAt[d], now)
			e.pending[d]--
			if e.pending[d] == 0 {
				e.push(e.readyAt[d], evReady, d)
			}
		}
	}
	return nil
}

func (e *engine) offer(now units.Time, id int32) error {
	m := &e.g.Msgs[id]
	if m.Conn == 0 {
		return e.activate(now, id)
	}
	k := connKey{m.Src, m.Dst, m.Conn}
	q := e.conns[k]
	if q == nil {
		q = &connQueue{}
		e.conns[k] = q
	}
	q.waiting = append(q.waiting, id)
	if !q.busy {
		return e.startNext(now, q)
	}
	return nil
}

func (e *engine) startNext(now units.Time, q *connQueue) error {
	if len(q.waiting) == 0 {
		return nil
	}
	id := q.waiting[0]
	q.waiting = q.waiting[1:]
	q.busy = true
	return e.activate(now, id)
}

func (e *engine) port(side int64, p Port) *port {
	k := [2]int64{side, p.ID}
	x := e.portMap[k]
	if x == nil {
		x = &port{}
		e.portMap[k] = x
	}
	x.rate = float64(p.Rate)
	return x
}

func (e *engine) activate(now units.Time, id int32) error {
	m := &e.g.Msgs[id]
	bw := e.net.Bandwidth(m.Src, m.Dst)
	if bw <= 0 {
		return fmt.Errorf("analytic: message %d (%s): network bandwidth %d->%d is %v, not positive", id, m.Tag, m.Src, m.Dst, bw)
	}
	f := &flow{id: id, rem: 8 * float64(m.Bytes), t0: now, cap: float64(bw)}
	if e.ports != nil {
		tx, rx := e.ports.TxPort(m.Src, m.Dst), e.ports.RxPort(m.Src, m.Dst)
		if tx.Rate <= 0 || rx.Rate <= 0 {
			return fmt.Errorf("analytic: message %d (%s): port rate %v/%v is not positive", id, m.Tag, tx.Rate, rx.Rate)
		}
		f.tx, f.rx = e.port(0, tx), e.port(1, rx)
	} else {
		f.tx, f.rx = e.port(0, Port{ID: int64(m.Src)}), e.port(1, Port{ID: int64(m.Dst)})
	}
	f.tx.flows = append(f.tx.flows, f)
	f.rx.flows = append(f.rx.flows, f)
	e.live++
	e.markDirty(f.tx)
	e.markDirty(f.rx)
	return nil
}

// allocate recomputes the max-min fair rates (progressive filling over transmit ports,
// receive ports and per-flow caps) of the flows connected, through shared ports, to a port
// whose set of flows changed, and projects their finish times. Other flows keep their rates:
// max-min fairness is decided per connected component.
func (e *engine) allocate(now units.Time) {
	e.epoch++
	ports, flows := e.compPorts[:0], e.compFlows[:0]
	defer func() {
		clear(ports)
		clear(flows)
		e.compPorts, e.compFlows = ports[:0], flows[:0]
	}()
	stack := e.dirty
	for _, p := range stack {
		p.seen = e.epoch
	}
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		p.dirty = false
		ports = append(ports, p)
		for _, f := range p.flows {
			if f.seen == e.epoch {
				continue
			}
			f.seen = e.epoch
			flows = append(flows, f)
			for _, q := range [2]*port{f.tx, f.rx} {
				if q.seen != e.epoch {
					q.seen = e.epoch
					stack = append(stack, q)
				}
			}
		}
	}
	e.dirty = e.dirty[:0]
	if len(flows) == 0 {
		return
	}
	slices.SortFunc(flows, func(a, b *flow) int { return int(a.id - b.id) })
	for _, p := range ports {
		p.left, p.count = p.rate, len(p.flows)
		if e.ports == nil {
			p.left = 0
			for _, f := range p.flows {
				p.left = max(p.left, f.cap)
			}
		}
	}
	for _, f := range flows {
		// Settle the bits sent at the old rate, then forget it.
		f.rem = max(f.rem-f.rate*float64(now-f.t0)/float64(units.Second), 0)
		f.t0 = now
		f.rate = -1
	}
	left := len(flows)
	for left > 0 {
		x := math.Inf(1)
		for _, p := range ports {
			if p.count > 0 {
				x = min(x, p.left/float64(p.count))
			}
		}
		for _, f := range flows {
			if f.rate < 0 {
				x = min(x, f.cap)
			}
		}
		x = max(x, 0)
		lim := x * (1 + 1e-12)
		frozen := 0
		for _, f := range flows {
			if f.rate >= 0 {
				continue
			}
			if f.cap <= lim || f.tx.left/float64(f.tx.count) <= lim || f.rx.left/float64(f.rx.count) <= lim {
				f.rate = -2 // frozen this round; rates assigned below so shares stay fixed
				frozen++
			}
		}
		for _, f := range flows {
			if f.rate != -2 {
				continue
			}
			f.rate = min(x, f.cap)
			for _, p := range [2]*port{f.tx, f.rx} {
				p.left = max(p.left-f.rate, 0)
				p.count--
			}
		}
		left -= frozen
	}
	for _, f := range flows {
		f.ver++
		if f.rate <= 0 {
			f.finish = units.MaxTime
			continue
		}
		ps := math.Ceil(f.rem*float64(units.Second)/f.rate - 1e-6)
		if ps >= float64(units.MaxTime-now) {
			f.finish = units.MaxTime
			continue
		}
		f.finish = now + units.Time(max(ps, 0))
		e.flows.push(flowEntry{t: f.finish, id: f.id, ver: f.ver, f: f})
	}
	if len(e.flows) > 4*e.live+1024 {
		e.compactFlows()
	}
}

// compactFlows drops the stale entries of the flow heap (ended flows, superseded finish
// times). Each re-allocation pushes a new entry for every flow of the component and the old ones
// leave only when they reach the top, so without this the heap grows with the sum of the
// components' sizes over the run, not with the flows transmitting (a tree all-reduce over 1,024
// GPUs: components span the cluster). A flow has at most one current entry and entries order
// by (time, id), so the live entries pop in the same order either way.
func (e *engine) compactFlows() {
	h := e.flows[:0]
	for _, x := range e.flows {
		if !x.f.ended && x.ver == x.f.ver {
			h = append(h, x)
		}
	}
	clear(e.flows[len(h):])
	e.flows = h
	heap.Init(&e.flows)
}
