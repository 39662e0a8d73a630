package wire

import (
	"encoding/binary"
	"errors"
)

// In-band network telemetry as HPCC's ns-3 puts it on the wire ([HPCC-ns3]
// simulation/src/network/utils/int-header.h and int-header.cc, IntHeader in its NORMAL mode):
// five 8-byte hop records and a 2-byte hop count, 42 bytes whatever the number of hops. Each
// hop is one 64-bit word of bit fields, least significant first:
//
//	bits  0-2   line rate code: 0 = 25, 1 = 50, 2 = 100, 3 = 200, 4 = 400 Gb/s (other: 7 here)
//	bits  3-26  time, nanoseconds modulo 2^24
//	bits 27-46  bytes the egress port has transmitted, in units of 128 B, modulo 2^20
//	bits 47-63  the egress queue, in units of 80 B, modulo 2^17
//
// ns-3 serializes each word as two 32-bit halves, low half first, each least significant byte
// first (Buffer::Iterator::WriteU32): the word in little-endian byte order; then the hop count
// as a little-endian 16-bit integer. Hop slots beyond the count are zero. (ns-3's byte and queue
// units are scaled by its INT_MULTI; this layout is its default, multiplier 1.)
//
// In a RoCEv2 frame fabricsim writes the INT header right after the BTH's extension headers
// (RETH on a WRITE First or Only, AETH on an ACK), before the payload, as ns-3 places it right
// after its own transport header; the BTH's pad count, the UDP and IP lengths and the ICRC
// cover it, so a dissector shows it as the first 42 bytes of the payload.

// INT header sizes.
const (
	INTMaxHops  = 5
	INTHopLen   = 8
	INTStackLen = INTMaxHops*INTHopLen + 2
)

// ns-3's units and field widths.
const (
	INTByteUnit  = 128
	INTQLenUnit  = 80
	intTimeBits  = 24
	intBytesBits = 20
	intQLenBits  = 17
	intRateBits  = 3
	intRateOther = 7
)

var intRates = [...]uint64{25e9, 50e9, 100e9, 200e9, 400e9}

// INTHop is one switch egress's record in plain units: nanoseconds, bytes transmitted, bytes
// queued, bits per second. Encoding keeps what ns-3's fields keep (Encode); decoding returns
// the fields scaled back (a time modulo 2^24 ns, bytes as multiples of 128, and so on).
type INTHop struct {
	TimeNs  uint64
	TxBytes uint64
	QLen    uint64
	Rate    uint64 // b/s; 0 when the code names no rate
}

// Word packs h into ns-3's 64-bit hop word.
func (h INTHop) Word() uint64 {
	code := uint64(intRateOther)
	for i, r := range intRates {
		if r == h.Rate {
			code = uint64(i)
		}
	}
	w := code
	w |= (h.TimeNs & (1<<intTimeBits - 1)) << intRateBits
	w |= (h.TxBytes / INTByteUnit & (1<<intBytesBits - 1)) << (intRateBits + intTimeBits)
	w |= (h.QLen / INTQLenUnit & (1<<intQLenBits - 1)) << (intRateBits + intTimeBits + intBytesBits)
	return w
}

// INTHopFromWord unpacks a hop word.
func INTHopFromWord(w uint64) INTHop {
	var h INTHop
	if c := w & (1<<intRateBits - 1); c < uint64(len(intRates)) {
		h.Rate = intRates[c]
	}
	h.TimeNs = w >> intRateBits & (1<<intTimeBits - 1)
	h.TxBytes = (w >> (intRateBits + intTimeBits) & (1<<intBytesBits - 1)) * INTByteUnit
	h.QLen = (w >> (intRateBits + intTimeBits + intBytesBits) & (1<<intQLenBits - 1)) * INTQLenUnit
	return h
}

// AppendINT appends the 42-byte INT header with hops (at most INTMaxHops; more are an error
// the caller avoids: extra hops are dropped) and the hop count nhop.
func AppendINT(dst []byte, hops []INTHop, nhop uint16) []byte {
	for i := range INTMaxHops {
		var w uint64
		if i < len(hops) {
			w = hops[i].Word()
		}
		dst = binary.LittleEndian.AppendUint64(dst, w)
	}
	return binary.LittleEndian.AppendUint16(dst, nhop)
}

// DecodeINT reads an INT header: the hop count and the records it counts (at most
// INTMaxHops), and the bytes after it.
func DecodeINT(b []byte) (hops []INTHop, nhop uint16, rest []byte, err error) {
	if len(b) < INTStackLen {
		return nil, 0, nil, errors.New("INT header: fewer than 42 bytes")
	}
	nhop = binary.LittleEndian.Uint16(b[INTMaxHops*INTHopLen:])
	for i := range min(int(nhop), INTMaxHops) {
		hops = append(hops, INTHopFromWord(binary.LittleEndian.Uint64(b[i*INTHopLen:])))
	}
	return hops, nhop, b[INTStackLen:], nil
}
