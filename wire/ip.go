package wire

import (
	"encoding/binary"
	"net/netip"
)

// IP and UDP constants (RFC 791, RFC 8200, RFC 768, IANA).
const (
	IPv4HeaderLen = 20 // without options
	IPv6HeaderLen = 40
	UDPHeaderLen  = 8

	IPProtoUDP = 17

	// UDPPortRoCEv2 is the IANA destination port of RoCEv2 (IBA annex A17.2.2).
	UDPPortRoCEv2 = 4791
)

// ECN codepoints in the low two bits of the IPv4 TOS / IPv6 traffic class
// (RFC 3168 §5).
const (
	ECNNotECT uint8 = 0
	ECNECT1   uint8 = 1
	ECNECT0   uint8 = 2
	ECNCE     uint8 = 3 // congestion experienced: set by a switch, answered by a CNP
)

// IPv4 is an IPv4 header (RFC 791 §3.1). Append computes the header checksum;
// DecodeIPv4 verifies it.
type IPv4 struct {
	DSCP     uint8 // 6 bits (upper TOS)
	ECN      uint8 // 2 bits (lower TOS)
	TotalLen uint16
	ID       uint16
	Flags    uint8  // 3 bits: 0b010 = don't fragment
	FragOff  uint16 // 13 bits, in 8-byte units
	TTL      uint8
	Protocol uint8
	Checksum uint16 // as decoded; Append computes its own
	Src, Dst [4]byte
	Options  []byte // multiple of 4 bytes; aliases the decoded buffer
}

// IPv4FlagDF is the don't-fragment flag in IPv4.Flags.
const IPv4FlagDF = 0b010

// HeaderLen is 20 plus the options.
func (h *IPv4) HeaderLen() int { return IPv4HeaderLen + len(h.Options) }

// Append appends the header with a freshly computed checksum.
func (h *IPv4) Append(dst []byte) []byte {
	start := len(dst)
	ihl := uint8(h.HeaderLen() / 4)
	dst = append(dst, 0x40|ihl&0x0F, h.DSCP<<2|h.ECN&3)
	dst = binary.BigEndian.AppendUint16(dst, h.TotalLen)
	dst = binary.BigEndian.AppendUint16(dst, h.ID)
	dst = binary.BigEndian.AppendUint16(dst, uint16(h.Flags&7)<<13|h.FragOff&0x1FFF)
	dst = append(dst, h.TTL, h.Protocol, 0, 0)
	dst = append(dst, h.Src[:]...)
	dst = append(dst, h.Dst[:]...)
	dst = append(dst, h.Options...)
	binary.BigEndian.PutUint16(dst[start+10:], IPv4Checksum(dst[start:]))
	return dst
}

// IPv4Checksum is the RFC 1071 one's-complement checksum of hdr with its
// checksum field (bytes 10-11) taken as zero.
func IPv4Checksum(hdr []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(hdr); i += 2 {
		if i == 10 {
			continue
		}
		sum += uint32(hdr[i])<<8 | uint32(hdr[i+1])
	}
	return ^fold(sum)
}

func fold(sum uint32) uint16 {
	for sum > 0xFFFF {
		sum = sum&0xFFFF + sum>>16
	}
	return uint16(sum)
}

// DecodeIPv4 decodes an IPv4 header, verifies version, header length and
// checksum, and returns the bytes after the header up to TotalLen (or to the
// end of b if b is shorter: the caller decides whether that is truncation).
func DecodeIPv4(b []byte) (IPv4, []byte, error) {
	var h IPv4
	if len(b) < IPv4HeaderLen {
		return h, nil, shortErr("ipv4", 0, len(b), IPv4HeaderLen)
	}
	if v := b[0] >> 4; v != 4 {
		return h, nil, errorf("ipv4", "version", 0, "got %d, want 4", v)
	}
	hl := int(b[0]&0x0F) * 4
	if hl < IPv4HeaderLen {
		return h, nil, errorf("ipv4", "IHL", 0, "header length %d bytes is below 20", hl)
	}
	if len(b) < hl {
		return h, nil, shortErr("ipv4", 0, len(b), hl)
	}
	h.DSCP, h.ECN = b[1]>>2, b[1]&3
	h.TotalLen = binary.BigEndian.Uint16(b[2:4])
	h.ID = binary.BigEndian.Uint16(b[4:6])
	ff := binary.BigEndian.Uint16(b[6:8])
	h.Flags, h.FragOff = uint8(ff>>13), ff&0x1FFF
	h.TTL, h.Protocol = b[8], b[9]
	h.Checksum = binary.BigEndian.Uint16(b[10:12])
	copy(h.Src[:], b[12:16])
	copy(h.Dst[:], b[16:20])
	if hl > IPv4HeaderLen {
		h.Options = b[IPv4HeaderLen:hl]
	}
	if want := IPv4Checksum(b[:hl]); h.Checksum != want {
		return h, nil, errorf("ipv4", "checksum", 10, "stored 0x%04x, computed 0x%04x", h.Checksum, want)
	}
	if int(h.TotalLen) < hl {
		return h, nil, errorf("ipv4", "total length", 2, "%d is below the header length %d", h.TotalLen, hl)
	}
	end := min(int(h.TotalLen), len(b))
	return h, b[hl:end], nil
}

