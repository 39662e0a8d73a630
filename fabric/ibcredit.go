package fabric

import (
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"time"

	"github.com/fabricsim/fabricsim/result"
	"github.com/fabricsim/fabricsim/sim"
	"github.com/fabricsim/fabricsim/units"
)

// InfiniBand credit-based link-level flow control ([IBA] Vol. 1 §7.9).
//
// Every port has, per VL, a receive buffer counted in 64-byte blocks. The receiver keeps ABR,
// the blocks received (adjusted), and advertises FCCL = ABR + min(free blocks, 2048); the sender
// keeps FCTBS, the blocks sent, and may start a packet of b blocks on a VL only when
// FCCL - FCTBS >= b (both 12-bit counters, compared modulo 4096). When a packet leaves a
// switch's buffer (finishes serializing on its egress), or arrives at an HCA (which places it in
// memory at once), its blocks are free again and the receiving port sends a 6-byte flow-control
// packet {VL, FCTBS, FCCL} back on the reverse link: it queues behind the packet in flight
// there, serializes at the link rate and propagates, so the credit loop has its real latency.
// Updates for a VL that find the previous one still queued overwrite it (the later FCCL
// supersedes it), as a link layer that computes FCCL when it sends would.
//
// A received flow-control packet also carries the peer's FCTBS: the receiver sets ABR to it,
// which heals credits lost with a corrupted packet. On lossy links ports send flow-control
// packets unprompted every FCRefresh, as IBA requires, so a lost update cannot stall a VL.
//
// Inline updates. Half of a credit-limited fabric's events would be flow-control packets (one
// transmit and one arrival each), so on a clean link (no error rate, not captured) the update
// travels without a packet or an event, with the same wire timing: it is marked pending on the
// port (Port.inlineFC) and sent at the next packet boundary, where flushFC serializes the
// pending frames back to back (6 B each at the link rate, counted like transmitted frames)
// ahead of the next packet; each frame's FCCL reaches the peer after the link's delay as an
// entry {arrival time, FCCL} in the peer's arrival ring. The peer applies the entries whose
// time has come (sync) whenever it reads its credit limit, ending a stall at the entry's own
// time; a port that waits for credits gets one wake-up event at its next entry's arrival,
// where the packet path's arrival would have restarted it. Lossy links keep the packet path:
// their updates carry FCTBS for the ABR resync and may be lost; captured ports keep it so that
// the capture shows every frame.

// ibPort is one port's credit state: the transmit half toward the peer's receive buffer and the
// receive half for packets the peer sends.
type ibPort struct {
	// A port's credit state is read in three roles, each from its own cache line: as a sender
	// (is there credit?) the first line, with the arbitration state in the second; as the
	// receiver of the peer's updates the first line; as a receiver of packets, whose blocks it
	// returns upstream, the third. The per-VL lines follow (TestIBPortLayout).
	//
	// Inline credit updates from the peer not yet applied: a ring (length a power of two) of
	// arr[arrHead], ... arrN entries in arrival order, the first due at arrAt; wakeAt is the
	// time of the wake-up event scheduled for this port (0: none).
	arrAt   units.Time
	wakeAt  units.Time
	arrHead int32
	arrN    int32
	arr     []fcArrival
	stalls  uint16 // bit vl set while v[vl].stallNeed > 0
	idx     int32  // index in ibCredits.ports
	port    *Port

	// The second line: VL arbitration (ibarb.go), the peer's port and the FECN counter.
	arb   arbState
	up    *Port // the peer's port: the egress the packets received here left from
	marks int64 // FECN marking-rate counter (ibcc.go)
	_     [8]byte

	// The third line: returning credits. Inline updates waiting on this port (Port.inlineFC):
	// the VLs in the order they were queued (each one's FCCL is ibVL.fcVal).
	capBlocks int64      // receive buffer per VL, in blocks
	peer      *ibPort    // the peer port's state (state(up)), which the updates reach
	fcSer     units.Time // serialization time of a flow-control frame on this port's link
	fcWire    int64      // its wire bytes
	fcN       int32
	fcDest    int32 // the peer's partition, which a deferFC port's updates go to
	fcOrder   [IBMaxVLs]uint8
	// deferFC: this port's updates reach the peer's ring at the end of the window they were
	// sent in (exchangeFC), not at once: the link is one a parallel run may cut (parallel.go,
	// planIB).
	deferFC bool
	// fcTouched marks the port while exchangeFC has handed it updates to look at.
	fcTouched bool
	_         [7]byte

	// v is the per-VL credit state of both halves: what one packet's passage reads and
	// writes on a VL lies together.
	v [IBMaxVLs]ibVL

	// pending is, per VL, the flow-control packet queued on this port and not yet sent (the
	// packet path of lossy and captured links). 16 entries, not IBMaxVLs: the struct is then a
	// whole number of lines.
	pending [16]*Packet
}

