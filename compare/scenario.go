package compare

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/fabricsim/fabricsim/backend"
	"github.com/fabricsim/fabricsim/chakra"
	"github.com/fabricsim/fabricsim/datapath"
	"github.com/fabricsim/fabricsim/gpu"
	"github.com/fabricsim/fabricsim/scenario"
	"github.com/fabricsim/fabricsim/training"
	"github.com/fabricsim/fabricsim/units"
	"github.com/fabricsim/fabricsim/yamlstrict"
)

// Scenario is a compare file: one cluster, one training workload, several fabric variants.
// docs/compare.md documents every key.
type Scenario struct {
	Name string `yaml:"name" json:"name"`
	Seed uint64 `yaml:"seed" json:"seed"`
	// Backend runs the network phases: "packet" (every packet), "flow" (fluid flows with the
	// fabric's mechanisms), "analytic" (max-min fluid) or "auto" (the default: packet within
	// Options.AutoBudget, else flow; compare/auto.go).
	Backend backend.Name `yaml:"backend" json:"backend"`
	// Fidelity is auto, full (whole steps as one message graph) or classes (network collectives
	// class by class); auto runs whole steps up to FullStepPackets.
	Fidelity FidelityMode `yaml:"fidelity" json:"fidelity"`
	// Steps is how many training steps are simulated (each with its own seed), for the
	// step-to-step variation.
	Steps int `yaml:"steps" json:"steps"`
	// Noise varies the steps' compute times (stragglers, host noise) and sets how many network
	// seeds they draw from (noise.go, docs/jitter.md); nil: every step computes as planned.
	Noise *Noise `yaml:"noise" json:"noise,omitempty"`
	// Tokens to train, for the time and cost to train ("15T", "1e12").
	Tokens      string           `yaml:"tokens" json:"tokens"`
	TokensCount float64          `yaml:"-" json:"tokens_count"`
	Cluster     Cluster          `yaml:"cluster" json:"cluster"`
	Collective  Coll             `yaml:"collective" json:"collective"`
	Cost        Cost             `yaml:"cost" json:"cost"`
	Workload    *training.Config `yaml:"workload" json:"workload"`
	// Jobs share the cluster, each with its own workload, servers and traffic class (jobs.go,
	// docs/jobs.md); Workload is then nil.
	Jobs  []*Job `yaml:"jobs" json:"jobs,omitempty"`
	opJob []int  // jobs: each plan op's job
	// Faults hit every variant's steps (faults.go, docs/faults.md); FaultRecovery are the
	// control planes' timers, as in a run scenario.
	Faults        []Fault     `yaml:"faults" json:"faults,omitempty"`
	FaultRecovery FaultTimers `yaml:"fault_recovery" json:"fault_recovery,omitzero"`
	faultScen     *scenario.Scenario
	// Trace is a workload replayed from Chakra traces (trace.go); Workload is then nil.
	Trace *TraceWorkload `yaml:"-" json:"trace,omitempty"`
	// VariantList is the variants: list as written, Variants the variants it resolves to.
	VariantList VariantList `yaml:"variants" json:"-"`
	Variants    []*Variant  `yaml:"-" json:"variants"`
	// Tune is the tune: section as written, read by `fabricsim tune` (package tune: what to
	// search, the budget, the objective); compare itself ignores it.
	Tune   *yaml.Node `yaml:"tune" json:"-"`
	File   string     `yaml:"-" json:"file"`
	Dir    string     `yaml:"-" json:"-"`
	Source string     `yaml:"-" json:"source"` // the scenario file's text, echoed in compare.json
	d      *yamlstrict.Decoder
	server gpu.Server
	trace  *chakra.Job
}

