// Package gpu is the hardware of a GPU server as fabricsim models it: GPUs joined by an NVLink
// domain, a PCIe switch joining each GPU to its NIC, CPU sockets with host memory, each part
// with its effective data rate and latency, and presets of real servers (Presets: HGX H100 and
// H200, A100, a PCIe server). Package cluster builds servers and their network into one
// topology; package nccl lays collectives out on it; docs/gpu.md has the figures and sources.
package gpu

import (
	"fmt"
	"sort"
	"strings"

	"github.com/fabricsim/fabricsim/units"
)

// GBps is 10^9 bytes per second, the unit GPU and PCIe bandwidths are quoted in.
const GBps = 8 * units.Gbps

// Link is a class of links inside a server. Rate is the effective data rate per direction,
// what a large DMA or RDMA transfer achieves (packet headers, PCIe TLP/DLLP and NVLink flit
// overheads already taken off); Build turns it into a link rate that gives exactly this payload
// rate under the fabric's framing.
type Link struct {
	Rate    units.Rate
	Latency units.Time
}

// Server describes one GPU server. The zero value of a field means its default (see Presets).
type Server struct {
	// Name is the preset the server came from, for reports.
	Name string
	// GPUName is what the nccl-tests "#  Rank" lines call the GPU.
	GPUName string
	// GPUs per server (default 8).
	GPUs int
	// NICs per server (default one per GPU). GPUs must be a multiple of NICs; NIC k sits on the
	// PCIe switch of GPU k*GPUs/NICs. A GPU without a NIC on its PCIe switch reaches the network
	// over NVLink through a GPU that has one (PXN) or, without NVLink, through the CPU.
	NICs int
	// Sockets is the number of CPU sockets (default 2); GPUs are split evenly, the first half on
	// socket 0.
	Sockets int
	// HBM is the GPU's memory bandwidth. It is not a link of the model: at 3.35 TB/s (H100) it
	// is never what limits a transfer over NVLink (370 GB/s) or PCIe.
	HBM units.Rate
	// NVLink is each GPU's link to the NVSwitch, per direction; a zero Rate means no NVLink
	// (PCIe-only GPUs): GPU-to-GPU traffic then crosses the PCIe switches and the CPU.
	NVLink Link
	// NVSwitchLatency is the NVSwitch's port-to-port latency.
	NVSwitchLatency units.Time
	// PCIe is every x16 link: GPU to PCIe switch, NIC to PCIe switch, PCIe switch to root port.
	PCIe Link
	// P2PEfficiency is the fraction of the PCIe rate that peer-to-peer DMA into and out of GPU
	// memory sustains (GPUDirect RDMA: the NIC reading the GPU's BAR); it sets the rate of the
	// GPU's PCIe port. 0 means 0.92 (est. from perftest's ~23 GB/s GPUDirect on a 25 GB/s
	// 200G link, [perftest], est.).
	P2PEfficiency float64
	// PCIeSwitchLatency is the PCIe switch's port-to-port latency.
	PCIeSwitchLatency units.Time
	// NICLatency is the NIC's latency between PCIe and the wire (each way).
	NICLatency units.Time
	// RootComplexLatency is the latency of a root port and of the socket's root complex.
	RootComplexLatency units.Time
	// HostMemory is a GPU's host buffer's share of the socket's memory bandwidth.
	HostMemory Link
	// InterSocket is what PCIe peer-to-peer traffic gets between sockets (UPI/xGMI plus the root
	// complexes' P2P forwarding): GPUDirect RDMA between a GPU and a NIC on different sockets
	// runs at about half the same-switch rate ([perftest]: ~11 vs ~23 GB/s, est.).
	InterSocket Link
	// CPUCopy is the bandwidth of the proxy thread's memcpy from the staging buffer into the
	// NIC's registered buffer (host-staged data path), and CPUCopyLatency its fixed cost per
	// message (the proxy's poll-and-post loop).
	CPUCopy        units.Rate
	CPUCopyLatency units.Time
	// CopyLatency is the fixed cost of a device-to-host or host-to-device copy (copy-engine
	// launch and completion), per message, on the rdma-host and host-staged data paths.
	CopyLatency units.Time
	// NICRate is the rate of each NIC's network port (default 400 Gb/s); the cluster's network
	// links use it unless the cluster file says otherwise.
	NICRate units.Rate
}

