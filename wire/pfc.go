package wire

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
)

// PFC (IEEE 802.1Qbb §36.1.3 and IEEE 802.3 Annex 31D): a MAC Control frame
// to the reserved multicast 01-80-C2-00-00-01, EtherType 0x8808, opcode
// 0x0101, a 16-bit class-enable vector whose low 8 bits are the priorities,
// then eight 16-bit pause times in quanta of 512 bit times, zero-padded to the
// 64-byte minimum frame ([IEEE 802.1Q], [IEEE 802.3]).
var PFCDestination = MAC{0x01, 0x80, 0xC2, 0x00, 0x00, 0x01}

// MAC Control opcodes (IEEE 802.3 Annex 31A).
const (
	MACControlOpPause uint16 = 0x0001 // 802.3x link-level PAUSE
	MACControlOpPFC   uint16 = 0x0101 // 802.1Qbb priority-based flow control
)

// PFCFrameLen is the length of a PFC frame, FCS included (the minimum frame).
const PFCFrameLen = MinFrameLen

// PauseQuantumBits is the length of one pause quantum in bit times.
const PauseQuantumBits = 512

// PFCPause is one PFC frame: for each priority i whose Enable bit (1<<i) is
// set, the receiver must stop sending that priority for Quanta[i] quanta; 0
// means resume (XON). Times of disabled priorities are sent but ignored.
type PFCPause struct {
	SrcMAC MAC
	Enable uint8
	Quanta [8]uint16
}

// AppendFrame appends the 64-byte frame, FCS included.
func (p *PFCPause) AppendFrame(dst []byte) []byte {
	start := len(dst)
	eth := Ethernet{Dst: PFCDestination, Src: p.SrcMAC, EtherType: EtherTypeMACControl}
	dst = eth.Append(dst)
	dst = binary.BigEndian.AppendUint16(dst, MACControlOpPFC)
	dst = binary.BigEndian.AppendUint16(dst, uint16(p.Enable))
	for _, q := range p.Quanta {
		dst = binary.BigEndian.AppendUint16(dst, q)
	}
	return AppendFCS(dst, start)
}

// pfcBodyLen is header + opcode + vector + 8 times.
const pfcBodyLen = EthernetHeaderLen + 2 + 2 + 16

// DecodePFCPause decodes a PFC frame of 60 bytes (captured without FCS) or
// more (the last 4 bytes are then the FCS and are verified).
func DecodePFCPause(frame []byte) (PFCPause, error) {
	p, _, err := decodePFC(frame, false)
	return p, err
}

func decodePFC(frame []byte, truncated bool) (p PFCPause, fcs bool, err error) {
	eth, rest, err := DecodeEthernet(frame)
	if err != nil {
		return p, false, err
	}
	p.SrcMAC = eth.Src
	if eth.EtherType != EtherTypeMACControl {
		return p, false, errorf("ethernet", "EtherType", 12, "0x%04x is not MAC Control (0x8808)", eth.EtherType)
	}
	if eth.Dst != PFCDestination {
		return p, false, errorf("ethernet", "destination", 0, "%v is not the PFC address %v", eth.Dst, PFCDestination)
	}
	if len(rest) < pfcBodyLen-EthernetHeaderLen {
		return p, false, shortErr("pfc", EthernetHeaderLen, len(rest), pfcBodyLen-EthernetHeaderLen)
	}
	if op := binary.BigEndian.Uint16(rest); op != MACControlOpPFC {
		return p, false, errorf("pfc", "opcode", 14, "0x%04x is not PFC (0x0101)", op)
	}
	cev := binary.BigEndian.Uint16(rest[2:])
	if cev>>8 != 0 {
		return p, false, errorf("pfc", "class-enable vector", 16, "reserved high byte 0x%02x is not zero", cev>>8)
	}
	p.Enable = uint8(cev)
	for i := range p.Quanta {
		p.Quanta[i] = binary.BigEndian.Uint16(rest[4+2*i:])
	}
	if truncated {
		return p, false, nil
	}
	if len(frame) < MinFrameLen-FCSLen {
		return p, false, errorf("pfc", "length", 0, "frame of %d bytes is below the 60-byte minimum (without FCS)", len(frame))
	}
	if len(frame) >= MinFrameLen {
		if err := checkFCS(frame); err != nil {
			return p, false, err
		}
		fcs = true
	}
	return p, fcs, nil
}

// PauseDurationPS converts a pause time in quanta to picoseconds at a link
// rate in bits per second (rounded down): quanta x 512 bit times. 65535
// quanta at 400 Gb/s = 83.886 us ([IEEE 802.3] Annex 31B).
func PauseDurationPS(quanta uint16, bitsPerSecond uint64) int64 {
	if bitsPerSecond == 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(quanta)*PauseQuantumBits, 1e12)
	if hi >= bitsPerSecond {
		return math.MaxInt64 // below ~2 kb/s; no real link
	}
	q, _ := bits.Div64(hi, lo, bitsPerSecond)
	return int64(min(q, math.MaxInt64))
}

func (p PFCPause) String() string {
	return fmt.Sprintf("PFC from %v enable=0x%02x quanta=%v", p.SrcMAC, p.Enable, p.Quanta)
}
