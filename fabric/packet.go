package fabric

// PacketKind says what a packet carries.
type PacketKind uint8

const (
	// Data carries a message's payload bytes.
	Data PacketKind = iota
	// Ack acknowledges all bytes before Seq (cumulative).
	Ack
	// Nak asks the sender to go back to Seq (a sequence error was seen).
	Nak
	// CNP is a congestion notification from the receiver to the sender of a flow (RoCEv2 BTH
	// opcode 0x81; InfiniBand BECN). Routed end to end like an ACK.
	CNP
	// LinkCtrl is a link-local control frame (PFC PAUSE, InfiniBand flow-control credit
	// update): it crosses one link, is never routed or buffered, and is handed to the fabric's
	// LinkFlowControl at the receiving port.
	LinkCtrl
)

func (k PacketKind) String() string {
	switch k {
	case Data:
		return "data"
	case Ack:
		return "ack"
	case Nak:
		return "nak"
	case CNP:
		return "cnp"
	case LinkCtrl:
		return "link-ctrl"
	}
	return "?"
}

// ECN codepoints of the IP header's two ECN bits (RFC 3168).
const (
	ECNNotECT uint8 = 0
	ECNECT1   uint8 = 1
	ECNECT0   uint8 = 2
	ECNCE     uint8 = 3
)

// Packet is one frame in flight. Packets are pooled by the Network: a component that consumes a
// packet (a NIC that delivered it, a switch that dropped it) returns it with Network.free.
type Packet struct {
	// Seq is the byte offset of the first payload byte (Data) or the acknowledged/requested
	// offset (Ack, Nak). On a LinkCtrl frame Seq and Sack hold the control words (CtrlWord).
	Seq int64
	// Sack is, on a selective-repeat (IRN) NAK, the offset of the out-of-order data packet that
	// triggered it; Seq is then the cumulative acknowledgement.
	Sack int64
	// next links the packet into the queue that holds it (fifo).
	next *Packet
	// Flow is the message (msggraph.ID) the packet belongs to.
	Flow    int32
	Src     int32 // sending host index
	Dst     int32 // receiving host index
	Payload int32 // payload bytes (0 for control packets)
	// Size is the frame size in bytes as stored in a buffer: headers, payload, trailers (CRCs).
	// On the link a frame also takes Config.L1Overhead bytes (preamble, start delimiter and
	// inter-frame gap on Ethernet; none on InfiniBand).
	Size int32
	// Hash is the flow's entropy for ECMP (a 5-tuple hash on real switches).
	Hash uint32
	// InPort is the ingress port at the node that currently holds the packet.
	InPort int32
	// QP is the sender's queue pair (0 when the fabric does not model several per connection).
	QP   int32
	Kind PacketKind
	Prio uint8 // traffic class (Ethernet priority / IB virtual lane); selects the queue
	ECN  uint8
	// Mark carries InfiniBand FECN/BECN bits (MarkFECN, MarkBECN) on data and ACKs, and the PFC
	// class-enable vector on a PAUSE frame.
	Mark uint8
	// SL is the service level the message asked for (its msggraph Prio; the InfiniBand LRH SL):
	// end to end, while Prio is the queue (VL) it occupies on the current link (Port.SL2VL).
	SL uint8
	// InVL is the queue (VL) the packet used on the link it arrived on: Prio as it was before
	// the switch holding it chose the egress VL.
	InVL uint8
	// route, when not 0, is 1 + the egress port that Switch.Prefetch found for the packet at the
	// switch about to receive it, where the route is ECMP by flow hash or an LFT entry (a pure
	// function of the switch, the destination and the hash): Switch.Handle takes it rather than
	// looking the route up a second time, and clears it (ibRouter.memo says when on InfiniBand).
	route uint16
}

// The packet is on the per-hop path of every event: it is kept within one 64-byte cache line
// (Go's 64-byte size class), which is why link-control content shares Seq and Sack.

// CtrlWord returns 16-bit word i (0..7) of a link-control frame: the PFC pause quanta of
// priority i, or for an InfiniBand flow-control packet FCCL (word 0) and FCTBS (word 1).
func (p *Packet) CtrlWord(i int) uint16 {
	if i < 4 {
		return uint16(uint64(p.Seq) >> (16 * i))
	}
	return uint16(uint64(p.Sack) >> (16 * (i - 4)))
}

// SetCtrlWord sets word i (0..7) of a link-control frame.
func (p *Packet) SetCtrlWord(i int, v uint16) {
	w := &p.Seq
	if i >= 4 {
		w, i = &p.Sack, i-4
	}
	shift := 16 * uint(i)
	*w = int64(uint64(*w)&^(0xffff<<shift) | uint64(v)<<shift)
}

// CtrlWords returns all eight control words.
func (p *Packet) CtrlWords() (w [8]uint16) {
	for i := range w {
		w[i] = p.CtrlWord(i)
	}
	return w
}

// Bits of Packet.Mark on routed packets.
const (
	MarkFECN uint8 = 1 << 0
	MarkBECN uint8 = 1 << 1
)

// packetPool recycles packets: a run allocates only as many as are ever in flight at once.
type packetPool struct {
	free []*Packet
	live int64 // packets handed out and not yet returned
	// ints, on an INT fabric, takes back the INT stack of a data packet or ACK (hpcc.go).
	ints *intPool
}

func (p *packetPool) get() *Packet {
	p.live++
	if n := len(p.free); n > 0 {
		pkt := p.free[n-1]
		p.free = p.free[:n-1]
		return pkt
	}
	return new(Packet)
}

func (p *packetPool) put(pkt *Packet) {
	p.live--
	if p.ints != nil && carriesINT(pkt) {
		p.ints.put(pkt.Sack)
	}
	*pkt = Packet{}
	p.free = append(p.free, pkt)
}

// fifo is a queue of packets linked through Packet.next: pushing touches only the tail packet
// (recently queued, so likely in cache) and popping only the packet being taken, with no ring
// buffer of pointers to miss in or to grow.
type fifo struct {
	head, tail *Packet
	size       int
}

func (q *fifo) len() int { return q.size }

func (q *fifo) push(p *Packet) {
	p.next = nil
	if q.tail == nil {
		q.head = p
	} else {
		q.tail.next = p
	}
	q.tail = p
	q.size++
}

func (q *fifo) peek() *Packet { return q.head }

func (q *fifo) pop() *Packet {
	p := q.head
	if p == nil {
		return nil
	}
	q.head = p.next
	if q.head == nil {
		q.tail = nil
	}
	p.next = nil
	q.size--
	return p
}
