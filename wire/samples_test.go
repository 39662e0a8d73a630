package wire

import (
	"bytes"
	"testing"
)

// The sample captures shared by the Check and tshark tests.

var (
	hostA = MAC{0x02, 0, 0, 0, 0, 0x0a}
	hostB = MAC{0x02, 0, 0, 0, 0, 0x0b}
)

// roceSamples: RDMA WRITE First (RETH), WRITE Middle, ACK, CNP with the IP
// ECN bits at CE, and a PFC PAUSE for priority 3.
func roceSamples() (frames [][]byte, pkts []*RoCEPacket, pfc *PFCPause) {
	base := RoCEPacket{DstMAC: hostB, SrcMAC: hostA, VLAN: nil,
		SrcIP: mustAddr("192.0.2.10"), DstIP: mustAddr("192.0.2.11"), DSCP: 26, ECN: ECNECT0, UDPSrcPort: 0xC35A}
	first := base
	first.BTH = BTH{OpCode: OpRCWriteFirst, DestQP: 0x0000D2, PSN: 0x00ABCD}
	first.RETH = &RETH{VA: 0x00007F1234560000, RKey: 0x00C0FFEE, DMALen: 8192}
	first.PayloadLen = 4096
	middle := base
	middle.BTH = BTH{OpCode: OpRCWriteMiddle, DestQP: 0x0000D2, PSN: 0x00ABCE}
	middle.PayloadLen = 4096
	ack := base
	ack.DstMAC, ack.SrcMAC, ack.SrcIP, ack.DstIP = base.SrcMAC, base.DstMAC, base.DstIP, base.SrcIP
	ack.BTH = BTH{OpCode: OpRCAcknowledge, DestQP: 0x0000A1, PSN: 0x00ABCE}
	ack.AETH = &AETH{Syndrome: AETHAck, MSN: 1}
	cnp := ack
	cnp.AETH = nil
	cnp.DSCP, cnp.ECN = 48, ECNCE
	cnp.BTH = BTH{OpCode: OpCNP, DestQP: 0x0000A1}
	pkts = []*RoCEPacket{&first, &middle, &ack, &cnp}
	for _, p := range pkts {
		frames = append(frames, p.AppendFrame(nil))
	}
	pfc = &PFCPause{SrcMAC: hostB, Enable: 1 << 3, Quanta: [8]uint16{3: 0x1234, 7: 7}}
	frames = append(frames, pfc.AppendFrame(nil))
	return frames, pkts, pfc
}

// ibSamples: local LRH+BTH+RETH data, a global (LRH+GRH) SEND, and an ACK.
func ibSamples() (raw [][]byte, pkts []*IBPacket) {
	data := &IBPacket{LRH: LRH{VL: 1, SL: 3, DLID: 0x0011, SLID: 0x0022},
		BTH:  BTH{OpCode: OpRCWriteFirst, DestQP: 0x000123, PSN: 0x000777, AckReq: true},
		RETH: &RETH{VA: 0x10000, RKey: 0xABC, DMALen: 2048}, PayloadLen: 2048}
	global := &IBPacket{LRH: LRH{VL: 2, SL: 4, DLID: 0x0033, SLID: 0x0044},
		GRH: &GRH{TClass: 0, HopLmt: 32, SGID: [16]byte{0xfe, 0x80, 15: 0x44}, DGID: [16]byte{0xfe, 0x80, 15: 0x33}},
		BTH: BTH{OpCode: OpRCSendOnly, DestQP: 0x000456, PSN: 0x000001}, PayloadLen: 61}
	ack := &IBPacket{LRH: LRH{VL: 1, SL: 3, DLID: 0x0022, SLID: 0x0011},
		BTH: BTH{OpCode: OpRCAcknowledge, DestQP: 0x000321, PSN: 0x000777}, AETH: &AETH{Syndrome: AETHAck, MSN: 1}}
	pkts = []*IBPacket{data, global, ack}
	for _, p := range pkts {
		raw = append(raw, p.AppendPacket(nil))
	}
	return raw, pkts
}

func writePcap(t testing.TB, linkType uint32, snapLen int, pkts [][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewPcapWriter(&buf, linkType, snapLen)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range pkts {
		if err := w.WritePacket(1_700_000_000_000_000_000+int64(i)*3_500, p); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}
