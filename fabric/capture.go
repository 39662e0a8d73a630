package fabric

import (
	"bufio"
	"fmt"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
	"github.com/fabricsim/fabricsim/wire"
)

// Capture writes the packets that selected ports transmit to pcap files, one per port, with
// every header as the simulator modelled it (addresses, QPs, PSNs, opcodes, ECN bits, FECN/BECN,
// pause quanta, credits). Frames are encoded only for captured ports, when they start
// serializing; a port that is not captured pays one nil check per packet.
type Capture struct {
	n     *Network
	files []*capFile
	snap  int
	max   int64
	buf   []byte
	intb  []byte // an INT header being encoded
	err   error
}

type capFile struct {
	name  string
	f     *os.File
	bw    *bufio.Writer
	w     *wire.PcapWriter
	count int64
	bytes int64 // file size: header and records
}

// ParsePortSelector resolves a selector such as "edge0_*:*,host3:0" against graph g: a
// comma-separated list of NODE:PORT, where NODE is a glob on node names (path.Match syntax) and
// PORT a port number or "*". It returns (node, port) pairs in node, port order.
func ParsePortSelector(g *topo.Graph, sel string) ([][2]int, error) {
	want := map[[2]int]bool{}
	for _, item := range strings.Split(sel, ",") {
		item = strings.TrimSpace(item)
		node, port, ok := strings.Cut(item, ":")
		if !ok || node == "" || port == "" {
			return nil, fmt.Errorf("port selector %q: want NODE:PORT (e.g. tor0:*, host3:0, edge*_0:2)", item)
		}
		if _, err := path.Match(node, ""); err != nil {
			return nil, fmt.Errorf("port selector %q: bad node pattern: %v", item, err)
		}
		pnum := -1
		if port != "*" {
			v, err := strconv.Atoi(port)
			if err != nil || v < 0 {
				return nil, fmt.Errorf("port selector %q: port %q is not a number or *", item, port)
			}
			pnum = v
		}
		matched := false
		for i := range g.Nodes {
			nd := &g.Nodes[i]
			if ok, _ := path.Match(node, nd.Name); !ok {
				continue
			}
			for p := range nd.Ports {
				if pnum < 0 || p == pnum {
					want[[2]int{i, p}] = true
					matched = true
				}
			}
		}
		if !matched {
			return nil, fmt.Errorf("port selector %q matches no port (node names look like %s)", item, exampleNames(g))
		}
	}
	var out [][2]int
	for i := range g.Nodes {
		for p := range g.Nodes[i].Ports {
			if want[[2]int{i, p}] {
				out = append(out, [2]int{i, p})
			}
		}
	}
	return out, nil
}

func exampleNames(g *topo.Graph) string {
	var names []string
	seen := map[string]bool{}
	for i := range g.Nodes {
		n := strings.TrimRight(g.Nodes[i].Name, "0123456789_")
		if !seen[n] {
			seen[n] = true
			names = append(names, g.Nodes[i].Name)
		}
	}
	return strings.Join(names, ", ")
}

// EnableCapture starts capturing the ports sel selects into dir. snapLen bounds the bytes kept
// per packet (0 = whole frames); maxPackets bounds packets per file (0 = no limit). Call Close
// after the run.
func (n *Network) EnableCapture(dir, sel string, snapLen int, maxPackets int64) (*Capture, error) {
	ports, err := ParsePortSelector(n.g, sel)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	lt := wire.LinkTypeEthernet
	if n.cfg.Kind == KindInfiniBand {
		lt = wire.LinkTypeInfiniBand
	}
	if snapLen <= 0 {
		snapLen = 65535
	}
	c := &Capture{n: n, snap: snapLen, max: maxPackets}
	n.capture = c
	for _, np := range ports {
		node := &n.g.Nodes[np[0]]
		name := filepath.Join(dir, fmt.Sprintf("%s-p%d.pcap", node.Name, np[1]))
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644) // as every output file
		if err != nil {
			c.Close()
			return nil, err
		}
		bw := bufio.NewWriterSize(f, 1<<16)
		w, err := wire.NewPcapWriter(bw, lt, snapLen)
		if err != nil {
			f.Close()
			c.Close()
			return nil, err
		}
		cf := &capFile{name: name, f: f, bw: bw, w: w, bytes: wire.PcapFileHeaderLen}
		c.files = append(c.files, cf)
		port := n.portOf(topo.NodeID(np[0]), int32(np[1]))
		port.tap = cf
		port.flags |= portTapped
	}
	return c, nil
}

