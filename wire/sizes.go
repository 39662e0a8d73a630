package wire

// On-wire sizes the simulator can use for serialization times without
// building frames. They agree byte for byte with what AppendFrame and
// AppendPacket produce (TestSizesMatchBuilders).

// RoCEv2Overhead is what a RoCEv2 frame adds to its payload: Ethernet header
// 14 (+4 with an 802.1Q tag), IPv4 20 or IPv6 40, UDP 8, BTH 12, ICRC 4 and
// FCS 4. IPv4 without VLAN: 62 bytes ([IBA] Annex A17). Extension headers, pad
// and the 20-byte L1 overhead (EthernetL1Overhead) are not included.
func RoCEv2Overhead(ipv6, vlan bool) int {
	n := EthernetHeaderLen + IPv4HeaderLen + UDPHeaderLen + BTHLen + ICRCLen + FCSLen
	if ipv6 {
		n += IPv6HeaderLen - IPv4HeaderLen
	}
	if vlan {
		n += VLANTagLen
	}
	return n
}

// RoCEv2FrameLen is the Ethernet frame length, FCS included, of a RoCEv2
// packet with opcode op and payloadLen payload bytes: overhead, extension
// headers of op, payload, pad to 4 bytes, and padding to the 64-byte minimum.
// A CNP always has its 16 reserved bytes.
func RoCEv2FrameLen(op uint8, payloadLen int, ipv6, vlan bool) int {
	if op == OpCNP {
		payloadLen = CNPPayloadLen
	}
	ext, _ := ExtHeaderLen(op)
	return max(MinFrameLen, RoCEv2Overhead(ipv6, vlan)+ext+payloadLen+padFor(payloadLen))
}

// RoCEv2WireLen is RoCEv2FrameLen plus preamble, SFD and inter-frame gap:
// the bytes of link time one packet takes. 4096 B payload, IPv4, RDMA WRITE
// Middle: 4178 (98.0 % efficiency).
func RoCEv2WireLen(op uint8, payloadLen int, ipv6, vlan bool) int {
	return RoCEv2FrameLen(op, payloadLen, ipv6, vlan) + EthernetL1Overhead
}

// IBOverhead is what a native InfiniBand packet adds to its payload: LRH 8
// (+ GRH 40 if routed), BTH 12, ICRC 4, VCRC 2 = 26 (66 with GRH)
// ([IEEE 802.3]). IB has no preamble or inter-frame gap.
func IBOverhead(grh bool) int {
	n := LRHLen + BTHLen + ICRCLen + VCRCLen
	if grh {
		n += GRHLen
	}
	return n
}

// IBPacketLen is the length of an IB packet with opcode op and payloadLen
// payload bytes, from the LRH through the VCRC, pad included.
func IBPacketLen(op uint8, payloadLen int, grh bool) int {
	ext, _ := ExtHeaderLen(op)
	return IBOverhead(grh) + ext + payloadLen + padFor(payloadLen)
}

// RoCEMTU is the RoCE path MTU for a netdev MTU: the largest IB MTU
// (256..4096) not above netdev MTU - 96 ([IBA] Annex A17), 0 if none fits.
func RoCEMTU(netdevMTU int) int {
	for _, m := range []int{4096, 2048, 1024, 512, 256} {
		if m <= netdevMTU-96 {
			return m
		}
	}
	return 0
}
