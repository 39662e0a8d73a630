package wire

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"testing"
)

// Golden layouts: every field set to a distinct value and the bytes worked
// out by hand from the bit layouts of [IBA] Vol. 1 §7.7, §8.3,
// §9.2-9.3, RFC 791, RFC 8200, RFC 768 and IEEE 802.1Q.
func TestHeaderGoldenLayouts(t *testing.T) {
	cases := []struct {
		name string
		enc  []byte
		want string
	}{
		{"ethernet", (&Ethernet{Dst: MAC{1, 2, 3, 4, 5, 6}, Src: MAC{7, 8, 9, 10, 11, 12}, EtherType: 0x0800}).Append(nil),
			"010203040506 0708090a0b0c 0800"},
		// PCP 5 DEI 1 VID 0xABC -> 101 1 1010 1011 1100 = 0xBABC.
		{"vlan", (&VLANTag{PCP: 5, DEI: true, VID: 0xABC, EtherType: 0x86DD}).Append(nil), "babc 86dd"},
		// Checksum 0xb861 is RFC 1071's worked example header (Wikipedia
		// "IPv4 header checksum": 4500 0073 0000 4000 4011 .... c0a8 0001 c0a8 00c7).
		{"ipv4", (&IPv4{TotalLen: 0x73, Flags: IPv4FlagDF, TTL: 0x40, Protocol: 17,
			Src: [4]byte{192, 168, 0, 1}, Dst: [4]byte{192, 168, 0, 199}}).Append(nil),
			"4500 0073 0000 4000 4011 b861 c0a80001 c0a800c7"},
		// DSCP 26 ECN 3 -> TC 0x6b; flow label 0xABCDE.
		{"ipv6", (&IPv6{DSCP: 26, ECN: 3, FlowLabel: 0xABCDE, PayloadLen: 0x1234, NextHeader: 17, HopLimit: 9,
			Src: [16]byte{15: 1}, Dst: [16]byte{0: 0xfd, 15: 2}}).Append(nil),
			"66babcde 1234 11 09 00000000000000000000000000000001 fd000000000000000000000000000002"},
		{"udp", (&UDP{SrcPort: 0xC000, DstPort: 4791, Length: 0x20, Checksum: 0xBEEF}).Append(nil), "c000 12b7 0020 beef"},
		// SE 1 M 0 PadCnt 3 TVer 0 -> 1011 0000; FECN 1 BECN 0 -> 0x80 then QP.
		{"bth", (&BTH{OpCode: 0x0A, SE: true, PadCnt: 3, PKey: 0xFFFF, FECN: true, DestQP: 0xABCDEF, AckReq: true, PSN: 0x123456}).Append(nil),
			"0a b0 ffff 80abcdef 80123456"},
		{"bth becn migreq", (&BTH{OpCode: OpCNP, M: true, TVer: 0, PKey: 0x8001, BECN: true, DestQP: 1}).Append(nil),
			"81 40 8001 40000001 00000000"},
		{"reth", (&RETH{VA: 0x0102030405060708, RKey: 0xAABBCCDD, DMALen: 0x10000}).Append(nil), "0102030405060708 aabbccdd 00010000"},
		{"aeth", (&AETH{Syndrome: AETHNakPSNSeqErr, MSN: 0xFEDCBA}).Append(nil), "60 fedcba"},
		{"deth", (&DETH{QKey: 0x80010000, SrcQP: 0x000123}).Append(nil), "80010000 00000123"},
		// VL 3 LVer 0 | SL 5 rsv LNH 2 | DLID | PktLen 2047 | SLID.
		{"lrh", (&LRH{VL: 3, SL: 5, LNH: LNHLocal, DLID: 0x1234, PktLen: 0x7FF, SLID: 0xBEEF}).Append(nil), "30 52 1234 07ff beef"},
		// IPVer 6, TClass 0xA5, FlowLabel 0x12345 -> 6a512345.
		{"grh", (&GRH{IPVer: 6, TClass: 0xA5, FlowLabel: 0x12345, PayLen: 0x40, NxtHdr: 0x1B, HopLmt: 0xFF,
			SGID: [16]byte{0: 0xfe, 1: 0x80, 15: 1}, DGID: [16]byte{0: 0xfe, 1: 0x80, 15: 2}}).Append(nil),
			"6a512345 0040 1b ff fe800000000000000000000000000001 fe800000000000000000000000000002"},
	}
	for _, c := range cases {
		want, err := hex.DecodeString(stripSpaces(c.want))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(c.enc, want) {
			t.Errorf("%s: got %x, want %x", c.name, c.enc, want)
		}
	}
}

