package wire

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/wire/tsharktest"
)

// These tests hand our captures to Wireshark's dissectors (tshark), an
// independent reading of every header field. tshark does not verify the
// ICRC or VCRC (our own tests do, against independent vectors), but with the
// preferences below it does verify the Ethernet FCS and the IPv4 and UDP
// checksums.
//
// Notes on tshark (checked with 4.0.17, Debian 12):
//   - RoCEv2 needs no option: UDP port 4791 is registered to the
//     "infiniband" dissector ("tshark -G decodes" lists udp.port 4791).
//   - The Ethernet FCS is dissected only with -o eth.fcs:TRUE (the default
//     heuristic often takes it for a trailer); -o eth.check_fcs:TRUE then
//     verifies it. Wireshark does not look for an FCS behind an 802.1Q tag.
//   - tshark 4.0's wiretap maps no encapsulation to LINKTYPE_INFINIBAND
//     (247): it reports "network type 247 unknown or unsupported". The test
//     then rewrites the link type of a copy to LINKTYPE_USER0 (147) and maps
//     that to the "infiniband" dissector with a user_dlts table entry.
//   - The "infiniband_link" dissector (flow-control packets) raises an
//     exception on user-DLT input in 4.0, so flow-control packets are checked
//     only against the independent vector (TestIndependentVectors).

func num(t *testing.T, row map[string]string, field string) uint64 {
	t.Helper()
	s := row[field]
	if s == "" {
		t.Errorf("frame %s: tshark shows no %s", row["frame.number"], field)
		return 0
	}
	if i := strings.IndexByte(s, ','); i >= 0 {
		s = s[:i]
	}
	v, err := strconv.ParseUint(s, 0, 64)
	if err != nil {
		t.Errorf("frame %s: %s = %q: %v", row["frame.number"], field, s, err)
	}
	return v
}

func expect(t *testing.T, row map[string]string, field string, want uint64) {
	t.Helper()
	if got := num(t, row, field); got != want {
		t.Errorf("frame %s: tshark %s = %d (0x%x), we wrote %d (0x%x)", row["frame.number"], field, got, got, want, want)
	}
}

