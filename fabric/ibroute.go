package fabric

import (
	"github.com/fabricsim/fabricsim/ibsm"
	"github.com/fabricsim/fabricsim/result"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/transport/rc"
)

// ibRouter forwards by the subnet manager's linear forwarding tables (package ibsm) and, with
// adaptive routing, picks per data packet among the destination's allowed ports the one with the
// fewest bytes queued on the packet's VL, skipping ports without credits for it; ties keep the
// LFT's port, so an idle fabric routes exactly as the static tables do ([IBA] Vol. 1; AR chooses
// among equal-cost ports by queue occupancy). It also sets the packet's VL for the egress link
// from the port's SL2VL table.
type ibRouter struct {
	n        *Network
	t        *ibsm.Tables
	fc       *ibCredits
	adaptive bool

	decisions  int64 // adaptive lookups with more than one allowed port
	deviations int64 // ... that left by another port than the LFT's

	// rows is, by node, each switch's stored LFT (ibsm.Tables.Row: nil where Tables.Port
	// computes the entry), taken from the tables rowsOf: prefetchIB reads the entry with one
	// index (rowOf). Faults replace t (faults.go), and rowOf then sends it to Tables.Port;
	// rowsOf nil does so always (TestIBRouteRowsMatchPort).
	rows   [][]int16
	rowsOf *ibsm.Tables
}

// newIBRouter returns the router of tables t, with their rows for predict.
func newIBRouter(n *Network, t *ibsm.Tables, fc *ibCredits, adaptive bool) *ibRouter {
	r := &ibRouter{n: n, t: t, fc: fc, adaptive: adaptive, rows: make([][]int16, len(n.g.Nodes)), rowsOf: t}
	for i := range n.g.Nodes {
		if n.g.Nodes[i].Kind == topo.Switch {
			r.rows[i] = t.Row(topo.NodeID(i))
		}
	}
	return r
}

// noCredit ranks a port whose VL cannot take the packet now behind any queue depth.
const noCredit = int64(1) << 50

func (r *ibRouter) Route(s *Switch, pkt *Packet, _ []int32) int32 {
	dst := int(pkt.Dst)
	out := r.t.Port(s.Node, dst)
	if out < 0 {
		return -1
	}
	if r.adaptive && pkt.Kind == Data {
		if grp := r.t.Group(s.Node, dst); len(grp) > 1 {
			r.decisions++
			need := ibBlocks(pkt.Size)
			score := func(q int32) int64 {
				p := s.Ports[q]
				vl := p.VLOf(pkt.SL)
				sc := p.q[vl].bytes
				if p.busy {
					sc += int64(p.lastWire)
				}
				if r.fc.Credits(p, int(vl)) < need {
					sc += noCredit
				}
				return sc
			}
			best, bestScore := out, score(out)
			for _, q := range grp {
				if q == out {
					continue
				}
				if sc := score(q); sc < bestScore {
					best, bestScore = q, sc
				}
			}
			if best != out {
				r.deviations++
				out = best
			}
		}
	}
	pkt.Prio = s.Ports[out].VLOf(pkt.SL)
	return out
}

// predict is the LFT entry: the port a static table sends pkt to, and an idle adaptive one.
func (r *ibRouter) predict(s *Switch, pkt *Packet) int32 {
	return r.memo(pkt, r.lft(s.Node, pkt.Dst))
}

// lft is Tables.Port(sw, dst), from the switch's row where the router keeps it.
func (r *ibRouter) lft(sw topo.NodeID, dst int32) int32 {
	if row := r.rowOf(sw); row != nil {
		return int32(row[dst])
	}
	return r.port(sw, dst)
}

// rowOf is switch sw's row of the LFT, nil where Tables.Port must be asked.
func (r *ibRouter) rowOf(sw topo.NodeID) []int16 {
	if r.rowsOf != r.t {
		return nil
	}
	return r.rows[sw]
}

// port is Tables.Port, out of line (lft's fallback).
//
//go:noinline
func (r *ibRouter) port(sw topo.NodeID, dst int32) int32 { return r.t.Port(sw, int(dst)) }

// memo keeps predict's port out in pkt.route for Switch.Handle where it is Route's choice
// (static tables, or a packet adaptive routing does not move): Handle then does not call Route
// and the ingress sets the egress VL instead (Network.ingress). Not where faults may change
// the tables before the event runs (TestRouteMemoMatchesLookup).
func (r *ibRouter) memo(pkt *Packet, out int32) int32 {
	n := r.n
	if (!r.adaptive || pkt.Kind != Data) && n.faults == nil && !n.noRouteMemo && n.ibfc != nil && uint32(out) < 1<<16-1 {
		pkt.route = uint16(out + 1)
	}
	return out
}

// Report adds the adaptive-routing counters.
func (r *ibRouter) Report(res *result.Run) {
	res.Counters["ib_ar_decisions"] = float64(r.decisions)
	res.Counters["ib_ar_deviations"] = float64(r.deviations)
	if r.n.rc.Mode == rc.Reorder {
		// Packets the reorder-tolerant receiver held ahead of a gap (transport/rc).
		res.Counters["ib_reordered_packets"] = float64(r.n.stats.OutOfOrder)
	}
}

// staticRouter is a router with per-switch forwarding tables: the ideal (alone-on-the-network)
// FCT follows its path, which up*/down* may make longer than the shortest one.
type staticRouter interface {
	staticPort(sw topo.NodeID, dst int32) int32
}

func (r *ibRouter) staticPort(sw topo.NodeID, dst int32) int32 { return r.t.Port(sw, int(dst)) }
