package wire

import (
	"bytes"
	"errors"
	"net/netip"
	"reflect"
	"testing"
)

var roceOpcodes = []uint8{
	OpRCSendFirst, OpRCSendMiddle, OpRCSendLast, OpRCSendLastImm, OpRCSendOnly, OpRCSendOnlyImm,
	OpRCWriteFirst, OpRCWriteMiddle, OpRCWriteLast, OpRCWriteLastImm, OpRCWriteOnly, OpRCWriteOnlyImm,
	OpRCReadRequest, OpRCReadResponseFirst, OpRCReadResponseMiddle, OpRCReadResponseLast,
	OpRCReadResponseOnly, OpRCAcknowledge, 0x20, 0x26, 0x2A, 0x2B, OpUDSendOnly, OpUDSendOnlyImm, OpCNP,
}

// withExt gives p the extension headers op carries, with distinct values.
func withExt(op uint8, deth **DETH, reth **RETH, aeth **AETH, imm **uint32) {
	l := layoutOf(op)
	if l.deth {
		*deth = &DETH{QKey: 0x11112222, SrcQP: 0x333}
	}
	if l.reth {
		*reth = &RETH{VA: 0xDEADBEEF000, RKey: 0x77, DMALen: 1 << 20}
	}
	if l.aeth {
		*aeth = &AETH{Syndrome: AETHAck, MSN: 42}
	}
	if l.imm {
		v := uint32(0xCAFEF00D)
		*imm = &v
	}
}

func TestRoCERoundTrip(t *testing.T) {
	addrs := [][2]netip.Addr{
		{mustAddr("192.0.2.1"), mustAddr("192.0.2.2")},
		{mustAddr("2001:db8::1"), mustAddr("2001:db8::2")},
	}
	for _, op := range roceOpcodes {
		for _, a := range addrs {
			for _, vlan := range []*VLANTag{nil, {PCP: 3, VID: 7}} {
				for _, n := range []int{0, 1, 3, 4, 1023, 4096} {
					if op == OpCNP {
						n = CNPPayloadLen
					}
					p := RoCEPacket{
						DstMAC: MAC{2, 0, 0, 0, 0, 2}, SrcMAC: MAC{2, 0, 0, 0, 0, 1}, VLAN: vlan,
						SrcIP: a[0], DstIP: a[1], DSCP: 26, ECN: ECNECT0, TTL: 63, UDPSrcPort: 0xC123,
						BTH:     BTH{OpCode: op, PKey: 0xFFFF, DestQP: 0x123456, PSN: 0xFFFFFE, AckReq: true, PadCnt: uint8(padFor(n))},
						Payload: vectorPayload(n), PayloadLen: n,
					}
					if a[0].Is4() {
						p.IPID = 99
					} else {
						p.FlowLabel = 0xBEEF
						p.UDPChecksum = true
					}
					if op == OpCNP {
						p.BTH.BECN = true
						p.Payload = make([]byte, n)
					}
					withExt(op, &p.DETH, &p.RETH, &p.AETH, &p.Imm)
					if err := p.Validate(); err != nil {
						t.Fatalf("%s: Validate: %v", OpName(op), err)
					}
					f := p.AppendFrame(nil)
					if len(f) != p.FrameLen() || len(f) != RoCEv2FrameLen(op, n, a[0].Is6(), vlan != nil) {
						t.Fatalf("%s n=%d: frame %d bytes, FrameLen %d", OpName(op), n, len(f), p.FrameLen())
					}
					if vlan != nil {
						p.VLAN = &VLANTag{PCP: 3, VID: 7, EtherType: map[bool]uint16{true: EtherTypeIPv4, false: EtherTypeIPv6}[a[0].Is4()]}
					}
					got, err := DecodeRoCE(f)
					if err != nil {
						t.Fatalf("%s n=%d v6=%v: %v", OpName(op), n, a[0].Is6(), err)
					}
					if !reflect.DeepEqual(got, p) {
						t.Fatalf("%s n=%d: round trip\n got %+v\nwant %+v", OpName(op), n, got, p)
					}
				}
			}
		}
	}
}

func TestRoCEZeroValueFrame(t *testing.T) {
	// The zero value builds a valid (if useless) frame: IPv4 0.0.0.0, RC
	// SEND First, default P_Key and TTL, padded to the 64-byte minimum.
	var p RoCEPacket
	f := p.AppendFrame(nil)
	if len(f) != MinFrameLen {
		t.Fatalf("zero-value frame is %d bytes, want 64", len(f))
	}
	got, err := DecodeRoCE(f)
	if err != nil {
		t.Fatal(err)
	}
	if got.BTH.PKey != DefaultPKey || got.TTL != DefaultTTL {
		t.Errorf("defaults not applied: PKey 0x%x TTL %d", got.BTH.PKey, got.TTL)
	}
}

