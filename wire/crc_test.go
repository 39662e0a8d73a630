package wire

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"net/netip"
	"os"
	"strings"
	"testing"
)

// connectXCNP is a RoCEv2 CNP captured on a Mellanox ConnectX-4 Lx (no FCS),
// quoted in scapy's test/contrib/roce.uts ("RoCE CNP captured on ConnectX-4
// Lx"). Its ICRC, 82 fd 00 2a, was computed by the NIC: an independent
// implementation of the RoCEv2 ICRC.
const connectXCNP = "e41d2dab2bc27cfe90643b32" + "0800" + // Ethernet
	"45c2003c718c4000401191610a0011010a001201" + // IPv4, TOS 0xc2 (DSCP 48, ECT(0))
	"000012b700280000" + // UDP
	"8100ffff4000011800000000" + // BTH: CNP, BECN, DestQP 0x118
	"00000000000000000000000000000000" + // 16 reserved bytes
	"82fd002a" // ICRC

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestICRCHardwareCapture(t *testing.T) {
	frame := mustHex(t, connectXCNP)
	icrc, ok := RoCEv2ICRC(frame[14 : len(frame)-4])
	if !ok || icrc != 0x2a00fd82 { // sent LSB first: 82 fd 00 2a
		t.Fatalf("RoCEv2ICRC = 0x%08x, %v; want 0x2a00fd82 (ConnectX-4 Lx capture)", icrc, ok)
	}
	p, err := DecodeRoCE(frame)
	if err != nil {
		t.Fatal(err)
	}
	if p.BTH.OpCode != OpCNP || !p.BTH.BECN || p.BTH.DestQP != 0x118 || p.BTH.PKey != 0xFFFF ||
		p.ECN != ECNECT0 || p.DSCP != 48 || p.PayloadLen != CNPPayloadLen {
		t.Errorf("decoded %+v", p)
	}
	// Our builder, given the capture's fields, must produce the same bytes
	// (plus the FCS the capture left out).
	b := &RoCEPacket{
		DstMAC: MAC{0xe4, 0x1d, 0x2d, 0xab, 0x2b, 0xc2}, SrcMAC: MAC{0x7c, 0xfe, 0x90, 0x64, 0x3b, 0x32},
		SrcIP: netip.MustParseAddr("10.0.17.1"), DstIP: netip.MustParseAddr("10.0.18.1"),
		DSCP: 48, ECN: ECNECT0, TTL: 64, IPID: 0x718c,
		BTH: BTH{OpCode: OpCNP, PKey: 0xFFFF, DestQP: 0x118},
	}
	got := b.AppendFrame(nil)
	if !bytes.Equal(got[:len(frame)], frame) {
		t.Errorf("built\n%x\nwant\n%x", got[:len(frame)], frame)
	}
	if len(got) != len(frame)+FCSLen {
		t.Errorf("frame length %d, want %d", len(got), len(frame)+FCSLen)
	}
}

// TestScapyUCPacket rebuilds the "example UC packet" of scapy's
// test/contrib/roce.uts, whose expected IPv4 checksum (0xb4d5), UDP checksum
// (0xaca2) and ICRC (bytes 78 f3 53 f3) scapy's own code computed.
func TestScapyUCPacket(t *testing.T) {
	payload := []byte("F0\x81\x8b\xe2\x895\xd9\x0e\x9a\x95PT\x01\xbe\x88^P") // 18 B + 2 pad
	mac := MAC{0x24, 0x8a, 0x07, 0xa8, 0xfa, 0x22}
	ip := netip.MustParseAddr("192.168.0.7")
	p := &RoCEPacket{
		DstMAC: mac, SrcMAC: mac, SrcIP: ip, DstIP: ip, ECN: 1, TTL: 64, IPID: 1144,
		UDPSrcPort: 49152, UDPChecksum: true,
		BTH:     BTH{OpCode: opUC + OpRCSendOnly, M: true, PKey: 0xFFFF, DestQP: 211, PSN: 13571856},
		Payload: payload,
	}
	f := p.AppendFrame(nil)
	ipHdr := f[14:]
	if c := binary.BigEndian.Uint16(ipHdr[10:]); c != 0xb4d5 {
		t.Errorf("IPv4 checksum 0x%04x, want 0xb4d5", c)
	}
	if c := binary.BigEndian.Uint16(ipHdr[26:]); c != 0xaca2 {
		t.Errorf("UDP checksum 0x%04x, want 0xaca2", c)
	}
	icrc := ipHdr[64-4 : 64]
	if !bytes.Equal(icrc, []byte{0x78, 0xf3, 0x53, 0xf3}) {
		t.Errorf("ICRC bytes %x, want 78f353f3", icrc)
	}
	if _, err := DecodeRoCE(f); err != nil {
		t.Error(err)
	}
}

