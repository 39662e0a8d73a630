package fabric

import (
	"math"

	"github.com/fabricsim/fabricsim/units"
)

// Bit errors on an InfiniBand link (docs/faults.md, "Bit errors on InfiniBand: FEC and link-level
// retry"). A link_degrade fault with ber gives a link a pre-FEC bit error rate; what reaches the
// link layer is what the Reed-Solomon FEC of the link's lanes could not correct, and an
// uncorrected frame is either resent by the link itself (NVIDIA's link-level retransmission,
// LLR: a local resend costing one link round trip) or lost and recovered by the transport.

// RSFEC is a Reed-Solomon forward error correction: codewords of N symbols of M bits, K of them
// data, correcting up to T symbol errors per codeword.
type RSFEC struct {
	Name       string
	N, K, T, M int
}

// The RS-FECs of InfiniBand's lanes: RS(528,514) "KR4" on 25G NRZ lanes (EDR; IEEE 802.3
// clause 91), RS(544,514) "KP4" on PAM4 lanes (HDR 50G, NDR 100G, XDR 200G; IEEE 802.3 clauses
// 91 and 134, the FEC IBTA vol. 2 adopts for PAM4).
var (
	FECKR4 = RSFEC{Name: "RS(528,514)", N: 528, K: 514, T: 7, M: 10}
	FECKP4 = RSFEC{Name: "RS(544,514)", N: 544, K: 514, T: 15, M: 10}
)

// IBFECFor is the FEC of an InfiniBand link of 4x rate r: KR4 up to EDR's 100 Gb/s, KP4 above.
func IBFECFor(r units.Rate) RSFEC {
	if r <= 100*units.Gbps {
		return FECKR4
	}
	return FECKP4
}

// SymbolError is the probability that an M-bit symbol holds at least one of independent bit
// errors of rate ber: 1 - (1 - ber)^M.
func (f RSFEC) SymbolError(ber float64) float64 { return -math.Expm1(float64(f.M) * math.Log1p(-ber)) }

// CodewordFailure is the probability that a codeword holds more than T symbol errors, which
// the decoder cannot correct: the binomial tail sum over j > T of C(N,j) ps^j (1-ps)^(N-j),
// ps = SymbolError(ber), summed in logarithms (the terms span hundreds of orders of magnitude).
func (f RSFEC) CodewordFailure(ber float64) float64 {
	if ber <= 0 {
		return 0
	}
	ps := f.SymbolError(ber)
	if ps >= 1 {
		return 1
	}
	lp, lq := math.Log(ps), math.Log1p(-ps)
	var sum float64
	for j := f.T + 1; j <= f.N; j++ {
		lc, _ := math.Lgamma(float64(f.N + 1))
		a, _ := math.Lgamma(float64(j + 1))
		b, _ := math.Lgamma(float64(f.N - j + 1))
		term := math.Exp(lc - a - b + float64(j)*lp + float64(f.N-j)*lq)
		sum += term
		if j > int(float64(f.N)*ps)+f.T+1 && term < sum*1e-17 {
			break // past the mode, the rest no longer adds
		}
	}
	return min(1, sum)
}

// Codewords is the number of codewords a frame of bytes spans (its bits over K x M data bits
// per codeword, rounded up: the frame is lost if any of them fails).
func (f RSFEC) Codewords(bytes int64) int64 {
	per := int64(f.K * f.M)
	return (8*bytes + per - 1) / per
}

// FrameError is the probability that a frame of bytes has an uncorrected codeword:
// 1 - (1 - CodewordFailure)^Codewords.
func (f RSFEC) FrameError(ber float64, bytes int64) float64 {
	p := f.CodewordFailure(ber)
	return -math.Expm1(float64(f.Codewords(bytes)) * math.Log1p(-p))
}

// Latency is the FEC's store time at 4x rate r: the decoder holds a whole codeword (N x M bits
// over the four lanes) before it can correct it. It is part of every link's latency, healthy or
// not: degrading the link does not change it.
func (f RSFEC) Latency(r units.Rate) units.Time { return r.TransmitTime(units.Size(f.N * f.M / 8)) }

// LLRRate is what a link of rate r carries with link-level retry when each try of a frame of
// bytes fails with probability p: the link delivers in order, so every failed try holds the
// frames behind it for one round trip (2 x delay, the one-way time of a frame's bits and the
// peer's latency, plus the frame's serialization): each frame takes its serialization time tf
// plus LLRDelay, and the rate is r x tf / (tf + LLRDelay).
func LLRRate(r units.Rate, p float64, bytes units.Size, delay units.Time) units.Rate {
	tf := r.TransmitTime(bytes)
	d := LLRDelay(p, 2*delay+tf)
	if d == 0 || tf <= 0 {
		return r
	}
	return units.Rate(math.Round(float64(r) * float64(tf) / float64(tf+d)))
}

// LLRDelay is the mean time a frame waits for link-level retransmission when each try fails
// with probability p: every failed try costs one link round trip rtt (the cell's resend after
// the receiver's negative acknowledgement), and the tries are geometric: p / (1 - p) x rtt.
func LLRDelay(p float64, rtt units.Time) units.Time {
	if p <= 0 {
		return 0
	}
	return units.Time(math.Round(p / (1 - p) * float64(rtt)))
}
