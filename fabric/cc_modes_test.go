package fabric

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/transport/cc/dcqcn"
	"github.com/fabricsim/fabricsim/units"
	"github.com/fabricsim/fabricsim/wire"
)

// markRecorder is a congestion control that only makes packets ECN-capable and records, in
// arrival order at the receiver, which carry CE: the marker's decisions without a reaction.
type markRecorder struct{ ce []bool }

func (m *markRecorder) Start(f *Flow)                        {}
func (m *markRecorder) Sent(f *Flow, pkt *Packet)            { pkt.ECN = ECNECT0 }
func (m *markRecorder) Received(rx *NIC, f *Flow, p *Packet) { m.ce = append(m.ce, p.ECN == ECNCE) }
func (m *markRecorder) Notified(f *Flow, pkt *Packet)        {}

// A 2:1 incast of N full packets per sender, both at line rate, into one 100 Gb/s port with a
// step marker at K = 10.5 frames (Kmin = Kmax, Pmax 1), no PFC, no reaction. Hand-traced: pair
// k of arrivals (one per sender) lands every frame time while the port sends one, so the queue
// grows by a frame per frame time, then drains when the senders stop. The j-th packet to leave
// (j = 1..2N, FIFO) leaves min(j, 2N-j) frames behind it (j >= 2; the first leaves at once);
// the first of pair k finds k-1 frames queued as it arrives, the second k.
//   - enqueue: marked iff the queue it joins holds 11 frames or more: pairs 12.. (first) and
//     11.. (second), i.e. departures 22..2N: 2N-21 marks, the last 10 of them on packets that
//     leave a queue already drained below K.
//   - dequeue: marked iff it leaves 11 frames or more behind: departures 11..2N-11, 2N-21
//     marks, none in the drained tail.
func TestECNMarkPointIncast(t *testing.T) {
	const N = 40
	frame := int64(4096 + 66)
	for _, point := range ECNMarkPoints {
		cfg := DefaultRoCE()
		cfg.RoCE.PFC, cfg.RoCE.DCQCN = false, false
		cfg.RoCE.ECNMark = point
		k := units.Size(frame*21/2 + 1)
		cfg.RoCE.Kmin, cfg.RoCE.Kmax, cfg.RoCE.Pmax = k, k, 1
		n := newNet(t, star(3, 100*units.Gbps, units.Microsecond), cfg)
		rec := &markRecorder{}
		n.SetCongestionControl(rec)
		mg := &msggraph.Graph{Endpoints: 3}
		mg.Add(msggraph.Message{Src: 1, Dst: 0, Bytes: N * 4096})
		mg.Add(msggraph.Message{Src: 2, Dst: 0, Bytes: N * 4096})
		run(t, n, mg)
		if len(rec.ce) != 2*N {
			t.Fatalf("%s: %d packets received, want %d", point, len(rec.ce), 2*N)
		}
		marks := 0
		for i, ce := range rec.ce {
			j := i + 1
			want := j >= 22
			if point == ECNMarkDequeue {
				want = j >= 11 && j <= 2*N-11
			}
			if ce != want {
				t.Errorf("%s: departure %d marked %v, hand trace says %v", point, j, ce, want)
			}
			if ce {
				marks++
			}
		}
		if got := n.lastRun.Counters["ecn_marks"]; marks != 2*N-21 || got != 2*N-21 {
			t.Errorf("%s: %d marks seen, %v counted, want %d", point, marks, got, 2*N-21)
		}
	}
}

