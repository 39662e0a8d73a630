package wire

import (
	"encoding/binary"
	"fmt"
)

// InfiniBand header sizes ([IBA] Vol. 1 §9.2-9.3).
const (
	LRHLen   = 8
	GRHLen   = 40
	BTHLen   = 12
	RETHLen  = 16
	AETHLen  = 4
	DETHLen  = 8
	ImmDtLen = 4
	ICRCLen  = 4
	VCRCLen  = 2
	// CNPPayloadLen is the 16 reserved bytes after the BTH of a RoCEv2 CNP
	// (IBA annex A17.9.4; the ConnectX capture in crc_test.go has them).
	CNPPayloadLen = 16
)

// BTH opcodes (IBA Vol. 1 Table 38). The upper three bits name the transport
// (000 RC, 001 UC, 011 UD, 100 CNP), the lower five the operation.
const (
	OpRCSendFirst          uint8 = 0x00
	OpRCSendMiddle         uint8 = 0x01
	OpRCSendLast           uint8 = 0x02
	OpRCSendLastImm        uint8 = 0x03
	OpRCSendOnly           uint8 = 0x04
	OpRCSendOnlyImm        uint8 = 0x05
	OpRCWriteFirst         uint8 = 0x06
	OpRCWriteMiddle        uint8 = 0x07
	OpRCWriteLast          uint8 = 0x08
	OpRCWriteLastImm       uint8 = 0x09
	OpRCWriteOnly          uint8 = 0x0A
	OpRCWriteOnlyImm       uint8 = 0x0B
	OpRCReadRequest        uint8 = 0x0C
	OpRCReadResponseFirst  uint8 = 0x0D
	OpRCReadResponseMiddle uint8 = 0x0E
	OpRCReadResponseLast   uint8 = 0x0F
	OpRCReadResponseOnly   uint8 = 0x10
	OpRCAcknowledge        uint8 = 0x11
	OpUDSendOnly           uint8 = 0x64
	OpUDSendOnlyImm        uint8 = 0x65
	// OpCNP is the RoCEv2 congestion notification packet (annex A17.9.4):
	// BTH with BECN set, DestQP = the QP to slow down, 16 reserved bytes.
	OpCNP uint8 = 0x81

	opUC uint8 = 0x20 // UC = RC operation + 0x20
)

// extLayout lists the extension headers an opcode carries, in wire order
// (IBA Vol. 1 §9.2 Table 38 "Packet types"; §9.3).
type extLayout struct {
	ok                    bool
	deth, reth, aeth, imm bool
}

func (l extLayout) len() int {
	n := 0
	if l.deth {
		n += DETHLen
	}
	if l.reth {
		n += RETHLen
	}
	if l.aeth {
		n += AETHLen
	}
	if l.imm {
		n += ImmDtLen
	}
	return n
}

func layoutOf(op uint8) extLayout {
	switch op {
	case OpUDSendOnly:
		return extLayout{ok: true, deth: true}
	case OpUDSendOnlyImm:
		return extLayout{ok: true, deth: true, imm: true}
	case OpCNP, 0x80: // RoCEv2 CNP; IB CC CNP (annex A10)
		return extLayout{ok: true}
	}
	rc := op
	if op >= opUC && op <= opUC+OpRCWriteOnlyImm {
		rc = op - opUC // UC carries the send and write subset of RC
	} else if op > OpRCAcknowledge {
		return extLayout{} // atomics, RD, XRC, vendor: not modelled
	}
	switch rc {
	case OpRCSendLastImm, OpRCSendOnlyImm, OpRCWriteLastImm:
		return extLayout{ok: true, imm: true}
	case OpRCWriteFirst, OpRCWriteOnly, OpRCReadRequest:
		return extLayout{ok: true, reth: true}
	case OpRCWriteOnlyImm:
		return extLayout{ok: true, reth: true, imm: true}
	case OpRCReadResponseFirst, OpRCReadResponseLast, OpRCReadResponseOnly, OpRCAcknowledge:
		return extLayout{ok: true, aeth: true}
	}
	return extLayout{ok: true}
}

