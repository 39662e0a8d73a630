package wire

import (
	"bytes"
	"reflect"
	"testing"
)

// Decoders must never panic, and whatever decodes cleanly must re-encode to a
// frame that decodes to the same value (the decoders and builders agree).

func FuzzDecodeRoCE(f *testing.F) {
	frames, _, _ := roceSamples()
	for _, fr := range frames {
		f.Add(fr)
	}
	for name, build := range vectorPackets() {
		if name[:4] == "roce" {
			f.Add(build(nil))
		}
	}
	f.Add(mustHex(f, connectXCNP))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _, _ = decodeRoCE(b, true)
		p, err := DecodeRoCE(b)
		if err != nil {
			return
		}
		again, err := DecodeRoCE(p.AppendFrame(nil))
		if err != nil {
			t.Fatalf("re-encoded frame does not decode: %v", err)
		}
		// Fields the builder normalises.
		p.BTH.PKey, again.BTH.PKey = 0, 0
		p.TTL, again.TTL = 0, 0
		p.BTH.PadCnt, again.BTH.PadCnt = 0, 0
		p.UDPChecksum, again.UDPChecksum = false, false
		if p.BTH.OpCode == OpCNP { // the builder writes the reserved bytes as zero and sets BECN
			p.Payload, again.Payload = nil, nil
			p.BTH.BECN = true
		}
		if !reflect.DeepEqual(p, again) {
			t.Fatalf("round trip differs:\n%+v\n%+v", p, again)
		}
	})
}

func FuzzDecodeIB(f *testing.F) {
	raw, _ := ibSamples()
	for _, r := range raw {
		f.Add(r)
	}
	for name, build := range vectorPackets() {
		if name[:2] == "ib" {
			f.Add(build(nil))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _, _ = decodeIB(b, true)
		_, _ = DecodeIBFlowControl(b)
		p, err := DecodeIB(b)
		if err != nil {
			return
		}
		q := p
		out := q.AppendPacket(nil)
		if _, err := DecodeIB(out); err != nil {
			t.Fatalf("re-encoded packet does not decode: %v", err)
		}
	})
}

func FuzzDecodePFC(f *testing.F) {
	f.Add((&PFCPause{Enable: 0xFF}).AppendFrame(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := DecodePFCPause(b)
		if err != nil {
			return
		}
		if q, err := DecodePFCPause(p.AppendFrame(nil)); err != nil || q != p {
			t.Fatalf("round trip: %+v vs %+v, %v", p, q, err)
		}
	})
}

func FuzzPcapReader(f *testing.F) {
	frames, _, _ := roceSamples()
	f.Add(writePcap(f, LinkTypeEthernet, 0, frames))
	f.Add(writePcap(f, LinkTypeEthernet, 80, frames[:2]))
	raw, _ := ibSamples()
	f.Add(writePcap(f, LinkTypeInfiniBand, 0, append(raw, (&IBFlowControl{FCTBS: 1}).AppendPacket(nil))))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Check(bytes.NewReader(b))
		if err == nil && s.ErrorCount < len(s.Errors) {
			t.Fatalf("ErrorCount %d below %d kept errors", s.ErrorCount, len(s.Errors))
		}
		var out bytes.Buffer
		_ = s.WriteText(&out)
	})
}