func stripSpaces(s string) string {
	return string(bytes.ReplaceAll([]byte(s), []byte(" "), nil))
}

// Every header decodes back to what was encoded, and the rest after it is
// returned untouched.
func TestHeaderRoundTrips(t *testing.T) {
	tail := []byte{0xDE, 0xAD}
	type rt struct {
		name string
		v    any
		enc  func() []byte
		dec  func([]byte) (any, []byte, error)
	}
	wrap := func(f func([]byte) (any, []byte, error)) func([]byte) (any, []byte, error) { return f }
	eth := Ethernet{Dst: MAC{1}, Src: MAC{2}, EtherType: EtherTypeVLAN}
	vlan := VLANTag{PCP: 7, VID: 4095, EtherType: EtherTypeIPv4}
	ip4 := IPv4{DSCP: 63, ECN: 3, TotalLen: 22, ID: 7, Flags: 1, FragOff: 0x1FFF, TTL: 1, Protocol: 17, Src: [4]byte{1, 2, 3, 4}, Dst: [4]byte{5, 6, 7, 8}}
	ip4opt := IPv4{TotalLen: 26, TTL: 9, Protocol: 6, Options: []byte{1, 1, 1, 0}}
	ip6 := IPv6{DSCP: 1, ECN: 2, FlowLabel: 0xFFFFF, PayloadLen: 2, NextHeader: 17, HopLimit: 255, Src: [16]byte{1}, Dst: [16]byte{2}}
	udp := UDP{SrcPort: 1, DstPort: 4791, Length: 10, Checksum: 0}
	bth := BTH{OpCode: 0xFF, SE: true, M: true, PadCnt: 3, TVer: 15, PKey: 0x7FFF, FECN: true, BECN: true, DestQP: 0xFFFFFF, AckReq: true, PSN: 0xFFFFFF}
	reth := RETH{VA: ^uint64(0), RKey: 1, DMALen: 1 << 31}
	aeth := AETH{Syndrome: 0x3F, MSN: 0xFFFFFF}
	deth := DETH{QKey: 0x11111111, SrcQP: 0xFFFFFF}
	lrh := LRH{VL: 15, LVer: 15, SL: 15, LNH: 3, DLID: 0xFFFF, PktLen: 0x7FF, SLID: 0xC000}
	grh := GRH{IPVer: 6, TClass: 0xFF, FlowLabel: 0xFFFFF, PayLen: 0xFFFF, NxtHdr: 0x1B, HopLmt: 1, SGID: [16]byte{9}, DGID: [16]byte{15: 9}}
	cases := []rt{
		{"ethernet", eth, func() []byte { return eth.Append(nil) }, wrap(func(b []byte) (any, []byte, error) { return DecodeEthernet(b) })},
		{"vlan", vlan, func() []byte { return vlan.Append(nil) }, wrap(func(b []byte) (any, []byte, error) { return DecodeVLANTag(b) })},
		{"ipv4", ip4, func() []byte { h := ip4; return h.Append(nil) }, wrap(func(b []byte) (any, []byte, error) {
			h, r, err := DecodeIPv4(b)
			h.Checksum = 0
			return h, r, err
		})},
		{"ipv4 options", ip4opt, func() []byte { h := ip4opt; return h.Append(nil) }, wrap(func(b []byte) (any, []byte, error) {
			h, r, err := DecodeIPv4(b)
			h.Checksum = 0
			return h, r, err
		})},
		{"ipv6", ip6, func() []byte { return ip6.Append(nil) }, wrap(func(b []byte) (any, []byte, error) { return DecodeIPv6(b) })},
		{"udp", udp, func() []byte { return udp.Append(nil) }, wrap(func(b []byte) (any, []byte, error) { return DecodeUDP(b) })},
		{"bth", bth, func() []byte { return bth.Append(nil) }, wrap(func(b []byte) (any, []byte, error) { return DecodeBTH(b) })},
		{"reth", reth, func() []byte { return reth.Append(nil) }, wrap(func(b []byte) (any, []byte, error) { return DecodeRETH(b) })},
		{"aeth", aeth, func() []byte { return aeth.Append(nil) }, wrap(func(b []byte) (any, []byte, error) { return DecodeAETH(b) })},
		{"deth", deth, func() []byte { return deth.Append(nil) }, wrap(func(b []byte) (any, []byte, error) { return DecodeDETH(b) })},
		{"lrh", lrh, func() []byte { return lrh.Append(nil) }, wrap(func(b []byte) (any, []byte, error) { return DecodeLRH(b) })},
		{"grh", grh, func() []byte { return grh.Append(nil) }, wrap(func(b []byte) (any, []byte, error) { return DecodeGRH(b) })},
	}
	for _, c := range cases {
		b := append(c.enc(), tail...)
		got, rest, err := c.dec(b)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !reflect.DeepEqual(got, c.v) {
			t.Errorf("%s: decoded %+v, want %+v", c.name, got, c.v)
		}
		if !bytes.Equal(rest, tail) {
			t.Errorf("%s: rest %x, want %x", c.name, rest, tail)
		}
		// Every strictly shorter prefix is an error naming the layer, not a panic.
		for n := range len(b) - len(tail) {
			if _, _, err := c.dec(b[:n]); err == nil {
				t.Errorf("%s: %d-byte prefix decoded without error", c.name, n)
			} else if de := (*DecodeError)(nil); !errors.As(err, &de) {
				t.Errorf("%s: error %v is not a *DecodeError", c.name, err)
			}
		}
	}
}

