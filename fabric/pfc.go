package fabric

import (
	"fmt"
	"strings"

	"github.com/fabricsim/fabricsim/result"
	"github.com/fabricsim/fabricsim/sim"
	"github.com/fabricsim/fabricsim/units"
)

// PFC (IEEE 802.1Qbb) per ingress port and priority, as shared-buffer switches implement it
// ([IEEE 802.1Q], [EST] thresholds). Each switch's buffer is a shared pool plus a headroom reserve per ingress port
// and lossless priority. A lossless packet is admitted to the shared pool while its ingress
// port-priority holds less than XOFF there; beyond that it goes into the headroom and the switch
// sends PAUSE (XOFF) upstream, refreshing it before it expires. When the port-priority has left
// the headroom and holds at most XON, the switch sends a PAUSE of 0 quanta (XON). A lossless
// packet that finds the headroom full is dropped and counted as a headroom drop: the headroom
// is too small for the link (a misconfiguration, see `fabricsim headroom`). Lossy classes use
// the shared pool with tail drop.
//
// A port that receives PAUSE stops starting packets of those priorities (Port.Paused) until the
// pause time (quanta of 512 bit times) runs out or an XON arrives. The PFC watchdog flushes a
// queue paused longer than Watchdog and ignores PAUSE on it for WatchdogRestore.

// PFC event opcodes (for pfc.Handle only).
const (
	opPFCRefresh  int32 = iota // ev.I = port-priority: resend our XOFF
	opPFCExpire                // ev.I = port-priority: a received pause may have run out
	opPFCWatchdog              // ev.I = port-priority: paused too long?
	opPFCStorm                 // ev.I = 1: the stuck NIC starts pausing, 0: it recovers
)

// PAUSE frame: 64 B minimum frame, plus 20 B preamble, delimiter and gap on the wire.
const pauseFrameBytes = 64

type pfc struct {
	*roce
	lossless uint8
	// The per-packet state of ingress port g and lossless class prio is in[base[prio]+g]: one
	// run of every port's state per lossless class, base[prio] its start.
	base [8]int32
	in   []pfcIn // (a switch's port i is global port Switch.base+i; its shared pool is Switch.pool)

	// Per port-priority (global port x 8 + priority): what only PAUSE frames and timers touch.
	refreshAt   []units.Time
	pauseUntil  []units.Time
	pausedSince []units.Time
	ignoreUntil []units.Time
	xoffSent    []int64
	xonSent     []int64
	received    []int64
	pausedTime  []units.Time

	// The XOFF rule, read from cfg once: alpha x the free shared pool (dynamic), XON that less
	// xonOffset; or the static XOFF and XON.
	dynamic     bool
	alpha       float64
	xoffB, xonB int64
	xonOffset   int64
	pauseDur    []units.Time // per global port: PauseQuanta at the link rate
	hdrDrops    []int64      // per port-priority
	maxHdr      int64
	wdTrigger   int64
}

// pfcIn is what every lossless packet through an ingress port reads and writes there, for one
// class: admission, the XOFF test on arrival and the XON test on departure each touch one such
// half cache line (and the switch's pfcNode), found from the switch's first port and the
// packet's InPort without reading the port itself. Lossy classes keep no per-port state: the
// shared pool is all their admission reads.
type pfcIn struct {
	ing, hdr int64 // bytes held that came in through the port; of them, in headroom
	room     int64 // the headroom reserved for the class at this port
	// pausing: we hold this port-priority paused upstream (XOFF sent, no XON yet).
	pausing bool
	_       [7]byte
}

// pfcNode is a switch's shared pool (Switch.pool): the bytes of it not in use (the buffer
// less every headroom, less the bytes held in the pool), all that admission and the dynamic
// XOFF threshold read of it; kept as one word so that it fits the switch's first line.
type pfcNode struct {
	free int64
}

