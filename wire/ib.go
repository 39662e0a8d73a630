package wire

import (
	"encoding/binary"
	"fmt"
)

// IBPacket describes one native InfiniBand data packet. AppendPacket produces
// the bytes from the LRH through the VCRC, as a LINKTYPE_INFINIBAND pcap
// record holds them; DecodeIB reverses it.
//
// Builder rules: LRH.LNH and LRH.PktLen are computed (LNH 3 with a GRH,
// 2 without); GRH.PayLen is computed, and a zero GRH.IPVer becomes 6 and a
// zero NxtHdr 0x1B; extension headers and pad follow the opcode as for
// RoCEPacket; a zero PKey becomes DefaultPKey.
type IBPacket struct {
	LRH  LRH
	GRH  *GRH // nil for a local (same-subnet) packet
	BTH  BTH
	DETH *DETH
	RETH *RETH
	AETH *AETH
	Imm  *uint32

	// The payload is max(PayloadLen, len(Payload)) bytes: Payload, then zeros.
	PayloadLen int
	Payload    []byte
}

func (p *IBPacket) payloadLen() int { return max(p.PayloadLen, len(p.Payload)) }

// Len is the packet length AppendPacket produces, VCRC included.
func (p *IBPacket) Len() int {
	return IBPacketLen(p.BTH.OpCode, p.payloadLen(), p.GRH != nil)
}

// Validate reports fields that do not fit the wire format.
func (p *IBPacket) Validate() error {
	if err := p.BTH.validate(); err != nil {
		return err
	}
	switch {
	case p.LRH.VL > 15 || p.LRH.SL > 15 || p.LRH.LVer > 15:
		return fmt.Errorf("wire: IBPacket LRH VL %d / SL %d / LVer %d exceed 4 bits", p.LRH.VL, p.LRH.SL, p.LRH.LVer)
	case p.GRH != nil && p.GRH.FlowLabel > 0xFFFFF:
		return fmt.Errorf("wire: IBPacket GRH FlowLabel 0x%x exceeds 20 bits", p.GRH.FlowLabel)
	case p.PayloadLen < 0:
		return fmt.Errorf("wire: IBPacket PayloadLen %d is negative", p.PayloadLen)
	}
	if err := checkExt("IBPacket", p.BTH.OpCode, p.DETH != nil, p.RETH != nil, p.AETH != nil, p.Imm != nil); err != nil {
		return err
	}
	if words := (p.Len() - VCRCLen) / 4; words > 0x7FF {
		return fmt.Errorf("wire: IBPacket of %d bytes exceeds the 11-bit LRH PktLen (8188 bytes)", p.Len())
	}
	return nil
}

// AppendPacket appends the packet, LRH through VCRC, to dst.
func (p *IBPacket) AppendPacket(dst []byte) []byte {
	start := len(dst)
	n := p.payloadLen()
	pad := padFor(n)
	bth := p.BTH
	bth.PadCnt = uint8(pad)
	if bth.PKey == 0 {
		bth.PKey = DefaultPKey
	}
	transport := BTHLen + extLen(bth.OpCode, p.DETH, p.RETH, p.AETH, p.Imm) + n + pad + ICRCLen
	lrh := p.LRH
	lrh.LNH = LNHLocal
	words := LRHLen + transport
	if p.GRH != nil {
		lrh.LNH = LNHGlobal
		words += GRHLen
	}
	lrh.PktLen = uint16(words / 4)
	dst = lrh.Append(dst)
	if p.GRH != nil {
		g := *p.GRH
		g.PayLen = uint16(transport)
		if g.IPVer == 0 {
			g.IPVer = 6
		}
		if g.NxtHdr == 0 {
			g.NxtHdr = GRHNextHeaderIBA
		}
		dst = g.Append(dst)
	}
	dst = bth.Append(dst)
	dst = appendExt(dst, bth.OpCode, p.DETH, p.RETH, p.AETH, p.Imm)
	dst = appendPayload(dst, p.Payload[:min(len(p.Payload), n)], n, pad)
	icrc, _ := IBICRC(dst[start:])
	dst = binary.LittleEndian.AppendUint32(dst, icrc)
	return appendLE16(dst, VCRC(dst[start:]))
}

// ibInfo says what decodeIB verified, for Check.
type ibInfo struct {
	raw        bool // LNH 0/1: no BTH, no ICRC
	icrc, vcrc bool
}

// DecodeIB decodes a native IB data packet (LRH through VCRC) and verifies
// LRH.PktLen against the packet length, GRH.PayLen, the ICRC and the VCRC.
// Raw packets (LNH 0 or 1) are rejected. Payload aliases pkt.
func DecodeIB(pkt []byte) (IBPacket, error) {
	p, info, err := decodeIB(pkt, false)
	if err == nil && info.raw {
		err = errorf("lrh", "LNH", 1, "raw packet (LNH %d) carries no IBA transport", p.LRH.LNH)
	}
	return p, err
}

