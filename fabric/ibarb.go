package fabric

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
	fc      *ibCredits
	high    []VLWeight
	low     []VLWeight
	limit   int64 // bytes; -1 unlimited
	hasHigh bool
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
	st := &a.fc.ports[a.fc.base[p.Owner]+p.Index].arb
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
			if vl := wrr(p, a.high, &st.hiIdx, &st.hiLeft); vl >= 0 {
				if lowWaiting {
					st.hiBytes += int64(p.q[vl].peek().Size)
				}
				return vl
			}
		}
	}
	if vl := wrr(p, a.low, &st.loIdx, &st.loLeft); vl >= 0 {
		st.hiBytes = 0
		return vl
	}
	if a.hasHigh { // the high table was held back but the low one had nothing after all
		return wrr(p, a.high, &st.hiIdx, &st.hiLeft)
	}
	return -1
}

// wrr serves one weighted round-robin table: the current entry while it has weight left and an
// eligible packet, else the next entries in turn (each starting with its full weight).
func wrr(p *Port, t []VLWeight, idx *int, left *int64) int {
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
