package analytic

import (
	"fmt"
	"math"

	"github.com/fabricsim/fabricsim/collective"
	"github.com/fabricsim/fabricsim/units"
)

// Protocol is one of NCCL's three wire protocols.
type Protocol uint8

const (
	// LL (low latency) sends 8-byte stores of 4 bytes data + 4 bytes flag: lowest latency, a
	// quarter or so of the bandwidth.
	LL Protocol = iota
	// LL128 sends 128-byte lines with 120 bytes of data: near-full bandwidth on NVLink.
	LL128
	// Simple sends large chunks with a memory fence and flag per chunk: full bandwidth, most
	// latency.
	Simple
	numProtocols
)

func (p Protocol) String() string {
	switch p {
	case LL:
		return "LL"
	case LL128:
		return "LL128"
	case Simple:
		return "Simple"
	}
	return fmt.Sprintf("Protocol(%d)", uint8(p))
}

// Hop kinds for NCCLModel.HopLatencyUs, NCCL's NCCL_HW_NVLINK / NCCL_HW_PCI / NCCL_HW_NET.
const (
	HopNVLink = iota
	HopPCI
	HopNet
)

// Algorithm rows of NCCLModel's latency tables.
const (
	ModelTree = iota
	ModelRing
)

// NCCLCaps are NCCL's empirical per-channel bandwidth ceilings in GB/s (tuning.cc llMaxBws,
// perChMaxRingLL128Bws, perChMaxTreeBws, perChMaxTreeLL128Bws). A zero field means no cap.
type NCCLCaps struct {
	LLMaxGBps              float64 // whole-communicator ceiling for LL
	RingLL128PerChGBps     float64
	TreePerChGBps          float64
	TreeLL128PerChGBps     float64
	RingSimplePlateau      float64 // latency multiplier of multi-node ring/Simple all-reduce (1.4 on sm80+)
	TreeCorrectionDisabled bool    // skip NCCL's per-size tree bandwidth correction
}

// HopperCaps are the ceilings NCCL 2.19's tuning.cc uses for Hopper GPUs with an Intel host
// CPU on the given number of nodes (its tables index 1, 2 and more than 2 nodes).
func HopperCaps(nodes int) NCCLCaps {
	i := 2
	if nodes <= 2 {
		i = max(nodes-1, 0)
	}
	ll := [3]float64{39.0, 39.0, 20.4}[i] // multi-node: CPU-bound, Intel row
	if nodes <= 1 {
		ll = 87.7 // single node: GPU-bound, Hopper row
	}
	return NCCLCaps{
		LLMaxGBps:          ll,
		RingLL128PerChGBps: [3]float64{36.7, 36.7, 36.7}[i],
		TreePerChGBps:      [3]float64{38.7, 41.4, 36.0}[i],
		TreeLL128PerChGBps: [3]float64{36.7, 36.7, 29.0}[i],
		RingSimplePlateau:  1.4,
	}
}

// NCCLModel is NCCL's closed-form estimate of a collective's time (src/graph/tuning.cc,
// ncclTopoTuneModel and ncclTopoGetAlgoTime, as of NCCL 2.19):
//
//	time = latency + bytes / algBW
//	latency = base[algo][proto] + steps x hop latency   (ring: intra-node and network hops;
//	          tree: 2 x ((ranks per node - 1) x intra + log2(nodes) x network))
//	algBW = busBW x ratio, busBW = channels x per-channel bandwidth (with NCCL's protocol
//	        discounts and ceilings), ratio = n/steps for ring, 1/2 for tree
//
// Bytes is nccl-tests' S (collective.Spec.Bytes): the buffer for all-reduce, broadcast and
// reduce, n x the per-rank share for all-gather and reduce-scatter. Times are in microseconds
// and bandwidths in GB/s (10^9 B/s) inside the model, as in NCCL.
type NCCLModel struct {
	Ranks, Nodes int
	Channels     int
	// IntraGBps and InterGBps are the per-channel bandwidths of NCCL's ring/tree graphs
	// (ncclTopoGraph bwIntra / bwInter); NCCL uses the intra figure up to two nodes.
	IntraGBps, InterGBps float64
	// IntraHop is HopNVLink or HopPCI: what connects GPUs inside a node.
	IntraHop int
	// BaseLatencyUs[algo][proto]: fixed cost per call, rows ModelTree and ModelRing.
	BaseLatencyUs [2][numProtocols]float64
	// HopLatencyUs[hop][algo][proto]: cost per step over NVLink, PCI or the network.
	HopLatencyUs [3][2][numProtocols]float64
	// NetOverheadUs is the host cost of posting a network send (1 us on Intel, 2 on AMD); a
	// multi-node ring step costs at least this (x3 for Simple).
	NetOverheadUs float64
	// InterLatencyUs is the graph's extra network latency (ncclTopoGraph latencyInter), added
	// per network step (twice for Simple, which also flushes).
	InterLatencyUs float64
	Caps           NCCLCaps
}