func newPFC(r *roce) (*pfc, error) {
	n := r.n
	c := r.cfg
	np := len(n.ports)
	f := &pfc{roce: r, lossless: uint8(c.Lossless),
		refreshAt:  make([]units.Time, np*8),
		pauseUntil: make([]units.Time, np*8), pausedSince: make([]units.Time, np*8), ignoreUntil: make([]units.Time, np*8),
		xoffSent: make([]int64, np*8), xonSent: make([]int64, np*8), received: make([]int64, np*8), pausedTime: make([]units.Time, np*8),
		pauseDur: make([]units.Time, np), hdrDrops: make([]int64, np*8),
		dynamic: c.PFCThreshold == PFCDynamic, alpha: c.PFCAlpha,
		xoffB: int64(c.XOFF), xonB: int64(c.XON), xonOffset: int64(c.XONOffset),
	}
	var classes int32
	for prio := range 8 {
		if f.lossless&(1<<prio) != 0 {
			f.base[prio] = classes * int32(np)
			classes++
		}
	}
	f.in = make([]pfcIn, np*int(classes))
	room := make([]int64, np)
	for g := range n.ports {
		p := &n.ports[g]
		f.pauseDur[g] = p.Rate.TransmitTime(units.Size(int64(c.PauseQuanta) * 64)) // 512 bit times
		if c.Headroom > 0 {
			room[g] = int64(c.Headroom)
		} else {
			room[g] = autoHeadroom(n, p)
		}
		for k := range classes {
			f.in[k*int32(np)+int32(g)].room = room[g]
		}
	}
	for _, sw := range n.Switches {
		if sw == nil {
			continue
		}
		var reserved int64
		for _, p := range sw.Ports {
			reserved += room[p.gidx] * int64(classes)
		}
		sw.pool = pfcNode{free: int64(n.cfg.Buffer) - reserved}
		if sw.pool.free < int64(n.cfg.MTU)+int64(n.cfg.HeaderBytes) {
			return nil, fmt.Errorf("switch %s: PFC headroom %v per port and class x %d ports x %d lossless classes leaves no shared buffer in %v (pfc_headroom larger than the buffer)",
				sw.Name, units.Size(room[sw.Ports[0].gidx]), len(sw.Ports), classes, n.cfg.Buffer)
		}
	}
	if h := c.StormHost; h >= 0 {
		if int(h) >= len(n.NICs) {
			return nil, fmt.Errorf("pfc_storm_host %d: no such host (0..%d)", h, len(n.NICs)-1)
		}
		n.sim.Schedule(c.StormAt, f, opPFCStorm, 1, nil)
		if c.StormFor > 0 {
			n.sim.Schedule(c.StormAt+c.StormFor, f, opPFCStorm, 0, nil)
		}
	}
	return f, nil
}

// xoff is the occupancy of an ingress port-priority at which it pauses upstream, at a switch
// whose shared pool is nd.
func (f *pfc) xoff(nd *pfcNode) int64 {
	if f.dynamic {
		return int64(f.alpha * float64(nd.free))
	}
	return f.xoffB
}

func (f *pfc) xon(nd *pfcNode) int64 {
	if f.dynamic {
		return max(f.xoff(nd)-f.xonOffset, 0)
	}
	return f.xonB
}

// state returns the per-packet state of global port g for lossless class prio.
func (f *pfc) state(g int32, prio uint8) *pfcIn { return &f.in[f.base[prio&7]+g] }

// isLossless reports whether class prio is lossless. A packet's class is below maxPrio (it
// indexes a port's queues before it reaches a switch), so prio&15 is prio; the mask lets the
// compiler drop the test Go's shift needs for counts beyond the word (three instructions, four
// times a hop on the RoCE path), and classes 8..15 find no bit in the 8-bit set, as before.
func (f *pfc) isLossless(prio uint8) bool { return uint16(f.lossless)&(1<<(prio&(maxPrio-1))) != 0 }

// pausingAt reports whether we hold global port g's lossless class prio paused upstream.
func (f *pfc) pausingAt(g int32, prio uint8) bool {
	return f.isLossless(prio) && f.state(g, prio).pausing
}

