package runner

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/fabricsim/fabricsim/result"
	"github.com/fabricsim/fabricsim/scenario"
	"github.com/fabricsim/fabricsim/wire"
	"github.com/fabricsim/fabricsim/wire/tsharktest"
)

// captured runs a scenario with the ports of the receiver's edge switch and one sender captured,
// and checks every file with fabricsim's own decoder (ICRC, VCRC, FCS, lengths).
func captured(t *testing.T, yaml string) (*result.Run, map[string]wire.CheckSummary, string) {
	t.Helper()
	s, err := scenario.Parse([]byte(yaml), "capture.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	res, _, err := Run(s, Options{Check: true, Pcap: &PcapOptions{Dir: dir, Ports: "edge0_0:*,host4:0"}})
	if err != nil {
		t.Fatal(err)
	}
	sums := map[string]wire.CheckSummary{}
	for _, name := range []string{"edge0_0-p0", "edge0_0-p1", "edge0_0-p2", "edge0_0-p3", "host4-p0"} {
		f, err := os.Open(filepath.Join(dir, name+".pcap"))
		if err != nil {
			t.Fatal(err)
		}
		sum, err := wire.Check(f)
		f.Close()
		if err != nil || !sum.OK() {
			t.Fatalf("%s: %v %v", name, err, sum.Errors)
		}
		sums[name] = sum
	}
	return res, sums, dir
}

// A DCQCN incast on RoCEv2 (8 senders into host 0 of a k=4 fat tree, a 2 MiB buffer so PFC
// fires too), captured at the receiver's edge switch: tshark dissects every packet as RoCEv2
// with the opcode, destination QP and PSN our own decoder reads, the CE marks and CNPs the
// simulation counted appear on the wire, and PAUSE frames carry priority 3 and their quanta.
func TestCaptureDCQCNRunMatchesTshark(t *testing.T) {
	res, sums, dir := captured(t, `name: roce-capture
topology: {kind: fat-tree, k: 4, link: {rate: 100Gbps, latency: 1us}}
fabric: {kind: roce, buffer: 2MiB, pfc: true, ecn: true, dcqcn: true}
traffic: {kind: incast, receiver: 0, senders: 8, size: 1MB}
`)
	down := sums["edge0_0-p0"] // toward the receiver: every data packet, the CE marks
	// 8 flows of 1 MB in 4096 B packets: 244 full and one of 576 B each.
	if down.RoCE.Data != 8*245 {
		t.Errorf("edge0_0 -> host0 carried %d data packets, want %d", down.RoCE.Data, 8*245)
	}
	if down.CE == 0 || float64(down.CE) != res.Counters["ecn_marks"] {
		t.Errorf("CE-marked packets on the bottleneck %d, simulation marked %v", down.CE, res.Counters["ecn_marks"])
	}
	cnps, pauses := 0, 0
	for _, p := range []string{"edge0_0-p1", "edge0_0-p2", "edge0_0-p3"} {
		cnps += sums[p].RoCE.CNP
		pauses += sums[p].PFC
	}
	// Every CNP host 0 sends leaves through its edge switch toward a sender.
	if cnps == 0 || float64(cnps) != res.Counters["cnps_sent"] {
		t.Errorf("CNPs on the wire %d, simulation sent %v", cnps, res.Counters["cnps_sent"])
	}
	if pauses == 0 {
		t.Errorf("no PFC PAUSE frames left the congested edge switch")
	}

	tshark := tsharktest.Path(t)
	for _, name := range []string{"edge0_0-p0", "edge0_0-p2"} {
		file := filepath.Join(dir, name+".pcap")
		if p := tsharktest.Problems(t, tshark, file, nil); p != "" {
			t.Errorf("%s: tshark flags problems:\n%s", name, p)
		}
		rows := tsharktest.Fields(t, tshark, file, nil, []string{"frame.number", "frame.protocols", "udp.dstport",
			"infiniband.bth.opcode", "infiniband.bth.destqp", "infiniband.bth.psn", "ip.dsfield.ecn",
			"macc.opcode", "macc.cbfc.enbv", "macc.cbfc.pause_time.c3"})
		frames := readFrames(t, file)
		if len(rows) != len(frames) {
			t.Fatalf("%s: tshark shows %d frames, the file has %d", name, len(rows), len(frames))
		}
		var ce, cnp, pfc int
		for i, row := range rows {
			if row["macc.opcode"] != "" {
				// PFC: opcode 0x0101, priority 3 enabled, a pause time for it.
				pfc++
				if v, _ := tsharktest.Uint(row, "macc.opcode"); v != 0x0101 {
					t.Errorf("%s frame %d: MAC control opcode %#x", name, i+1, v)
				}
				if v, _ := tsharktest.Uint(row, "macc.cbfc.enbv"); v&(1<<3) == 0 {
					t.Errorf("%s frame %d: class-enable vector %#x lacks priority 3", name, i+1, v)
				}
				if row["macc.cbfc.pause_time.c3"] == "" {
					t.Errorf("%s frame %d: no pause time for priority 3", name, i+1)
				}
				continue
			}
			p, err := wire.DecodeRoCE(frames[i])
			if err != nil {
				t.Fatalf("%s frame %d: %v", name, i+1, err)
			}
			if port, _ := tsharktest.Uint(row, "udp.dstport"); port != 4791 {
				t.Errorf("%s frame %d: UDP port %d, protocols %s", name, i+1, port, row["frame.protocols"])
			}
			op, _ := tsharktest.Uint(row, "infiniband.bth.opcode")
			qp, _ := tsharktest.Uint(row, "infiniband.bth.destqp")
			psn, _ := tsharktest.Uint(row, "infiniband.bth.psn")
			if op != uint64(p.BTH.OpCode) || qp != uint64(p.BTH.DestQP) || psn != uint64(p.BTH.PSN) {
				t.Fatalf("%s frame %d: tshark opcode/QP/PSN %d/%#x/%d, simulation wrote %d/%#x/%d", name, i+1, op, qp, psn, p.BTH.OpCode, p.BTH.DestQP, p.BTH.PSN)
			}
			if op == uint64(wire.OpCNP) {
				cnp++
			}
			if e, _ := tsharktest.Uint(row, "ip.dsfield.ecn"); e == 3 {
				ce++
			}
		}
		want := sums[name]
		if ce != want.CE || cnp != want.RoCE.CNP || pfc != want.PFC {
			t.Errorf("%s: tshark sees %d CE, %d CNP, %d PFC; the simulation wrote %d, %d, %d", name, ce, cnp, pfc, want.CE, want.RoCE.CNP, want.PFC)
		}
	}
}

// An InfiniBand incast with IB CC on, captured the same way: native IB packets (LRH first) whose
// LRH and BTH fields tshark reads as we wrote them, FECN on the congested port, BECN on the
// notifications going back, and flow-control packets returning credits.
func TestCaptureInfiniBandRunMatchesTshark(t *testing.T) {
	res, sums, dir := captured(t, `name: ib-capture
topology: {kind: fat-tree, k: 4, link: {latency: 1us}}
fabric: {kind: infiniband, generation: hdr, ib_cc: {enabled: true}}
traffic: {kind: incast, receiver: 0, senders: 8, size: 1MB}
`)
	down := sums["edge0_0-p0"]
	if down.LinkType != wire.LinkTypeInfiniBand || down.IB.Data != 8*245 {
		t.Errorf("edge0_0 -> host0: link type %d, %d IB data packets, want 247 and %d", down.LinkType, down.IB.Data, 8*245)
	}
	if down.FECN == 0 || float64(down.FECN) > res.Counters["ib_fecn_marked"] {
		t.Errorf("FECN-marked packets toward the receiver %d, simulation marked %v", down.FECN, res.Counters["ib_fecn_marked"])
	}
	becn, fc := 0, 0
	for _, s := range sums {
		becn += s.BECN
		fc += s.IBFlowControl
	}
	if becn == 0 || fc == 0 {
		t.Errorf("captured %d BECN and %d flow-control packets; want both", becn, fc)
	}

	tshark := tsharktest.Path(t)
	file, opts := tsharktest.Readable(t, tshark, filepath.Join(dir, "host4-p0.pcap"))
	rows := tsharktest.Fields(t, tshark, file, opts, []string{"frame.number", "infiniband.lrh.vl", "infiniband.lrh.sl",
		"infiniband.lrh.dlid", "infiniband.lrh.slid", "infiniband.bth.opcode", "infiniband.bth.destqp", "infiniband.bth.psn"})
	frames := readFrames(t, filepath.Join(dir, "host4-p0.pcap"))
	if len(rows) != len(frames) {
		t.Fatalf("tshark shows %d frames, the file has %d", len(rows), len(frames))
	}
	data, credits := 0, 0
	for i, row := range rows {
		if len(frames[i]) == 6 {
			// A link flow-control packet returning credits to the edge switch (checked by our
			// decoder's LPCRC; tshark 4.0's infiniband_link dissector does not parse them).
			if _, err := wire.DecodeIBFlowControl(frames[i]); err != nil {
				t.Fatalf("frame %d: %v", i+1, err)
			}
			credits++
			continue
		}
		p, err := wire.DecodeIB(frames[i])
		if err != nil {
			t.Fatalf("frame %d: %v", i+1, err)
		}
		dlid, _ := tsharktest.Uint(row, "infiniband.lrh.dlid")
		slid, _ := tsharktest.Uint(row, "infiniband.lrh.slid")
		op, _ := tsharktest.Uint(row, "infiniband.bth.opcode")
		psn, _ := tsharktest.Uint(row, "infiniband.bth.psn")
		if dlid != uint64(p.LRH.DLID) || slid != uint64(p.LRH.SLID) || op != uint64(p.BTH.OpCode) || psn != uint64(p.BTH.PSN) {
			t.Fatalf("frame %d: tshark DLID/SLID/opcode/PSN %d/%d/%d/%d, simulation wrote %d/%d/%d/%d", i+1, dlid, slid, op, psn, p.LRH.DLID, p.LRH.SLID, p.BTH.OpCode, p.BTH.PSN)
		}
		// Host 4 sends to host 0: LIDs are host index + 1.
		if dlid != 1 || slid != 5 {
			t.Fatalf("frame %d: LIDs %d -> %d, want 5 -> 1", i+1, slid, dlid)
		}
		data++
	}
	if data != 245 || credits == 0 {
		t.Errorf("host 4 sent %d data packets and %d credit updates; want its flow's 245 and some credits", data, credits)
	}
}

// readFrames returns the records of a pcap file.
func readFrames(t *testing.T, file string) [][]byte {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := wire.NewPcapReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for {
		rec, err := r.Next()
		if err != nil {
			break
		}
		out = append(out, append([]byte(nil), rec.Data...))
	}
	return out
}
