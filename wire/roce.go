package wire

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// Defaults applied by the frame builders to zero fields, so that a zero
// value produces a frame a NIC would accept.
const (
	DefaultPKey = 0xFFFF // default partition, full member (IBA Vol. 1 §10.9.1.2)
	DefaultTTL  = 64     // IPv4 TTL / IPv6 hop limit, as Linux rxe sends
)

// RoCEPacket describes one RoCEv2 packet in fabric-neutral terms. AppendFrame
// turns it into a complete Ethernet frame (headers, payload, pad, ICRC, FCS);
// DecodeRoCE turns a frame back into it.
//
// Builder rules: the extension headers written are those the opcode carries
// (IBA Table 38), taken from DETH/RETH/AETH/Imm or zero when nil; BTH.PadCnt
// is computed from the payload length; a zero PKey becomes DefaultPKey and a
// zero TTL DefaultTTL. A CNP (OpCNP) always carries BECN and the 16 reserved
// payload bytes. Values wider than their field are truncated to it; Validate
// reports them instead.
type RoCEPacket struct {
	DstMAC, SrcMAC MAC
	VLAN           *VLANTag // 802.1Q tag (PCP for PFC); its EtherType is ignored

	// SrcIP and DstIP are both IPv4 or both IPv6. The zero Addr means 0.0.0.0.
	SrcIP, DstIP netip.Addr
	DSCP         uint8  // 6 bits
	ECN          uint8  // 2 bits: ECNNotECT, ECNECT0, ECNECT1, ECNCE
	TTL          uint8  // IPv4 TTL or IPv6 hop limit; 0 means DefaultTTL
	IPID         uint16 // IPv4 identification
	FlowLabel    uint32 // IPv6 flow label, 20 bits

	UDPSrcPort uint16 // ECMP entropy; the destination port is always 4791
	// UDPChecksum computes the UDP checksum for IPv4 too; over IPv4 RoCEv2
	// NICs send 0 (legal, RFC 768). Over IPv6 it is always computed
	// (RFC 8200 §8.1).
	UDPChecksum bool

	BTH  BTH
	DETH *DETH
	RETH *RETH
	AETH *AETH
	Imm  *uint32 // ImmDt

	// The payload is max(PayloadLen, len(Payload)) bytes: Payload, then
	// zeros. A nil Payload gives PayloadLen zero bytes.
	PayloadLen int
	Payload    []byte
}

func (p *RoCEPacket) ipv6() bool { return p.SrcIP.Is6() && !p.SrcIP.Is4In6() }

func (p *RoCEPacket) payloadLen() int {
	if p.BTH.OpCode == OpCNP {
		return CNPPayloadLen
	}
	return max(p.PayloadLen, len(p.Payload))
}

// FrameLen is the length of the frame AppendFrame produces, FCS included.
func (p *RoCEPacket) FrameLen() int {
	return RoCEv2FrameLen(p.BTH.OpCode, p.payloadLen(), p.ipv6(), p.VLAN != nil)
}

// Validate reports fields that do not fit the wire format or contradict each
// other. AppendFrame does not call it (it is on the hot path); tests and
// scenario loading should.
func (p *RoCEPacket) Validate() error {
	s, d := p.SrcIP, p.DstIP
	if s.IsValid() != d.IsValid() || (s.IsValid() && (s.Is6() && !s.Is4In6()) != (d.Is6() && !d.Is4In6())) {
		return fmt.Errorf("wire: RoCEPacket SrcIP %v and DstIP %v must both be IPv4 or both IPv6", s, d)
	}
	if err := p.BTH.validate(); err != nil {
		return err
	}
	switch {
	case p.DSCP > 63:
		return fmt.Errorf("wire: RoCEPacket DSCP %d exceeds 6 bits", p.DSCP)
	case p.ECN > 3:
		return fmt.Errorf("wire: RoCEPacket ECN %d exceeds 2 bits", p.ECN)
	case p.FlowLabel > 0xFFFFF:
		return fmt.Errorf("wire: RoCEPacket FlowLabel 0x%x exceeds 20 bits", p.FlowLabel)
	case p.VLAN != nil && (p.VLAN.PCP > 7 || p.VLAN.VID > 0xFFF):
		return fmt.Errorf("wire: RoCEPacket VLAN PCP %d / VID %d out of range (0-7 / 0-4095)", p.VLAN.PCP, p.VLAN.VID)
	case p.PayloadLen < 0:
		return fmt.Errorf("wire: RoCEPacket PayloadLen %d is negative", p.PayloadLen)
	}
	if err := checkExt("RoCEPacket", p.BTH.OpCode, p.DETH != nil, p.RETH != nil, p.AETH != nil, p.Imm != nil); err != nil {
		return err
	}
	if n := p.FrameLen(); n-EthernetHeaderLen-FCSLen > 0xFFFF {
		return fmt.Errorf("wire: RoCEPacket frame of %d bytes exceeds the IP length field", n)
	}
	return nil
}