// Files lists the pcap files being written.
func (c *Capture) Files() []string {
	var out []string
	for _, f := range c.files {
		out = append(out, f.name)
	}
	return out
}

// CaptureFile is what was written to one pcap file.
type CaptureFile struct {
	Name    string
	Packets int64
	Bytes   int64
}

// Written lists every file with the packets and bytes written to it.
func (c *Capture) Written() []CaptureFile {
	out := make([]CaptureFile, len(c.files))
	for i, f := range c.files {
		out[i] = CaptureFile{Name: f.name, Packets: f.count, Bytes: f.bytes}
	}
	return out
}

// Close flushes and closes every file and reports the first error.
func (c *Capture) Close() error {
	for _, f := range c.files {
		if f.f == nil {
			continue
		}
		if err := f.bw.Flush(); err != nil && c.err == nil {
			c.err = err
		}
		if err := f.f.Close(); err != nil && c.err == nil {
			c.err = err
		}
		f.f = nil
	}
	return c.err
}

func (c *Capture) record(p *Port, cf *capFile, pkt *Packet, now units.Time) {
	if c.err != nil || (c.max > 0 && cf.count >= c.max) {
		return
	}
	c.buf = c.encode(c.buf[:0], p, pkt)
	cf.count++
	cf.bytes += wire.PcapRecordHeaderLen + int64(min(len(c.buf), c.snap))
	if err := cf.w.WritePacket(int64(now)/1000, c.buf); err != nil && c.err == nil {
		c.err = fmt.Errorf("pcap %s: %w", cf.name, err)
	}
}

// Addressing used in captures: MACs name the transmitting node and port (a routed fabric rewrites
// them every hop); IPv4 addresses follow HPCC ns-3's convention, node n = 11.0.0.1 + (n << 8);
// IB LIDs are host index + 1; a message's QP number is derived from its message ID.
func portMAC(node topo.NodeID, port int32) wire.MAC {
	return wire.MAC{0x02, 0xfa, byte(node >> 16), byte(node >> 8), byte(node), byte(port)}
}

