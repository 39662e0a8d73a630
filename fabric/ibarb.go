package fabric

import (
	"math/bits"

	"github.com/fabricsim/fabricsim/units"
)

// VL arbitration (IBA vol. 1 §7.6.9): each port serves its VLs from two weighted round-robin
// tables. An entry {VL, weight} may send packets while its weight, in 64-byte units, is not used
// up (a packet is always sent whole, so the last one may overdraw it); a VL with nothing
// eligible (empty, or without credits) forfeits its turn. The high-priority table goes first,
// but once VL_HIGH_LIMIT x 4 KiB of high-priority bytes have been sent while a low-priority
// packet was waiting, the low table gets one packet (255: never; 0: after every packet).
//
// On an HCA port the tables order only the queued ACKs and notifications; the HCA's data is
// offered when they have nothing, its flows served round robin by the NIC.

type arbState struct {
	hiIdx, loIdx   int
	hiLeft, loLeft int64 // bytes left of the current entry's weight
	hiBytes        int64 // high-priority bytes sent while a low-priority packet waited
}

type ibArbiter struct {
	fc   *ibCredits
	high []VLWeight
	low  []VLWeight
	// highAt and lowAt have, per VL, bit i set when entry i of the table serves that VL with a
	// positive weight (tables have at most 64 entries).
	highAt, lowAt *[16]uint64
	limit         int64 // bytes; -1 unlimited
	hasHigh       bool
}

func newIBArbiter(n *Network, fc *ibCredits) *ibArbiter {
	ib := &n.cfg.IB
	a := &ibArbiter{fc: fc, high: ib.ArbHigh, low: ib.ArbLow}
	a.limit = int64(ib.HighLimit) * 4096
	if ib.HighLimit == 255 {
		a.limit = -1
	}
	for _, e := range a.high {
		a.hasHigh = a.hasHigh || e.Weight > 0
	}
	a.highAt, a.lowAt = entriesByVL(a.high), entriesByVL(a.low)
	for i := range fc.ports {
		st := &fc.ports[i].arb
		if len(a.high) > 0 {
			st.hiLeft = int64(a.high[0].Weight) * IBBlock
		}
		if len(a.low) > 0 {
			st.loLeft = int64(a.low[0].Weight) * IBBlock
		}
	}
	return a
}

// Pick chooses the VL port p sends next.
func (a *ibArbiter) Pick(p *Port) int {
	if p.qmask == 0 { // most calls find every VL empty (an HCA's ACK queues, an idle port)
		return -1
	}
	// The port's credit state, synchronized once for every VL tried (ibCheck).
	c := ibCheck{st: p.ibc}
	if f := a.fc; !f.plain {
		c.f, c.now = f, max(p.net.sim.Now(), p.freeAt) // a packet chosen now starts at now
		f.sync(c.st, c.now)
	}
	st := &c.st.arb
	if a.hasHigh {
		lowWaiting := false
		if a.limit >= 0 {
			for _, e := range a.low {
				if e.Weight > 0 && p.Eligible(int(e.VL)) {
					lowWaiting = true
					break
				}
			}
			if !lowWaiting {
				st.hiBytes = 0
			}
		}
		if a.limit < 0 || !lowWaiting || st.hiBytes < a.limit || (a.limit == 0 && st.hiBytes == 0) {
			if vl := wrr(p, &c, a.high, a.highAt, &st.hiIdx, &st.hiLeft); vl >= 0 {
				if lowWaiting {
					st.hiBytes += int64(p.q[vl].peek().Size)
				}
				return vl
			}
		}
	}
	if r := p.qmask &^ uint16(p.Paused); r&(r-1) == 0 && c.f != nil && a.lowAt != nil {
		// One VL ready (r is not empty: qmask is not), its head packet fits: wrr's choice
		// (wrr1) without wrr's call. Otherwise wrr asks each entry and rests the table.
		vl := bits.TrailingZeros16(r) & 15
		if head := p.q[vl].peek(); a.lowAt[vl] != 0 && c.st.fits(head) {
			st.loIdx, st.loLeft = wrr1(a.low, a.lowAt[vl], st.loIdx, st.loLeft)
			st.loLeft -= int64(head.Size)
			st.hiBytes = 0
			return vl
		}
	}
	if vl := wrr(p, &c, a.low, a.lowAt, &st.loIdx, &st.loLeft); vl >= 0 {
		st.hiBytes = 0
		return vl
	}
	if a.hasHigh { // the high table was held back but the low one had nothing after all
		return wrr(p, &c, a.high, a.highAt, &st.hiIdx, &st.hiLeft)
	}
	return -1
}

// entriesByVL returns, per VL, the set of table entries that serve it with a positive weight;
// nil for a table of more than 64 entries (wrr then scans).
func entriesByVL(t []VLWeight) *[16]uint64 {
	if len(t) > 64 {
		return nil
	}
	var at [16]uint64
	for i, e := range t {
		if e.Weight > 0 {
			at[e.VL&15] |= 1 << i
		}
	}
	return &at
}