func (h *BTH) validate() error {
	switch {
	case h.DestQP > 0xFFFFFF:
		return fmt.Errorf("wire: BTH DestQP 0x%x exceeds 24 bits", h.DestQP)
	case h.PSN > 0xFFFFFF:
		return fmt.Errorf("wire: BTH PSN 0x%x exceeds 24 bits", h.PSN)
	case h.TVer > 15:
		return fmt.Errorf("wire: BTH TVer %d exceeds 4 bits", h.TVer)
	}
	return nil
}

// checkExt reports extension headers given for an opcode that does not carry
// them (they would be silently dropped).
func checkExt(what string, op uint8, deth, reth, aeth, imm bool) error {
	l := layoutOf(op)
	if !l.ok {
		return nil
	}
	for _, c := range []struct {
		name      string
		have, can bool
	}{{"DETH", deth, l.deth}, {"RETH", reth, l.reth}, {"AETH", aeth, l.aeth}, {"Imm", imm, l.imm}} {
		if c.have && !c.can {
			return fmt.Errorf("wire: %s %s given but %s does not carry one", what, c.name, OpName(op))
		}
	}
	return nil
}

// appendExt appends the extension headers of op and returns their layout.
func appendExt(dst []byte, op uint8, deth *DETH, reth *RETH, aeth *AETH, imm *uint32) []byte {
	l := layoutOf(op)
	if !l.ok { // not modelled: write what was given, in IBA order
		l = extLayout{ok: true, deth: deth != nil, reth: reth != nil, aeth: aeth != nil, imm: imm != nil}
	}
	var zd DETH
	var zr RETH
	var za AETH
	if deth == nil {
		deth = &zd
	}
	if reth == nil {
		reth = &zr
	}
	if aeth == nil {
		aeth = &za
	}
	if l.deth {
		dst = deth.Append(dst)
	}
	if l.reth {
		dst = reth.Append(dst)
	}
	if l.aeth {
		dst = aeth.Append(dst)
	}
	if l.imm {
		var v uint32
		if imm != nil {
			v = *imm
		}
		dst = binary.BigEndian.AppendUint32(dst, v)
	}
	return dst
}

func extLen(op uint8, deth *DETH, reth *RETH, aeth *AETH, imm *uint32) int {
	l := layoutOf(op)
	if !l.ok {
		l = extLayout{ok: true, deth: deth != nil, reth: reth != nil, aeth: aeth != nil, imm: imm != nil}
	}
	return l.len()
}

// appendPayload appends n payload bytes (src, then zeros) and pad zeros.
func appendPayload(dst, src []byte, n, pad int) []byte {
	dst = append(dst, src...)
	return append(dst, make([]byte, n+pad-len(src))...) // compiles to a clear, no allocation
}

func padFor(n int) int { return (4 - n%4) % 4 }

// AppendFrame appends the complete Ethernet frame, FCS included, to dst and
// returns the extended buffer. It does not allocate when dst has room for
// FrameLen more bytes.
func (p *RoCEPacket) AppendFrame(dst []byte) []byte {
	start := len(dst)
	v6 := p.ipv6()
	n := p.payloadLen()
	pad := padFor(n)
	bth := p.BTH
	bth.PadCnt = uint8(pad)
	if bth.PKey == 0 {
		bth.PKey = DefaultPKey
	}
	payload := p.Payload
	if bth.OpCode == OpCNP {
		bth.BECN = true
		payload = nil
	}
	ttl := p.TTL
	if ttl == 0 {
		ttl = DefaultTTL
	}
	udpLen := UDPHeaderLen + BTHLen + extLen(bth.OpCode, p.DETH, p.RETH, p.AETH, p.Imm) + n + pad + ICRCLen

	ipType := EtherTypeIPv4
	if v6 {
		ipType = EtherTypeIPv6
	}
	eth := Ethernet{Dst: p.DstMAC, Src: p.SrcMAC, EtherType: ipType}
	if p.VLAN != nil {
		eth.EtherType = EtherTypeVLAN
	}
	dst = eth.Append(dst)
	if p.VLAN != nil {
		tag := *p.VLAN
		tag.EtherType = ipType
		dst = tag.Append(dst)
	}
	ipStart := len(dst)
	if v6 {
		h := IPv6{DSCP: p.DSCP, ECN: p.ECN, FlowLabel: p.FlowLabel, PayloadLen: uint16(udpLen),
			NextHeader: IPProtoUDP, HopLimit: ttl, Src: p.SrcIP.As16(), Dst: p.DstIP.As16()}
		dst = h.Append(dst)
	} else {
		h := IPv4{DSCP: p.DSCP, ECN: p.ECN, TotalLen: uint16(IPv4HeaderLen + udpLen), ID: p.IPID,
			Flags: IPv4FlagDF, TTL: ttl, Protocol: IPProtoUDP, Src: as4(p.SrcIP), Dst: as4(p.DstIP)}
		dst = h.Append(dst)
	}
	udpStart := len(dst)
	udp := UDP{SrcPort: p.UDPSrcPort, DstPort: UDPPortRoCEv2, Length: uint16(udpLen)}
	dst = udp.Append(dst)
	dst = bth.Append(dst)
	dst = appendExt(dst, bth.OpCode, p.DETH, p.RETH, p.AETH, p.Imm)
	dst = appendPayload(dst, payload[:min(len(payload), n)], n, pad)
	icrc, _ := RoCEv2ICRC(dst[ipStart:])
	dst = binary.LittleEndian.AppendUint32(dst, icrc)
	if v6 || p.UDPChecksum {
		binary.BigEndian.PutUint16(dst[udpStart+6:], UDPChecksum(p.SrcIP, p.DstIP, dst[udpStart:]))
	}
	return AppendFCS(dst, start)
}

