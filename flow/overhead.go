package flow

import (
	"github.com/fabricsim/fabricsim/fabric"
)

// overhead is what a flow's data costs beyond its own bytes on the links it does not send on:
// the receiver's ACKs (AckBytes every AckEvery packets, on the flow's class along the ACK path
// back to the source, fabric/nic.go) and, on InfiniBand, a 6-byte credit update back over every
// link for every packet that crossed it (fabric/ibcredit.go), the ACKs' included. They are
// counted in each link's bytes (the ports' TxBytes of the packet backend), not taken from the
// data's capacity: 0.7 % (InfiniBand) to 2.2 % (RoCE) of a link, charged from the last step's
// deliveries, put a lagging load on links that data saturates, and on a ring whose every link is
// saturated the lag desynchronized the ring (docs/flow.md, Limits).
type overhead struct {
	e *engine
	// ackWire is an ACK's wire bytes per data packet delivered; credit the credit updates' bytes
	// per packet and hop (0 without credits).
	ackWire, credit float64
	// load is each resource's overhead in bytes per second (for the next step); touched lists the
	// resources with a load.
	load    []float64
	touched []int32
}

func newOverhead(e *engine) *overhead {
	c := &e.cfg
	o := &overhead{e: e}
	ack := float64(max(c.AckBytes, c.MinFrame) + c.L1Overhead)
	o.ackWire = ack / float64(max(c.AckEvery, 1))
	if c.Kind == "infiniband" {
		o.credit = fabric.IBFCPacketBytes
	}
	return o
}

func (o *overhead) add(r int32, x float64) {
	for int(r) >= len(o.load) {
		o.load = append(o.load, 0)
	}
	if o.load[r] == 0 {
		o.touched = append(o.touched, r)
	}
	o.load[r] += x
}

// account adds T seconds of the current loads to the links' byte counters.
func (o *overhead) account(T float64) {
	for _, r := range o.touched {
		o.e.net.res[r].txBytes += o.load[r] * T
	}
}

// update counts the step of tau seconds that ran and sets the hot flows' loads from what each
// delivered in it (quiet flows count theirs when they are brought up to date, accountQuiet).
func (o *overhead) update(tau float64) {
	e := o.e
	o.account(tau)
	for _, r := range o.touched {
		o.load[r] = 0
	}
	o.touched = o.touched[:0]
	pkt := e.ideal.maxWire
	for _, fid := range e.hot {
		f := &e.flows[fid]
		if f.out > 0 {
			o.flowLoads(f, f.out/tau/pkt, o.add)
		}
	}
}

// flowLoads calls add for every link a flow delivering pps data packets per second loads with
// its ACKs and credit updates.
func (o *overhead) flowLoads(f *flowState, pps float64, add func(r int32, x float64)) {
	e := o.e
	acks := pps / float64(max(e.cfg.AckEvery, 1))
	for _, r := range e.path[f.ackOff : f.ackOff+f.ackHops] {
		add(r, pps*o.ackWire)
		if o.credit > 0 {
			add(e.net.reverse(r), acks*o.credit)
		}
	}
	if o.credit > 0 {
		for _, r := range e.path[f.off : f.off+f.hops] {
			add(e.net.reverse(r), pps*o.credit)
		}
	}
}

// accountQuiet adds dt seconds of a quiet flow's overhead to the links' byte counters.
func (o *overhead) accountQuiet(fid int32, dt float64) {
	f := &o.e.flows[fid]
	o.flowLoads(f, f.rate/o.e.ideal.maxWire, func(r int32, x float64) { o.e.net.res[r].txBytes += x * dt })
}
