package fabric

import (
	"fmt"

	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/sim"
	"github.com/fabricsim/fabricsim/transport/rc"
)

// makeFlows creates the transport state of every message: one Flow per queue pair it is striped
// over (Config.QPsPerConn). A message's first QP has the message's ID as its flow ID; further
// QPs are appended after the messages. Each QP carries a contiguous, MTU-aligned share of the
// message as an RDMA WRITE of its own, with its own PSN space and its own UDP source port, hence
// its own ECMP hash ([Meta24]): with few QPs per connection, flows collide on uplinks.
func (n *Network) makeFlows(mg *msggraph.Graph) error {
	qps := n.cfg.QPsPerConn
	if qps < 1 {
		qps = 1
	}
	n.flows = make([]*Flow, len(mg.Msgs))
	if n.rc.Mode == rc.Selective && n.rc.Cap == 0 {
		n.rc.Cap = n.irnCap()
	}
	if n.rc.Mode == rc.RUD {
		n.uetTransport() // uet.go: the in-flight cap and the reordering tolerance
	}
	mtu := int64(n.cfg.MTU)
	for i := range mg.Msgs {
		m := &mg.Msgs[i]
		if m.Bytes <= 0 {
			continue
		}
		prio := m.Prio
		if prio == 0 {
			prio = n.cfg.DataPriority
		}
		if int(prio) >= n.cfg.Priorities {
			if n.cfg.Kind != KindEthernet {
				return fmt.Errorf("message %d (%s) uses priority %d but the fabric has %d", i, m.Tag, m.Prio, n.cfg.Priorities)
			}
			// The generic Ethernet fabric has one traffic class: every priority shares it.
			prio = 0
		}
		if n.routes.Hops(n.g.Hosts[m.Src], int(m.Dst)) < 0 {
			return fmt.Errorf("message %d (%s): no path from host %d to host %d", i, m.Tag, m.Src, m.Dst)
		}
		size := int64(m.Bytes)
		pkts := (size + mtu - 1) / mtu
		nq := int64(qps)
		if nq > pkts {
			nq = pkts
		}
		per := (pkts + nq - 1) / nq * mtu // bytes per QP, whole packets
		var prev *Flow
		for q := int64(0); q < nq; q++ {
			share := per
			if rest := size - q*per; rest < share {
				share = rest
			}
			if share <= 0 {
				break
			}
			f := &Flow{msg: int32(i), id: int32(i), qp: int32(q), src: m.Src, dst: m.Dst, prio: prio,
				hash: n.qpHash(int32(i), m, int32(q))}
			f.snd.Init(&n.rc, share)
			f.rcv.Init(&n.rc, share)
			if q > 0 {
				f.id = int32(len(n.flows))
				n.flows = append(n.flows, f)
				prev.nextQP = f.id
			} else {
				n.flows[i] = f
			}
			n.flows[i].qpLeft++
			prev = f
		}
	}
	return nil
}

// irnCap is IRN's default in-flight cap: one bandwidth-delay product, the host link rate times
// the base round trip of the longest path from host 0 (a full packet there, a full packet back).
func (n *Network) irnCap() int64 {
	if n.cfg.IRNBDPCap > 0 {
		return int64(n.cfg.IRNBDPCap)
	}
	far, hops := int32(-1), -1
	for d := 1; d < len(n.g.Hosts); d++ {
		if h := n.routes.Hops(n.g.Hosts[0], d); h > hops {
			far, hops = int32(d), h
		}
	}
	if far < 0 {
		return int64(n.cfg.MTU) * 8
	}
	rtt := 2 * newIdealCache(n).fct(0, far, int64(n.cfg.MTU))
	bdp := int64(n.NICs[0].Port.Rate.BytesIn(rtt))
	if bdp < int64(n.cfg.MTU) {
		bdp = int64(n.cfg.MTU)
	}
	return bdp
}

// qpHash is the ECMP entropy of QP q of message i: a hash of the connection (the message itself
// when it has no Conn) and the QP, standing in for the 5-tuple with the QP's UDP source port.
// The single-QP hash of a connection-less message is the foundation's per-message hash.
func (n *Network) qpHash(i int32, m *msggraph.Message, q int32) uint32 {
	conn := uint64(i) + 1
	if m.Conn != 0 {
		conn = uint64(m.Conn)<<1 | 1<<62
	}
	// The connection's hash plus the QP: switches mix the hash again, so QPs land on
	// independent paths, and QP-aware hashing can recover the connection (qpAwareRouter).
	return uint32(sim.Mix64(n.cfg.Seed^conn*0x9e3779b97f4a7c15^uint64(m.Src)<<40^uint64(m.Dst)<<20)) + uint32(q)
}

// qpAfter returns the next QP of f's message, or nil.
func (n *Network) qpAfter(f *Flow) *Flow {
	if f.nextQP == 0 {
		return nil
	}
	return n.flows[f.nextQP]
}

// delivered is called when QP f has received its last byte; the message completes with its last QP.
func (n *Network) delivered(f *Flow) {
	h := n.flows[f.msg]
	h.qpLeft--
	if h.qpLeft == 0 {
		n.eng.complete(f.msg)
	}
}

// QP returns the flow's queue pair index within its message's connection.
func (f *Flow) QP() int32 { return f.qp }

// ID returns the flow's index (Packet.Flow); a message's first QP has the message's ID.
func (f *Flow) ID() int32 { return f.id }

// NumFlows is the number of flows (message QPs) of the running graph.
func (n *Network) NumFlows() int { return len(n.flows) }