// ExtHeaderLen is the number of extension-header bytes (DETH, RETH, AETH,
// ImmDt) that follow the BTH for opcode op, and false for opcodes this package
// does not model (atomics, RD, XRC, vendor-specific other than the CNP).
func ExtHeaderLen(op uint8) (int, bool) {
	l := layoutOf(op)
	return l.len(), l.ok
}

// OpName names an opcode the way IBA Table 38 does, e.g. "RC RDMA WRITE First".
func OpName(op uint8) string {
	names := [...]string{"SEND First", "SEND Middle", "SEND Last", "SEND Last with Immediate",
		"SEND Only", "SEND Only with Immediate", "RDMA WRITE First", "RDMA WRITE Middle",
		"RDMA WRITE Last", "RDMA WRITE Last with Immediate", "RDMA WRITE Only",
		"RDMA WRITE Only with Immediate", "RDMA READ Request", "RDMA READ response First",
		"RDMA READ response Middle", "RDMA READ response Last", "RDMA READ response Only",
		"Acknowledge"}
	switch {
	case op == OpCNP:
		return "CNP"
	case op == OpUDSendOnly:
		return "UD SEND Only"
	case op == OpUDSendOnlyImm:
		return "UD SEND Only with Immediate"
	case int(op) < len(names):
		return "RC " + names[op]
	case op >= opUC && op <= opUC+OpRCWriteOnlyImm:
		return "UC " + names[op-opUC]
	}
	return fmt.Sprintf("opcode 0x%02x", op)
}

// BTH is the base transport header, 12 bytes ([IBA] Vol. 1 §9.2):
// OpCode8 | SE1 M1 PadCnt2 TVer4 | P_Key16 | FECN1 BECN1 resv6 | DestQP24 |
// AckReq1 resv7 | PSN24. Reserved bits are sent as zero and ignored on decode.
type BTH struct {
	OpCode uint8
	SE     bool   // solicited event
	M      bool   // MigReq
	PadCnt uint8  // 2 bits: pad bytes after the payload to a 4-byte multiple
	TVer   uint8  // 4 bits, 0
	PKey   uint16 // partition key; 0xFFFF is the default full-member key
	FECN   bool   // forward ECN (IB CC: set by a congested switch)
	BECN   bool   // backward ECN (set on CNPs / returned notifications)
	DestQP uint32 // 24 bits
	AckReq bool
	PSN    uint32 // 24 bits
}

// Append appends the 12-byte header. Fields wider than their bit width are
// truncated to it.
func (h *BTH) Append(dst []byte) []byte {
	b1 := h.PadCnt&3<<4 | h.TVer&0x0F
	if h.SE {
		b1 |= 0x80
	}
	if h.M {
		b1 |= 0x40
	}
	dst = append(dst, h.OpCode, b1)
	dst = binary.BigEndian.AppendUint16(dst, h.PKey)
	w := h.DestQP & 0xFFFFFF
	if h.FECN {
		w |= 1 << 31
	}
	if h.BECN {
		w |= 1 << 30
	}
	dst = binary.BigEndian.AppendUint32(dst, w)
	w = h.PSN & 0xFFFFFF
	if h.AckReq {
		w |= 1 << 31
	}
	return binary.BigEndian.AppendUint32(dst, w)
}

// DecodeBTH decodes a BTH and returns the bytes after it.
func DecodeBTH(b []byte) (BTH, []byte, error) {
	var h BTH
	if len(b) < BTHLen {
		return h, nil, shortErr("bth", 0, len(b), BTHLen)
	}
	h.OpCode = b[0]
	h.SE, h.M = b[1]&0x80 != 0, b[1]&0x40 != 0
	h.PadCnt, h.TVer = b[1]>>4&3, b[1]&0x0F
	h.PKey = binary.BigEndian.Uint16(b[2:4])
	w := binary.BigEndian.Uint32(b[4:8])
	h.FECN, h.BECN, h.DestQP = w&(1<<31) != 0, w&(1<<30) != 0, w&0xFFFFFF
	w = binary.BigEndian.Uint32(b[8:12])
	h.AckReq, h.PSN = w&(1<<31) != 0, w&0xFFFFFF
	return h, b[BTHLen:], nil
}