// NewNCCLModel returns NCCL 2.19's defaults for ranks GPUs on nodes nodes joined by NVLink
// inside a node, with the given channel count and per-channel bandwidths.
// [NCCL] src/graph/tuning.cc: ring base latencies LL/LL128/Simple 6.6/14/8.4 us, network hop on
// Simple 14 us.
func NewNCCLModel(ranks, nodes, channels int, intraGBps, interGBps float64) NCCLModel {
	return NCCLModel{
		Ranks: ranks, Nodes: nodes, Channels: channels, IntraGBps: intraGBps, InterGBps: interGBps,
		IntraHop: HopNVLink,
		BaseLatencyUs: [2][numProtocols]float64{
			ModelTree: {6.8, 14.0, 0},
			ModelRing: {6.6, 14.0, 8.4},
		},
		HopLatencyUs: [3][2][numProtocols]float64{
			HopNVLink: {ModelTree: {0.6, 1.25, 28}, ModelRing: {0.6, 1.9, 3.4}},
			HopPCI:    {ModelTree: {1.0, 1.9, 28}, ModelRing: {1.0, 2.5, 5.7}},
			HopNet:    {ModelTree: {5.0, 8.5, 28}, ModelRing: {2.7, 4.0, 14.0}},
		},
		NetOverheadUs: 1.0,
		Caps:          HopperCaps(nodes),
	}
}