// ibVL is one VL's credit state on one port, padded to a cache line.
type ibVL struct {
	// Transmit half (this port sends; the peer's buffer).
	fctbs int64 // blocks sent, exact (the packet carries it modulo 4096)
	limit int64 // last FCCL received, unwrapped against fctbs
	// Receive half (the peer sends; this port's buffer).
	abr  int64
	used int64
	// fcVal is the FCCL an inline update waiting on this port carries (Port.inlineFC), fixed
	// when it was last updated, as a queued packet's would be.
	fcVal int64
	// Stall accounting: while stallNeed > 0 the VL has a packet of that many blocks it may
	// not start (ibPort.stalls has its bit set); stallFrom is when that was first seen.
	stallNeed int64
	stallFrom units.Time
	stalled   units.Time // time spent stalled before the current stall
}

// fcArrival is an inline credit update on its way: at time at the port's limit on VL lv&15
// becomes at least lv>>4 (16 bytes an entry).
type fcArrival struct {
	at units.Time
	lv int64
}

// ibCredits is the LinkFlowControl of the InfiniBand fabric.
type ibCredits struct {
	n     *Network
	vls   int
	ports []ibPort // by Port.gidx
	check bool

	fcSent   int64
	maxUsed  int64
	refresh  []int32 // lossy ports with a refresh timer
	fcPeriod []units.Time
	// packetFC sends every update as a packet (the lossy-link path) even on clean links; for
	// tests comparing the two paths.
	packetFC bool
	// plain checks credits at a switch's dequeue as before ibCheck: Blocked for every VL the
	// arbiter tries, Sent synchronizing again, release dispatching; TestIBCheckMatchesBlocked.
	plain bool
	// queueFC sends every inline update through the port's queue and flushFC, as before
	// sendOne; for TestSendOneMatchesQueue.
	queueFC bool
	// out holds, per window parity and destination partition, the updates of deferFC ports
	// sent during the window, in the order they were sent (exchangeFC delivers them; the
	// exchange after a window may run while the next window fills the other parity's);
	// outFrom, per parity, the earliest arrival among them (exchangeFrom).
	out     [2][][]fcHanded
	outFrom [2]units.Time
	// touched is exchangeFC's scratch list of the partition's ports handed updates; handed
	// and exchangeTime its totals (ParallelInfo).
	touched      []int32
	handed       uint64
	exchangeTime time.Duration
}

// fcHanded is an inline credit update of a deferFC port, on its way to the peer port's ring.
type fcHanded struct {
	at   units.Time
	lv   int64 // as fcArrival.lv
	port int32 // the receiving port (index in ibCredits.ports)
}

// Opcodes of ibCredits.Handle.
const (
	opFCRefresh   int32 = iota // periodic flow-control packets of lossy port f.refresh[ev.I]
	opCreditsWake              // inline credits reach port f.ports[ev.I], which waits for them
)

func newIBCredits(n *Network) *ibCredits {
	f := &ibCredits{n: n, vls: n.cfg.IB.VLs, check: n.cfg.Check, ports: make([]ibPort, len(n.ports))}
	sw := int64(n.cfg.IB.VLBuffer) / IBBlock
	hca := int64(n.cfg.IB.HCABuffer) / IBBlock
	for i := range n.g.Nodes {
		node := &n.g.Nodes[i]
		for p := range node.Ports {
			port := n.portOf(node.ID, int32(p))
			st := &f.ports[port.gidx]
			st.idx, st.port, port.ibc = port.gidx, port, st
			st.up = n.portOf(node.Ports[p].Peer, node.Ports[p].PeerPort)
			st.fcWire = int64(IBFCPacketBytes + n.cfg.L1Overhead)
			st.fcSer = st.port.Rate.TransmitTime(units.Size(st.fcWire))
			st.capBlocks = sw
			if n.Switches[i] == nil {
				st.capBlocks = hca
			}
		}
	}
	// At link-up every receiver advertises its buffer (IBA vol. 1 §7.9, link flow control): start from that state.
	for i := range f.ports {
		st := &f.ports[i]
		peer := f.state(st.up)
		st.peer = peer
		for vl := 0; vl < f.vls; vl++ {
			st.v[vl].limit = min(peer.capBlocks, IBMaxCreditWindow)
		}
		if st.port.errRate > 0 {
			f.refresh = append(f.refresh, int32(i))
			per := n.cfg.IB.FCRefresh
			if per == 0 {
				per = st.port.Rate.TransmitTime(65536)
			}
			f.fcPeriod = append(f.fcPeriod, per)
			n.sim.Schedule(per, f, opFCRefresh, int32(len(f.refresh)-1), nil)
		}
	}
	return f
}

