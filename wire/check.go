package wire

import (
	"encoding/binary"
	"fmt"
	"io"
)

// KindCounts counts transport packets by what they are.
type KindCounts struct {
	Data int // everything carrying a request or response payload
	Ack  int // Acknowledge with an ACK syndrome
	Nak  int // Acknowledge with a NAK or RNR NAK syndrome
	CNP  int // congestion notification packets
}

func (k KindCounts) total() int { return k.Data + k.Ack + k.Nak + k.CNP }

func (k *KindCounts) add(bth BTH, aeth *AETH) {
	switch {
	case bth.OpCode == OpCNP || bth.OpCode == 0x80:
		k.CNP++
	case bth.OpCode == OpRCAcknowledge && aeth != nil && aeth.IsNak():
		k.Nak++
	case bth.OpCode == OpRCAcknowledge:
		k.Ack++
	default:
		k.Data++
	}
}

// PacketError is a problem with one packet of a capture.
type PacketError struct {
	Index  int // 1-based, as Wireshark numbers frames
	Reason string
}

// MaxCheckErrors is how many PacketErrors a CheckSummary keeps; ErrorCount
// counts them all.
const MaxCheckErrors = 100

// CheckSummary is what Check found in a capture.
type CheckSummary struct {
	LinkType  uint32
	Packets   int
	Bytes     int64 // sum of orig_len
	Truncated int   // records cut by the snaplen: headers decoded, lengths and CRCs not checked

	RoCE          KindCounts
	IB            KindCounts
	PFC           int // PFC PAUSE frames
	IBFlowControl int // IB link flow-control packets
	Other         int // frames that are none of the above (not errors)

	CE   int // RoCEv2 packets with IP ECN = CE (3)
	FECN int // packets with BTH FECN set
	BECN int // packets with BTH BECN set

	// What was verified, in packets.
	IPv4Checksums int
	UDPChecksums  int
	ICRCs         int
	VCRCs         int // including flow-control LPCRCs
	FCSs          int

	Errors     []PacketError // the first MaxCheckErrors
	ErrorCount int
}

// OK reports whether no packet had an error.
func (s CheckSummary) OK() bool { return s.ErrorCount == 0 }

func (s *CheckSummary) fail(index int, err error, trunc bool) {
	if e, ok := err.(*DecodeError); ok && trunc && e.Field == "length" {
		return // the snaplen cut into the headers: nothing to hold against the packet
	}
	s.ErrorCount++
	if len(s.Errors) < MaxCheckErrors {
		s.Errors = append(s.Errors, PacketError{Index: index, Reason: err.Error()})
	}
}

// Check reads a classic pcap capture (LINKTYPE_ETHERNET or
// LINKTYPE_INFINIBAND) and decodes every packet with this package's decoders,
// verifying header lengths, IPv4 and UDP checksums, ICRC, VCRC and FCS for
// every packet not cut by the snaplen. Problems with packets are collected in
// the summary; the error is for an unreadable file (bad header, a record cut
// short, an unsupported link type).
func Check(r io.Reader) (CheckSummary, error) {
	var s CheckSummary
	pr, err := NewPcapReader(r)
	if err != nil {
		return s, err
	}
	s.LinkType = pr.LinkType()
	if s.LinkType != LinkTypeEthernet && s.LinkType != LinkTypeInfiniBand {
		return s, errorf("pcap", "network", 20, "link type %d is neither Ethernet (1) nor InfiniBand (247)", s.LinkType)
	}
	for {
		rec, err := pr.Next()
		if err == io.EOF {
			return s, nil
		}
		if err != nil {
			return s, err
		}
		s.Packets++
		s.Bytes += int64(rec.OrigLen)
		trunc := rec.Truncated()
		if trunc {
			s.Truncated++
		}
		if s.LinkType == LinkTypeEthernet {
			s.checkEthernet(s.Packets, rec.Data, trunc)
		} else {
			s.checkIB(s.Packets, rec.Data, trunc)
		}
	}
}

// etherTypeOf returns the EtherType after an optional 802.1Q tag.
func etherTypeOf(frame []byte) uint16 {
	if len(frame) < EthernetHeaderLen {
		return 0
	}
	et := binary.BigEndian.Uint16(frame[12:])
	if et == EtherTypeVLAN && len(frame) >= EthernetHeaderLen+VLANTagLen {
		et = binary.BigEndian.Uint16(frame[16:])
	}
	return et
}

// isRoCEv2 peeks at the IP protocol and UDP destination port.
func isRoCEv2(frame []byte) bool {
	off := EthernetHeaderLen
	if binary.BigEndian.Uint16(frame[12:]) == EtherTypeVLAN {
		off += VLANTagLen
	}
	if len(frame) < off {
		return false
	}
	ip := frame[off:]
	var l4 []byte
	switch {
	case len(ip) >= IPv4HeaderLen && ip[0]>>4 == 4 && ip[9] == IPProtoUDP && int(ip[0]&0xF)*4 >= IPv4HeaderLen:
		l4 = ip[int(ip[0]&0xF)*4:]
	case len(ip) >= IPv6HeaderLen && ip[0]>>4 == 6 && ip[6] == IPProtoUDP:
		l4 = ip[IPv6HeaderLen:]
	}
	return len(l4) >= 4 && binary.BigEndian.Uint16(l4[2:]) == UDPPortRoCEv2
}