// treeCorrection is NCCL's measured tree bandwidth correction per protocol for sizes 64 B x
// 2^i, i = 0..22 (tuning.cc treeCorrectionFactor).
var treeCorrection = [numProtocols][23]float64{
	{1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
	{1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
	{.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9},
}

// log2i is floor(log2(n)), 0 for n <= 1 (NCCL's log2i).
func log2i(n int64) int {
	l := 0
	for n >>= 1; n > 0; n >>= 1 {
		l++
	}
	return l
}

func (m NCCLModel) check(op collective.Op, algo collective.Algo, proto Protocol) (int, error) {
	if m.Ranks < 1 || m.Nodes < 1 || m.Nodes > m.Ranks || m.Channels < 1 {
		return 0, fmt.Errorf("NCCL model: need 1 <= nodes (%d) <= ranks (%d) and channels >= 1 (%d)", m.Nodes, m.Ranks, m.Channels)
	}
	if m.IntraGBps <= 0 || (m.Nodes > 2 && m.InterGBps <= 0) {
		return 0, fmt.Errorf("NCCL model: per-channel bandwidths %g/%g GB/s must be positive", m.IntraGBps, m.InterGBps)
	}
	if m.IntraHop != HopNVLink && m.IntraHop != HopPCI {
		return 0, fmt.Errorf("NCCL model: IntraHop %d is neither HopNVLink nor HopPCI", m.IntraHop)
	}
	if proto >= numProtocols {
		return 0, fmt.Errorf("NCCL model: unknown protocol %d", proto)
	}
	switch op {
	case collective.AllReduce, collective.AllGather, collective.ReduceScatter, collective.Broadcast, collective.Reduce:
	default:
		return 0, fmt.Errorf("NCCL model: NCCL's tuning model has no %s (it covers AllReduce, AllGather, ReduceScatter, Broadcast, Reduce)", op)
	}
	switch {
	case algo == collective.Ring || algo == collective.Default:
		return ModelRing, nil
	case algo == collective.Tree && op == collective.AllReduce:
		return ModelTree, nil
	}
	return 0, fmt.Errorf("NCCL model: %s %s is not modelled (ring for all five, tree for AllReduce)", op, algo)
}

// AlgBWGBps is the model's algorithm bandwidth (GB/s) before the per-size tree correction.
func (m NCCLModel) AlgBWGBps(op collective.Op, algo collective.Algo, proto Protocol) (float64, error) {
	a, err := m.check(op, algo, proto)
	if err != nil {
		return 0, err
	}
	bw := m.IntraGBps
	if m.Nodes > 2 {
		bw = m.InterGBps
	}
	nch := float64(m.Channels)
	busBW := nch * bw
	c := m.Caps
	capAt := func(v, limit float64) float64 {
		if limit > 0 {
			return math.Min(v, limit)
		}
		return v
	}
	ppn := float64(m.Ranks) / float64(m.Nodes)
	switch {
	case a == ModelRing && proto == LL:
		f := 1.0 / 3.0
		if m.Nodes > 1 || op == collective.AllReduce || op == collective.Reduce {
			f = 1.0 / 4.0
		}
		busBW = capAt(busBW*f, c.LLMaxGBps)
	case a == ModelRing && proto == LL128:
		f := 0.92
		if ppn < 2 {
			f = 0.7
		}
		busBW = capAt(busBW*f, nch*c.RingLL128PerChGBps)
	case a == ModelTree:
		busBW = capAt(busBW*0.92, nch*c.TreePerChGBps)
		switch proto {
		case LL:
			busBW = capAt(busBW/3.8, c.LLMaxGBps)
		case LL128:
			f := 120.0 / 128.0
			if m.Nodes == 1 {
				f = 7.0 / 9.0
			}
			busBW = capAt(busBW*f, nch*c.TreeLL128PerChGBps)
		}
	}
	if a == ModelRing {
		return busBW * float64(m.Ranks) / float64(m.steps(op)), nil
	}
	return busBW * 0.5, nil
}

func (m NCCLModel) steps(op collective.Op) int {
	switch op {
	case collective.AllReduce:
		return 2 * (m.Ranks - 1)
	case collective.AllGather, collective.ReduceScatter:
		return m.Ranks - 1
	}
	return m.Ranks
}

// LatencyUs is the model's fixed cost of one call in microseconds, before the ring plateau
// factor (which depends on the size; see Time).
func (m NCCLModel) LatencyUs(op collective.Op, algo collective.Algo, proto Protocol) (float64, error) {
	a, err := m.check(op, algo, proto)
	if err != nil {
		return 0, err
	}
	lat := m.BaseLatencyUs[a][proto]
	intra := m.HopLatencyUs[m.IntraHop][a][proto]
	inter := m.HopLatencyUs[HopNet][a][proto] + m.InterLatencyUs
	if proto == Simple {
		inter += m.InterLatencyUs
	}
	nsteps := m.steps(op)
	if a == ModelTree {
		return lat + 2*(float64(m.Ranks/m.Nodes-1)*intra+float64(log2i(int64(m.Nodes)))*inter), nil
	}
	if op == collective.Broadcast || op == collective.Reduce {
		// A chain over all ranks; NCCL charges each step the tree's chunk latency on Simple
		// ("waiting for proper chunk modeling").
		hw := m.IntraHop
		if m.Nodes > 1 {
			hw = HopNet
		}
		row := ModelRing
		if proto == Simple {
			row = ModelTree
		}
		return lat + float64(nsteps)*m.HopLatencyUs[hw][row][proto], nil
	}
	var interSteps int
	switch op {
	case collective.AllReduce:
		if m.Nodes > 1 {
			interSteps = 2 * m.Nodes
		}
	default:
		interSteps = m.Nodes - 1
	}
	if m.Nodes > 1 {
		ov := m.NetOverheadUs
		if proto == Simple {
			ov *= 3
		}
		intra = math.Max(intra, ov)
	}
	return lat + float64(nsteps-interSteps)*intra + float64(interSteps)*inter, nil
}

// Time is the model's time for one call moving bytes (nccl-tests' S).
func (m NCCLModel) Time(op collective.Op, algo collective.Algo, proto Protocol, bytes units.Size) (units.Time, error) {
	us, err := m.TimeUs(op, algo, proto, bytes)
	if err != nil {
		return 0, err
	}
	return units.Time(math.Round(us * float64(units.Microsecond))), nil
}

// TimeUs is Time in (fractional) microseconds, the unit NCCL's model works in.
func (m NCCLModel) TimeUs(op collective.Op, algo collective.Algo, proto Protocol, bytes units.Size) (float64, error) {
	if bytes < 0 {
		return 0, fmt.Errorf("NCCL model: negative size %d", bytes)
	}
	lat, err := m.LatencyUs(op, algo, proto)
	if err != nil {
		return 0, err
	}
	bw, err := m.AlgBWGBps(op, algo, proto)
	if err != nil {
		return 0, err
	}
	if m.Ranks <= 1 {
		return 0, nil
	}
	a, _ := m.check(op, algo, proto)
	if a == ModelTree && !m.Caps.TreeCorrectionDisabled {
		if i := log2i(int64(bytes) >> 6); i < len(treeCorrection[proto]) {
			bw *= treeCorrection[proto][i]
		}
	}
	if a == ModelRing && proto == Simple && m.Nodes > 1 && op == collective.AllReduce && m.Caps.RingSimplePlateau > 0 &&
		int64(bytes)/int64(m.Channels*m.Ranks) >= 64 {
		lat *= m.Caps.RingSimplePlateau
	}
	if bw <= 0 {
		return 0, fmt.Errorf("NCCL model: %s %s/%s has no bandwidth", op, algo, proto)
	}
	return lat + float64(bytes)/(1000*bw), nil
}

// Best is the fastest algorithm and protocol the model offers for op at this size, as NCCL's
// tuner picks it: ring or tree (tree only for AllReduce) and LL, LL128 or Simple.
func (m NCCLModel) Best(op collective.Op, bytes units.Size) (collective.Algo, Protocol, units.Time, error) {
	best, bestAlgo, bestProto := math.Inf(1), collective.Ring, Simple
	var firstErr error
	for _, a := range []collective.Algo{collective.Ring, collective.Tree} {
		for p := LL; p < numProtocols; p++ {
			t, err := m.TimeUs(op, a, p, bytes)
			if err != nil {
				if firstErr == nil && a == collective.Ring {
					firstErr = err
				}
				continue
			}
			if t < best {
				best, bestAlgo, bestProto = t, a, p
			}
		}
	}
	if math.IsInf(best, 1) {
		return 0, 0, 0, firstErr
	}
	return bestAlgo, bestProto, units.Time(math.Round(best * float64(units.Microsecond))), nil
}