// fct_end: last-ack ends a lone flow's FCT when the ACK of its last byte is back: the delivery
// closed form (TestRoCESingleFlowClosedForm) plus the ACK's way back, a 70 B frame + 20 B of
// layer-1 overhead serialized on each link, each link's latency and each switch's.
func TestFCTEndLastAck(t *testing.T) {
	for _, switches := range []int{1, 3} {
		var fct [2]units.Time
		for i, end := range FCTEnds {
			cfg := DefaultRoCE()
			cfg.FCTEnd = end
			n := newNet(t, line(switches, 100*units.Gbps, units.Microsecond), cfg)
			mg := &msggraph.Graph{Endpoints: 2}
			mg.Add(msggraph.Message{Src: 0, Dst: 1, Bytes: 64 * units.KB})
			run(t, n, mg)
			fct[i] = n.lastRun.Messages[0].FCT()
		}
		links := units.Time(switches + 1)
		back := links*(100*units.Gbps).TransmitTime(70+20) + links*units.Microsecond + (links-1)*DefaultRoCE().SwitchLatency
		if fct[1]-fct[0] != back {
			t.Errorf("%d switches: last-ack FCT %v - delivery FCT %v = %v, want the ACK's way back %v", switches, fct[1], fct[0], fct[1]-fct[0], back)
		}
	}
}

// cnp: ack-flag carries congestion back on ACKs (no CNP packet leaves the receiver: it sends
// exactly one ACK per data packet), and the senders still cut; ack_priority puts ACKs on their
// class. Checked for each DCQCN model, with the dequeue marker.
func TestCNPAckFlagAndModels(t *testing.T) {
	for _, model := range dcqcn.Models {
		for _, mode := range CNPModes {
			cfg := DefaultRoCE()
			cfg.RoCE.DCQCNModel, cfg.RoCE.CNP, cfg.RoCE.ECNMark = model, mode, ECNMarkDequeue
			cfg.AckPriority = 7
			n := newNet(t, star(3, 100*units.Gbps, units.Microsecond), cfg)
			mg := &msggraph.Graph{Endpoints: 3}
			mg.Add(msggraph.Message{Src: 1, Dst: 0, Bytes: 8 * units.MB})
			mg.Add(msggraph.Message{Src: 2, Dst: 0, Bytes: 8 * units.MB})
			run(t, n, mg)
			c := n.lastRun.Counters
			dataPkts := 2 * ((int64(8*units.MB) + 4095) / 4096) // per message, the last packet partial
			rx := n.NICs[0].Port.TxPackets
			if c["dcqcn_rate_decreases"] == 0 || c["cnps_sent"] == 0 || c["cnps_received"] != c["cnps_sent"] {
				t.Errorf("%s/%s: no reaction: %v", model, mode, c)
			}
			switch mode {
			case CNPAckFlag:
				if rx != dataPkts {
					t.Errorf("%s/%s: receiver sent %d packets for %d data packets (ACKs only expected)", model, mode, rx, dataPkts)
				}
			case CNPPacket:
				if rx != dataPkts+int64(c["cnps_sent"]) {
					t.Errorf("%s/%s: receiver sent %d packets, want %d ACKs + %v CNPs", model, mode, rx, dataPkts, c["cnps_sent"])
				}
			}
			if c["dropped_packets"] != 0 || n.lastRun.Drops != 0 {
				t.Errorf("%s/%s: drops", model, mode)
			}
		}
	}
	// ack_priority: an ACK built by the NIC takes the class.
	cfg := DefaultRoCE()
	cfg.AckPriority = 7
	n := newNet(t, star(2, 100*units.Gbps, units.Microsecond), cfg)
	mg := &msggraph.Graph{Endpoints: 2}
	mg.Add(msggraph.Message{Src: 1, Dst: 0, Bytes: 4096})
	run(t, n, mg)
	f := n.flows[0]
	if a := n.NICs[0].sendCtl(f, Ack, 0, 0); a.Prio != 7 {
		t.Errorf("ACK on class %d, want ack_priority 7", a.Prio)
	}
	if c := n.NICs[0].sendCtl(f, CNP, 0, 0); c.Prio != cfg.CNPPriority {
		t.Errorf("CNP on class %d, want cnp_priority %d", c.Prio, cfg.CNPPriority)
	}
}