func TestTsharkRoCEv2AndPFC(t *testing.T) {
	tshark := tsharktest.Path(t)
	frames, pkts, pfc := roceSamples()
	// Add the tagged IPv6 vector so 802.1Q and IPv6 are dissected too.
	v6 := vectorPackets()["roce_ipv6_write_first"](nil)
	frames = append(frames, v6)
	file := filepath.Join(t.TempDir(), "roce.pcap")
	if err := os.WriteFile(file, writePcap(t, LinkTypeEthernet, 0, frames), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := []string{"-o", "eth.fcs:TRUE", "-o", "eth.check_fcs:TRUE", "-o", "ip.check_checksum:TRUE", "-o", "udp.check_checksum:TRUE"}
	if p := tsharktest.Problems(t, tshark, file, opts); p != "" {
		t.Errorf("tshark flags problems:\n%s", p)
	}
	fields := []string{"frame.number", "frame.protocols", "eth.fcs.status", "ip.checksum.status", "udp.checksum.status",
		"udp.dstport", "udp.length", "ip.dsfield.ecn", "ipv6.tclass.ecn", "vlan.priority",
		"infiniband.bth.opcode", "infiniband.bth.destqp", "infiniband.bth.psn", "infiniband.bth.p_key", "infiniband.bth.padcnt",
		"infiniband.reth.va", "infiniband.reth.r_key", "infiniband.reth.dmalen",
		"infiniband.aeth.syndrome", "infiniband.aeth.msn",
		"macc.opcode", "macc.cbfc.enbv",
		"macc.cbfc.pause_time.c0", "macc.cbfc.pause_time.c1", "macc.cbfc.pause_time.c2", "macc.cbfc.pause_time.c3",
		"macc.cbfc.pause_time.c4", "macc.cbfc.pause_time.c5", "macc.cbfc.pause_time.c6", "macc.cbfc.pause_time.c7"}
	rows := tsharktest.Fields(t, tshark, file, opts, fields)
	if len(rows) != len(frames) {
		t.Fatalf("tshark shows %d frames, we wrote %d", len(rows), len(frames))
	}
	for i, p := range pkts {
		r := rows[i]
		if !strings.Contains(r["frame.protocols"], "udp:infiniband") {
			t.Errorf("frame %d: protocols %q, want RoCEv2 (udp:infiniband)", i+1, r["frame.protocols"])
		}
		expect(t, r, "eth.fcs.status", 1)     // Good
		expect(t, r, "ip.checksum.status", 1) // Good
		expect(t, r, "udp.dstport", UDPPortRoCEv2)
		expect(t, r, "udp.length", uint64(p.FrameLen()-EthernetHeaderLen-IPv4HeaderLen-FCSLen))
		expect(t, r, "ip.dsfield.ecn", uint64(p.ECN))
		expect(t, r, "infiniband.bth.opcode", uint64(p.BTH.OpCode))
		expect(t, r, "infiniband.bth.destqp", uint64(p.BTH.DestQP))
		expect(t, r, "infiniband.bth.psn", uint64(p.BTH.PSN))
		expect(t, r, "infiniband.bth.p_key", DefaultPKey)
		if p.RETH != nil {
			expect(t, r, "infiniband.reth.va", p.RETH.VA)
			expect(t, r, "infiniband.reth.r_key", uint64(p.RETH.RKey))
			expect(t, r, "infiniband.reth.dmalen", uint64(p.RETH.DMALen))
		}
		if p.AETH != nil {
			expect(t, r, "infiniband.aeth.syndrome", uint64(p.AETH.Syndrome))
			expect(t, r, "infiniband.aeth.msn", uint64(p.AETH.MSN))
		}
	}
	// The CNP: opcode 0x81 = 129 and the IP ECN bits at CE (3).
	cnp := rows[3]
	expect(t, cnp, "infiniband.bth.opcode", 129)
	expect(t, cnp, "ip.dsfield.ecn", 3)
	// PFC: MAC Control opcode 0x0101, class-enable vector, per-priority quanta.
	r := rows[4]
	if !strings.HasSuffix(r["frame.protocols"], "macc") {
		t.Errorf("PFC frame protocols %q, want ...:macc", r["frame.protocols"])
	}
	expect(t, r, "macc.opcode", uint64(MACControlOpPFC))
	expect(t, r, "macc.cbfc.enbv", uint64(pfc.Enable))
	for i, q := range pfc.Quanta {
		expect(t, r, fmt.Sprintf("macc.cbfc.pause_time.c%d", i), uint64(q))
	}
	// The tagged IPv6 WRITE First of testdata/vectors.py.
	r = rows[5]
	if !strings.Contains(r["frame.protocols"], "vlan:ethertype:ipv6:udp:infiniband") {
		t.Errorf("IPv6 frame protocols %q", r["frame.protocols"])
	}
	expect(t, r, "vlan.priority", 3)
	expect(t, r, "udp.checksum.status", 1) // Good: tshark verified our IPv6 UDP checksum
	expect(t, r, "ipv6.tclass.ecn", uint64(ECNECT0))
	expect(t, r, "infiniband.bth.opcode", uint64(OpRCWriteFirst))
	expect(t, r, "infiniband.bth.padcnt", 3)
	expect(t, r, "infiniband.reth.dmalen", 4096)
}

func TestTsharkInfiniBand(t *testing.T) {
	tshark := tsharktest.Path(t)
	raw, pkts := ibSamples()
	dir := t.TempDir()
	file := filepath.Join(dir, "ib.pcap")
	capture := writePcap(t, LinkTypeInfiniBand, 0, raw)
	if err := os.WriteFile(file, capture, 0o644); err != nil {
		t.Fatal(err)
	}
	fields := []string{"frame.number", "frame.protocols",
		"infiniband.lrh.vl", "infiniband.lrh.sl", "infiniband.lrh.lnh", "infiniband.lrh.dlid", "infiniband.lrh.slid", "infiniband.lrh.pktlen",
		"infiniband.grh.ipver", "infiniband.grh.paylen", "infiniband.grh.nxthdr", "infiniband.grh.hoplmt", "infiniband.grh.sgid", "infiniband.grh.dgid",
		"infiniband.bth.opcode", "infiniband.bth.destqp", "infiniband.bth.psn", "infiniband.bth.a", "infiniband.bth.padcnt",
		"infiniband.reth.va", "infiniband.reth.dmalen", "infiniband.aeth.msn",
		"infiniband.invariant.crc", "infiniband.variant.crc"}
	file, opts := tsharktest.Readable(t, tshark, file)
	rows := tsharktest.Fields(t, tshark, file, opts, fields)
	if p := tsharktest.Problems(t, tshark, file, opts); p != "" {
		t.Errorf("tshark flags problems:\n%s", p)
	}
	if len(rows) != len(pkts) {
		t.Fatalf("tshark shows %d packets, we wrote %d", len(rows), len(pkts))
	}
	for i, p := range pkts {
		r, b := rows[i], raw[i]
		if !strings.Contains(r["frame.protocols"], "infiniband") {
			t.Errorf("packet %d: protocols %q", i+1, r["frame.protocols"])
		}
		expect(t, r, "infiniband.lrh.vl", uint64(p.LRH.VL))
		expect(t, r, "infiniband.lrh.sl", uint64(p.LRH.SL))
		expect(t, r, "infiniband.lrh.dlid", uint64(p.LRH.DLID))
		expect(t, r, "infiniband.lrh.slid", uint64(p.LRH.SLID))
		expect(t, r, "infiniband.lrh.pktlen", uint64((len(b)-VCRCLen)/4))
		if p.GRH != nil {
			expect(t, r, "infiniband.lrh.lnh", uint64(LNHGlobal))
			expect(t, r, "infiniband.grh.ipver", 6)
			expect(t, r, "infiniband.grh.paylen", uint64(len(b)-VCRCLen-LRHLen-GRHLen))
			expect(t, r, "infiniband.grh.nxthdr", uint64(GRHNextHeaderIBA))
			expect(t, r, "infiniband.grh.hoplmt", uint64(p.GRH.HopLmt))
			if s, d := netip.AddrFrom16(p.GRH.SGID).String(), netip.AddrFrom16(p.GRH.DGID).String(); r["infiniband.grh.sgid"] != s || r["infiniband.grh.dgid"] != d {
				t.Errorf("packet %d: GIDs %s -> %s, we wrote %s -> %s", i+1, r["infiniband.grh.sgid"], r["infiniband.grh.dgid"], s, d)
			}
		} else {
			expect(t, r, "infiniband.lrh.lnh", uint64(LNHLocal))
		}
		expect(t, r, "infiniband.bth.opcode", uint64(p.BTH.OpCode))
		expect(t, r, "infiniband.bth.destqp", uint64(p.BTH.DestQP))
		expect(t, r, "infiniband.bth.psn", uint64(p.BTH.PSN))
		expect(t, r, "infiniband.bth.padcnt", uint64(padFor(p.PayloadLen)))
		if p.BTH.AckReq != (r["infiniband.bth.a"] == "1" || r["infiniband.bth.a"] == "True") {
			t.Errorf("packet %d: AckReq %q, we wrote %v", i+1, r["infiniband.bth.a"], p.BTH.AckReq)
		}
		if p.RETH != nil {
			expect(t, r, "infiniband.reth.va", p.RETH.VA)
			expect(t, r, "infiniband.reth.dmalen", uint64(p.RETH.DMALen))
		}
		if p.AETH != nil {
			expect(t, r, "infiniband.aeth.msn", uint64(p.AETH.MSN))
		}
		// Wireshark shows the CRC fields as big-endian numbers and does not
		// verify them; that it finds them at the last 6 bytes confirms that
		// PktLen and the header lengths agree with the packet.
		n := len(b)
		expect(t, r, "infiniband.invariant.crc", uint64(binary.BigEndian.Uint32(b[n-6:])))
		expect(t, r, "infiniband.variant.crc", uint64(binary.BigEndian.Uint16(b[n-2:])))
	}
}