func decodeIB(pkt []byte, truncated bool) (p IBPacket, info ibInfo, err error) {
	lrh, rest, err := DecodeLRH(pkt)
	if err != nil {
		return p, info, err
	}
	p.LRH = lrh
	pktBytes := int(lrh.PktLen) * 4
	if !truncated {
		if pktBytes+VCRCLen != len(pkt) {
			return p, info, errorf("lrh", "PktLen", 4, "%d words = %d bytes + VCRC 2, but the packet has %d bytes", lrh.PktLen, pktBytes, len(pkt))
		}
		got := binary.LittleEndian.Uint16(pkt[pktBytes:])
		if want := VCRC(pkt[:pktBytes]); got != want {
			return p, info, errorf("vcrc", "VCRC", pktBytes, "stored 0x%04x, computed 0x%04x", got, want)
		}
		info.vcrc = true
	}
	off := LRHLen
	switch lrh.LNH {
	case LNHRaw, LNHRawIPv6:
		info.raw = true
		return p, info, nil
	case LNHGlobal:
		var g GRH
		if g, rest, err = DecodeGRH(rest); err != nil {
			return p, info, at(err, off)
		}
		if !truncated && int(g.PayLen) != pktBytes-LRHLen-GRHLen {
			return p, info, errorf("grh", "PayLen", off+4, "%d, but LRH.PktLen leaves %d bytes after the GRH", g.PayLen, pktBytes-LRHLen-GRHLen)
		}
		if g.NxtHdr != GRHNextHeaderIBA {
			return p, info, errorf("grh", "NxtHdr", off+6, "0x%02x is not IBA transport (0x1B)", g.NxtHdr)
		}
		p.GRH = &g
		off += GRHLen
	}
	if !truncated {
		if pktBytes < off+BTHLen+ICRCLen {
			return p, info, errorf("lrh", "PktLen", 4, "%d bytes cannot hold the headers, BTH and ICRC (%d)", pktBytes, off+BTHLen+ICRCLen)
		}
		rest = pkt[off : pktBytes-ICRCLen]
	}
	if err = decodeTransport(rest, off, truncated, &p.BTH, &p.DETH, &p.RETH, &p.AETH, &p.Imm, &p.Payload); err != nil {
		return p, info, err
	}
	p.PayloadLen = len(p.Payload)
	if truncated {
		return p, info, nil
	}
	icrcOff := pktBytes - ICRCLen
	got := binary.LittleEndian.Uint32(pkt[icrcOff:])
	if want, _ := IBICRC(pkt[:icrcOff]); got != want {
		return p, info, errorf("icrc", "ICRC", icrcOff, "stored 0x%08x, computed 0x%08x", got, want)
	}
	info.icrc = true
	return p, info, nil
}

// IB link flow-control packet ([IBA] Vol. 1 §7.9.4): 6 bytes,
// Op4 FCTBS12 | VL4 FCCL12 | LPCRC16. FCTBS counts 64-byte blocks sent on
// the VL (mod 4096); FCCL is the credit limit the receiver grants.
const IBFlowControlLen = 6

// Flow-control packet operands.
const (
	FCOpNormal uint8 = 0 // periodic credit update
	FCOpInit   uint8 = 1 // link initialization
)

// IBFlowControl is one link flow-control packet.
type IBFlowControl struct {
	Op    uint8  // 4 bits
	FCTBS uint16 // 12 bits: flow control total blocks sent
	VL    uint8  // 4 bits
	FCCL  uint16 // 12 bits: flow control credit limit
}

// AppendPacket appends the 6-byte packet, LPCRC included.
func (f *IBFlowControl) AppendPacket(dst []byte) []byte {
	start := len(dst)
	dst = binary.BigEndian.AppendUint16(dst, uint16(f.Op&0x0F)<<12|f.FCTBS&0x0FFF)
	dst = binary.BigEndian.AppendUint16(dst, uint16(f.VL&0x0F)<<12|f.FCCL&0x0FFF)
	return appendLE16(dst, VCRC(dst[start:]))
}

// DecodeIBFlowControl decodes a 6-byte flow-control packet and verifies its
// LPCRC.
func DecodeIBFlowControl(b []byte) (IBFlowControl, error) {
	if len(b) != IBFlowControlLen {
		return IBFlowControl{}, errorf("ib-flowcontrol", "length", 0, "%d bytes, want 6", len(b))
	}
	w0, w1 := binary.BigEndian.Uint16(b), binary.BigEndian.Uint16(b[2:])
	f := IBFlowControl{Op: uint8(w0 >> 12), FCTBS: w0 & 0x0FFF, VL: uint8(w1 >> 12), FCCL: w1 & 0x0FFF}
	got := binary.LittleEndian.Uint16(b[4:])
	if want := VCRC(b[:4]); got != want {
		return f, errorf("ib-flowcontrol", "LPCRC", 4, "stored 0x%04x, computed 0x%04x", got, want)
	}
	return f, nil
}