// wrr serves one weighted round-robin table: the current entry while it has weight left and an
// eligible packet, else the next entries in turn (each starting with its full weight), the
// current one last; after a round without an eligible packet the table rests one entry further
// on. An entry is eligible when its weight is positive, its VL has a packet queued and not
// paused, and link-level flow control lets that packet start. With at (entriesByVL) only the
// entries of VLs with a packet are visited, in the same order and with the same flow-control
// queries as the entry-by-entry scan (wrrScan, which TestWRRMatchesScan compares it with).
func wrr(p *Port, c *ibCheck, t []VLWeight, at *[16]uint64, idx *int, left *int64) int {
	n := len(t)
	if n == 0 {
		return -1
	}
	if at == nil {
		return wrrScan(p, t, idx, left)
	}
	// The current entry with the weight it has left, if its VL has a packet queued and not paused
	// (its bit of cand, which the common case then never builds); then the entries after it, each
	// with its full weight, and the current one again. (wrrTry's calls: on PGO's profile's lines.)
	i0 := *idx
	cur := t[i0]
	ready := p.qmask &^ uint16(p.Paused)
	if *left > 0 && cur.Weight > 0 && ready&(1<<(cur.VL&15)) != 0 &&
		wrrTry(p, c, cur.VL, i0, *left, idx, left) {
		return int(cur.VL)
	}
	var cand uint64
	for m := ready; m != 0; m &= m - 1 {
		cand |= at[bits.TrailingZeros16(m)]
	}
	// Rotated right by i0+1, the set has the entries after i0 from bit 0 up, then those up to i0
	// (i0 < n <= 64: entry j is bit (j-i0-1) mod 64; the bits from n to 63 are empty).
	for r := bits.RotateLeft64(cand, -(i0 + 1)); r != 0; r &= r - 1 {
		if j := (bits.TrailingZeros64(r) + i0 + 1) & 63; wrrTry(p, c, t[j].VL, j, int64(t[j].Weight)*IBBlock, idx, left) {
			return int(t[j].VL)
		}
	}
	if *idx = i0 + 1; *idx == n {
		*idx = 0
	}
	*left = int64(t[*idx].Weight) * IBBlock
	return -1
}

// wrrTry serves entry j (VL vl, weight l left) if link-level flow control lets the VL's head
// packet start.
func wrrTry(p *Port, c *ibCheck, vl uint8, j int, l int64, idx *int, left *int64) bool {
	head := p.q[vl].peek()
	if !c.fits(head) && c.blocked(p, head) {
		return false
	}
	*idx, *left = j, l-int64(head.Size)
	return true
}

// wrr1 is the entry of table t that wrr serves, and the weight it has left before the packet,
// when one VL is ready and its head packet may start: the current entry i0 while it serves the
// VL and has weight left, else the first entry after it (cyclically) that serves the VL, with
// its full weight. e, not empty, is at[VL], the entries serving it (entriesByVL). The same
// entry and weight as wrr (TestWRR1MatchesWRR); Pick calls it inlined, in place of wrr.
func wrr1(t []VLWeight, e uint64, i0 int, left int64) (int, int64) {
	if left > 0 && e&(1<<(i0&63)) != 0 {
		return i0, left
	}
	j := (bits.TrailingZeros64(bits.RotateLeft64(e, -(i0+1))) + i0 + 1) & 63
	return j, int64(t[j].Weight) * IBBlock
}

// ibCheck is one arbitration's credit check at one port: the port's credit state st,
// synchronized once at now, the instant a packet chosen now would start (ibArbiter.Pick), then
// asked about each VL the arbiter tries, where Network.blocked's ibCredits.Blocked would find
// and synchronize the state again for each. f nil asks Network.blocked: the plain path
// (ibCredits.plain, TestIBCheckMatchesBlocked) and other flow control (TestWRRMatchesScan).
type ibCheck struct {
	f   *ibCredits
	st  *ibPort
	now units.Time
}

// fits reports whether pkt may start (false with f nil: ask blocked).
func (c *ibCheck) fits(pkt *Packet) bool { return c.f != nil && c.st.fits(pkt) }

// blocked is Network.blocked(p, pkt) for a packet fits turned down: with f, a credit stall.
func (c *ibCheck) blocked(p *Port, pkt *Packet) bool {
	if c.f == nil {
		return p.net.blocked(p, pkt)
	}
	c.f.stall(c.st, pkt, c.now)
	return true
}

// wrrScan is wrr entry by entry (tables of more than 64 entries, and the reference in tests).
func wrrScan(p *Port, t []VLWeight, idx *int, left *int64) int {
	n := len(t)
	if n == 0 {
		return -1
	}
	for i := 0; i <= n; i++ {
		e := t[*idx]
		if e.Weight > 0 && *left > 0 && p.Eligible(int(e.VL)) {
			*left -= int64(p.q[e.VL].peek().Size)
			return int(e.VL)
		}
		*idx++
		if *idx == n {
			*idx = 0
		}
		*left = int64(t[*idx].Weight) * IBBlock
	}
	return -1
}