func as4(a netip.Addr) [4]byte {
	if a.Is4() || a.Is4In6() {
		return a.Unmap().As4()
	}
	return [4]byte{}
}

// roceInfo says what decodeRoCE verified, for Check.
type roceInfo struct {
	truncated                         bool // record shorter than the frame: no lengths or CRCs checked
	fcs, icrc, ipv4Checksum, udpCheck bool // verified
}

// DecodeRoCE decodes a complete RoCEv2 Ethernet frame and verifies its
// lengths, IPv4 header checksum, UDP checksum (when not 0), ICRC and, when
// present, FCS. The FCS is taken to be present when at least 4 bytes follow
// the IP packet and the frame is at least 64 bytes long (a frame captured
// without FCS is padded to 60 at most). Payload aliases frame.
func DecodeRoCE(frame []byte) (RoCEPacket, error) {
	p, _, err := decodeRoCE(frame, false)
	return p, err
}

// decodeRoCE decodes a RoCEv2 frame; with truncated set (a pcap record cut by
// its snaplen) it decodes what is there and checks no lengths or CRCs.
func decodeRoCE(frame []byte, truncated bool) (p RoCEPacket, info roceInfo, err error) {
	info.truncated = truncated
	eth, rest, err := DecodeEthernet(frame)
	if err != nil {
		return p, info, err
	}
	p.DstMAC, p.SrcMAC = eth.Dst, eth.Src
	off := EthernetHeaderLen
	et := eth.EtherType
	if et == EtherTypeVLAN {
		var tag VLANTag
		if tag, rest, err = DecodeVLANTag(rest); err != nil {
			return p, info, at(err, off)
		}
		p.VLAN = &tag
		et = tag.EtherType
		off += VLANTagLen
	}
	ipStart := off
	var l4 []byte
	switch et {
	case EtherTypeIPv4:
		var h IPv4
		if h, l4, err = DecodeIPv4(rest); err != nil {
			return p, info, at(err, off)
		}
		info.ipv4Checksum = true
		if h.Protocol != IPProtoUDP {
			return p, info, errorf("ipv4", "protocol", off+9, "%d is not UDP (17)", h.Protocol)
		}
		if !truncated && int(h.TotalLen) > len(rest) {
			return p, info, errorf("ipv4", "total length", off+2, "%d bytes, but only %d in the frame", h.TotalLen, len(rest))
		}
		p.SrcIP, p.DstIP = netip.AddrFrom4(h.Src), netip.AddrFrom4(h.Dst)
		p.DSCP, p.ECN, p.TTL, p.IPID = h.DSCP, h.ECN, h.TTL, h.ID
		off += h.HeaderLen()
	case EtherTypeIPv6:
		var h IPv6
		if h, l4, err = DecodeIPv6(rest); err != nil {
			return p, info, at(err, off)
		}
		if h.NextHeader != IPProtoUDP {
			return p, info, errorf("ipv6", "next header", off+6, "%d is not UDP (17); extension headers are not supported", h.NextHeader)
		}
		if !truncated && IPv6HeaderLen+int(h.PayloadLen) > len(rest) {
			return p, info, errorf("ipv6", "payload length", off+4, "%d bytes, but only %d in the frame", h.PayloadLen, len(rest)-IPv6HeaderLen)
		}
		p.SrcIP, p.DstIP = netip.AddrFrom16(h.Src), netip.AddrFrom16(h.Dst)
		p.DSCP, p.ECN, p.TTL, p.FlowLabel = h.DSCP, h.ECN, h.HopLimit, h.FlowLabel
		off += IPv6HeaderLen
	default:
		return p, info, errorf("ethernet", "EtherType", off-2, "0x%04x is neither IPv4 nor IPv6", et)
	}
	ipEnd := off + len(l4)
	udp, bt, err := DecodeUDP(l4)
	if err != nil {
		return p, info, at(err, off)
	}
	if udp.DstPort != UDPPortRoCEv2 {
		return p, info, errorf("udp", "destination port", off+2, "%d is not RoCEv2 (4791)", udp.DstPort)
	}
	if !truncated && int(udp.Length) != len(l4) {
		return p, info, errorf("udp", "length", off+4, "%d, but the IP packet leaves %d bytes", udp.Length, len(l4))
	}
	p.UDPSrcPort = udp.SrcPort
	p.UDPChecksum = udp.Checksum != 0
	if !truncated && udp.Checksum != 0 {
		if want := UDPChecksum(p.SrcIP, p.DstIP, l4); udp.Checksum != want {
			return p, info, errorf("udp", "checksum", off+6, "stored 0x%04x, computed 0x%04x", udp.Checksum, want)
		}
		info.udpCheck = true
	}
	off += UDPHeaderLen
	if !truncated && len(bt) < BTHLen+ICRCLen {
		return p, info, errorf("bth", "length", off, "UDP payload of %d bytes cannot hold BTH and ICRC (16)", len(bt))
	}
	if !truncated {
		bt = bt[:len(bt)-ICRCLen] // ICRC checked below
	}
	if err = decodeTransport(bt, off, truncated, &p.BTH, &p.DETH, &p.RETH, &p.AETH, &p.Imm, &p.Payload); err != nil {
		return p, info, err
	}
	p.PayloadLen = len(p.Payload)
	if truncated {
		return p, info, nil
	}
	icrcOff := ipEnd - ICRCLen
	got := binary.LittleEndian.Uint32(frame[icrcOff:])
	want, _ := RoCEv2ICRC(frame[ipStart:icrcOff])
	if got != want {
		return p, info, errorf("icrc", "ICRC", icrcOff, "stored 0x%08x, computed 0x%08x", got, want)
	}
	info.icrc = true
	if trailer := len(frame) - ipEnd; trailer >= FCSLen && len(frame) >= MinFrameLen {
		if err = checkFCS(frame); err != nil {
			return p, info, err
		}
		info.fcs = true
	}
	return p, info, nil
}