func (c *Capture) hostIP(host int32) netip.Addr {
	v := 0x0b000001 + uint32(c.n.g.Hosts[host])<<8
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// QPs 0 and 1 are the subnet management and general services QPs (IBA 3.5.10): start above.
func qpn(msg, qp int32) uint32 { return (0x100 + uint32(msg)*8 + uint32(qp)) & 0xffffff }

// bth builds the base transport header of a simulated packet and the extension headers it needs.
func (c *Capture) bth(pkt *Packet) (wire.BTH, *wire.RETH, *wire.AETH, int) {
	n := c.n
	mtu := int64(n.cfg.MTU)
	b := wire.BTH{DestQP: qpn(pkt.Flow, pkt.QP), FECN: pkt.Mark&MarkFECN != 0, BECN: pkt.Mark&MarkBECN != 0}
	var reth *wire.RETH
	var aeth *wire.AETH
	payload := 0
	switch pkt.Kind {
	case Data:
		size := int64(0)
		if f := n.flows[pkt.Flow]; f != nil {
			size = f.snd.Size()
		}
		first, last := pkt.Seq == 0, pkt.Seq+int64(pkt.Payload) >= size
		switch {
		case first && last:
			b.OpCode = wire.OpRCWriteOnly
		case first:
			b.OpCode = wire.OpRCWriteFirst
		case last:
			b.OpCode = wire.OpRCWriteLast
		default:
			b.OpCode = wire.OpRCWriteMiddle
		}
		if first {
			reth = &wire.RETH{VA: 0x10000000, RKey: uint32(pkt.Flow) + 1, DMALen: uint32(size)}
		}
		b.AckReq = last
		b.PSN = uint32(pkt.Seq/mtu) & 0xffffff
		payload = int(pkt.Payload)
	case Ack:
		b.OpCode = wire.OpRCAcknowledge
		b.PSN = uint32((pkt.Seq+mtu-1)/mtu-1) & 0xffffff
		aeth = &wire.AETH{Syndrome: 0x1f, MSN: 0}
	case Nak:
		b.OpCode = wire.OpRCAcknowledge
		b.PSN = uint32(pkt.Seq/mtu) & 0xffffff
		aeth = &wire.AETH{Syndrome: 0x60} // NAK: PSN sequence error (IBA 9.7.5.2.4)
	case CNP:
		b.OpCode = wire.OpCNP
		b.BECN = true
	}
	return b, reth, aeth, payload
}

func (c *Capture) encode(dst []byte, p *Port, pkt *Packet) []byte {
	n := c.n
	src := portMAC(p.Owner, p.Index)
	peerNode := n.g.Nodes[p.Owner].Ports[p.Index].Peer
	dstMAC := portMAC(peerNode, p.peerPort)
	if n.cfg.Kind == KindInfiniBand {
		if pkt.Kind == LinkCtrl {
			fc := wire.IBFlowControl{Op: 0, FCTBS: pkt.CtrlWord(1) & 0xfff, VL: pkt.Prio, FCCL: pkt.CtrlWord(0) & 0xfff}
			return fc.AppendPacket(dst)
		}
		b, reth, aeth, payload := c.bth(pkt)
		if pkt.Kind == CNP {
			payload = int(pkt.Size) - n.cfg.HeaderBytes // the CN packet's 16 reserved bytes
		}
		ib := wire.IBPacket{
			LRH:  wire.LRH{VL: pkt.Prio & 0xf, SL: pkt.SL & 0xf, DLID: uint16(pkt.Dst + 1), SLID: uint16(pkt.Src + 1)},
			BTH:  b,
			RETH: reth, AETH: aeth, PayloadLen: payload,
		}
		return ib.AppendPacket(dst)
	}
	if pkt.Kind == LinkCtrl {
		pause := wire.PFCPause{SrcMAC: src, Enable: pkt.Mark, Quanta: pkt.CtrlWords()}
		return pause.AppendFrame(dst)
	}
	b, reth, aeth, payload := c.bth(pkt)
	rp := wire.RoCEPacket{
		DstMAC: dstMAC, SrcMAC: src,
		SrcIP: c.hostIP(pkt.Src), DstIP: c.hostIP(pkt.Dst),
		ECN:        pkt.ECN,
		UDPSrcPort: 0xc000 | uint16(pkt.Hash&0x3fff),
		BTH:        b, RETH: reth, AETH: aeth, PayloadLen: payload,
	}
	if n.cfg.Kind == KindRoCE {
		rp.VLAN = &wire.VLANTag{PCP: pkt.Prio & 7}
		rp.DSCP = 26 // RoCE traffic class commonly mapped to DSCP 26 (priority 3)
	}
	if n.ints != nil && carriesINT(pkt) {
		// The INT header leads the payload, in HPCC's ns-3 layout (wire/int.go).
		c.intb = c.appendINT(c.intb[:0], pkt)
		rp.Payload, rp.PayloadLen = c.intb, payload+wire.INTStackLen
	}
	return rp.AppendFrame(dst)
}

// appendINT appends the INT header pkt carries (hpcc.go's stack) in wire's layout.
func (c *Capture) appendINT(dst []byte, pkt *Packet) []byte {
	st := &c.n.ints.stacks[pkt.Sack-1]
	var hops [wire.INTMaxHops]wire.INTHop
	for i, h := range st.hops[:st.n] {
		hops[i] = wire.INTHop{TimeNs: uint64(h.TS / units.Nanosecond), TxBytes: uint64(h.TxBytes), QLen: uint64(h.QLen), Rate: uint64(h.Rate)}
	}
	return wire.AppendINT(dst, hops[:st.n], uint16(st.n))
}