func TestRoCEValidate(t *testing.T) {
	ok := func() RoCEPacket {
		return RoCEPacket{SrcIP: mustAddr("10.0.0.1"), DstIP: mustAddr("10.0.0.2"), BTH: BTH{OpCode: OpRCWriteMiddle}}
	}
	bad := map[string]func(*RoCEPacket){
		"mixed families": func(p *RoCEPacket) { p.DstIP = mustAddr("::1") },
		"QP":             func(p *RoCEPacket) { p.BTH.DestQP = 1 << 24 },
		"PSN":            func(p *RoCEPacket) { p.BTH.PSN = 1 << 24 },
		"DSCP":           func(p *RoCEPacket) { p.DSCP = 64 },
		"ECN":            func(p *RoCEPacket) { p.ECN = 4 },
		"flow label":     func(p *RoCEPacket) { p.FlowLabel = 1 << 20 },
		"PCP":            func(p *RoCEPacket) { p.VLAN = &VLANTag{PCP: 8} },
		"RETH on middle": func(p *RoCEPacket) { p.RETH = &RETH{} },
		"negative len":   func(p *RoCEPacket) { p.PayloadLen = -1 },
		"too long":       func(p *RoCEPacket) { p.PayloadLen = 70000 },
	}
	p := ok()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mut := range bad {
		p := ok()
		mut(&p)
		if err := p.Validate(); err == nil {
			t.Errorf("%s: Validate accepted it", name)
		}
	}
}

// Corrupting one byte is caught, and the error points at the right place.
func TestRoCECorruptionsCaught(t *testing.T) {
	p := RoCEPacket{SrcIP: mustAddr("10.0.0.1"), DstIP: mustAddr("10.0.0.2"),
		BTH: BTH{OpCode: OpRCWriteOnly, DestQP: 5}, RETH: &RETH{DMALen: 100}, PayloadLen: 100}
	f := p.AppendFrame(nil)
	// Offsets: Ethernet 0, IPv4 14, UDP 34, BTH 42, RETH 54, payload 70,
	// ICRC 170, FCS 174.
	cases := []struct {
		off          int
		layer, field string
		at           int
	}{
		{15, "ipv4", "checksum", 24}, // TOS, not in ICRC, but in the IP checksum
		{20, "ipv4", "checksum", 24},
		{40, "udp", "checksum", 40}, // a non-zero UDP checksum is verified
		{43, "icrc", "ICRC", 170},   // BTH flags: invariant
		{100, "icrc", "ICRC", 170},  // payload
		{171, "icrc", "ICRC", 170},
		{46, "ethernet", "FCS", 174}, // BTH byte 4 is masked in the ICRC: only the FCS sees it
		{176, "ethernet", "FCS", 174},
	}
	for _, c := range cases {
		g := bytes.Clone(f)
		g[c.off] ^= 0x01
		if c.off == 40 {
			g[c.off] = 0x12 // make the checksum non-zero
		}
		_, err := DecodeRoCE(g)
		var de *DecodeError
		if !errors.As(err, &de) || de.Layer != c.layer || de.Field != c.field || de.Offset != c.at {
			t.Errorf("flip byte %d: got %v, want %s %s at byte %d", c.off, err, c.layer, c.field, c.at)
		}
	}
	// Truncations are length errors, never panics or silent success.
	for n := range len(f) - FCSLen {
		if _, err := DecodeRoCE(f[:n]); err == nil {
			t.Errorf("frame cut to %d bytes decoded", n)
		}
	}
	// Without its FCS (as most captures hold frames) it still decodes.
	if _, err := DecodeRoCE(f[:len(f)-FCSLen]); err != nil {
		t.Errorf("frame without FCS: %v", err)
	}
}