func (f *ibCredits) state(p *Port) *ibPort { return p.ibc } // f.ports[p.gidx] (Port.ibc)

// inVL is the VL pkt used on the link into port st (the upstream port's SL2VL table's VL for
// it, which the packet carries as InVL once a switch has it; on an HCA, its Prio).
func (f *ibCredits) inVL(st *ibPort, pkt *Packet) uint8 {
	if f.check {
		f.checkInVL(st, pkt)
	}
	return pkt.InVL
}

// checkInVL reports pkt's VL if the upstream port's SL2VL table does not give it (--check). Out
// of line: inVL, on the per-hop path, stays small enough to be inlined.
func (f *ibCredits) checkInVL(st *ibPort, pkt *Packet) {
	if pkt.InVL != st.up.VLOf(pkt.SL) {
		f.n.violation(f.name(st.port), fmt.Sprintf("packet arrived on VL%d, the upstream SL2VL table says VL%d", pkt.InVL, st.up.VLOf(pkt.SL)))
	}
}

// Credits returns the blocks port p may still send on vl.
func (f *ibCredits) Credits(p *Port, vl int) int64 {
	st := f.state(p)
	f.sync(st, f.n.sim.Now())
	return st.v[vl].limit - st.v[vl].fctbs
}

// Blocked: the packet needs more blocks than the peer has advertised.
func (f *ibCredits) Blocked(out *Port, pkt *Packet) bool {
	st := f.state(out)
	now := max(f.n.sim.Now(), out.freeAt) // a packet chosen now starts after the inline updates
	f.sync(st, now)
	if st.fits(pkt) {
		return false
	}
	f.stall(st, pkt, now)
	return true
}

// fits reports whether the peer has advertised the blocks of pkt on its VL (the state
// synchronized).
func (st *ibPort) fits(pkt *Packet) bool {
	return st.v[pkt.Prio].limit-st.v[pkt.Prio].fctbs >= ibBlocks(pkt.Size)
}

// stall notes that pkt cannot start on port st at now (a call: most checks find credits).
func (f *ibCredits) stall(st *ibPort, pkt *Packet, now units.Time) {
	vl := pkt.Prio
	if st.v[vl].stallNeed == 0 {
		st.v[vl].stallFrom = now
		st.stalls |= 1 << vl
	}
	st.v[vl].stallNeed = ibBlocks(pkt.Size)
	if st.arrN > 0 {
		f.wake(st) // restart the port when an update that lets it send arrives
	}
}

// Sent consumes the packet's credits. Its check at this instant (Blocked, or the arbiter's
// ibCheck) synchronized the port's state, so nothing due is left to apply; with plain it
// synchronizes again, as it did before ibCheck.
func (f *ibCredits) Sent(out *Port, pkt *Packet) {
	st := f.state(out)
	if f.plain {
		f.sync(st, max(f.n.sim.Now(), out.freeAt))
	}
	vl := pkt.Prio
	need := ibBlocks(pkt.Size)
	if f.check && st.v[vl].limit-st.v[vl].fctbs < need {
		f.overdrawn(out, st, vl, need)
	}
	st.v[vl].fctbs += need
	if st.stalls&(1<<vl) != 0 { // sending again on this VL ends its stall
		f.endStall(st, int(vl), max(f.n.sim.Now(), out.freeAt))
	}
}

// overdrawn reports a packet of need blocks sent on VL vl of port out without the credits.
func (f *ibCredits) overdrawn(out *Port, st *ibPort, vl uint8, need int64) {
	f.n.violation(f.name(out), fmt.Sprintf("VL%d sent a %d-block packet with %d credits", vl, need, st.v[vl].limit-st.v[vl].fctbs))
}

// endStall ends VL vl's credit stall at time at: its time joins the VL's total (and the run's
// time bins, when on). Out of line: stalls end rarely next to the packets that pass through
// Sent and apply, whose inlined bodies stay as small as before.
//
//go:noinline
func (f *ibCredits) endStall(st *ibPort, vl int, at units.Time) {
	st.v[vl].stalled += at - st.v[vl].stallFrom
	if b := f.n.bins; b != nil {
		b.stall(st.v[vl].stallFrom, at)
	}
	st.v[vl].stallNeed = 0
	st.stalls &^= 1 << vl
}

