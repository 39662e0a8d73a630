package wire

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestPcapWriterLayout(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewPcapWriter(&buf, LinkTypeInfiniBand, 100)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WritePacket(1_700_000_000_123_456_789, []byte{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	// File header: magic a1b23c4d (nanosecond) little-endian, version 2.4,
	// thiszone 0, sigfigs 0, snaplen 100, network 247. Record: ts_sec
	// 1700000000 = 0x6553f100, ts_nsec 123456789 = 0x075bcd15, incl 3, orig 3.
	want := "4d3cb2a1 0200 0400 00000000 00000000 64000000 f7000000" +
		"00f15365 15cd5b07 03000000 03000000 010203"
	if got := hex.EncodeToString(buf.Bytes()); got != stripSpaces(want) {
		t.Fatalf("pcap bytes\n got %s\nwant %s", got, stripSpaces(want))
	}
}

func TestPcapRoundTripAndSnaplen(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewPcapWriter(&buf, LinkTypeEthernet, 64)
	if err != nil {
		t.Fatal(err)
	}
	pkts := [][]byte{bytes.Repeat([]byte{0xAA}, 60), bytes.Repeat([]byte{0xBB}, 4000), {}}
	for i, p := range pkts {
		if err := w.WritePacket(int64(i)*1500+1, p); err != nil {
			t.Fatal(err)
		}
	}
	r, err := NewPcapReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if r.LinkType() != LinkTypeEthernet || r.SnapLen() != 64 {
		t.Fatalf("link type %d snaplen %d", r.LinkType(), r.SnapLen())
	}
	for i, p := range pkts {
		rec, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		wantIncl := min(len(p), 64)
		if rec.TsNanos != int64(i)*1500+1 || rec.OrigLen != len(p) || !bytes.Equal(rec.Data, p[:wantIncl]) {
			t.Errorf("record %d: ts %d orig %d incl %d", i, rec.TsNanos, rec.OrigLen, len(rec.Data))
		}
		if rec.Truncated() != (len(p) > 64) {
			t.Errorf("record %d: Truncated() = %v", i, rec.Truncated())
		}
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("after last record: %v, want io.EOF", err)
	}
}

// The reader also takes the classic microsecond format, in either byte order.
func TestPcapReaderMicrosecondBigEndian(t *testing.T) {
	var b []byte
	b = binary.BigEndian.AppendUint32(b, 0xA1B2C3D4)
	b = binary.BigEndian.AppendUint16(b, 2)
	b = binary.BigEndian.AppendUint16(b, 4)
	b = append(b, make([]byte, 8)...)
	b = binary.BigEndian.AppendUint32(b, 65535)
	b = binary.BigEndian.AppendUint32(b, 1)
	b = binary.BigEndian.AppendUint32(b, 10)     // sec
	b = binary.BigEndian.AppendUint32(b, 999999) // usec
	b = binary.BigEndian.AppendUint32(b, 2)
	b = binary.BigEndian.AppendUint32(b, 2)
	b = append(b, 7, 8)
	r, err := NewPcapReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := r.Next()
	if err != nil || rec.TsNanos != 10_999_999_000 || !bytes.Equal(rec.Data, []byte{7, 8}) {
		t.Fatalf("got %+v, %v", rec, err)
	}
}

func TestPcapReaderErrors(t *testing.T) {
	good := func() []byte {
		var buf bytes.Buffer
		w, _ := NewPcapWriter(&buf, LinkTypeEthernet, 0)
		_ = w.WritePacket(5, []byte{1, 2, 3, 4})
		return buf.Bytes()
	}
	cases := map[string]struct {
		mut   func([]byte) []byte
		field string
	}{
		"empty":         {func(b []byte) []byte { return nil }, "file header"},
		"pcapng":        {func(b []byte) []byte { copy(b, []byte{0x0a, 0x0d, 0x0d, 0x0a}); return b }, "magic"},
		"version":       {func(b []byte) []byte { b[4] = 3; return b }, "version"},
		"cut record":    {func(b []byte) []byte { return b[:len(b)-1] }, "packet data"},
		"cut header":    {func(b []byte) []byte { return b[:30] }, "record header"},
		"incl > orig":   {func(b []byte) []byte { b[24+12] = 1; return b }, "incl_len"},
		"huge incl":     {func(b []byte) []byte { binary.LittleEndian.PutUint32(b[24+8:], 1<<30); return b }, "incl_len"},
		"nsec overflow": {func(b []byte) []byte { binary.LittleEndian.PutUint32(b[24+4:], 1e9); return b }, "ts_nsec"},
	}
	for name, c := range cases {
		b := c.mut(good())
		r, err := NewPcapReader(bytes.NewReader(b))
		if err == nil {
			_, err = r.Next()
		}
		var de *DecodeError
		if !errors.As(err, &de) || de.Field != c.field {
			t.Errorf("%s: got %v, want a %q error", name, err, c.field)
		}
	}
}

func TestPcapWriterErrors(t *testing.T) {
	if _, err := NewPcapWriter(io.Discard, 1, 1<<31); err == nil {
		t.Error("snaplen 2^31 accepted")
	}
	w, _ := NewPcapWriter(io.Discard, 1, 0)
	if err := w.WritePacket(-1, nil); err == nil || !strings.Contains(err.Error(), "before the epoch") {
		t.Errorf("negative timestamp: %v", err)
	}
	if _, err := NewPcapWriter(failWriter{}, 1, 0); err == nil {
		t.Error("write error not reported")
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }
