package wire

import (
	"encoding/binary"
	"hash/crc32"
)

// The ICRC (invariant CRC) is the CRC-32 of IEEE 802.3 (reflected polynomial
// 0x04C11DB7, initial value all ones, result complemented: exactly zlib's and
// Go's crc32.ChecksumIEEE) over the packet with its variant fields replaced
// by ones. It is sent least-significant byte first, like the Ethernet FCS.
// Sources: IBA Vol. 1 §7.8.1; RoCEv2 annex A17.3.3; Linux
// drivers/infiniband/sw/rxe/rxe_icrc.c (same masks); the hardware capture
// quoted in crc_test.go.

// ones8 stands in for the LRH in the RoCEv2 ICRC (annex A17.3.3), and is the
// whole LRH masked to ones in a native global (GRH) packet.
var ones8 = [8]byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}

// maxMaskedRoCE is the largest masked prefix: IPv4 with 40 bytes of options
// (60) + UDP 8 + BTH 12.
const maxMaskedRoCE = 60 + UDPHeaderLen + BTHLen

// RoCEv2ICRC returns the ICRC of a RoCEv2 packet given as ip: the bytes from
// the first byte of the IPv4 or IPv6 header to the last pad byte (the ICRC
// itself excluded). Masked to ones: IPv4 TOS, TTL and header checksum; IPv6
// traffic class, flow label and hop limit; the UDP checksum; BTH byte 4
// (FECN, BECN, resv6). ok is false when ip is too short to hold IP+UDP+BTH.
func RoCEv2ICRC(ip []byte) (icrc uint32, ok bool) {
	if len(ip) < 1 {
		return 0, false
	}
	var hl int
	switch ip[0] >> 4 {
	case 4:
		hl = int(ip[0]&0x0F) * 4
	case 6:
		hl = IPv6HeaderLen
	default:
		return 0, false
	}
	n := hl + UDPHeaderLen + BTHLen
	if hl < IPv4HeaderLen || len(ip) < n {
		return 0, false
	}
	var m [maxMaskedRoCE]byte
	copy(m[:], ip[:n])
	if hl == IPv6HeaderLen && ip[0]>>4 == 6 {
		m[0] |= 0x0F // traffic class (high nibble)
		m[1], m[2], m[3] = 0xFF, 0xFF, 0xFF
		m[7] = 0xFF // hop limit
	} else {
		m[1] = 0xFF               // TOS (DSCP + ECN)
		m[8] = 0xFF               // TTL
		m[10], m[11] = 0xFF, 0xFF // header checksum
	}
	m[hl+6], m[hl+7] = 0xFF, 0xFF // UDP checksum
	m[hl+UDPHeaderLen+4] = 0xFF   // BTH FECN/BECN/resv6
	crc := crcSmall(crcSmall(0, ones8[:]), m[:n])
	return crc32.Update(crc, crc32.IEEETable, ip[n:]), true
}

// IBICRC returns the ICRC of a native InfiniBand packet given from the first
// byte of the LRH to the last pad byte. Variant fields masked to ones
// (IBA Vol. 1 §7.8.1; T. Shanley, "InfiniBand Network Architecture", ch. 25,
// figures 25-15 and 25-16):
//   - local packet (LNH 2): the LRH VL nibble and BTH byte 4 (resv8a);
//   - global packet (LNH 3): the whole LRH (8 bytes of ones, as RoCE keeps),
//     GRH TClass, FlowLabel and HopLmt, and BTH byte 4.
//
// ok is false for raw packets (LNH 0/1, which have no ICRC) or when pkt is too
// short.
func IBICRC(pkt []byte) (icrc uint32, ok bool) {
	if len(pkt) < LRHLen {
		return 0, false
	}
	var m [LRHLen + GRHLen + BTHLen]byte
	var n int
	switch pkt[1] & 3 {
	case LNHLocal:
		n = LRHLen + BTHLen
		if len(pkt) < n {
			return 0, false
		}
		copy(m[:], pkt[:n])
		m[0] |= 0xF0 // VL
	case LNHGlobal:
		n = LRHLen + GRHLen + BTHLen
		if len(pkt) < n {
			return 0, false
		}
		copy(m[:], pkt[:n])
		copy(m[:LRHLen], ones8[:])
		g := m[LRHLen:]
		g[0] |= 0x0F // TClass high nibble
		g[1], g[2], g[3] = 0xFF, 0xFF, 0xFF
		g[7] = 0xFF // HopLmt
	default:
		return 0, false
	}
	m[n-BTHLen+4] = 0xFF // BTH resv8a
	return crc32.Update(crcSmall(0, m[:n]), crc32.IEEETable, pkt[n:]), true
}

// crcSmall is crc32.Update(crc, crc32.IEEETable, p) byte by byte, for the
// masked header copies: handing a stack array to crc32.Update makes it escape
// to the heap (one allocation per frame); this keeps the builders
// allocation-free.
func crcSmall(crc uint32, p []byte) uint32 {
	crc = ^crc
	for _, v := range p {
		crc = crc32.IEEETable[byte(crc)^v] ^ crc>>8
	}
	return ^crc
}

// The VCRC (IBA Vol. 1 §7.8.2) is a CRC-16 with polynomial
// x^16+x^12+x^3+x+1 (0x100B), initial value 0xFFFF, computed over every byte
// from the LRH through the ICRC and complemented. Like the ICRC it is
// processed least-significant bit first (reflected: 0x100B reversed is 0xD008,
// the table constant of Endace's dagcrc.c infiniband_vcrc16, an independent
// implementation) and sent least-significant byte first. The LPCRC of a link
// flow-control packet (§7.9.4) is the same CRC over its first 4 bytes.
var vcrcTable = func() (t [8][256]uint16) {
	for i := range t[0] {
		c := uint16(i)
		for range 8 {
			if c&1 != 0 {
				c = c>>1 ^ 0xD008
			} else {
				c >>= 1
			}
		}
		t[0][i] = c
	}
	// Slicing-by-8 tables: t[k][i] is the CRC of byte i followed by k zeros.
	for k := 1; k < 8; k++ {
		for i := range t[k] {
			c := t[k-1][i]
			t[k][i] = c>>8 ^ t[0][byte(c)]
		}
	}
	return t
}()

// VCRC returns the IBA variant CRC-16 of b.
func VCRC(b []byte) uint16 {
	t := &vcrcTable
	c := uint16(0xFFFF)
	for len(b) >= 8 {
		c ^= uint16(b[0]) | uint16(b[1])<<8
		c = t[7][byte(c)] ^ t[6][c>>8] ^ t[5][b[2]] ^ t[4][b[3]] ^
			t[3][b[4]] ^ t[2][b[5]] ^ t[1][b[6]] ^ t[0][b[7]]
		b = b[8:]
	}
	for _, x := range b {
		c = t[0][byte(c)^x] ^ c>>8
	}
	return ^c
}

func appendLE16(dst []byte, v uint16) []byte { return binary.LittleEndian.AppendUint16(dst, v) }
