package wire

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// EtherTypes used here (IEEE registry).
const (
	EtherTypeIPv4       uint16 = 0x0800
	EtherTypeIPv6       uint16 = 0x86DD
	EtherTypeVLAN       uint16 = 0x8100 // IEEE 802.1Q C-tag TPID
	EtherTypeMACControl uint16 = 0x8808 // IEEE 802.3 Annex 31B (PAUSE, PFC)
)

// Ethernet sizes (IEEE 802.3 §3.1.1, §4.4.2).
const (
	EthernetHeaderLen = 14 // dst 6, src 6, EtherType 2
	VLANTagLen        = 4  // TPID 2, TCI 2
	FCSLen            = 4  // CRC-32 frame check sequence
	MinFrameLen       = 64 // including FCS
	// EthernetL1Overhead is preamble 7 + SFD 1 + inter-frame gap 12: bytes on
	// the wire per frame that are not part of the frame ([IEEE 802.3]).
	EthernetL1Overhead = 20
)

// MAC is a 48-bit IEEE 802 MAC address.
type MAC [6]byte

func (m MAC) String() string {
	return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5])
}

// Ethernet is an Ethernet II header. When an 802.1Q tag follows, EtherType
// is EtherTypeVLAN and the tag (with the inner EtherType) is decoded with
// DecodeVLANTag.
type Ethernet struct {
	Dst, Src  MAC
	EtherType uint16
}

// Append appends the 14-byte header to dst.
func (h *Ethernet) Append(dst []byte) []byte {
	dst = append(dst, h.Dst[:]...)
	dst = append(dst, h.Src[:]...)
	return binary.BigEndian.AppendUint16(dst, h.EtherType)
}

// DecodeEthernet decodes an Ethernet II header and returns the bytes after it.
func DecodeEthernet(b []byte) (Ethernet, []byte, error) {
	var h Ethernet
	if len(b) < EthernetHeaderLen {
		return h, nil, shortErr("ethernet", 0, len(b), EthernetHeaderLen)
	}
	copy(h.Dst[:], b[0:6])
	copy(h.Src[:], b[6:12])
	h.EtherType = binary.BigEndian.Uint16(b[12:14])
	return h, b[EthernetHeaderLen:], nil
}

// VLANTag is the 802.1Q tag after the source MAC: TPID 0x8100, then
// PCP3 DEI1 VID12, then the EtherType of what follows (IEEE 802.1Q §9.6).
// PFC classifies lossless traffic by PCP.
type VLANTag struct {
	PCP       uint8  // priority code point, 3 bits
	DEI       bool   // drop eligible indicator
	VID       uint16 // VLAN identifier, 12 bits
	EtherType uint16 // inner EtherType
}

// Append appends the 4-byte tag body (TCI and inner EtherType) to dst; the
// TPID is the outer Ethernet header's EtherType.
func (t *VLANTag) Append(dst []byte) []byte {
	tci := uint16(t.PCP&7)<<13 | t.VID&0x0FFF
	if t.DEI {
		tci |= 1 << 12
	}
	dst = binary.BigEndian.AppendUint16(dst, tci)
	return binary.BigEndian.AppendUint16(dst, t.EtherType)
}

// DecodeVLANTag decodes the TCI and inner EtherType that follow a 0x8100 TPID.
func DecodeVLANTag(b []byte) (VLANTag, []byte, error) {
	var t VLANTag
	if len(b) < 4 {
		return t, nil, shortErr("vlan", 0, len(b), 4)
	}
	tci := binary.BigEndian.Uint16(b[0:2])
	t.PCP = uint8(tci >> 13)
	t.DEI = tci&(1<<12) != 0
	t.VID = tci & 0x0FFF
	t.EtherType = binary.BigEndian.Uint16(b[2:4])
	return t, b[4:], nil
}

// FCS returns the Ethernet frame check sequence of frame (everything from
// the destination MAC to the end of the padding): the CRC-32 of IEEE 802.3
// §3.2.9, the same reflected 0x04C11DB7 CRC as zlib's crc32. It goes on the
// wire least-significant byte first: use AppendFCS.
func FCS(frame []byte) uint32 { return crc32.ChecksumIEEE(frame) }

// AppendFCS pads frame (the bytes of dst from start on) with zeros to the
// 60-byte minimum and appends its FCS, returning the completed buffer.
func AppendFCS(dst []byte, start int) []byte {
	for len(dst)-start < MinFrameLen-FCSLen {
		dst = append(dst, 0)
	}
	return binary.LittleEndian.AppendUint32(dst, FCS(dst[start:]))
}

// checkFCS verifies the last 4 bytes of frame as its FCS.
func checkFCS(frame []byte) error {
	n := len(frame) - FCSLen
	got := binary.LittleEndian.Uint32(frame[n:])
	if want := FCS(frame[:n]); got != want {
		return errorf("ethernet", "FCS", n, "stored 0x%08x, computed 0x%08x", got, want)
	}
	return nil
}
