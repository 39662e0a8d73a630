// Package wire puts fabricsim's packets on the wire: byte-exact RoCEv2 and
// InfiniBand headers, their CRCs, PFC and IB flow-control frames, and classic
// pcap files that Wireshark reads. The simulator never needs bytes to
// simulate; it calls this package only when a user asks for a capture, and
// uses its size functions (RoCEv2FrameLen, IBPacketLen, ...) for
// serialization times so that both agree to the byte.
//
// # Layout
//
// Each header is a plain struct with Append(dst) []byte (append-style, no
// allocation) and a DecodeX(b) (X, rest, error) function. Whole packets are
// described fabric-neutrally by RoCEPacket and IBPacket, which fill in every
// derived field (lengths, pad count, checksums, CRCs):
//
//	RoCEv2 frame:  Ethernet 14 [802.1Q 4] | IPv4 20 / IPv6 40 | UDP 8 (dport 4791)
//	               | BTH 12 | [DETH 8] [RETH 16] [AETH 4] [ImmDt 4] | payload | pad
//	               | ICRC 4 | FCS 4                     (62 B overhead: IPv4, no tag)
//	               (with INT: the 42 B INT header of int.go leads the payload)
//	IB packet:     LRH 8 | [GRH 40] | BTH 12 | ext | payload | pad | ICRC 4 | VCRC 2
//	PFC frame:     01-80-C2-00-00-01 | src | 0x8808 | 0x0101 | class-enable 16
//	               | 8 x pause time 16 (quanta of 512 bit times) | pad | FCS  = 64 B
//	IB link flow control: Op4 FCTBS12 | VL4 FCCL12 | LPCRC16 = 6 B
//
// Field layouts follow IBA Vol. 1 (LRH §7.7, GRH §8.3, BTH and extension
// headers §9.2-9.3, opcodes Table 38), RoCEv2 annex A17, IEEE 802.1Q and
// 802.1Qbb, RFC 791/768/8200; docs/references.md lists them.
//
// # CRCs
//
// The ICRC is CRC-32 (the Ethernet/zlib polynomial, reflected, initial
// ones, complemented result) over the packet with its variant fields
// replaced by ones, sent least-significant byte first:
//
//   - RoCEv2 (annex A17.3.3; Linux rxe_icrc.c): 8 bytes of 0xFF standing in
//     for the LRH, then IP header, UDP header, BTH, extension headers, payload
//     and pad, with IPv4 TOS, TTL and header checksum, IPv6 traffic class,
//     flow label and hop limit, the UDP checksum and BTH byte 4 (FECN, BECN,
//     resv6) masked. ECN marking by switches therefore leaves it intact.
//   - Native IB (IBA §7.8.1; Shanley, "InfiniBand Network Architecture",
//     ch. 25): a local packet masks the LRH VL and BTH resv8a; a global
//     packet masks the whole LRH (routers rewrite it), GRH TClass, FlowLabel
//     and HopLmt, and BTH resv8a.
//
// The VCRC (IBA §7.8.2) is CRC-16, polynomial 0x100B, initial 0xFFFF,
// complemented, processed LSB-first (reflected constant 0xD008, as in
// Endace's dagcrc.c), over LRH through ICRC; the flow-control LPCRC is the
// same CRC over the packet's first 4 bytes. We send the VCRC and LPCRC
// least-significant byte first like the ICRC; no public capture was found to
// confirm this byte order.
//
// The RoCEv2 ICRC is tested against a CNP captured on a ConnectX-4 Lx and
// the example packet of scapy's RoCE tests; IPv6, native IB, VCRC, PFC and
// flow-control bytes against testdata/vectors.py, an independent Python
// implementation that checks itself on those captures first; every header
// field against Wireshark's dissectors (tshark_test.go).
//
// # Captures
//
// PcapWriter writes classic pcap with nanosecond timestamps, one link type
// per file: LinkTypeEthernet for RoCEv2 and PFC frames (written with their
// FCS), LinkTypeInfiniBand (247) for IB packets from the LRH through the
// VCRC. Records longer than the snaplen keep their original length. Check
// decodes a capture with this package and verifies lengths, IPv4 and UDP
// checksums, ICRC, VCRC and FCS of every record the snaplen left whole; it
// backs `fabricsim pcap-check`.
//
// Decoders never panic (they are fuzzed) and report problems as
// *DecodeError naming the layer, the field and its byte offset.
package wire