func (s *CheckSummary) checkEthernet(index int, frame []byte, trunc bool) {
	if len(frame) < EthernetHeaderLen {
		s.fail(index, shortErr("ethernet", 0, len(frame), EthernetHeaderLen), trunc)
		return
	}
	switch et := etherTypeOf(frame); {
	case et == EtherTypeMACControl && len(frame) >= 16 && binary.BigEndian.Uint16(frame[14:]) == MACControlOpPFC:
		_, fcs, err := decodePFC(frame, trunc)
		if err != nil {
			s.fail(index, err, trunc)
			return
		}
		s.PFC++
		if fcs {
			s.FCSs++
		}
	case (et == EtherTypeIPv4 || et == EtherTypeIPv6) && isRoCEv2(frame):
		p, info, err := decodeRoCE(frame, trunc)
		if info.ipv4Checksum {
			s.IPv4Checksums++
		}
		if err != nil {
			s.fail(index, err, trunc)
			return
		}
		s.RoCE.add(p.BTH, p.AETH)
		if p.ECN == ECNCE {
			s.CE++
		}
		s.countECN(p.BTH)
		s.count(info.icrc, &s.ICRCs)
		s.count(info.fcs, &s.FCSs)
		s.count(info.udpCheck, &s.UDPChecksums)
	default:
		s.Other++
	}
}

func (s *CheckSummary) count(did bool, n *int) {
	if did {
		*n++
	}
}

func (s *CheckSummary) countECN(b BTH) {
	if b.FECN {
		s.FECN++
	}
	if b.BECN {
		s.BECN++
	}
}

func (s *CheckSummary) checkIB(index int, pkt []byte, trunc bool) {
	if len(pkt) == IBFlowControlLen && !trunc {
		if _, err := DecodeIBFlowControl(pkt); err != nil {
			s.fail(index, err, trunc)
			return
		}
		s.IBFlowControl++
		s.VCRCs++
		return
	}
	p, info, err := decodeIB(pkt, trunc)
	if err != nil {
		s.fail(index, err, trunc)
		return
	}
	s.count(info.vcrc, &s.VCRCs)
	if info.raw {
		s.Other++
		return
	}
	s.count(info.icrc, &s.ICRCs)
	s.IB.add(p.BTH, p.AETH)
	s.countECN(p.BTH)
}

// WriteText writes the summary for a person, as `fabricsim pcap-check`
// prints it.
func (s CheckSummary) WriteText(w io.Writer) error {
	lt := "Ethernet"
	if s.LinkType == LinkTypeInfiniBand {
		lt = "InfiniBand"
	}
	var b []byte
	b = fmt.Appendf(b, "link type      %d (%s)\n", s.LinkType, lt)
	b = fmt.Appendf(b, "packets        %d (%d bytes on the wire, %d truncated by snaplen)\n", s.Packets, s.Bytes, s.Truncated)
	if s.RoCE.total() > 0 {
		b = fmt.Appendf(b, "RoCEv2         %d data, %d ACK, %d NAK, %d CNP\n", s.RoCE.Data, s.RoCE.Ack, s.RoCE.Nak, s.RoCE.CNP)
	}
	if s.IB.total() > 0 {
		b = fmt.Appendf(b, "InfiniBand     %d data, %d ACK, %d NAK, %d CNP\n", s.IB.Data, s.IB.Ack, s.IB.Nak, s.IB.CNP)
	}
	if s.PFC > 0 {
		b = fmt.Appendf(b, "PFC PAUSE      %d\n", s.PFC)
	}
	if s.IBFlowControl > 0 {
		b = fmt.Appendf(b, "IB flow ctrl   %d\n", s.IBFlowControl)
	}
	if s.Other > 0 {
		b = fmt.Appendf(b, "other          %d\n", s.Other)
	}
	b = fmt.Appendf(b, "ECN            %d CE-marked, %d FECN, %d BECN\n", s.CE, s.FECN, s.BECN)
	b = fmt.Appendf(b, "verified       %d ICRC, %d VCRC, %d FCS, %d IPv4 checksum, %d UDP checksum\n",
		s.ICRCs, s.VCRCs, s.FCSs, s.IPv4Checksums, s.UDPChecksums)
	b = fmt.Appendf(b, "errors         %d\n", s.ErrorCount)
	for _, e := range s.Errors {
		b = fmt.Appendf(b, "  packet %d: %s\n", e.Index, e.Reason)
	}
	if n := s.ErrorCount - len(s.Errors); n > 0 {
		b = fmt.Appendf(b, "  ... and %d more\n", n)
	}
	_, err := w.Write(b)
	return err
}