// Sources of the preset figures (est. = an estimate with the reasoning in docs/gpu.md).
const (
	srcNVLink4  = "[H100]: NVLink4 900 GB/s per GPU total (450 per direction), ~370 GB/s effective per direction (nccl-tests busbw on 8 H100s)"
	srcPCIe5    = "[PCIe 5.0]: PCIe Gen5 x16 63 GB/s raw per direction, ~50-55 GB/s practical (est.): 52 GB/s"
	srcPCIe4    = "PCIe Gen4 x16 31.5 GB/s raw per direction; ~26 GB/s practical (est., same 83% as Gen5)"
	srcP2PXSock = "[perftest]: GPUDirect across the CPU socket ~11 vs 23 GB/s on the same switch: 11/23 of the PCIe rate"
)

// Presets are the server models --server names.
var Presets = map[string]Server{
	// NVIDIA HGX H100 8-GPU: NVLink4 through 4 NVSwitch chips, 8 x ConnectX-7 400G (one per
	// GPU), PCIe Gen5, two sockets ([H100]).
	"h100": {
		Name: "h100", GPUName: "NVIDIA H100 80GB HBM3", GPUs: 8, Sockets: 2,
		HBM:                3350 * GBps, // H100 SXM5 datasheet: 3.35 TB/s
		NVLink:             Link{Rate: 370 * GBps, Latency: 250 * units.Nanosecond},
		NVSwitchLatency:    300 * units.Nanosecond, // est.: GPU-GPU one-way ~1 us incl. the SMs' stores
		PCIe:               Link{Rate: 52 * GBps, Latency: 0},
		PCIeSwitchLatency:  150 * units.Nanosecond, // est.: Gen5 switch port-to-port 100-200 ns
		NICLatency:         500 * units.Nanosecond, // est.: ConnectX-7 PCIe-to-wire
		RootComplexLatency: 200 * units.Nanosecond,
		HostMemory:         Link{Rate: 150 * GBps, Latency: 100 * units.Nanosecond}, // est.: 8-channel DDR5 socket ~300 GB/s, half per GPU pair
		InterSocket:        Link{Rate: 52 * GBps * 11 / 23, Latency: 300 * units.Nanosecond},
		CPUCopy:            20 * GBps, // est.: one core's large memcpy, non-temporal stores
		CPUCopyLatency:     5 * units.Microsecond,
		CopyLatency:        2 * units.Microsecond, // est.: cudaMemcpyAsync launch to first byte
		NICRate:            400 * units.Gbps,
	},
	// A100 SXM4 (DGX A100): NVLink3 600 GB/s total per GPU (300 per direction), 8 x 200G HDR,
	// PCIe Gen4 (such a node measures ~192 GB/s all-reduce busbw, [EST]).
	"a100": {
		Name: "a100", GPUName: "NVIDIA A100-SXM4-80GB", GPUs: 8, Sockets: 2,
		HBM:                2039 * GBps,                                             // A100 80GB SXM datasheet
		NVLink:             Link{Rate: 240 * GBps, Latency: 300 * units.Nanosecond}, // est.: 80% of 300 GB/s
		NVSwitchLatency:    300 * units.Nanosecond,
		PCIe:               Link{Rate: 26 * GBps, Latency: 0},
		PCIeSwitchLatency:  150 * units.Nanosecond,
		NICLatency:         600 * units.Nanosecond,
		RootComplexLatency: 200 * units.Nanosecond,
		HostMemory:         Link{Rate: 100 * GBps, Latency: 100 * units.Nanosecond},
		InterSocket:        Link{Rate: 26 * GBps * 11 / 23, Latency: 300 * units.Nanosecond},
		CPUCopy:            15 * GBps,
		CPUCopyLatency:     5 * units.Microsecond,
		CopyLatency:        2 * units.Microsecond,
		NICRate:            200 * units.Gbps,
	},
	// A PCIe-only server (L40S class): no NVLink, Gen4, one 400G NIC per two GPUs. GPU-to-GPU
	// traffic crosses the PCIe switches and the CPU.
	"pcie": {
		Name: "pcie", GPUName: "NVIDIA L40S", GPUs: 8, NICs: 4, Sockets: 2,
		HBM:                864 * GBps, // L40S datasheet: 864 GB/s GDDR6
		PCIe:               Link{Rate: 26 * GBps, Latency: 0},
		PCIeSwitchLatency:  150 * units.Nanosecond,
		NICLatency:         500 * units.Nanosecond,
		RootComplexLatency: 200 * units.Nanosecond,
		HostMemory:         Link{Rate: 100 * GBps, Latency: 100 * units.Nanosecond},
		InterSocket:        Link{Rate: 26 * GBps * 11 / 23, Latency: 300 * units.Nanosecond},
		CPUCopy:            15 * GBps,
		CPUCopyLatency:     5 * units.Microsecond,
		CopyLatency:        2 * units.Microsecond,
		NICRate:            400 * units.Gbps,
	},
}