// Cluster is the GPU cluster: servers of GPUs, one NIC per GPU, on a rail-optimized fabric.
type Cluster struct {
	Servers       int `yaml:"servers" json:"servers"`
	GPUsPerServer int `yaml:"gpus_per_server" json:"gpus_per_server"`
	// Topology is "rail-optimized" (NIC i of every server to a leaf of rail i, spines above).
	Topology string     `yaml:"topology" json:"topology"`
	LinkRate units.Rate `yaml:"link_rate" json:"link_rate"`
	// LinkLatency is the NIC-leaf propagation delay, SpineLatency the leaf-spine one.
	LinkLatency  units.Time `yaml:"link_latency" json:"link_latency"`
	SpineLatency units.Time `yaml:"spine_latency" json:"spine_latency"`
	Radix        int        `yaml:"radix" json:"radix"`
	// Oversubscription is leaf downlink : uplink capacity (1 = non-blocking, 3 = 3:1).
	Oversubscription float64 `yaml:"oversubscription" json:"oversubscription"`
	Spines           int     `yaml:"spines" json:"spines"`
	// Tiers is the number of switch tiers (2 or 3); 0 takes two when they hold the cluster, else
	// three (topo.Clos: scalable units of ServersPerSU servers with their own spines, a core
	// tier between the units).
	Tiers        int `yaml:"tiers" json:"tiers,omitempty"`
	ServersPerSU int `yaml:"servers_per_su" json:"servers_per_su,omitempty"`
	// SpineOversubscription is spine downlink : uplink capacity toward the cores (three tiers).
	SpineOversubscription float64 `yaml:"spine_oversubscription" json:"spine_oversubscription,omitempty"`
	// NICPorts puts port p of every NIC on plane p (2: a dual-plane fabric of independent
	// planes); RailPlanes gives every rail planes of its own. Each port runs at LinkRate.
	NICPorts   int  `yaml:"nic_ports" json:"nic_ports,omitempty"`
	RailPlanes bool `yaml:"rail_planes" json:"rail_planes,omitempty"`
	// SpineLinkRate and CoreLinkRate are the leaf-spine and spine-core link rates (default
	// LinkRate, e.g. 800Gbps uplinks over 400G NICs); CoreLatency the spine-core propagation
	// (default SpineLatency).
	SpineLinkRate units.Rate `yaml:"spine_link_rate" json:"spine_link_rate,omitempty"`
	CoreLinkRate  units.Rate `yaml:"core_link_rate" json:"core_link_rate,omitempty"`
	CoreLatency   units.Time `yaml:"core_latency" json:"core_latency,omitempty"`
	// NVLink is the per-GPU, per-direction NVLink bandwidth a ring collective achieves inside a
	// server, and NVLinkLatency the per-step latency.
	NVLink        units.Rate `yaml:"nvlink_rate" json:"nvlink_rate"`
	NVLinkLatency units.Time `yaml:"nvlink_latency" json:"nvlink_latency"`
	// DataPath is how GPU data reaches the NIC: gpudirect, rdma-host or host-staged.
	DataPath string `yaml:"data_path" json:"data_path"`
	// Server is the server model of package gpu (h100, a100, pcie) whose PCIe, copy and NVLink
	// figures set the data path and the NVLink defaults.
	Server string `yaml:"server" json:"server"`
}

// Coll holds the collective algorithm parameters (NCCL-like).
type Coll struct {
	Channels int        `yaml:"channels" json:"channels"`
	Chunk    units.Size `yaml:"chunk" json:"chunk"`
}

// Cost holds the cost options.
type Cost struct {
	// Catalogue is a price file merged over the built-in catalogue (cost.LoadCatalogue).
	Catalogue string `yaml:"catalogue" json:"catalogue,omitempty"`
	// Server is the catalogue key of the GPU server; ServerPrice overrides its price (USD).
	Server      string  `yaml:"server" json:"server"`
	ServerPrice float64 `yaml:"server_price" json:"server_price,omitempty"`
	// GPUPrice, when set, prices the servers as GPUs x GPUPrice (USD per GPU, server included).
	GPUPrice float64 `yaml:"gpu_price" json:"gpu_price,omitempty"`
	// AmortizationYears spreads capital cost over this life for the cost to train.
	AmortizationYears float64 `yaml:"amortization_years" json:"amortization_years"`
	TwinPortOptics    bool    `yaml:"twin_port_optics" json:"twin_port_optics"`
}