// RETH is the RDMA extended transport header (IBA Vol. 1 §9.3.3):
// VA64 R_Key32 DMALen32, on RDMA WRITE First/Only and READ Request.
type RETH struct {
	VA     uint64
	RKey   uint32
	DMALen uint32
}

// Append appends the 16-byte header.
func (h *RETH) Append(dst []byte) []byte {
	dst = binary.BigEndian.AppendUint64(dst, h.VA)
	dst = binary.BigEndian.AppendUint32(dst, h.RKey)
	return binary.BigEndian.AppendUint32(dst, h.DMALen)
}

// DecodeRETH decodes a RETH and returns the bytes after it.
func DecodeRETH(b []byte) (RETH, []byte, error) {
	if len(b) < RETHLen {
		return RETH{}, nil, shortErr("reth", 0, len(b), RETHLen)
	}
	return RETH{
		VA:     binary.BigEndian.Uint64(b[0:8]),
		RKey:   binary.BigEndian.Uint32(b[8:12]),
		DMALen: binary.BigEndian.Uint32(b[12:16]),
	}, b[RETHLen:], nil
}

// AETH is the ACK extended transport header (IBA Vol. 1 §9.3.5):
// Syndrome8 MSN24. Syndrome bits 6-5: 00 ACK (low 5 bits = credit count),
// 01 RNR NAK (low 5 bits = timer), 11 NAK (low 5 bits = code, 0 = PSN
// sequence error).
type AETH struct {
	Syndrome uint8
	MSN      uint32 // 24 bits
}

// AETH syndrome values.
const (
	AETHAck          uint8 = 0x1F // ACK, credit count "invalid" (no end-to-end credits)
	AETHNakPSNSeqErr uint8 = 0x60 // NAK: PSN sequence error -> go-back-N ([IBA] Vol. 1 §9.7)
	aethKindMask     uint8 = 0x60
	aethKindAck      uint8 = 0x00
	aethKindRNRNak   uint8 = 0x20
	aethKindNak      uint8 = 0x60
)

// IsAck reports whether the syndrome is an ACK (bits 6-5 = 00).
func (h AETH) IsAck() bool { return h.Syndrome&aethKindMask == aethKindAck }

// IsNak reports whether the syndrome is a NAK or an RNR NAK.
func (h AETH) IsNak() bool {
	k := h.Syndrome & aethKindMask
	return k == aethKindNak || k == aethKindRNRNak
}

// Append appends the 4-byte header.
func (h *AETH) Append(dst []byte) []byte {
	return binary.BigEndian.AppendUint32(dst, uint32(h.Syndrome)<<24|h.MSN&0xFFFFFF)
}

// DecodeAETH decodes an AETH and returns the bytes after it.
func DecodeAETH(b []byte) (AETH, []byte, error) {
	if len(b) < AETHLen {
		return AETH{}, nil, shortErr("aeth", 0, len(b), AETHLen)
	}
	w := binary.BigEndian.Uint32(b)
	return AETH{Syndrome: uint8(w >> 24), MSN: w & 0xFFFFFF}, b[AETHLen:], nil
}

// DETH is the datagram extended transport header of UD (IBA Vol. 1 §9.3.2):
// Q_Key32 | resv8 SrcQP24.
type DETH struct {
	QKey  uint32
	SrcQP uint32 // 24 bits
}

// Append appends the 8-byte header.
func (h *DETH) Append(dst []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, h.QKey)
	return binary.BigEndian.AppendUint32(dst, h.SrcQP&0xFFFFFF)
}

// DecodeDETH decodes a DETH and returns the bytes after it.
func DecodeDETH(b []byte) (DETH, []byte, error) {
	if len(b) < DETHLen {
		return DETH{}, nil, shortErr("deth", 0, len(b), DETHLen)
	}
	return DETH{QKey: binary.BigEndian.Uint32(b), SrcQP: binary.BigEndian.Uint32(b[4:]) & 0xFFFFFF}, b[DETHLen:], nil
}

