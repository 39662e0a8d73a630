package wire

import (
	"io"
	"testing"
)

// Building frames only happens when capturing, but a capture of a busy
// simulation writes millions: the builders must not allocate. Target: 0
// allocs/op and a few microseconds per 4 KiB frame (dominated by the two
// CRC-32 passes, ICRC and FCS).

func TestBuildersDoNotAllocate(t *testing.T) {
	_, pkts, pfc := roceSamples()
	_, ibs := ibSamples()
	buf := make([]byte, 0, 8192)
	for _, p := range pkts {
		if n := testing.AllocsPerRun(20, func() { buf = p.AppendFrame(buf[:0]) }); n != 0 {
			t.Errorf("RoCE %s: %.0f allocs per frame", OpName(p.BTH.OpCode), n)
		}
	}
	for _, p := range ibs {
		if n := testing.AllocsPerRun(20, func() { buf = p.AppendPacket(buf[:0]) }); n != 0 {
			t.Errorf("IB %s: %.0f allocs per packet", OpName(p.BTH.OpCode), n)
		}
	}
	if n := testing.AllocsPerRun(20, func() { buf = pfc.AppendFrame(buf[:0]) }); n != 0 {
		t.Errorf("PFC: %.0f allocs per frame", n)
	}
	w, _ := NewPcapWriter(io.Discard, LinkTypeEthernet, 128)
	if n := testing.AllocsPerRun(20, func() { _ = w.WritePacket(1, buf) }); n != 0 {
		t.Errorf("pcap WritePacket: %.0f allocs", n)
	}
}

func BenchmarkRoCEAppendFrame4K(b *testing.B) {
	_, pkts, _ := roceSamples()
	p := pkts[1] // WRITE Middle, 4096 B
	buf := make([]byte, 0, 8192)
	b.SetBytes(int64(p.FrameLen()))
	b.ReportAllocs()
	for b.Loop() {
		buf = p.AppendFrame(buf[:0])
	}
}

func BenchmarkRoCEAppendFrameACK(b *testing.B) {
	_, pkts, _ := roceSamples()
	p := pkts[2]
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		buf = p.AppendFrame(buf[:0])
	}
}

func BenchmarkIBAppendPacket2K(b *testing.B) {
	_, pkts := ibSamples()
	p := pkts[0]
	buf := make([]byte, 0, 4096)
	b.SetBytes(int64(p.Len()))
	b.ReportAllocs()
	for b.Loop() {
		buf = p.AppendPacket(buf[:0])
	}
}

func BenchmarkDecodeRoCE4K(b *testing.B) {
	frames, _, _ := roceSamples()
	b.SetBytes(int64(len(frames[1])))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeRoCE(frames[1]); err != nil {
			b.Fatal(err)
		}
	}
}