func TestIBRoundTrip(t *testing.T) {
	for _, op := range roceOpcodes {
		for _, grh := range []*GRH{nil, {IPVer: 6, TClass: 0x20, FlowLabel: 0x9, HopLmt: 64, NxtHdr: GRHNextHeaderIBA, SGID: [16]byte{0xfe, 0x80, 15: 1}, DGID: [16]byte{0xfe, 0x80, 15: 2}}} {
			for _, n := range []int{0, 2, 5, 256, 4096} {
				p := IBPacket{
					LRH:     LRH{VL: 2, SL: 2, DLID: 0x10, SLID: 0x20},
					GRH:     grh,
					BTH:     BTH{OpCode: op, PKey: 0x8001, DestQP: 0x77, PSN: 3, PadCnt: uint8(padFor(n)), FECN: true},
					Payload: vectorPayload(n), PayloadLen: n,
				}
				if op == OpCNP {
					continue // RoCEv2-only opcode
				}
				withExt(op, &p.DETH, &p.RETH, &p.AETH, &p.Imm)
				if err := p.Validate(); err != nil {
					t.Fatal(err)
				}
				b := p.AppendPacket(nil)
				if len(b) != p.Len() || len(b) != IBPacketLen(op, n, grh != nil) {
					t.Fatalf("%s: %d bytes, Len %d", OpName(op), len(b), p.Len())
				}
				got, err := DecodeIB(b)
				if err != nil {
					t.Fatalf("%s n=%d grh=%v: %v", OpName(op), n, grh != nil, err)
				}
				p.LRH.LNH, p.LRH.PktLen = LNHLocal, uint16((len(b)-VCRCLen)/4)
				if grh != nil {
					g := *grh
					g.PayLen = uint16(len(b) - VCRCLen - LRHLen - GRHLen)
					p.GRH = &g
					p.LRH.LNH = LNHGlobal
				}
				if !reflect.DeepEqual(got, p) {
					t.Fatalf("%s n=%d: round trip\n got %+v\nwant %+v", OpName(op), n, got, p)
				}
			}
		}
	}
}

func TestIBCorruptionsCaught(t *testing.T) {
	p := IBPacket{LRH: LRH{DLID: 1, SLID: 2}, BTH: BTH{OpCode: OpRCSendOnly}, PayloadLen: 8}
	b := p.AppendPacket(nil) // LRH 0, BTH 8, payload 20, ICRC 28, VCRC 32
	cases := []struct {
		off          int
		layer, field string
		at           int
	}{
		{0, "vcrc", "VCRC", 32}, // VL: variant, only the VCRC sees it
		{2, "vcrc", "VCRC", 32},
		{33, "vcrc", "VCRC", 32},
	}
	for _, c := range cases {
		g := bytes.Clone(b)
		g[c.off] ^= 0x10
		_, err := DecodeIB(g)
		var de *DecodeError
		if !errors.As(err, &de) || de.Layer != c.layer || de.Field != c.field || de.Offset != c.at {
			t.Errorf("flip byte %d: got %v, want %s %s at %d", c.off, err, c.layer, c.field, c.at)
		}
	}
	// A switch that rewrites VL must recompute the VCRC but leave the ICRC:
	// flip VL, fix the VCRC, and the packet is good.
	g := bytes.Clone(b)
	g[0] = 0x50
	copy(g[32:], appendLE16(nil, VCRC(g[:32])))
	if got, err := DecodeIB(g); err != nil || got.LRH.VL != 5 {
		t.Errorf("VL rewrite with new VCRC: %v (VL %d)", err, got.LRH.VL)
	}
	// Same for the DLID: invariant, so the ICRC catches it even with a good VCRC.
	g = bytes.Clone(b)
	g[3] ^= 1
	copy(g[32:], appendLE16(nil, VCRC(g[:32])))
	var de *DecodeError
	if _, err := DecodeIB(g); !errors.As(err, &de) || de.Field != "ICRC" || de.Offset != 28 {
		t.Errorf("DLID change: got %v, want ICRC error at 28", err)
	}
	g = bytes.Clone(b)
	g[5]++ // PktLen
	if _, err := DecodeIB(g); !errors.As(err, &de) || de.Field != "PktLen" {
		t.Errorf("PktLen change: got %v", err)
	}
	for n := range len(b) {
		if _, err := DecodeIB(b[:n]); err == nil {
			t.Errorf("packet cut to %d bytes decoded", n)
		}
	}
}

func TestIBFlowControlRoundTrip(t *testing.T) {
	for _, f := range []IBFlowControl{{}, {Op: FCOpInit, FCTBS: 0xFFF, VL: 15, FCCL: 0xFFF}, {FCTBS: 1, VL: 3, FCCL: 2048}} {
		b := f.AppendPacket(nil)
		if len(b) != IBFlowControlLen {
			t.Fatalf("%d bytes", len(b))
		}
		got, err := DecodeIBFlowControl(b)
		if err != nil || got != f {
			t.Errorf("%+v: got %+v, %v", f, got, err)
		}
		b[1] ^= 1
		if _, err := DecodeIBFlowControl(b); err == nil {
			t.Errorf("corrupt flow-control packet accepted")
		}
	}
}

