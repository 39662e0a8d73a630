package runner

import (
	"fmt"
	"math/bits"

	"github.com/fabricsim/fabricsim/result"
	"github.com/fabricsim/fabricsim/scenario"
	"github.com/fabricsim/fabricsim/units"
)

// HPCCHeaderBytes is what HPCC's standalone FCT adds per packet: the whole header without the
// INT stack, Ethernet/PPP 14 + IPv4 20 + UDP 8 + the seq/pg header 6 (CustomHeader::
// GetStaticWholeHeaderSize - IntHeader::GetStaticSize, alibaba-edu/High-Precision-Congestion-
// Control simulation/src/network/utils/custom-header.cc @9f4be2a9ead8).
const HPCCHeaderBytes = 48

// HPCCStandalone returns HPCC ns-3's standalone FCT of each message in ns, as third.cc's
// qp_finish computes it (alibaba-edu/High-Precision-Congestion-Control simulation/scratch/
// third.cc @9f4be2a9ead8): base_rtt + total_bytes x 8e9 / b, where over the message's first
// shortest path base_rtt = 2 x the links' propagation delays + one MTU payload's serialization
// on each link (each term in whole ns, truncated as ns-3's integers are), b is the slowest
// link's rate and total_bytes = size + packets x HPCCHeaderBytes with packets of the run's MTU.
func HPCCStandalone(b *scenario.Built) (func(m *result.Message) int64, error) {
	if b.Routes == nil {
		return nil, fmt.Errorf("this topology has no shortest-path routes to follow")
	}
	g, mtu := b.Graph, uint64(b.Fabric.MTU)
	type pair struct{ src, dst int32 }
	type path struct{ rtt, bw uint64 }
	memo := map[pair]path{}
	return func(m *result.Message) int64 {
		k := pair{m.Src, m.Dst}
		p, ok := memo[k]
		if !ok {
			nodes := b.Routes.FirstPath(int(m.Src), int(m.Dst))
			var delay, tx uint64
			bw := ^uint64(0)
			for i := 0; i+1 < len(nodes); i++ {
				for _, port := range g.Nodes[nodes[i]].Ports {
					if port.Peer != nodes[i+1] {
						continue
					}
					l := &g.Links[port.Link]
					rate := uint64(l.Rate)
					delay += uint64(l.Latency / units.Nanosecond)
					tx += mtu * 1_000_000_000 * 8 / rate
					bw = min(bw, rate)
					break
				}
			}
			p = path{rtt: 2*delay + tx, bw: bw}
			memo[k] = p
		}
		size := uint64(m.Bytes)
		total := size + ((size-1)/mtu+1)*HPCCHeaderBytes
		hi, lo := bits.Mul64(total, 8_000_000_000)
		q, _ := bits.Div64(hi, lo, p.bw) // hi < bw: total < bw x 2^64 / 8e9 bytes
		return int64(p.rtt + q)
	}, nil
}