// readVectors loads testdata/vectors.txt, written by testdata/vectors.py, an
// independent Python implementation (struct + zlib.crc32 + a bit-serial
// CRC-16) that first checks itself against the ConnectX capture above.
func readVectors(t testing.TB) map[string][]byte {
	f, err := os.Open("testdata/vectors.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := map[string][]byte{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		name, hx, _ := strings.Cut(line, " ")
		m[name] = mustHex(t, hx)
	}
	return m
}

func vectorPayload(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + 1)
	}
	return b
}

// The packets of testdata/vectors.py, built with this package's API.
func vectorPackets() map[string]func([]byte) []byte {
	rethVA := &RETH{VA: 0x00007F0000001000, RKey: 0x1234ABCD, DMALen: 4096}
	return map[string]func([]byte) []byte{
		"roce_ipv6_write_first": (&RoCEPacket{
			DstMAC: MAC{2, 0, 0, 0, 0, 2}, SrcMAC: MAC{2, 0, 0, 0, 0, 1},
			VLAN:  &VLANTag{PCP: 3, VID: 100},
			SrcIP: netip.MustParseAddr("fd00::1"), DstIP: netip.MustParseAddr("fd00::2"),
			DSCP: 26, ECN: ECNECT0, FlowLabel: 0x12345, TTL: 64, UDPSrcPort: 0xC000,
			BTH:  BTH{OpCode: OpRCWriteFirst, PKey: 0xFFFF, DestQP: 0x11, PSN: 0x100},
			RETH: rethVA, Payload: vectorPayload(29),
		}).AppendFrame,
		"roce_ipv4_ack": (&RoCEPacket{
			DstMAC: MAC{2, 0, 0, 0, 0, 1}, SrcMAC: MAC{2, 0, 0, 0, 0, 2},
			SrcIP: netip.MustParseAddr("10.0.0.1"), DstIP: netip.MustParseAddr("10.0.0.2"),
			DSCP: 26, IPID: 0x1234, UDPSrcPort: 0xC001,
			BTH:  BTH{OpCode: OpRCAcknowledge, DestQP: 0x22, PSN: 0x100},
			AETH: &AETH{Syndrome: AETHAck, MSN: 5},
		}).AppendFrame,
		"ib_local_write_first": (&IBPacket{
			LRH:  LRH{DLID: 2, SLID: 1},
			BTH:  BTH{OpCode: OpRCWriteFirst, DestQP: 0x11, PSN: 0x100, AckReq: true},
			RETH: &RETH{VA: 0x1000, RKey: 0x42, DMALen: 10}, Payload: vectorPayload(10),
		}).AppendPacket,
		"ib_global_ack": (&IBPacket{
			LRH: LRH{VL: 1, SL: 1, DLID: 3, SLID: 4},
			GRH: &GRH{HopLmt: 255, SGID: netip.MustParseAddr("fe80::1").As16(), DGID: netip.MustParseAddr("fe80::2").As16()},
			BTH: BTH{OpCode: OpRCAcknowledge, DestQP: 0x22, PSN: 0x200}, AETH: &AETH{Syndrome: AETHAck, MSN: 7},
		}).AppendPacket,
		"ib_flow_control": (&IBFlowControl{Op: FCOpNormal, FCTBS: 0x123, VL: 2, FCCL: 0x456}).AppendPacket,
		"pfc_pause":       (&PFCPause{SrcMAC: MAC{2, 0, 0, 0, 0, 1}, Enable: 1 << 3, Quanta: [8]uint16{3: 0xFFFF}}).AppendFrame,
	}
}

func TestIndependentVectors(t *testing.T) {
	want := readVectors(t)
	build := vectorPackets()
	if len(want) != len(build) {
		t.Fatalf("vectors.txt has %d packets, the test builds %d", len(want), len(build))
	}
	for name, fn := range build {
		got := fn(nil)
		if !bytes.Equal(got, want[name]) {
			t.Errorf("%s:\n got %x\nwant %x", name, got, want[name])
		}
	}
}