// Defaults (each a parameter; docs/compare.md gives the sources).
const (
	// DefaultLinkLatency: a 20 m rail cable at 5 ns/m (light in fibre, [EST]); DefaultSpineLatency 30 m.
	DefaultLinkLatency  = 100 * units.Nanosecond
	DefaultSpineLatency = 150 * units.Nanosecond
	// DefaultChunk is NCCL's Simple-protocol slice: a 4 MiB buffer in 8 steps = 512 KiB.
	DefaultChunk = 512 * units.KiB
	// DefaultChannels per ring (NCCL opens 2 per NIC on H100 nodes, est.).
	DefaultChannels = 2
	// MaxSteps is the most steps a compare simulates: enough for a step-time distribution's
	// 99th percentile (docs/jitter.md).
	MaxSteps = 1000
	// DefaultAmortizationYears: the usual 4-year depreciation of data-centre hardware (est.).
	DefaultAmortizationYears = 4
)

// Parse reads a compare scenario from YAML. name is used in messages, dir resolves relative
// paths (the cost catalogue).
func Parse(data []byte, name, dir string) (*Scenario, error) {
	root, err := yamlstrict.Parse(data, name, "a compare scenario: cluster, workload, variants")
	if err != nil {
		return nil, err
	}
	top := root.Content[0]
	if top.Kind != yaml.MappingNode {
		return nil, &Error{File: name, Pos: yamlstrict.Pos{Line: top.Line, Col: top.Column}, Msg: "want a mapping with keys name, cluster, workload, variants, cost"}
	}
	s := &Scenario{File: name, Dir: dir, Source: string(data), d: yamlstrict.NewDecoder(name)}
	rest, err := s.decodeTrace(top)
	if err != nil {
		return nil, err
	}
	if err := s.d.Decode(rest, reflect.ValueOf(s).Elem(), ""); err != nil {
		return nil, err
	}
	w := s.Workload
	if (w != nil || s.Trace != nil) && len(s.Jobs) > 0 {
		return nil, s.d.At("jobs", "a scenario has one workload or a jobs: list, not both")
	}
	if w == nil && s.Trace == nil && len(s.Jobs) == 0 {
		return nil, s.d.ErrAt(top, "workload", "missing: want e.g. {kind: training, model: llama3-8b, gpu: h100, tp: 8, dp: 8}, or {chakra: traces/step} for Chakra traces")
	}
	if w != nil && w.Kind != "" && w.Kind != "training" {
		return nil, s.d.At("workload.kind", "%q unknown (valid: training; Chakra traces: workload: {chakra: PREFIX})", w.Kind)
	}
	if s.Trace != nil {
		if err := s.loadTrace(); err != nil {
			return nil, err
		}
	}
	if err := s.defaults(); err != nil {
		return nil, err
	}
	if err := s.validate(); err != nil {
		return nil, err
	}
	if err := s.faultsCheck(); err != nil { // faults.go
		return nil, err
	}
	if err := s.loadVariants(); err != nil {
		return nil, err
	}
	return s, nil
}

// Load reads a compare scenario file.
func Load(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if pe, ok := err.(*os.PathError); ok {
			err = pe.Err // the path is already in the message
		}
		return nil, &Error{File: path, Msg: "cannot read scenario: " + err.Error()}
	}
	return Parse(data, path, filepath.Dir(path))
}

// Path resolves a path written in the scenario relative to its directory.
func (s *Scenario) Path(p string) string {
	if p == "" || filepath.IsAbs(p) || s.Dir == "" {
		return p
	}
	return filepath.Join(s.Dir, p)
}

func (s *Scenario) has(path string) bool { return s.d.Has(path) }