// ingress is the per-packet work where a packet meets PFC at a switch's ingress (dispatch.go
// calls it directly): admission (Admit) and, once admitted, the XOFF test (Arrived), on the
// ingress state found from the switch's first port and pkt.InPort. It returns -1 when pkt is
// admitted, else the drop cause. TestPFCDirectMatchesInterface runs it against the two
// interface methods.
func (f *pfc) ingress(s *Switch, out *Port, pkt *Packet) int {
	prio := pkt.Prio
	size := int64(pkt.Size)
	nd := &s.pool
	if !f.isLossless(prio) {
		return f.admitLossy(nd, out, pkt)
	}
	g := s.base + pkt.InPort
	st := f.state(g, prio)
	if st.hdr == 0 && st.ing+size <= f.xoff(nd) && size <= nd.free {
		nd.free -= size
		st.ing += size
		if st.ing >= f.xoff(nd) && !st.pausing {
			f.pause(g, prio)
		}
		return -1
	}
	if st.hdr+size > st.room {
		f.hdrDrops[g*8+int32(prio)]++
		return DropHeadroom
	}
	st.hdr += size
	st.ing += size
	f.maxHdr = max(f.maxHdr, st.hdr)
	if !st.pausing {
		f.pause(g, prio)
	}
	return -1
}

// admitLossy admits a packet of a lossy class to the shared pool nd: tail drop, with the
// dynamic queue threshold if set.
func (f *pfc) admitLossy(nd *pfcNode, out *Port, pkt *Packet) int {
	size := int64(pkt.Size)
	free := nd.free
	if size > free {
		return DropBuffer
	}
	if a := f.n.cfg.BufferAlpha; a > 0 && float64(out.q[pkt.Prio].bytes+size) > a*float64(free) {
		return DropBuffer
	}
	nd.free -= size
	return -1
}

// departed releases the buffer pkt held at switch s (headroom first) and sends XON once its
// ingress port-priority is below XON: Departed, with the ingress port found from the switch's
// first port and pkt.InPort.
func (f *pfc) departed(s *Switch, pkt *Packet) {
	f.release(s.base+pkt.InPort, &s.pool, pkt)
}

// release is Departed for the packet pkt that came in through global port g of node.
func (f *pfc) release(g int32, nd *pfcNode, pkt *Packet) {
	size := int64(pkt.Size)
	prio := pkt.Prio
	if !f.isLossless(prio) {
		nd.free += size
		return
	}
	st := f.state(g, prio)
	h := min(st.hdr, size)
	st.hdr -= h
	nd.free += size - h
	st.ing -= size
	if st.pausing && st.hdr == 0 && st.ing <= f.xon(nd) {
		f.resume(g, prio)
	}
}

// Admit decides buffer admission: shared pool below XOFF, then headroom for lossless classes;
// tail drop (with the dynamic queue threshold, if set) for lossy ones. (The per-hop path calls
// ingress, which does this and Arrived in one.)
func (f *pfc) Admit(s *Switch, in, out *Port, pkt *Packet) int {
	size := int64(pkt.Size)
	nd := &s.pool
	if !f.isLossless(pkt.Prio) {
		return f.admitLossy(nd, out, pkt)
	}
	g := in.gidx
	st := f.state(g, pkt.Prio)
	if st.hdr == 0 && st.ing+size <= f.xoff(nd) && size <= nd.free {
		nd.free -= size
		st.ing += size
		return -1
	}
	if st.hdr+size <= st.room {
		st.hdr += size
		st.ing += size
		if st.hdr > f.maxHdr {
			f.maxHdr = st.hdr
		}
		return -1
	}
	f.hdrDrops[g*8+int32(pkt.Prio)]++
	return DropHeadroom
}