func TestIPv4ChecksumVerified(t *testing.T) {
	h := IPv4{TotalLen: 20, TTL: 64, Protocol: 17}
	b := h.Append(nil)
	b[8]-- // TTL changed by a router that forgot the checksum
	_, _, err := DecodeIPv4(b)
	var de *DecodeError
	if !errors.As(err, &de) || de.Layer != "ipv4" || de.Field != "checksum" || de.Offset != 10 {
		t.Fatalf("got %v, want ipv4 checksum error at byte 10", err)
	}
}

func TestUDPChecksumRFC768(t *testing.T) {
	// A computed checksum of zero must be sent as 0xFFFF (RFC 768): find a
	// segment whose sum is 0xFFFF by choosing the data word.
	src, dst := mustAddr("10.0.0.1"), mustAddr("10.0.0.2")
	seg := (&UDP{SrcPort: 1, DstPort: 2, Length: 10}).Append(nil)
	seg = append(seg, 0, 0)
	c := UDPChecksum(src, dst, seg)
	// Setting the data word to c makes the one's-complement sum all ones.
	seg[8], seg[9] = byte(c>>8), byte(c)
	if got := UDPChecksum(src, dst, seg); got != 0xFFFF {
		t.Fatalf("zero checksum sent as 0x%04x, want 0xffff", got)
	}
}

func TestOpcodeLayouts(t *testing.T) {
	// IBA Vol. 1 Table 38 extension headers per opcode.
	cases := []struct {
		op  uint8
		ext int
	}{
		{OpRCSendFirst, 0}, {OpRCSendLastImm, 4}, {OpRCWriteFirst, 16}, {OpRCWriteMiddle, 0},
		{OpRCWriteOnlyImm, 20}, {OpRCReadRequest, 16}, {OpRCReadResponseFirst, 4}, {OpRCReadResponseMiddle, 0},
		{OpRCAcknowledge, 4}, {0x2A, 16}, {0x2B, 20}, {OpUDSendOnly, 8}, {OpUDSendOnlyImm, 12}, {OpCNP, 0},
	}
	for _, c := range cases {
		if n, ok := ExtHeaderLen(c.op); !ok || n != c.ext {
			t.Errorf("ExtHeaderLen(%s) = %d, %v; want %d", OpName(c.op), n, ok, c.ext)
		}
	}
	for _, op := range []uint8{0x12, 0x13, 0x14, 0x2C, 0x40, 0xA0, 0xC0} {
		if _, ok := ExtHeaderLen(op); ok {
			t.Errorf("ExtHeaderLen(0x%02x) claims support", op)
		}
	}
	if got := OpName(0x2A); got != "UC RDMA WRITE Only" {
		t.Errorf("OpName(0x2A) = %q", got)
	}
}