func (s *Scenario) defaults() error {
	if s.Name == "" {
		base := filepath.Base(s.File)
		s.Name = strings.TrimSuffix(base, filepath.Ext(base))
	}
	if !s.has("seed") {
		s.Seed = 1
	}
	if s.Backend == "" {
		s.Backend = backend.Auto
	}
	if s.Steps == 0 {
		s.Steps = 3
	}
	if s.Fidelity == "" {
		s.Fidelity = FidelityAuto
	}
	s.noiseDefaults()
	if s.Tokens == "" {
		s.Tokens = "1T"
	}
	c := &s.Cluster
	if c.Topology == "" {
		c.Topology = "rail-optimized"
	}
	if c.GPUsPerServer == 0 {
		c.GPUsPerServer = training.DefaultGPUsPerServer
	}
	if c.LinkRate == 0 {
		c.LinkRate = 400 * units.Gbps
	}
	if !s.has("cluster.link_latency") {
		c.LinkLatency = DefaultLinkLatency
	}
	if !s.has("cluster.spine_latency") {
		c.SpineLatency = DefaultSpineLatency
	}
	if c.Radix == 0 {
		c.Radix = 64
	}
	if c.Oversubscription == 0 {
		c.Oversubscription = 1
	}
	if c.Server == "" {
		c.Server = "h100"
	}
	srv, err := gpu.Preset(c.Server)
	if err != nil {
		return s.d.At("cluster.server", "%v", err)
	}
	s.server = srv
	// NVLink from the server model: per GPU and direction (H100: ~370 GB/s effective of 450,
	// [H100], [EST]), and per ring step GPU -> NVSwitch -> GPU.
	if c.NVLink == 0 {
		c.NVLink = srv.NVLink.Rate
	}
	if !s.has("cluster.nvlink_latency") {
		c.NVLinkLatency = 2*srv.NVLink.Latency + srv.NVSwitchLatency
	}
	if c.DataPath == "" {
		c.DataPath = "gpudirect"
	}
	if s.Collective.Channels == 0 {
		s.Collective.Channels = DefaultChannels
	}
	if !s.has("collective.chunk") {
		s.Collective.Chunk = DefaultChunk
	}
	if s.Cost.Server == "" {
		s.Cost.Server = "hgx-h100-server"
	}
	if s.Cost.AmortizationYears == 0 {
		s.Cost.AmortizationYears = DefaultAmortizationYears
	}
	if s.trace != nil {
		// A trace's ranks fill the servers, one per GPU, unless cluster.servers says otherwise.
		if n := s.trace.Plan.GPUs; c.Servers == 0 && n%c.GPUsPerServer == 0 {
			c.Servers = n / c.GPUsPerServer
		}
		return nil
	}
	if len(s.Jobs) > 0 {
		s.jobsDefaults() // jobs.go
		return nil
	}
	// The workload's GPU count and server size come from the cluster unless it says otherwise.
	w := s.Workload
	if w.GPUsPerServer == 0 {
		w.GPUsPerServer = c.GPUsPerServer
	} else if w.GPUsPerServer != c.GPUsPerServer {
		return s.d.At("workload.gpus_per_server", "%d conflicts with cluster.gpus_per_server %d (leave one out)", w.GPUsPerServer, c.GPUsPerServer)
	}
	if w.GPUs == 0 && c.Servers > 0 {
		w.GPUs = c.Servers * c.GPUsPerServer
	}
	return nil
}