// Arrived sends XOFF when a lossless port-priority reached its threshold or entered headroom.
func (f *pfc) Arrived(in *Port, pkt *Packet) {
	if !f.isLossless(pkt.Prio) {
		return
	}
	st := f.state(in.gidx, pkt.Prio)
	if st.pausing {
		return
	}
	if st.hdr > 0 || st.ing >= f.xoff(&in.sw.pool) {
		f.pause(in.gidx, pkt.Prio)
	}
}

// Departed releases buffer (headroom first) and sends XON once the port-priority is below XON.
func (f *pfc) Departed(in *Port, pkt *Packet) {
	f.release(in.gidx, &in.sw.pool, pkt)
}

func (f *pfc) Blocked(*Port, *Packet) bool { return false }
func (f *pfc) Sent(*Port, *Packet)         {}

// sendPause sends a PAUSE for one priority with the given quanta (0 = XON) on global port g.
func (f *pfc) sendPause(g int32, prio uint8, quanta uint16) {
	pkt := f.n.pool.get()
	pkt.Prio = prio
	pkt.Mark = 1 << prio
	pkt.SetCtrlWord(int(prio), quanta)
	pkt.Size = pauseFrameBytes
	pkt.Src, pkt.Dst = -1, -1
	f.n.port(g).SendCtrl(pkt)
}

func (f *pfc) refreshEvery(g int32) units.Time {
	if f.cfg.PauseRefresh > 0 {
		return f.cfg.PauseRefresh
	}
	return f.pauseDur[g] / 2
}

func (f *pfc) pause(g int32, prio uint8) {
	idx := g*8 + int32(prio)
	f.state(g, prio).pausing = true
	f.xoffSent[idx]++
	if b := f.n.bins; b != nil {
		b.pause(f.n.sim.Now())
	}
	f.sendPause(g, prio, f.cfg.PauseQuanta)
	f.refreshAt[idx] = f.n.sim.Now() + f.refreshEvery(g)
	f.n.sim.Schedule(f.refreshAt[idx], f, opPFCRefresh, idx, nil)
}

func (f *pfc) resume(g int32, prio uint8) {
	idx := g*8 + int32(prio)
	f.state(g, prio).pausing = false
	f.xonSent[idx]++
	f.refreshAt[idx] = 0
	f.sendPause(g, prio, 0)
}

// Control applies a received PAUSE to the port it arrived on (the egress toward its sender).
func (f *pfc) Control(in *Port, pkt *Packet) {
	g := in.gidx
	now := f.n.sim.Now()
	for prio := uint8(0); prio < 8; prio++ {
		bit := uint8(1) << prio
		if pkt.Mark&bit == 0 {
			continue
		}
		idx := g*8 + int32(prio)
		f.received[idx]++
		if f.ignoreUntil[idx] > now {
			continue // the watchdog is ignoring this queue's pauses
		}
		q := pkt.CtrlWord(int(prio))
		if q == 0 {
			f.unpause(in, idx)
			continue
		}
		until := now + in.Rate.TransmitTime(units.Size(int64(q)*64))
		f.pauseUntil[idx] = until
		if in.Paused&bit == 0 {
			in.Paused |= bit
			f.pausedSince[idx] = now
			if wd := f.cfg.Watchdog; wd > 0 {
				f.n.sim.Schedule(now+wd, f, opPFCWatchdog, idx, nil)
			}
		}
		f.n.sim.Schedule(until, f, opPFCExpire, idx, nil)
	}
}

func (f *pfc) unpause(p *Port, idx int32) {
	bit := uint8(1) << (idx & 7)
	if p.Paused&bit == 0 {
		return
	}
	p.Paused &^= bit
	f.pausedTime[idx] += f.n.sim.Now() - f.pausedSince[idx]
	p.kick()
}