// Variant fields must not change the ICRC; invariant ones must.
func TestICRCMasks(t *testing.T) {
	base := func() *RoCEPacket {
		return &RoCEPacket{
			SrcIP: netip.MustParseAddr("10.0.0.1"), DstIP: netip.MustParseAddr("10.0.0.2"),
			BTH: BTH{OpCode: OpRCWriteMiddle, DestQP: 7, PSN: 9}, PayloadLen: 64,
		}
	}
	icrcOf := func(p *RoCEPacket) uint32 {
		f := p.AppendFrame(nil)
		ipStart := 14
		if p.VLAN != nil {
			ipStart += 4
		}
		end := len(f) - FCSLen - ICRCLen
		return binary.LittleEndian.Uint32(f[end:])
	}
	for _, v6 := range []bool{false, true} {
		mk := func() *RoCEPacket {
			p := base()
			if v6 {
				p.SrcIP, p.DstIP = netip.MustParseAddr("fd00::1"), netip.MustParseAddr("fd00::2")
			}
			return p
		}
		ref := icrcOf(mk())
		for name, mut := range map[string]func(*RoCEPacket){
			"ECN CE": func(p *RoCEPacket) { p.ECN = ECNCE }, "DSCP": func(p *RoCEPacket) { p.DSCP = 46 },
			"TTL": func(p *RoCEPacket) { p.TTL = 3 }, "FECN": func(p *RoCEPacket) { p.BTH.FECN = true },
			"BECN": func(p *RoCEPacket) { p.BTH.BECN = true }, "flow label": func(p *RoCEPacket) { p.FlowLabel = 0xABCDE },
			"UDP checksum": func(p *RoCEPacket) { p.UDPChecksum = true }, "MAC": func(p *RoCEPacket) { p.SrcMAC[5] = 9 },
			"VLAN": func(p *RoCEPacket) { p.VLAN = &VLANTag{PCP: 3} },
		} {
			p := mk()
			mut(p)
			if got := icrcOf(p); got != ref {
				t.Errorf("v6=%v: variant %s changed the ICRC", v6, name)
			}
		}
		for name, mut := range map[string]func(*RoCEPacket){
			"PSN": func(p *RoCEPacket) { p.BTH.PSN++ }, "DestQP": func(p *RoCEPacket) { p.BTH.DestQP++ },
			"UDP sport": func(p *RoCEPacket) { p.UDPSrcPort = 1 }, "payload": func(p *RoCEPacket) { p.Payload = []byte{1} },
			"dst IP": func(p *RoCEPacket) { p.DstIP = p.DstIP.Next() },
		} {
			p := mk()
			mut(p)
			if got := icrcOf(p); got == ref {
				t.Errorf("v6=%v: invariant %s did not change the ICRC", v6, name)
			}
		}
	}
}

func TestIBICRCMasks(t *testing.T) {
	icrcOf := func(p *IBPacket) uint32 {
		b := p.AppendPacket(nil)
		return binary.LittleEndian.Uint32(b[len(b)-VCRCLen-ICRCLen:])
	}
	local := func() *IBPacket {
		return &IBPacket{LRH: LRH{DLID: 5, SLID: 6, SL: 1}, BTH: BTH{OpCode: OpRCSendOnly, DestQP: 3, PSN: 4}, PayloadLen: 8}
	}
	global := func() *IBPacket {
		p := local()
		p.GRH = &GRH{HopLmt: 64, DGID: [16]byte{15: 1}}
		return p
	}
	cases := []struct {
		name    string
		mk      func() *IBPacket
		mut     func(*IBPacket)
		variant bool
	}{
		{"local VL", local, func(p *IBPacket) { p.LRH.VL = 3 }, true},
		{"local FECN", local, func(p *IBPacket) { p.BTH.FECN = true }, true},
		{"local SL", local, func(p *IBPacket) { p.LRH.SL = 2 }, false},
		{"local DLID", local, func(p *IBPacket) { p.LRH.DLID = 9 }, false},
		{"global DLID", global, func(p *IBPacket) { p.LRH.DLID = 9 }, true},
		{"global SL", global, func(p *IBPacket) { p.LRH.SL = 7 }, true},
		{"global TClass", global, func(p *IBPacket) { p.GRH.TClass = 0xAB }, true},
		{"global FlowLabel", global, func(p *IBPacket) { p.GRH.FlowLabel = 0x12345 }, true},
		{"global HopLmt", global, func(p *IBPacket) { p.GRH.HopLmt = 1 }, true},
		{"global BECN", global, func(p *IBPacket) { p.BTH.BECN = true }, true},
		{"global DGID", global, func(p *IBPacket) { p.GRH.DGID[0] = 0xfe }, false},
		{"global PSN", global, func(p *IBPacket) { p.BTH.PSN = 5 }, false},
	}
	for _, c := range cases {
		ref := icrcOf(c.mk())
		p := c.mk()
		c.mut(p)
		if changed := icrcOf(p) != ref; changed == c.variant {
			t.Errorf("%s: ICRC changed=%v, want changed=%v", c.name, changed, !c.variant)
		}
	}
}

func TestFCSKnownValue(t *testing.T) {
	// CRC-32/ISO-HDLC check value for "123456789" is 0xCBF43926 (Greg Cook's
	// CRC catalogue); the FCS uses it.
	if got := FCS([]byte("123456789")); got != 0xCBF43926 {
		t.Fatalf("FCS check value 0x%08x, want 0xcbf43926", got)
	}
}

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }

func TestVCRCSlicedMatchesBytewise(t *testing.T) {
	b := vectorPayload(300)
	for n := range len(b) {
		for off := range 8 {
			if off > n {
				break
			}
			if got, want := VCRC(b[off:n]), vcrcBytewise(b[off:n]); got != want {
				t.Fatalf("VCRC(b[%d:%d]) = 0x%04x, byte-wise 0x%04x", off, n, got, want)
			}
		}
	}
}

// vcrcBytewise is the one-table form of VCRC, kept to test the sliced one.
func vcrcBytewise(b []byte) uint16 {
	c := uint16(0xFFFF)
	for _, x := range b {
		c = vcrcTable[0][byte(c)^x] ^ c>>8
	}
	return ^c
}