// Settings the other backends do not model are named by PacketOnly; the defaults pass.
func TestPacketOnly(t *testing.T) {
	if err := (&Config{}).PacketOnly(); err != nil {
		t.Fatal(err)
	}
	def := DefaultRoCE()
	if err := def.PacketOnly(); err != nil {
		t.Fatalf("defaults refused: %v", err)
	}
	for _, c := range []struct {
		edit func(*Config)
		key  string
	}{
		{func(c *Config) { c.RoCE.DCQCNModel = dcqcn.ModelNS3 }, "dcqcn_model"},
		{func(c *Config) { c.RoCE.CNP = CNPAckFlag }, "cnp"},
		{func(c *Config) { c.RoCE.ECNMark = ECNMarkDequeue }, "ecn_mark"},
		{func(c *Config) { c.AckPriority = 7 }, "ack_priority"},
		{func(c *Config) { c.FCTEnd = FCTLastAck }, "fct_end"},
		{func(c *Config) { c.RoCE.DCQCN, c.RoCE.DCTCP = false, true }, "dctcp"},
		{func(c *Config) { c.RoCE.DCQCN, c.RoCE.Swift = false, true }, "swift"},
		{func(c *Config) { c.RoCE.DCQCN, c.Transport = false, TransportUET }, "transport"},
		{func(c *Config) { c.Transport, c.OOOWindow = TransportReorder, 64 }, "ooo_window"},
		{func(c *Config) { c.Routing, c.SprayPolicy = RoutingSpray, SprayLeastQueue }, "spray_policy"},
		{func(c *Config) { c.RoCE.DCQCN, c.RoCE.Timely = false, true }, "timely"},
	} {
		cfg := DefaultRoCE()
		c.edit(&cfg)
		if err := cfg.PacketOnly(); err == nil || !strings.Contains(err.Error(), c.key) || !strings.Contains(err.Error(), "--backend packet") {
			t.Errorf("%s: %v", c.key, err)
		}
	}
}

// HPCC's headline ([HPCC] §5, Fig. 10-11: near-zero queues at high utilisation): a 2:1 incast
// of two long flows into one 100 Gb/s port. After the first 200 us the bottleneck queue stays
// below a few KB while the port stays at least 90 % busy, with no PFC pause and no drop; with
// a rate per hop (hpcc_multi_rate) the run is the same to the bit: on a path of one switch hop
// the per-hop state is the single state (U_0 = U, R_0 = R).
func TestHPCCIncastHeadline(t *testing.T) {
	var got [2][3]float64
	for i, multi := range []bool{false, true} {
		t.Run(fmt.Sprintf("multi_rate=%v", multi), func(t *testing.T) { got[i] = hpccIncast(t, multi) })
	}
	if got[0] != got[1] {
		t.Errorf("one hop: single rate %v, per hop %v (rates, updates); want the same", got[0], got[1])
	}
}