// Link next header values of the LRH (IBA Vol. 1 §7.7.6).
const (
	LNHRaw     uint8 = 0 // raw packet, no IBA transport
	LNHRawIPv6 uint8 = 1
	LNHLocal   uint8 = 2 // BTH follows (IBA local)
	LNHGlobal  uint8 = 3 // GRH follows (IBA global)
)

// LRH is the local route header, 8 bytes ([IBA] Vol. 1 §7.7):
// VL4 LVer4 | SL4 rsv2 LNH2 | DLID16 | rsv5 PktLen11 | SLID16.
// PktLen counts 4-byte words from the first byte of the LRH to the last byte
// of the ICRC (the VCRC is not counted).
type LRH struct {
	VL     uint8 // virtual lane, 4 bits (15 = management)
	LVer   uint8 // 4 bits, 0
	SL     uint8 // service level, 4 bits
	LNH    uint8 // link next header, 2 bits
	DLID   uint16
	PktLen uint16 // 11 bits, in 4-byte words
	SLID   uint16
}

// Append appends the 8-byte header.
func (h *LRH) Append(dst []byte) []byte {
	dst = append(dst, h.VL<<4|h.LVer&0x0F, h.SL<<4|h.LNH&3)
	dst = binary.BigEndian.AppendUint16(dst, h.DLID)
	dst = binary.BigEndian.AppendUint16(dst, h.PktLen&0x07FF)
	return binary.BigEndian.AppendUint16(dst, h.SLID)
}

// DecodeLRH decodes an LRH and returns the bytes after it.
func DecodeLRH(b []byte) (LRH, []byte, error) {
	if len(b) < LRHLen {
		return LRH{}, nil, shortErr("lrh", 0, len(b), LRHLen)
	}
	return LRH{
		VL: b[0] >> 4, LVer: b[0] & 0x0F, SL: b[1] >> 4, LNH: b[1] & 3,
		DLID:   binary.BigEndian.Uint16(b[2:4]),
		PktLen: binary.BigEndian.Uint16(b[4:6]) & 0x07FF,
		SLID:   binary.BigEndian.Uint16(b[6:8]),
	}, b[LRHLen:], nil
}

// GRH next-header value for IBA transport (IBA Vol. 1 §8.3.1).
const GRHNextHeaderIBA uint8 = 0x1B

// GRH is the global route header, 40 bytes, laid out like IPv6 (IBA Vol. 1
// §8.3): IPVer4 TClass8 FlowLabel20 PayLen16 NxtHdr8 HopLmt8
// SGID128 DGID128. PayLen counts bytes from the BTH to the ICRC inclusive.
type GRH struct {
	IPVer     uint8 // 4 bits, 6
	TClass    uint8
	FlowLabel uint32 // 20 bits
	PayLen    uint16
	NxtHdr    uint8
	HopLmt    uint8
	SGID      [16]byte
	DGID      [16]byte
}

// Append appends the 40-byte header.
func (h *GRH) Append(dst []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(h.IPVer&0x0F)<<28|uint32(h.TClass)<<20|h.FlowLabel&0xFFFFF)
	dst = binary.BigEndian.AppendUint16(dst, h.PayLen)
	dst = append(dst, h.NxtHdr, h.HopLmt)
	dst = append(dst, h.SGID[:]...)
	return append(dst, h.DGID[:]...)
}

// DecodeGRH decodes a GRH and returns the bytes after it.
func DecodeGRH(b []byte) (GRH, []byte, error) {
	var h GRH
	if len(b) < GRHLen {
		return h, nil, shortErr("grh", 0, len(b), GRHLen)
	}
	w := binary.BigEndian.Uint32(b[0:4])
	h.IPVer, h.TClass, h.FlowLabel = uint8(w>>28), uint8(w>>20), w&0xFFFFF
	h.PayLen = binary.BigEndian.Uint16(b[4:6])
	h.NxtHdr, h.HopLmt = b[6], b[7]
	copy(h.SGID[:], b[8:24])
	copy(h.DGID[:], b[24:40])
	return h, b[GRHLen:], nil
}