func (s *Scenario) validate() error {
	c := &s.Cluster
	if _, err := backend.Parse(string(s.Backend)); err != nil {
		return s.d.At("backend", "%v", err)
	}
	if _, err := ParseFidelity(string(s.Fidelity)); err != nil {
		return s.d.At("fidelity", "%v", err)
	}
	switch {
	case s.Steps < 1 || s.Steps > MaxSteps:
		return s.d.At("steps", "%d: simulate 1..%d steps", s.Steps, MaxSteps)
	case c.Servers < 1:
		return s.d.At("cluster.servers", "missing or %d: want the number of GPU servers, e.g. 8", c.Servers)
	case c.GPUsPerServer < 1 || c.GPUsPerServer > 64:
		return s.d.At("cluster.gpus_per_server", "%d: want 1..64 (8 for HGX H100)", c.GPUsPerServer)
	case c.Topology != "rail-optimized":
		return s.d.At("cluster.topology", "%q unknown (valid: rail-optimized)", c.Topology)
	case c.LinkRate <= 0:
		return s.d.At("cluster.link_rate", "must be positive, e.g. 400Gbps")
	case c.LinkLatency < 0 || c.SpineLatency < 0 || c.NVLinkLatency < 0:
		return s.d.At("cluster", "latencies must not be negative")
	case c.NVLink <= 0:
		return s.d.At("cluster.nvlink_rate", "must be positive, e.g. 2960Gbps (370 GB/s); server %s has no NVLink", c.Server)
	case math.IsNaN(c.Oversubscription) || c.Oversubscription <= 0:
		return s.d.At("cluster.oversubscription", "%v: want a positive ratio such as 1 or 3", c.Oversubscription)
	case c.Tiers != 0 && (c.Tiers < 2 || c.Tiers > 3):
		return s.d.At("cluster.tiers", "%d: want 2 or 3 switch tiers (0 or absent: the fewest that hold the cluster)", c.Tiers)
	case c.ServersPerSU < 0:
		return s.d.At("cluster.servers_per_su", "%d: must not be negative", c.ServersPerSU)
	case math.IsNaN(c.SpineOversubscription) || c.SpineOversubscription < 0 || (s.has("cluster.spine_oversubscription") && c.SpineOversubscription == 0):
		return s.d.At("cluster.spine_oversubscription", "%v: want a positive ratio such as 1 or 2", c.SpineOversubscription)
	case c.NICPorts < 0 || c.NICPorts > 8:
		return s.d.At("cluster.nic_ports", "%d: want 1..8 ports per NIC, each on its own plane (2: dual-plane)", c.NICPorts)
	case c.SpineLinkRate < 0 || c.CoreLinkRate < 0 || c.CoreLatency < 0:
		return s.d.At("cluster", "spine and core link rates and latency must not be negative")
	case s.Collective.Channels < 1 || s.Collective.Channels > 64:
		return s.d.At("collective.channels", "%d: want 1..64", s.Collective.Channels)
	case s.Collective.Chunk < 0:
		return s.d.At("collective.chunk", "must not be negative (0: no pipelining)")
	case s.Cost.AmortizationYears <= 0:
		return s.d.At("cost.amortization_years", "must be positive")
	case s.Cost.ServerPrice < 0 || s.Cost.GPUPrice < 0:
		return s.d.At("cost", "prices must not be negative")
	}
	if err := s.noiseValidate(); err != nil {
		return err
	}
	if _, err := datapath.Parse(c.DataPath); err != nil {
		return s.d.At("cluster.data_path", "%q unknown (valid: %s)", c.DataPath, strings.Join(dataPathNames(), ", "))
	}
	n, err := parseCount(s.Tokens)
	if err != nil {
		return s.d.At("tokens", "%v", err)
	}
	s.TokensCount = n
	if s.trace != nil {
		if n := s.trace.Plan.GPUs; n != c.Servers*c.GPUsPerServer {
			return s.d.At("workload.chakra", "the traces have %d ranks (one per GPU), but the cluster has %d servers x %d = %d GPUs", n, c.Servers, c.GPUsPerServer, c.Servers*c.GPUsPerServer)
		}
		return nil
	}
	if len(s.Jobs) > 0 {
		if err := s.checkTopology(); err != nil {
			return err
		}
		return s.jobsValidate() // jobs.go
	}
	w := s.Workload
	if w.GPUs != c.Servers*c.GPUsPerServer {
		return s.d.At("workload.gpus", "%d GPUs, but the cluster has %d servers x %d = %d", w.GPUs, c.Servers, c.GPUsPerServer, c.Servers*c.GPUsPerServer)
	}
	cfg := *w
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return err
	}
	return s.checkTopology() // cluster.go: the network must build
}