func hpccIncast(t *testing.T, multi bool) [3]float64 {
	cfg := DefaultRoCE()
	cfg.RoCE.DCQCN, cfg.RoCE.INT, cfg.RoCE.HPCC = false, true, true
	cfg.RoCE.HPCCParams.MultiRate = multi
	g := star(3, 100*units.Gbps, units.Microsecond)
	n := newNet(t, g, cfg)
	mg := &msggraph.Graph{Endpoints: 3}
	mg.Add(msggraph.Message{Src: 1, Dst: 0, Bytes: 64 * units.MB})
	mg.Add(msggraph.Message{Src: 2, Dst: 0, Bytes: 64 * units.MB})
	s := &sampler{n: n, period: 10 * units.Microsecond, until: 4 * units.Millisecond, port: n.Switches[0].Ports[0], prio: 3}
	n.sim.Schedule(0, s, 0, 0, nil)
	res, err := n.Run(mg, 4*units.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	var qmax, qfirst int64
	for _, q := range s.q[20:] {
		qmax = max(qmax, q)
	}
	for _, q := range s.q[:20] {
		qfirst = max(qfirst, q)
	}
	// In the first RTT both senders start at line rate; each window (rate x T, payload bytes)
	// caps what it has in flight, so the queue holds at most the two windows' frames.
	win := int64((100 * units.Gbps).BytesIn(n.baseRTT()))
	frames := (win + 4095) / 4096 * (4096 + 66 + 42)
	t.Logf("first 200 us: queue max %d B, window at line rate %d B", qfirst, win)
	if qfirst > 2*frames {
		t.Errorf("queue %d B in the first 200 us, above two windows' frames %d B", qfirst, 2*frames)
	}
	r := s.rates(20, 400)
	util := (r[0] + r[1]) / 100e9
	t.Logf("queue max %d B after 200 us, utilisation %.3f, rates %.2f %.2f Gb/s, updates %v", qmax, util, r[0]/1e9, r[1]/1e9, res.Counters["hpcc_rate_updates"])
	if qmax > int64(8*units.KB) {
		t.Errorf("bottleneck queue reached %d B after 200 us, want below 8 KB", qmax)
	}
	if util < 0.90 {
		t.Errorf("utilisation %.3f, want >= 0.90", util)
	}
	if res.Drops != 0 || res.Counters["pfc_pause_frames_sent"] != 0 {
		t.Errorf("drops %d, pauses %v", res.Drops, res.Counters["pfc_pause_frames_sent"])
	}
	return [3]float64{r[0], r[1], res.Counters["hpcc_rate_updates"]}
}

// An HPCC run captures: every frame (the RoCEv2 frame with the INT header leading its payload)
// passes our own pcap checker (headers, lengths, CRCs).
func TestCaptureHPCC(t *testing.T) {
	cfg := DefaultRoCE()
	cfg.RoCE.DCQCN, cfg.RoCE.INT, cfg.RoCE.HPCC = false, true, true
	mg := &msggraph.Graph{Endpoints: 2}
	mg.Add(msggraph.Message{Src: 0, Dst: 1, Bytes: 3*4096 + 100})
	files := captureRun(t, line(1, 100*units.Gbps, units.Microsecond), cfg, mg, "host0:0,host1:0,sw0:1", nil)
	for _, f := range files {
		checkFile(t, f)
	}
	// The INT header (wire/int.go: HPCC's ns-3 IntHeader layout) leads each data and ACK payload.
	// Data leaving host0 has no hop yet; leaving the switch toward host1 it has the switch's:
	// the time it left (the pcap record's own timestamp), the bytes the port sent before it
	// (frames as modelled, without the BTH pad, plus the L1 overhead: 128-byte units), an
	// empty queue, 100 Gb/s. Each ACK host1 sends echoes its data packet's header.
	read := func(name string) (recs []wire.PcapRecord, pkts []wire.RoCEPacket) {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		r, err := wire.NewPcapReader(f)
		if err != nil {
			t.Fatal(err)
		}
		for {
			rec, err := r.Next()
			if err != nil {
				break
			}
			rec.Data = append([]byte(nil), rec.Data...)
			p, err := wire.DecodeRoCE(rec.Data)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			recs, pkts = append(recs, rec), append(pkts, p)
		}
		return recs, pkts
	}
	intOf := func(p wire.RoCEPacket) ([]wire.INTHop, uint16) {
		hops, nhop, _, err := wire.DecodeINT(p.Payload)
		if err != nil {
			t.Fatal(err)
		}
		return hops, nhop
	}
	_, sent := read(files[0]) // node order: host0, sw0, host1
	swRecs, fwd := read(files[1])
	_, acks := read(files[2])
	if len(sent) != 4 || len(acks) != 4 || len(fwd) != 4 {
		t.Fatalf("packets: host0 %d, host1 %d, switch %d; want 4 each", len(sent), len(acks), len(fwd))
	}
	var txBytes uint64
	for k := range fwd {
		if _, nhop := intOf(sent[k]); nhop != 0 {
			t.Errorf("data %d from host0: %d hops, want 0", k, nhop)
		}
		hops, nhop := intOf(fwd[k])
		want := wire.INTHop{TimeNs: uint64(swRecs[k].TsNanos) % (1 << 24), TxBytes: txBytes / 128 * 128, Rate: 100e9}
		if nhop != 1 || hops[0] != want {
			t.Errorf("data %d at the switch: %d hops %+v, want 1: %+v", k, nhop, hops, want)
		}
		if ah, an := intOf(acks[k]); an != nhop || ah[0] != hops[0] {
			t.Errorf("ACK %d: %d hops %+v, want the echo of %+v", k, an, ah, hops)
		}
		if size := []int{4096, 4096, 4096, 100}[k] + wire.INTStackLen; len(fwd[k].Payload) != size {
			t.Errorf("data %d: payload %d B, want %d (INT and data)", k, len(fwd[k].Payload), size)
		}
		txBytes += uint64(swRecs[k].OrigLen - int(fwd[k].BTH.PadCnt) + cfg.L1Overhead)
	}
	// Wireshark reads the frames as RoCEv2 with the INT header in the payload: WRITE First,
	// Middle, Middle, Last; four ACKs (opcode 17); nothing malformed.
	tshark := tsharkPath(t)
	for i, want := range []string{"6\t\n7\t\n7\t\n8\t\n", "17\t\n17\t\n17\t\n17\t\n"} {
		out, err := exec.Command(tshark, "-r", files[i+1], "-T", "fields", "-e", "infiniband.bth.opcode", "-e", "_ws.malformed").CombinedOutput()
		if err != nil {
			t.Fatalf("tshark: %v\n%s", err, out)
		}
		if got := filterTshark(string(out)); got != want {
			t.Errorf("tshark %s:\n%q\nwant\n%q", files[i+1], got, want)
		}
	}
}

// The ns3 model end to end: a 2:1 incast of long flows into one 100 Gb/s port with its preset
// (HPCC run.py's DCQCN) and HPCC's rate-scaled RED band (Kmin 400 KB, Kmax 1.6 MB at 100 Gb/s).
// DCQCN's fixed point lies inside the marking band ([DCQCN] §5): from 2 ms on the queue stays
// below Kmax, the two flows share fairly (Jain >= 0.99) and PFC never pauses, with CNP packets
// or with the flag on ACKs.
func TestDCQCNNS3Incast(t *testing.T) {
	for _, mode := range CNPModes {
		cfg := DefaultRoCE()
		cfg.RoCE.DCQCNModel, cfg.RoCE.DCQCNParams, cfg.RoCE.CNP = dcqcn.ModelNS3, dcqcn.NS3(), mode
		n, mg, s := twoToOne(t, cfg, 100*units.Gbps, 100*units.Microsecond, 10*units.Millisecond)
		n.sim.Schedule(0, s, 0, 0, nil)
		res, err := n.Run(mg, 10*units.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		var qmax int64
		for _, q := range s.q[20:] {
			qmax = max(qmax, q)
		}
		_, kmax, _ := cfg.RoCE.ECNThresholds(100 * units.Gbps)
		r := s.rates(20, 100)
		t.Logf("%s: rates %.2f %.2f Gb/s, queue max %d B, cuts %v", mode, r[0]/1e9, r[1]/1e9, qmax, res.Counters["dcqcn_rate_decreases"])
		if qmax >= kmax || jain(r[:2]) < 0.99 || res.Counters["pfc_pause_frames_sent"] != 0 {
			t.Errorf("%s: queue %d B (Kmax %d), Jain %.3f, pauses %v", mode, qmax, kmax, jain(r[:2]), res.Counters["pfc_pause_frames_sent"])
		}
	}
}