// IPv6 is the IPv6 fixed header (RFC 8200 §3).
type IPv6 struct {
	DSCP       uint8 // 6 bits (upper traffic class)
	ECN        uint8 // 2 bits (lower traffic class)
	FlowLabel  uint32
	PayloadLen uint16
	NextHeader uint8
	HopLimit   uint8
	Src, Dst   [16]byte
}

// Append appends the 40-byte header.
func (h *IPv6) Append(dst []byte) []byte {
	tc := uint32(h.DSCP<<2 | h.ECN&3)
	dst = binary.BigEndian.AppendUint32(dst, 6<<28|tc<<20|h.FlowLabel&0xFFFFF)
	dst = binary.BigEndian.AppendUint16(dst, h.PayloadLen)
	dst = append(dst, h.NextHeader, h.HopLimit)
	dst = append(dst, h.Src[:]...)
	return append(dst, h.Dst[:]...)
}

// DecodeIPv6 decodes the fixed header and returns the payload, up to
// PayloadLen or the end of b, whichever is shorter.
func DecodeIPv6(b []byte) (IPv6, []byte, error) {
	var h IPv6
	if len(b) < IPv6HeaderLen {
		return h, nil, shortErr("ipv6", 0, len(b), IPv6HeaderLen)
	}
	w := binary.BigEndian.Uint32(b[0:4])
	if v := w >> 28; v != 6 {
		return h, nil, errorf("ipv6", "version", 0, "got %d, want 6", v)
	}
	tc := uint8(w >> 20)
	h.DSCP, h.ECN = tc>>2, tc&3
	h.FlowLabel = w & 0xFFFFF
	h.PayloadLen = binary.BigEndian.Uint16(b[4:6])
	h.NextHeader, h.HopLimit = b[6], b[7]
	copy(h.Src[:], b[8:24])
	copy(h.Dst[:], b[24:40])
	end := min(IPv6HeaderLen+int(h.PayloadLen), len(b))
	return h, b[IPv6HeaderLen:end], nil
}

// UDP is a UDP header (RFC 768).
type UDP struct {
	SrcPort, DstPort uint16
	Length           uint16 // header + data
	Checksum         uint16 // 0 = none (legal over IPv4; RoCEv2 NICs send 0)
}

// Append appends the 8-byte header as is (see UDPChecksum to fill Checksum).
func (h *UDP) Append(dst []byte) []byte {
	dst = binary.BigEndian.AppendUint16(dst, h.SrcPort)
	dst = binary.BigEndian.AppendUint16(dst, h.DstPort)
	dst = binary.BigEndian.AppendUint16(dst, h.Length)
	return binary.BigEndian.AppendUint16(dst, h.Checksum)
}

// DecodeUDP decodes a UDP header and returns the data, up to Length or the
// end of b, whichever is shorter.
func DecodeUDP(b []byte) (UDP, []byte, error) {
	var h UDP
	if len(b) < UDPHeaderLen {
		return h, nil, shortErr("udp", 0, len(b), UDPHeaderLen)
	}
	h.SrcPort = binary.BigEndian.Uint16(b[0:2])
	h.DstPort = binary.BigEndian.Uint16(b[2:4])
	h.Length = binary.BigEndian.Uint16(b[4:6])
	h.Checksum = binary.BigEndian.Uint16(b[6:8])
	if h.Length < UDPHeaderLen {
		return h, nil, errorf("udp", "length", 4, "%d is below the 8-byte header", h.Length)
	}
	end := min(int(h.Length), len(b))
	return h, b[UDPHeaderLen:end], nil
}

// UDPChecksum computes the UDP checksum of segment (UDP header with any
// checksum value, then data) under the IPv4 or IPv6 pseudo-header
// (RFC 768; RFC 8200 §8.1). A computed 0 is sent as 0xFFFF.
func UDPChecksum(src, dst netip.Addr, segment []byte) uint16 {
	if len(segment) < UDPHeaderLen {
		return 0
	}
	var sum uint32
	add := func(p []byte) {
		for i := 0; i+1 < len(p); i += 2 {
			sum += uint32(p[i])<<8 | uint32(p[i+1])
		}
		if len(p)%2 == 1 {
			sum += uint32(p[len(p)-1]) << 8
		}
	}
	if src.Is4() {
		s, d := src.As4(), dst.As4()
		add(s[:])
		add(d[:])
	} else {
		s, d := src.As16(), dst.As16()
		add(s[:])
		add(d[:])
	}
	sum += IPProtoUDP + uint32(len(segment))
	add(segment[:6])
	add(segment[8:])
	c := ^fold(sum)
	if c == 0 {
		c = 0xFFFF
	}
	return c
}