// sync applies the inline credit updates that have reached port st by now.
func (f *ibCredits) sync(st *ibPort, now units.Time) {
	if st.arrN != 0 && st.arrAt <= now {
		f.apply(st, now)
	}
}

// apply is sync's loop: each update raises the limit as Control would have at its arrival,
// and ends the VL's stall at that time if the waiting packet now fits. Out of line, so that
// sync, its guard, is inlined where the credit state is read (with PGO it was inlined in sync).
//
//go:noinline
func (f *ibCredits) apply(st *ibPort, now units.Time) {
	mask := int32(len(st.arr) - 1)
	for st.arrN > 0 {
		e := &st.arr[st.arrHead]
		if e.at > now {
			break
		}
		vl := e.lv & 15
		if lim := e.lv >> 4; lim > st.v[vl].limit {
			st.v[vl].limit = lim
		}
		if f.check && st.v[vl].limit-st.v[vl].fctbs > IBMaxCreditWindow {
			f.overWindow(st, int(vl))
		}
		if st.stalls&(1<<uint(vl)) == 0 {
			// Not waiting: nothing more to do (the stall arrays are not read on this path).
		} else if need := st.v[vl].stallNeed; st.v[vl].limit-st.v[vl].fctbs >= need {
			f.endStall(st, int(vl), e.at)
		}
		st.arrHead = (st.arrHead + 1) & mask
		st.arrN--
	}
	if st.arrN > 0 {
		st.arrAt = st.arr[st.arrHead].at
	}
}

// push appends an inline update arriving at time at to port st's ring.
func (st *ibPort) push(at units.Time, vl uint8, lim int64) {
	if int(st.arrN) == len(st.arr) {
		grown := make([]fcArrival, max(8, 2*len(st.arr)))
		for i := int32(0); i < st.arrN; i++ {
			grown[i] = st.arr[(st.arrHead+i)&int32(len(st.arr)-1)]
		}
		st.arr, st.arrHead = grown, 0
	}
	st.arr[(st.arrHead+st.arrN)&int32(len(st.arr)-1)] = fcArrival{at: at, lv: lim<<4 | int64(vl)}
	if st.arrN == 0 {
		st.arrAt = at
	}
	st.arrN++
}

// wake schedules port st's wake-up at the arrival of the first pending update that lets a
// waiting VL start its packet (sync has applied every update due by now, so that lies ahead):
// updates that leave every waiting VL short (an ACK's one block freed while a 4 KiB packet
// waits) need no event, as the port could do nothing at them. A wake already scheduled no
// later stands.
func (f *ibCredits) wake(st *ibPort) {
	if at, ok := f.wakeTime(st); ok && (st.wakeAt == 0 || at < st.wakeAt) {
		st.wakeAt = at
		f.n.sim.Schedule(at, f, opCreditsWake, st.idx, nil)
	}
}

// wakeTime returns the arrival of the first pending update that lets a waiting VL of port st
// start its packet, if any.
func (f *ibCredits) wakeTime(st *ibPort) (units.Time, bool) {
	if m := st.stalls; m != 0 && m&(m-1) == 0 && !f.plain {
		return st.wakeTime1(bits.TrailingZeros16(m))
	}
	var lim [16]int64 // read only for the VLs that wait
	for m := st.stalls; m != 0; m &= m - 1 {
		vl := bits.TrailingZeros16(m)
		lim[vl] = st.v[vl].limit
	}
	mask := int32(len(st.arr) - 1)
	for i := int32(0); i < st.arrN; i++ {
		e := &st.arr[(st.arrHead+i)&mask]
		vl := e.lv & 15
		if st.stalls&(1<<vl) == 0 {
			continue
		}
		lim[vl] = max(lim[vl], e.lv>>4)
		if lim[vl]-st.v[vl].fctbs >= st.v[vl].stallNeed {
			return e.at, true
		}
	}
	return 0, false
}

// wakeTime1 is wakeTime for a port with one VL waiting, vl (most stalls): the same scan without
// the per-VL limits (plain turns it off: TestIBCheckMatchesBlocked).
func (st *ibPort) wakeTime1(vl int) (units.Time, bool) {
	v := &st.v[vl]
	lim, need := v.limit, v.fctbs+v.stallNeed
	mask := int32(len(st.arr) - 1)
	for i := int32(0); i < st.arrN; i++ {
		e := &st.arr[(st.arrHead+i)&mask]
		if int(e.lv&15) != vl {
			continue
		}
		if lim = max(lim, e.lv>>4); lim >= need {
			return e.at, true
		}
	}
	return 0, false
}