func init() {
	h := Presets["h100"]
	h.Name, h.GPUName, h.HBM = "h200", "NVIDIA H200", 4800*GBps // H200 datasheet: 4.8 TB/s HBM3e
	Presets["h200"] = h
}

// Preset returns a copy of the named server model.
func Preset(name string) (Server, error) {
	s, ok := Presets[strings.ToLower(name)]
	if !ok {
		return Server{}, fmt.Errorf("unknown server model %q (want one of %s)", name, strings.Join(PresetNames(), ", "))
	}
	return s, nil
}

// PresetNames lists the presets, sorted.
func PresetNames() []string {
	var out []string
	for k := range Presets {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// WithDefaults fills zero fields from the H100 preset and checks the result.
func (s Server) WithDefaults() (Server, error) {
	d := Presets["h100"]
	if s.GPUs == 0 {
		s.GPUs = d.GPUs
	}
	if s.NICs == 0 {
		s.NICs = s.GPUs
	}
	if s.Sockets == 0 {
		s.Sockets = d.Sockets
	}
	if s.GPUName == "" {
		s.GPUName = d.GPUName
	}
	fill := func(v *units.Rate, def units.Rate) {
		if *v == 0 {
			*v = def
		}
	}
	fill(&s.HBM, d.HBM)
	fill(&s.PCIe.Rate, d.PCIe.Rate)
	fill(&s.HostMemory.Rate, d.HostMemory.Rate)
	fill(&s.InterSocket.Rate, d.InterSocket.Rate)
	fill(&s.CPUCopy, d.CPUCopy)
	fill(&s.NICRate, d.NICRate)
	if s.P2PEfficiency == 0 {
		s.P2PEfficiency = 0.92
	}
	switch {
	case s.GPUs < 1 || s.GPUs > 64:
		return s, fmt.Errorf("server: %d GPUs per server: want 1..64", s.GPUs)
	case s.NICs < 1 || s.NICs > s.GPUs || s.GPUs%s.NICs != 0:
		return s, fmt.Errorf("server: %d NICs for %d GPUs: the GPU count must be a multiple of the NIC count", s.NICs, s.GPUs)
	case s.Sockets < 1 || s.Sockets > s.GPUs || s.GPUs%s.Sockets != 0:
		return s, fmt.Errorf("server: %d sockets for %d GPUs: the GPU count must be a multiple of the socket count", s.Sockets, s.GPUs)
	case s.P2PEfficiency < 0 || s.P2PEfficiency > 1:
		return s, fmt.Errorf("server: P2P efficiency %g: want a fraction in (0, 1]", s.P2PEfficiency)
	case s.NVLink.Rate < 0 || s.PCIe.Rate < 0 || s.HBM < 0 || s.CPUCopy < 0:
		return s, fmt.Errorf("server: rates must not be negative")
	}
	for _, t := range []units.Time{s.NVLink.Latency, s.NVSwitchLatency, s.PCIe.Latency, s.PCIeSwitchLatency, s.NICLatency,
		s.RootComplexLatency, s.HostMemory.Latency, s.InterSocket.Latency, s.CPUCopyLatency, s.CopyLatency} {
		if t < 0 {
			return s, fmt.Errorf("server: latencies must not be negative")
		}
	}
	return s, nil
}

// P2PRate is the effective rate of the GPU's PCIe port (P2PEfficiency x PCIe).
func (s Server) P2PRate() units.Rate { return units.Rate(float64(s.PCIe.Rate) * s.P2PEfficiency) }

// SocketOf is the CPU socket of local GPU g.
func (s Server) SocketOf(g int) int { return g / (s.GPUs / s.Sockets) }

// NICOf is the local NIC on GPU g's PCIe switch, or -1.
func (s Server) NICOf(g int) int {
	per := s.GPUs / s.NICs
	if g%per == 0 {
		return g / per
	}
	return -1
}
