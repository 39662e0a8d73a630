// Package headroom computes PFC headroom: the buffer a lossless priority needs at an ingress
// port to absorb what still arrives after it sends PAUSE (XOFF). Two ways are given, each term
// shown: NVIDIA's mlx5 driver formula and the IEEE 802.1Qbb-style breakdown ([IEEE 802.1Q]).
package headroom

import (
	"fmt"
	"math"

	"github.com/fabricsim/fabricsim/units"
)

// FibreNsPerMetre is the propagation delay of light in fibre, about 5 ns/m ([EST]).
const FibreNsPerMetre = 5.0

// PauseFrameWire is a PFC PAUSE frame on the wire: the 64 B minimum frame plus preamble, start
// delimiter and inter-frame gap (20 B).
const PauseFrameWire = 64 + 20

// Input describes one link end.
type Input struct {
	Rate units.Rate
	// CableMetres is the cable length; the mlx5 driver defaults to 7 m.
	CableMetres float64
	// MTU is the largest frame in bytes (the netdev MTU as the mlx5 driver uses it).
	MTU int
	// Response is each end's response and interface delay: the time from deciding to pause
	// (or receiving a PAUSE) to acting on it, beyond finishing the frame in progress (switch
	// pipeline latency, est. 300-600 ns for Spectrum-class, [EST]).
	Response units.Time
}

// Term is one addend of a formula.
type Term struct {
	Name    string
	Formula string
	Bytes   float64
}

// Result is both computations.
type Result struct {
	MLX5      float64
	MLX5Terms []Term
	IEEE      float64
	IEEETerms []Term
}

// Headroom returns the mlx5 and IEEE-style headroom for in.
func Headroom(in Input) Result {
	var r Result
	r.MLX5Terms = MLX5Terms(in.Rate, in.CableMetres, in.MTU)
	for _, t := range r.MLX5Terms {
		r.MLX5 += t.Bytes
	}
	r.IEEETerms = IEEETerms(in)
	for _, t := range r.IEEETerms {
		r.IEEE += t.Bytes
	}
	return r
}

// MLX5 is the mlx5 driver's xoff_bytes = (301 + 2.16 x cable_m) x speed_Gbps + 2.72 x MTU
// (drivers/net/ethernet/mellanox/mlx5/core/en/port_buffer.c, for speeds of 40G and up;
// [mlx5-headroom]): 400G, 7 m, MTU 4200 gives about 138 KB.
func MLX5(rate units.Rate, cableMetres float64, mtu int) float64 {
	var s float64
	for _, t := range MLX5Terms(rate, cableMetres, mtu) {
		s += t.Bytes
	}
	return s
}

// MLX5Terms splits the mlx5 formula into its three addends.
func MLX5Terms(rate units.Rate, cableMetres float64, mtu int) []Term {
	g := rate.Gbps()
	return []Term{
		{"fixed response budget", fmt.Sprintf("301 x %g Gb/s", g), 301 * g},
		{"cable", fmt.Sprintf("2.16 x %g m x %g Gb/s", cableMetres, g), 2.16 * cableMetres * g},
		{"frames in flight", fmt.Sprintf("2.72 x %d B MTU", mtu), 2.72 * float64(mtu)},
	}
}

// IEEETerms is the breakdown of [IEEE 802.1Q]: (cable delay x 2 + both ends' response and
// interface delays) x rate + two max frames + the PAUSE frame.
func IEEETerms(in Input) []Term {
	bytesPerNs := float64(in.Rate) / 8e9
	cableNs := in.CableMetres * FibreNsPerMetre
	resp := in.Response.Nanoseconds()
	return []Term{
		{"cable round trip", fmt.Sprintf("2 x %g m x %g ns/m x %g B/ns", in.CableMetres, FibreNsPerMetre, bytesPerNs), 2 * cableNs * bytesPerNs},
		{"response, both ends", fmt.Sprintf("2 x %g ns x %g B/ns", resp, bytesPerNs), 2 * resp * bytesPerNs},
		{"max frame being sent by the receiver when it decides XOFF", fmt.Sprintf("%d B", in.MTU), float64(in.MTU)},
		{"max frame the sender has started when PAUSE arrives", fmt.Sprintf("%d B", in.MTU), float64(in.MTU)},
		{"the PAUSE frame itself", fmt.Sprintf("%d B", PauseFrameWire), PauseFrameWire},
	}
}

// Bytes rounds a headroom up to whole bytes.
func Bytes(v float64) int64 { return int64(math.Ceil(v)) }