// flushFC sends the inline updates pending on port p from time t, back to back in the order
// they were queued, and returns when the last has left the wire. Each is counted as a
// transmitted frame, as the packet path counts a flow-control packet.
func (f *ibCredits) flushFC(p *Port, t units.Time) units.Time {
	st := f.state(p)
	up := st.peer
	k := int64(st.fcN)
	if st.deferFC {
		return f.flushDeferred(p, st, t)
	}
	for _, vl := range st.fcOrder[:st.fcN] {
		t += st.fcSer
		up.push(t+p.delay, vl, st.v[vl].fcVal)
	}
	f.sentFC(p, st, k)
	if up.stalls != 0 && up.wakeAt == 0 && !up.port.busy {
		// The peer waits for credits with nothing on the wire: restart it when they arrive,
		// as the flow-control packet's arrival would.
		f.sync(up, f.n.sim.Now())
		if up.stalls != 0 {
			f.wake(up)
		}
	}
	return t
}

// sentFC clears p's pending flow-control updates once the k of them are sent (st its credit
// state) and counts them: the port's packets, bytes and busy time, and the network's hops.
func (f *ibCredits) sentFC(p *Port, st *ibPort, k int64) {
	st.fcN = 0
	p.inlineFC = 0
	f.fcSent += k
	p.TxPackets += k
	p.TxBytes += k * st.fcWire
	p.BusyTime += units.Time(k) * st.fcSer
	f.n.packetHops += uint64(k)
}

// flushDeferred is flushFC for a deferFC port: the updates, with the same wire timing, wait in
// the partition's outbox for the window's end (each arrives at least the lookahead after it is
// sent, so after the window: parallel.go, planIB), where exchangeFC puts them in the peer's
// ring and wakes the peer if it waits for them.
func (f *ibCredits) flushDeferred(p *Port, st *ibPort, t units.Time) units.Time {
	k := int64(st.fcN)
	d := st.fcDest
	w := f.n.sim.Parity()
	out := f.out[w][d]
	f.outFrom[w] = min(f.outFrom[w], t+st.fcSer+p.delay) // the first of them arrives first
	for _, vl := range st.fcOrder[:st.fcN] {
		t += st.fcSer
		out = append(out, fcHanded{at: t + p.delay, lv: st.v[vl].fcVal<<4 | int64(vl), port: st.peer.idx})
	}
	f.out[w][d] = out
	f.sentFC(p, st, k)
	return t
}

// exchangeFC delivers to partition d, after a window ending at bound (of parity w), the updates
// deferFC ports sent to it during the window (parallel.go, planIB; sim.Group.Exchange runs it for every
// partition at once, each on its own worker): into each receiving port's ring, from every
// partition's outbox in partition order (a port has one sender, so its updates keep their
// order), then, port by port in index order, what flushFC does for an update on an undeferred
// link: a port that waits for credits with nothing on the wire is woken when one that lets it
// send arrives, the wake-up scheduled as the port's own node's event, so that it orders the
// same for every partitioning. It reads the other partitions' outboxes for d only and writes
// only d's ports and queue. Every wake-up it schedules lies at or after the arrival of an update
// of the window (exchangeFrom): a port that waits with nothing on the wire, not yet woken, was
// last blocked at a check (ibCredits.stall, from Blocked or ibCheck, and wake) that found no
// earlier update letting it send, and a deferFC port's updates come only from here.
func (n *Network) exchangeFC(d int, bound units.Time, w int) {
	par := n.par
	df := par.nets[d].ibfc
	start := time.Now()
	touched := df.touched[:0]
	for _, sn := range par.nets {
		sf := sn.ibfc
		l := sf.out[w][d]
		df.handed += uint64(len(l))
		for _, e := range l {
			st := &df.ports[e.port]
			st.push(e.at, uint8(e.lv&15), e.lv>>4)
			if !st.fcTouched {
				st.fcTouched = true
				touched = append(touched, e.port)
			}
		}
		sf.out[w][d] = l[:0]
	}
	slices.Sort(touched)
	for _, i := range touched {
		st := &df.ports[i]
		st.fcTouched = false
		if st.stalls == 0 || st.wakeAt != 0 || st.port.busy {
			continue
		}
		df.sync(st, bound)
		if st.stalls == 0 {
			continue
		}
		if at, ok := df.wakeTime(st); ok {
			st.wakeAt = at
			df.n.sim.ScheduleAs(int32(st.port.Owner), at, df, opCreditsWake, st.idx, nil)
		}
	}
	df.touched = touched[:0]
	df.exchangeTime += time.Since(start)
}