// Handle runs PFC's timers.
func (f *pfc) Handle(ev *sim.Event) {
	n := f.n
	now := n.sim.Now()
	idx := ev.I
	switch ev.Op {
	case opPFCRefresh:
		g, prio := idx/8, uint8(idx&7)
		if f.refreshAt[idx] != now || !f.pausingAt(g, prio) {
			return
		}
		f.pause(g, prio)
	case opPFCExpire:
		if now >= f.pauseUntil[idx] {
			f.unpause(f.n.port(idx/8), idx)
		}
	case opPFCWatchdog:
		p := n.port(idx / 8)
		bit := uint8(1) << (idx & 7)
		if p.Paused&bit == 0 || now-f.pausedSince[idx] < f.cfg.Watchdog {
			return
		}
		// A pause storm: flush the queue and ignore pauses for a while.
		f.wdTrigger++
		for p.q[idx&7].len() > 0 {
			pkt := p.dequeue(int(idx & 7))
			if p.sw != nil {
				p.sw.release(p, pkt)
			}
			n.drop(pkt, DropWatchdog)
		}
		f.ignoreUntil[idx] = now + f.cfg.WatchdogRestore
		f.unpause(p, idx)
	case opPFCStorm:
		g := n.NICs[f.cfg.StormHost].Port.gidx
		for prio := uint8(0); prio < 8; prio++ {
			bit := uint8(1) << prio
			if f.lossless&bit == 0 {
				continue
			}
			switch {
			case ev.I == 1 && !f.pausingAt(g, prio):
				f.pause(g, prio)
			case ev.I == 0 && f.pausingAt(g, prio):
				f.resume(g, prio)
			}
		}
	}
}

// ExplainStall looks for a cycle in the "waits for" graph of paused ports: port P (at node A,
// toward B) is paused because B's ingress from A is over XOFF, so P waits for every paused port
// of B whose queue holds packets that came in from A. A cycle is a PFC deadlock (cyclic buffer
// dependency; Guo et al. SIGCOMM'16).
func (f *pfc) ExplainStall() string {
	n := f.n
	np := int32(len(n.ports))
	color := make([]uint8, np*8) // 0 unvisited, 1 on stack, 2 done
	parent := make([]int32, np*8)
	next := func(idx int32) []int32 {
		p := n.port(idx / 8)
		prio := int(idx & 7)
		nd := &n.g.Nodes[p.Owner]
		peer := nd.Ports[p.Index].Peer
		sw := n.Switches[peer]
		if sw == nil {
			return nil
		}
		inIdx := nd.Ports[p.Index].PeerPort
		var out []int32
		for _, e := range sw.Ports {
			if e.Paused&(1<<prio) == 0 {
				continue
			}
			for q := e.q[prio].head; q != nil; q = q.next {
				if q.InPort == inIdx {
					out = append(out, e.gidx*8+int32(prio))
					break
				}
			}
		}
		return out
	}
	for g := int32(0); g < np; g++ {
		p := n.port(g)
		if p.Paused == 0 || p.sw == nil {
			continue
		}
		for prio := int32(0); prio < 8; prio++ {
			start := g*8 + prio
			if p.Paused&(1<<prio) == 0 || color[start] != 0 {
				continue
			}
			// Iterative DFS.
			type frame struct {
				v    int32
				succ []int32
				i    int
			}
			stack := []frame{{start, next(start), 0}}
			color[start] = 1
			for len(stack) > 0 {
				top := &stack[len(stack)-1]
				if top.i == len(top.succ) {
					color[top.v] = 2
					stack = stack[:len(stack)-1]
					continue
				}
				w := top.succ[top.i]
				top.i++
				switch color[w] {
				case 0:
					color[w] = 1
					parent[w] = top.v
					stack = append(stack, frame{w, next(w), 0})
				case 1:
					// Cycle: w ... top.v -> w.
					cyc := []int32{w}
					for v := top.v; v != w; v = parent[v] {
						cyc = append(cyc, v)
					}
					var names []string
					names = append(names, f.portName(w/8))
					for i := len(cyc) - 1; i >= 1; i-- {
						names = append(names, f.portName(cyc[i]/8))
					}
					names = append(names, f.portName(w/8))
					return fmt.Sprintf("PFC deadlock on priority %d: cyclic buffer dependency, each port paused by the next: %s",
						w&7, strings.Join(names, " -> "))
				}
			}
		}
	}
	return ""
}

// Report adds PFC's counters: totals, and per port and priority where anything happened.
func (f *pfc) Report(res *result.Run) {
	var xoff, xon, rcvd, drops int64
	var paused units.Time
	now := f.n.sim.Now()
	for idx := range f.xoffSent {
		xoff += f.xoffSent[idx]
		xon += f.xonSent[idx]
		rcvd += f.received[idx]
		paused += f.pausedTime[idx]
		if p := f.n.port(int32(idx / 8)); p.Paused&(1<<(idx&7)) != 0 {
			paused += now - f.pausedSince[idx]
		}
	}
	for _, d := range f.hdrDrops {
		drops += d
	}
	res.Counters["pfc_pause_frames_sent"] = float64(xoff)
	res.Counters["pfc_resume_frames_sent"] = float64(xon)
	res.Counters["pfc_frames_received"] = float64(rcvd)
	res.Counters["pfc_paused_time_ns"] = paused.Nanoseconds()
	res.Counters["pfc_headroom_drops"] = float64(drops)
	res.Counters["pfc_max_headroom_used_bytes"] = float64(f.maxHdr)
	res.Counters["pfc_watchdog_triggers"] = float64(f.wdTrigger)
	if drops > 0 {
		// Lossless drops mean the headroom is smaller than what arrives after XOFF.
		res.Counters["pfc_headroom_misconfigured"] = 1
	}
	marks := map[string]int64{}
	if e := f.n.ecnMarker(); e != nil {
		for g := range e.port {
			if m := e.port[g].marks; m > 0 {
				marks[f.portName(int32(g))] = m
			}
		}
	}
	for _, st := range f.n.PFCStats() {
		pc := result.PortCounters{Port: st.Port, Prio: st.Prio, PausesSent: st.PausesSent, ResumesSent: st.Resumes,
			PausesReceived: st.Received, PausedNs: st.PausedTime.Nanoseconds(), HeadroomDrops: st.HeadroomDrops}
		if st.Prio == int(f.n.cfg.DataPriority) {
			pc.ECNMarks = marks[st.Port]
			delete(marks, st.Port)
		}
		res.Ports = append(res.Ports, pc)
	}
	for g := range f.n.ports { // ports that marked but never paused, in port order
		name := f.portName(int32(g))
		if m, ok := marks[name]; ok {
			res.Ports = append(res.Ports, result.PortCounters{Port: name, Prio: int(f.n.cfg.DataPriority), ECNMarks: m})
		}
	}
}

// PFCPortStats is one port and priority's PFC activity.
type PFCPortStats struct {
	Port                          string
	Prio                          int
	PausesSent, Resumes, Received int64
	PausedTime                    units.Time
	HeadroomDrops                 int64
}

// PFCStats returns the ports and priorities that sent or received PAUSE or dropped for lack of
// headroom, in port order (nil without PFC).
func (n *Network) PFCStats() []PFCPortStats {
	f, ok := n.fc.(*pfc)
	if !ok {
		return nil
	}
	now := n.sim.Now()
	var out []PFCPortStats
	for idx := range f.xoffSent {
		g := int32(idx / 8)
		t := f.pausedTime[idx]
		if f.n.port(g).Paused&(1<<(idx&7)) != 0 {
			t += now - f.pausedSince[idx]
		}
		hd := f.hdrDrops[idx]
		if f.xoffSent[idx] == 0 && f.received[idx] == 0 && hd == 0 {
			continue
		}
		out = append(out, PFCPortStats{Port: f.portName(g), Prio: idx & 7, PausesSent: f.xoffSent[idx], Resumes: f.xonSent[idx],
			Received: f.received[idx], PausedTime: t, HeadroomDrops: hd})
	}
	return out
}
