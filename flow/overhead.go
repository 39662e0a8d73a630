package flow

import "github.com/fabricsim/fabricsim/fabric"

// overhead is what a flow's data costs beyond its own bytes on the links it does not send on:
// the receiver's ACKs (AckBytes every AckEvery packets, on the flow's class along the ACK path
// back to the source, fabric/nic.go) and, on InfiniBand, a 6-byte credit update back over every
// link for every packet that crossed it (fabric/ibcredit.go), the ACKs' included. They are
// counted in each link's bytes (the ports' TxBytes of the packet backend) when the flow ends,
// with its own bytes, but not taken from the data's capacity: 0.7 % (InfiniBand) to 2.2 %
// (RoCE) of a link, charged from the last step's deliveries, put a lagging load on links that
// data saturates, and on a ring whose every link is saturated the lag desynchronized the ring
// (docs/flow.md, Limits).
type overhead struct {
	e *engine
	// ackWire is an ACK's wire bytes per data packet delivered; credit the credit updates' bytes
	// per packet and hop (0 without credits).
	ackWire, credit float64
}

func newOverhead(e *engine) *overhead {
	c := &e.cfg
	o := &overhead{e: e}
	ack := float64(max(c.AckBytes, c.MinFrame) + c.L1Overhead)
	o.ackWire = ack / float64(max(c.AckEvery, 1))
	if c.Kind == fabric.KindInfiniBand {
		o.credit = fabric.IBFCPacketBytes
	}
	return o
}

// account adds an ended flow's bytes to the links it crossed: its wire bytes on its path, its
// ACKs on the ACK path, the credit updates on the reverse links.
func (o *overhead) account(f *flowState, wire float64) {
	e := o.e
	for _, r := range e.path[f.off : f.off+f.hops] {
		e.net.res[r].txBytes += wire
	}
	pkts := wire / e.ideal.maxWire
	acks := pkts / float64(max(e.cfg.AckEvery, 1))
	for _, r := range e.path[f.ackOff : f.ackOff+f.ackHops] {
		e.net.res[r].txBytes += pkts * o.ackWire
		if o.credit > 0 {
			e.net.res[e.net.reverse(r)].txBytes += acks * o.credit
		}
	}
	if o.credit > 0 {
		for _, r := range e.path[f.off : f.off+f.hops] {
			e.net.res[e.net.reverse(r)].txBytes += pkts * o.credit
		}
	}
}