// exchangeFrom returns the earliest arrival of an update handed in the window of parity w, in
// every partition, before which exchangeFC schedules nothing (sim.Group.ExchangeFrom), and
// starts that parity's next window afresh.
func (n *Network) exchangeFrom(w int) units.Time {
	t := units.MaxTime
	for _, c := range n.par.nets {
		f := c.ibfc
		t = min(t, f.outFrom[w])
		f.outFrom[w] = units.MaxTime
	}
	return t
}

// Admit: with credits the sender never overruns a receive buffer, so nothing is dropped; the
// invariant check proves it.
func (f *ibCredits) Admit(s *Switch, in, out *Port, pkt *Packet) int {
	if f.check {
		st := f.state(in)
		vl := f.inVL(st, pkt)
		if st.v[vl].used+ibBlocks(pkt.Size) > st.capBlocks {
			f.n.violation(f.name(in), fmt.Sprintf("VL%d receive buffer overrun: %d + %d blocks > %d", vl, st.v[vl].used, ibBlocks(pkt.Size), st.capBlocks))
		}
	}
	return -1
}

// Arrived takes the packet's blocks from its ingress VL buffer.
func (f *ibCredits) Arrived(in *Port, pkt *Packet) {
	st := f.state(in)
	vl := f.inVL(st, pkt)
	b := ibBlocks(pkt.Size)
	st.v[vl].abr += b
	st.v[vl].used += b
	if st.v[vl].used > f.maxUsed {
		f.maxUsed = st.v[vl].used
	}
}

// Departed frees the blocks and returns the credits upstream. With --check it is
// departedChecked: on this path, with no report to call, nothing is live across a call and no
// register is spilled.
func (f *ibCredits) Departed(in *Port, pkt *Packet) {
	if f.check {
		f.departedChecked(in, pkt)
		return
	}
	st, vl := f.state(in), pkt.InVL // (sendFC's call stays 7 lines down, where the profile has it)
	st.v[vl].used -= ibBlocks(pkt.Size)
	f.sendFC(in, st, vl)
}

// departedChecked is Departed with the --check reports (the packet's VL, the buffer not below
// zero).
func (f *ibCredits) departedChecked(in *Port, pkt *Packet) {
	st := f.state(in)
	vl := f.inVL(st, pkt)
	st.v[vl].used -= ibBlocks(pkt.Size)
	if st.v[vl].used < 0 {
		f.negative(st, vl)
	}
	f.sendFC(in, st, vl)
}

// negative reports VL vl's receive buffer of port st below zero (--check; out of line, as the
// other reports on the per-hop path: their formatting made the callers spill registers).
func (f *ibCredits) negative(st *ibPort, vl uint8) {
	f.n.violation(f.name(st.port), fmt.Sprintf("VL%d receive buffer went negative (%d blocks)", vl, st.v[vl].used))
}

// overWindow reports VL vl of port st holding more credits than the window (--check).
func (f *ibCredits) overWindow(st *ibPort, vl int) {
	f.n.violation(f.name(st.port), fmt.Sprintf("VL%d holds %d credits, above the %d-block window", vl, st.v[vl].limit-st.v[vl].fctbs, IBMaxCreditWindow))
}

// HostArrived: an HCA places an arriving packet in memory at once, so its blocks return
// immediately.
func (f *ibCredits) HostArrived(in *Port, pkt *Packet) {
	st := f.state(in)
	pkt.InVL = pkt.Prio // no switch re-maps it here
	vl := f.inVL(st, pkt)
	st.v[vl].abr += ibBlocks(pkt.Size)
	f.sendFC(in, st, vl)
}

// fccl is the credit limit port st advertises for vl.
func (st *ibPort) fccl(vl uint8) int64 {
	return st.v[vl].abr + min(st.capBlocks-st.v[vl].used, IBMaxCreditWindow)
}