func TestPFCRoundTrip(t *testing.T) {
	p := PFCPause{SrcMAC: MAC{2, 0, 0, 0, 0, 9}, Enable: 0b1000_1001, Quanta: [8]uint16{1, 2, 3, 0xFFFF, 5, 6, 7, 0}}
	f := p.AppendFrame(nil)
	if len(f) != PFCFrameLen {
		t.Fatalf("PFC frame %d bytes, want 64", len(f))
	}
	got, err := DecodePFCPause(f)
	if err != nil || got != p {
		t.Fatalf("got %+v, %v", got, err)
	}
	if got, err := DecodePFCPause(f[:60]); err != nil || got != p {
		t.Errorf("without FCS: %+v, %v", got, err)
	}
	g := bytes.Clone(f)
	g[16] = 1 // reserved high byte of the class-enable vector
	if _, err := DecodePFCPause(g); err == nil {
		t.Error("reserved class-enable bits accepted")
	}
	g = bytes.Clone(f)
	g[14] = 0 // opcode 0x0001: 802.3x PAUSE, not PFC
	if _, err := DecodePFCPause(g); err == nil {
		t.Error("opcode 0x0001 accepted as PFC")
	}
}

func TestPauseDuration(t *testing.T) {
	// One quantum = 512 bit times: 1.28 ns at 400 Gb/s; 65535 quanta =
	// 83.886 us ([IEEE 802.3] Annex 31B).
	if got := PauseDurationPS(1, 400e9); got != 1280 {
		t.Errorf("1 quantum at 400G = %d ps, want 1280", got)
	}
	if got := PauseDurationPS(0xFFFF, 400e9); got != 83884800 {
		t.Errorf("65535 quanta at 400G = %d ps, want 83884800", got)
	}
	if got := PauseDurationPS(0xFFFF, 100e9); got != 335539200 {
		t.Errorf("65535 quanta at 100G = %d ps, want 335539200", got)
	}
	if PauseDurationPS(1, 0) != 0 {
		t.Error("zero rate")
	}
}

// TestSizes checks the overhead numbers against [IEEE 802.3], [RFC 791], [RFC 768] and [IBA] Annex A17.
func TestSizes(t *testing.T) {
	cases := []struct {
		name      string
		got, want int
	}{
		{"RoCEv2 IPv4", RoCEv2Overhead(false, false), 62},
		{"RoCEv2 IPv4 VLAN", RoCEv2Overhead(false, true), 66},
		{"RoCEv2 IPv6", RoCEv2Overhead(true, false), 82},
		{"RoCEv2 IPv6 VLAN", RoCEv2Overhead(true, true), 86},
		{"IB local", IBOverhead(false), 26},
		{"IB global", IBOverhead(true), 66},
		{"wire 4096", RoCEv2WireLen(OpRCWriteMiddle, 4096, false, false), 4178},
		{"WRITE First adds RETH", RoCEv2FrameLen(OpRCWriteFirst, 4096, false, false), 4096 + 62 + 16},
		{"ACK", RoCEv2FrameLen(OpRCAcknowledge, 0, false, false), 66},
		{"CNP", RoCEv2FrameLen(OpCNP, 0, false, false), 78},
		{"tiny frame padded", RoCEv2FrameLen(OpRCSendOnly, 0, false, false), 64},
		{"IB 4096", IBPacketLen(OpRCWriteMiddle, 4096, false), 4122},
		{"RoCE MTU 1500", RoCEMTU(1500), 1024},
		{"RoCE MTU 4200", RoCEMTU(4200), 4096},
		{"RoCE MTU 4191", RoCEMTU(4191), 2048},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
	// Efficiency with the 20-byte L1 overhead: 98.0 % at 4096 B, 92.6 % at
	// 1024 B ([IBA] Annex A17).
	for _, c := range []struct {
		n    int
		want float64
	}{{4096, 0.980}, {1024, 0.926}} {
		eff := float64(c.n) / float64(RoCEv2WireLen(OpRCWriteMiddle, c.n, false, false))
		if eff < c.want-0.0005 || eff > c.want+0.0005 {
			t.Errorf("efficiency at %d B = %.4f, want %.3f", c.n, eff, c.want)
		}
	}
}