// decodeTransport decodes the BTH, the extension headers of its opcode and
// the payload (pad removed) from b, which ends just before the ICRC unless
// truncated. off is b's offset in the frame, for errors.
func decodeTransport(b []byte, off int, truncated bool, bth *BTH, deth **DETH, reth **RETH, aeth **AETH, imm **uint32, payload *[]byte) error {
	h, rest, err := DecodeBTH(b)
	if err != nil {
		return at(err, off)
	}
	*bth = h
	l := layoutOf(h.OpCode)
	if !l.ok {
		return errorf("bth", "OpCode", off, "%s is not supported by this decoder", OpName(h.OpCode))
	}
	off += BTHLen
	if l.deth {
		var x DETH
		if x, rest, err = DecodeDETH(rest); err != nil {
			return at(err, off)
		}
		*deth, off = &x, off+DETHLen
	}
	if l.reth {
		var x RETH
		if x, rest, err = DecodeRETH(rest); err != nil {
			return at(err, off)
		}
		*reth, off = &x, off+RETHLen
	}
	if l.aeth {
		var x AETH
		if x, rest, err = DecodeAETH(rest); err != nil {
			return at(err, off)
		}
		*aeth, off = &x, off+AETHLen
	}
	if l.imm {
		if len(rest) < ImmDtLen {
			return shortErr("immdt", off, len(rest), ImmDtLen)
		}
		x := binary.BigEndian.Uint32(rest)
		*imm, rest, off = &x, rest[ImmDtLen:], off+ImmDtLen
	}
	if truncated {
		*payload = rest[:max(0, len(rest)-int(h.PadCnt))]
		return nil
	}
	if int(h.PadCnt) > len(rest) {
		return errorf("bth", "PadCnt", off-l.len()-BTHLen+1, "%d pad bytes, but the payload has only %d", h.PadCnt, len(rest))
	}
	*payload = rest[:len(rest)-int(h.PadCnt)]
	if h.OpCode == OpCNP && len(*payload) != CNPPayloadLen {
		return errorf("cnp", "payload", off, "%d bytes, want the %d reserved bytes of annex A17.9.4", len(*payload), CNPPayloadLen)
	}
	return nil
}
