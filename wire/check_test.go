package wire

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

func TestCheckEthernet(t *testing.T) {
	frames, pkts, _ := roceSamples()
	nak := *pkts[2]
	nak.AETH = &AETH{Syndrome: AETHNakPSNSeqErr, MSN: 1}
	becn := *pkts[1]
	becn.BTH.BECN = true
	bad := bytes.Clone(frames[1])
	bad[100] ^= 0xFF // payload: ICRC and FCS now wrong
	udp := bytes.Clone(frames[2])
	udp[14+20+3] = 53 // DNS port, not RoCE: "other"
	frames = append(frames, nak.AppendFrame(nil), becn.AppendFrame(nil), bad, udp)
	s, err := Check(bytes.NewReader(writePcap(t, LinkTypeEthernet, 0, frames)))
	if err != nil {
		t.Fatal(err)
	}
	want := CheckSummary{
		LinkType: LinkTypeEthernet, Packets: 9,
		RoCE: KindCounts{Data: 3, Ack: 1, Nak: 1, CNP: 1}, PFC: 1, Other: 1,
		CE: 1, BECN: 2, // the CNP and the data packet
		IPv4Checksums: 7, ICRCs: 6, FCSs: 7,
		ErrorCount: 1,
	}
	s.Bytes, want.Bytes = 0, 0
	if len(s.Errors) != 1 || s.Errors[0].Index != 8 || !strings.Contains(s.Errors[0].Reason, "ICRC") {
		t.Errorf("errors %+v, want one ICRC error on packet 8", s.Errors)
	}
	s.Errors = nil
	if !reflect.DeepEqual(s, want) {
		t.Errorf("summary\n got %+v\nwant %+v", s, want)
	}
}

func TestCheckInfiniBand(t *testing.T) {
	raw, _ := ibSamples()
	fc := (&IBFlowControl{FCTBS: 100, VL: 1, FCCL: 200}).AppendPacket(nil)
	fecn := (&IBPacket{LRH: LRH{DLID: 1, SLID: 2}, BTH: BTH{OpCode: OpRCSendOnly, FECN: true}, PayloadLen: 4}).AppendPacket(nil)
	badV := bytes.Clone(raw[0])
	badV[len(badV)-1] ^= 1
	rawPkt := []byte{0x00, 0x00, 0, 1, 0, 2, 0, 2} // LNH 0: raw, PktLen 2 words
	rawPkt = appendLE16(rawPkt, VCRC(rawPkt))
	pkts := append(raw, fc, fecn, badV, rawPkt)
	s, err := Check(bytes.NewReader(writePcap(t, LinkTypeInfiniBand, 0, pkts)))
	if err != nil {
		t.Fatal(err)
	}
	want := CheckSummary{
		LinkType: LinkTypeInfiniBand, Packets: 7,
		IB: KindCounts{Data: 3, Ack: 1}, IBFlowControl: 1, Other: 1, FECN: 1,
		ICRCs: 4, VCRCs: 6, ErrorCount: 1,
	}
	if len(s.Errors) != 1 || s.Errors[0].Index != 6 || !strings.Contains(s.Errors[0].Reason, "VCRC") {
		t.Errorf("errors %+v, want one VCRC error on packet 6", s.Errors)
	}
	s.Errors, s.Bytes = nil, 0
	if !reflect.DeepEqual(s, want) {
		t.Errorf("summary\n got %+v\nwant %+v", s, want)
	}
}

// Records cut by the snaplen are decoded as far as they go; no length or CRC
// is held against them.
func TestCheckSnaplen(t *testing.T) {
	frames, _, _ := roceSamples()
	s, err := Check(bytes.NewReader(writePcap(t, LinkTypeEthernet, 96, frames)))
	if err != nil {
		t.Fatal(err)
	}
	if s.Truncated != 2 || s.ErrorCount != 0 || s.RoCE.Data != 2 || s.ICRCs != 2 || s.Bytes != int64(4096+62+16+4096+62+66+78+64) {
		t.Errorf("got %+v", s)
	}
	raw, _ := ibSamples()
	s, err = Check(bytes.NewReader(writePcap(t, LinkTypeInfiniBand, 64, raw)))
	if err != nil || s.Truncated != 2 || s.ErrorCount != 0 || s.IB.Data != 2 || s.ICRCs != 1 {
		t.Errorf("IB: got %+v, %v", s, err)
	}
	// A snaplen inside the headers is not an error either.
	s, err = Check(bytes.NewReader(writePcap(t, LinkTypeEthernet, 20, frames)))
	if err != nil || s.ErrorCount != 0 || s.Truncated != 5 {
		t.Errorf("snaplen 20: %+v, %v", s, err)
	}
}

func TestCheckFileErrors(t *testing.T) {
	if _, err := Check(strings.NewReader("not a pcap file at all....")); err == nil {
		t.Error("garbage accepted")
	}
	b := writePcap(t, 105, 0, nil) // 802.11
	if _, err := Check(bytes.NewReader(b)); err == nil || !strings.Contains(err.Error(), "link type 105") {
		t.Errorf("link type 105: %v", err)
	}
}

func TestCheckSummaryWriteText(t *testing.T) {
	frames, _, _ := roceSamples()
	bad := bytes.Clone(frames[2])
	bad[14+10] ^= 1 // IPv4 header checksum
	frames = append(frames, bad)
	s, err := Check(bytes.NewReader(writePcap(t, LinkTypeEthernet, 0, frames)))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := s.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	want := `link type      1 (Ethernet)
packets        6 (8606 bytes on the wire, 0 truncated by snaplen)
RoCEv2         2 data, 1 ACK, 0 NAK, 1 CNP
PFC PAUSE      1
ECN            1 CE-marked, 0 FECN, 1 BECN
verified       4 ICRC, 0 VCRC, 5 FCS, 4 IPv4 checksum, 0 UDP checksum
errors         1
  packet 6: wire: ipv4 checksum at byte 24: stored 0xb73d, computed 0xb63d
`
	if out.String() != want {
		t.Errorf("WriteText:\n%s\nwant:\n%s", out.String(), want)
	}
}
