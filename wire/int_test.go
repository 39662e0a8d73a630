package wire

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// TestINTLayout checks the hop word against ns-3's bit fields computed by hand (int-header.h:
// lineRate 3 bits, time 24, bytes 20 in 128 B, qlen 17 in 80 B, least significant first) and the
// 42-byte header: five little-endian words, then the little-endian hop count.
func TestINTLayout(t *testing.T) {
	h := INTHop{TimeNs: 1000, TxBytes: 12800 + 127, QLen: 8000 + 79, Rate: 100e9}
	want := uint64(2) | 1000<<3 | 100<<27 | 100<<47 // 100 Gb/s is code 2; units truncate
	if got := h.Word(); got != want {
		t.Fatalf("word %#x, want %#x", got, want)
	}
	wrap := INTHop{TimeNs: 1<<24 + 5, TxBytes: (1<<20 + 3) * 128, QLen: (1<<17 + 2) * 80, Rate: 40e9}
	if got, w := wrap.Word(), uint64(7)|5<<3|3<<27|2<<47; got != w {
		t.Errorf("wrapped word %#x, want %#x (fields modulo their widths, 40 Gb/s has no code: 7)", got, w)
	}
	b := AppendINT(nil, []INTHop{h, wrap}, 2)
	if len(b) != INTStackLen || INTStackLen != 42 {
		t.Fatalf("header %d B, want 42", len(b))
	}
	if binary.LittleEndian.Uint64(b) != want || !bytes.Equal(b[16:40], make([]byte, 24)) || b[40] != 2 || b[41] != 0 {
		t.Errorf("header bytes % x", b)
	}
	hops, nhop, rest, err := DecodeINT(append(b, 0xab))
	if err != nil || nhop != 2 || len(hops) != 2 || len(rest) != 1 {
		t.Fatalf("decode: %v %d %v %v", hops, nhop, rest, err)
	}
	if hops[0] != (INTHop{TimeNs: 1000, TxBytes: 12800, QLen: 8000, Rate: 100e9}) || hops[1] != (INTHop{TimeNs: 5, TxBytes: 384, QLen: 160}) {
		t.Errorf("decoded %+v", hops)
	}
	if _, _, _, err := DecodeINT(b[:41]); err == nil {
		t.Error("a 41-byte header decoded")
	}
}

// FuzzDecodeINT: any input decodes without panicking; a header decodes to at most five hops
// whose re-encoded words carry the same fields.
func FuzzDecodeINT(f *testing.F) {
	f.Add(AppendINT(nil, []INTHop{{TimeNs: 7, TxBytes: 256, QLen: 80, Rate: 25e9}}, 1))
	f.Add(make([]byte, 41))
	f.Fuzz(func(t *testing.T, b []byte) {
		hops, nhop, rest, err := DecodeINT(b)
		if err != nil {
			return
		}
		if len(hops) > INTMaxHops || len(hops) != min(int(nhop), INTMaxHops) || len(rest) != len(b)-INTStackLen {
			t.Fatalf("%d hops of %d, rest %d of %d", len(hops), nhop, len(rest), len(b))
		}
		for i, h := range hops {
			if INTHopFromWord(h.Word()) != h {
				t.Fatalf("hop %d %+v does not survive a round trip", i, h)
			}
		}
	})
}