// sendFC queues a flow-control packet for vl on port p (toward the peer), or refreshes the one
// still waiting there. On a clean link the update goes inline: an idle port sends it at once,
// a busy one at the end of its packet.
func (f *ibCredits) sendFC(p *Port, st *ibPort, vl uint8) {
	if p.flags&(portLossy|portTapped) == 0 && !f.packetFC { // clean and not captured
		if p.inlineFC == 0 && !p.busy && !st.deferFC && !f.queueFC {
			f.sendOne(p, st, vl) // an idle port with nothing queued: this update alone, now
			return
		}
		st.v[vl].fcVal = st.fccl(vl)
		if p.inlineFC&(1<<vl) == 0 {
			p.inlineFC |= 1 << vl
			st.fcOrder[st.fcN] = vl
			st.fcN++
		}
		if !p.busy {
			// Only the update, behind any still on the wire: a packet that becomes ready
			// during this event (an HCA's ACK) starts after it (Port.kick), as it would behind
			// a flow-control packet.
			p.freeAt = f.flushFC(p, max(f.n.sim.Now(), p.freeAt))
		}
		return
	}
	if pk := st.pending[vl]; pk != nil && pk.Kind == LinkCtrl && pk.Prio == vl && p.ctrlQueued(pk) {
		pk.SetCtrlWord(0, uint16(st.fccl(vl)&0xfff))
		pk.SetCtrlWord(1, uint16(st.v[vl].fctbs&0xfff))
		return
	}
	pk := f.n.pool.get()
	pk.Prio = vl
	pk.SetCtrlWord(0, uint16(st.fccl(vl)&0xfff))
	pk.SetCtrlWord(1, uint16(st.v[vl].fctbs&0xfff))
	pk.Size = IBFCPacketBytes // no layer-1 overhead on InfiniBand
	pk.Src, pk.Dst = -1, -1
	st.pending[vl] = pk
	f.fcSent++
	p.SendCtrl(pk)
}

// sendOne is sendFC's inline update on an idle port of an undeferred link with no other update
// queued: what queueing it and flushFC would do for one update, without the queue (fcOrder,
// fcVal, inlineFC) or flushFC's loop. queueFC turns it off (TestSendOneMatchesQueue).
func (f *ibCredits) sendOne(p *Port, st *ibPort, vl uint8) {
	t := max(f.n.sim.Now(), p.freeAt) + st.fcSer
	up := st.peer
	up.push(t+p.delay, vl, st.fccl(vl))
	p.freeAt = t
	f.fcSent++
	p.TxPackets++
	p.TxBytes += st.fcWire
	p.BusyTime += st.fcSer
	f.n.packetHops++
	if up.stalls != 0 && up.wakeAt == 0 && !up.port.busy {
		f.restart(up)
	}
}

// restart: port st waits for credits with nothing on the wire; an update has just been sent to
// it: apply what is due and schedule its wake-up, as flushFC does (out of line: rare).
func (f *ibCredits) restart(st *ibPort) {
	f.sync(st, f.n.sim.Now())
	if st.stalls != 0 {
		f.wake(st)
	}
}

// ctrlQueued reports whether pkt is still waiting in the port's link-control queue.
func (p *Port) ctrlQueued(pkt *Packet) bool {
	for q := p.ctrl.head; q != nil; q = q.next {
		if q == pkt {
			return true
		}
	}
	return false
}

// Control applies a flow-control packet from the peer: its FCCL sets this port's credit limit,
// its FCTBS resynchronizes this port's ABR.
func (f *ibCredits) Control(in *Port, pkt *Packet) {
	st := f.state(in)
	f.sync(st, f.n.sim.Now())
	vl := pkt.Prio
	// Credits = (FCCL - FCTBS) mod 4096; the window never exceeds 2048, so this is exact.
	credits := (int64(pkt.CtrlWord(0)) - st.v[vl].fctbs) & 0xfff
	if lim := st.v[vl].fctbs + credits; lim > st.v[vl].limit {
		st.v[vl].limit = lim
	}
	if f.check && st.v[vl].limit-st.v[vl].fctbs > IBMaxCreditWindow {
		f.overWindow(st, int(vl))
	}
	// ABR := FCTBS: blocks the peer sent that never arrived (corrupted) count as received.
	if lost := (int64(pkt.CtrlWord(1)) - st.v[vl].abr) & 0xfff; lost != 0 && lost < IBMaxCreditWindow {
		st.v[vl].abr += lost
		f.sendFC(in, st, vl)
	}
	if need := st.v[vl].stallNeed; need > 0 && st.v[vl].limit-st.v[vl].fctbs >= need {
		f.endStall(st, int(vl), f.n.sim.Now())
	}
	in.kick()
}

