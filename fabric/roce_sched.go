package fabric

import "math/bits"

// dwrr is the RoCE port scheduler (802.1Qaz ETS): strict-priority classes first, highest
// first; then deficit round robin over the other classes with a quantum of weight x one full
// frame, so each visit can send at least one packet.
type dwrr struct {
	*roce
	strict  uint8
	quantum [8]int64
	deficit []int64 // per port-priority
	cur     []uint8 // per global port: the class being served
}

func newDWRR(r *roce) *dwrr {
	s := &dwrr{roce: r, strict: uint8(r.cfg.Strict), deficit: make([]int64, len(r.n.ports)*8), cur: make([]uint8, len(r.n.ports))}
	frame := int64(r.n.cfg.MTU) + int64(r.n.cfg.HeaderBytes+r.n.cfg.FirstHeaderExtra)
	for i, w := range r.cfg.Weights {
		if w < 1 {
			w = 1
		}
		s.quantum[i] = int64(w) * frame
	}
	return s
}

// Pick serves strict classes first, then DWRR. PFC never blocks a class beyond Port.Paused, so
// eligibility is "queued and not paused"; the common case of one active class costs a few bit
// operations.
func (s *dwrr) Pick(p *Port) int {
	elig := uint8(p.qmask) &^ p.Paused
	if elig == 0 {
		return -1
	}
	if hi := elig & s.strict; hi != 0 {
		return 7 - bits.LeadingZeros8(hi)
	}
	if elig&(elig-1) == 0 {
		return bits.TrailingZeros8(elig) // one weighted class active: nothing to share
	}
	g := p.gidx
	for iter := 0; iter < 17; iter++ {
		prio := int(s.cur[g])
		d := &s.deficit[g*8+int32(prio)]
		if elig&(1<<prio) != 0 {
			if size := int64(p.q[prio].peek().Size); *d >= size {
				*d -= size
				return prio
			}
		} else if p.q[prio].size == 0 {
			*d = 0
		}
		next := (prio + 1) & 7
		s.cur[g] = uint8(next)
		if elig&(1<<next) != 0 {
			s.deficit[g*8+int32(next)] += s.quantum[next]
		}
	}
	return -1
}