// Handle runs the refresh timer of lossy port f.refresh[ev.I] (opFCRefresh) and the wake-up of
// port f.ports[ev.I] when inline credits reach it (opCreditsWake).
func (f *ibCredits) Handle(ev *sim.Event) {
	n := f.n
	if ev.Op == opCreditsWake {
		st := &f.ports[ev.I]
		if st.wakeAt != n.sim.Now() {
			return // superseded by an earlier wake-up
		}
		st.wakeAt = 0
		f.sync(st, n.sim.Now())
		st.port.kick()
		if st.stalls != 0 && st.arrN > 0 && st.wakeAt == 0 && !st.port.busy {
			f.wake(st) // still waiting: the next update may be the one
		}
		return
	}
	if n.eng.g == nil || n.eng.done == len(n.eng.g.Msgs) {
		return
	}
	st := &f.ports[f.refresh[ev.I]]
	for vl := 0; vl < f.vls; vl++ {
		f.sendFC(st.port, st, uint8(vl))
	}
	n.sim.After(f.fcPeriod[ev.I], f, opFCRefresh, ev.I, nil)
}

func (f *ibCredits) name(p *Port) string {
	return fmt.Sprintf("%s port %d", f.n.g.Nodes[p.Owner].Name, p.Index)
}

// Report adds the credit counters: time each port and VL could not start a packet for lack of
// credits (nonzero ones only, as ib_credit_stall_ns.<node>.port<p>.vl<v>), per VL and in total;
// flow-control packets sent; the fullest receive buffer.
func (f *ibCredits) Report(res *result.Run) {
	now := f.n.sim.Now()
	// Updates still on the wire when the event queue ran dry would have arrived as packets
	// before the run ended: apply them all then; after a stop, only those due.
	due := now
	if f.n.pending() == 0 {
		due = units.MaxTime
	}
	for i := range f.ports {
		f.sync(&f.ports[i], due)
	}
	var total units.Time
	perVL := make([]units.Time, f.vls)
	for i := range f.ports {
		st := &f.ports[i]
		for vl := 0; vl < f.vls; vl++ {
			s := st.v[vl].stalled
			// (A stall seen by a packet chosen to follow inline updates starts when they end,
			// which may lie just after now.)
			if st.v[vl].stallNeed > 0 && now > st.v[vl].stallFrom {
				s += now - st.v[vl].stallFrom
				if b := f.n.bins; b != nil {
					b.stall(st.v[vl].stallFrom, now) // the stall still open at the end
				}
			}
			if s == 0 {
				continue
			}
			total += s
			perVL[vl] += s
			nd := &f.n.g.Nodes[st.port.Owner]
			res.Counters[fmt.Sprintf("ib_credit_stall_ns.%s.port%d.vl%d", nd.Name, st.port.Index, vl)] = s.Nanoseconds()
			res.Ports = append(res.Ports, result.PortCounters{ // ports.csv, named as RoCE's rows are
				Port: fmt.Sprintf("%s:%d(->%s)", nd.Name, st.port.Index, f.n.g.Nodes[nd.Ports[st.port.Index].Peer].Name),
				Prio: vl, CreditStallNs: s.Nanoseconds()})
		}
	}
	res.Counters["ib_credit_stall_ns"] = total.Nanoseconds()
	for vl, s := range perVL {
		res.Counters[fmt.Sprintf("ib_credit_stall_ns.vl%d", vl)] = s.Nanoseconds()
	}
	res.Counters["ib_fc_packets"] = float64(f.fcSent)
	res.Counters["ib_max_vl_buffer_bytes"] = float64(f.maxUsed * IBBlock)
}

// StallTime returns the time port p's VL vl has spent unable to start a packet for lack of
// credits so far.
func (f *ibCredits) StallTime(p *Port, vl int) units.Time {
	st := f.state(p)
	f.sync(st, f.n.sim.Now())
	s := st.v[vl].stalled
	if now := f.n.sim.Now(); st.v[vl].stallNeed > 0 && now > st.v[vl].stallFrom {
		s += now - st.v[vl].stallFrom
	}
	return s
}

// ExplainStall names the ports and VLs waiting for credits when the network stopped
// delivering: on InfiniBand a standstill with packets held is a credit deadlock (a cycle of
// full receive buffers), which up*/down* routing rules out.
func (f *ibCredits) ExplainStall() string {
	var names []string
	count := 0
	for i := range f.ports {
		st := &f.ports[i]
		f.sync(st, f.n.sim.Now())
		for vl := 0; vl < f.vls; vl++ {
			if st.v[vl].stallNeed > 0 {
				count++
				if len(names) < 4 {
					names = append(names, fmt.Sprintf("%s VL%d since %v", f.name(st.port), vl, st.v[vl].stallFrom))
				}
			}
		}
	}
	if count == 0 {
		return ""
	}
	return fmt.Sprintf("credit deadlock: %d port VLs wait for credits (%s ...); use routing_engine: updown on topologies with switch cycles", count, strings.Join(names, ", "))
}
