// Package scenario reads fabricsim's scenario files: a cluster network (topology), how it
// forwards and recovers packets (fabric), and the traffic to run on it. Decoding is strict (an
// unknown key is an error), defaults are filled in for what the file leaves out, and every error
// names file:line:column and the dotted field path. docs/scenario.md documents every field.
package scenario

import (
	"os"
	"path/filepath"
	"reflect"

	"go.yaml.in/yaml/v3"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/units"
	"github.com/fabricsim/fabricsim/yamlstrict"
)

// Scenario is one scenario file.
type Scenario struct {
	Name string `yaml:"name"`
	Seed uint64 `yaml:"seed"`
	// Backend runs the scenario: "packet" (every packet) or "analytic" (the fluid model);
	// package backend lists them.
	Backend string `yaml:"backend"`
	// Duration stops the run at this simulated time; 0 runs until every message completes.
	Duration units.Time `yaml:"duration"`
	Topology Topology   `yaml:"topology"`
	// Fabric decodes into the packet backend's configuration (fabric.go).
	Fabric  Fabric  `yaml:"fabric"`
	Traffic Traffic `yaml:"traffic"`
	// Faults are the run's faults, FaultRecovery the control plane's timers that decide how
	// long they stall traffic (faults.go, docs/faults.md).
	Faults        []FaultSpec          `yaml:"faults"`
	FaultRecovery fabric.FaultRecovery `yaml:"fault_recovery"`
	// Tune is the tune: section as written, read by `fabricsim tune` (package tune: what to
	// search, the budget, the objective); a run ignores it.
	Tune *yaml.Node `yaml:"tune"`

	// File is the path the scenario was read from ("<embedded>/x.yaml" for built-ins); Dir
	// resolves relative file references. Neither is part of the YAML.
	File string `yaml:"-"`
	Dir  string `yaml:"-"`

	d *yamlstrict.Decoder
	// stormPerVariant: a pfc_storm is not checked against this fabric (a compare applies it to
	// its RoCE variants with PFC; FaultsFrom).
	stormPerVariant bool
}

// Link is a link class.
type Link struct {
	Rate    units.Rate `yaml:"rate"`
	Latency units.Time `yaml:"latency"`
}

// Topology selects and sizes the network.
type Topology struct {
	// Kind is fat-tree, leaf-spine, clos or hpcc.
	Kind string `yaml:"kind"`
	// fat-tree
	K    int  `yaml:"k"`
	Link Link `yaml:"link"`
	// leaf-spine
	Leaves           int     `yaml:"leaves"`
	Spines           int     `yaml:"spines"`
	HostsPerLeaf     int     `yaml:"hosts_per_leaf"`
	HostLink         Link    `yaml:"host_link"`
	SpineLink        Link    `yaml:"spine_link"`
	Oversubscription float64 `yaml:"oversubscription"`
	// clos (topo.Clos; also spines, host_link, spine_link, oversubscription above)
	Servers               int     `yaml:"servers"`
	NICsPerServer         int     `yaml:"nics_per_server"`
	NICPorts              int     `yaml:"nic_ports"`
	RailPlanes            bool    `yaml:"rail_planes"`
	RailOptimized         bool    `yaml:"rail_optimized"`
	Tiers                 int     `yaml:"tiers"`
	Radix                 int     `yaml:"radix"`
	ServersPerSU          int     `yaml:"servers_per_su"`
	SpineOversubscription float64 `yaml:"spine_oversubscription"`
	CoreLink              Link    `yaml:"core_link"`
	// hpcc
	File string `yaml:"file"`
}

// Flow is one explicit flow of `traffic: {kind: flows}`.
type Flow struct {
	Src   int        `yaml:"src"`
	Dst   int        `yaml:"dst"`
	Size  units.Size `yaml:"size"`
	Start units.Time `yaml:"start"`
	// Prio is the traffic class the flow asks for: the RoCE priority, the InfiniBand SL.
	Prio uint8 `yaml:"prio"`
}

// Traffic is the workload.
type Traffic struct {
	// Kind is permutation, shift, incast, all-to-all, flows, hpcc or htsim.
	Kind  string     `yaml:"kind"`
	Size  units.Size `yaml:"size"`
	Start units.Time `yaml:"start"`
	// Hosts limits generated traffic to hosts 0..Hosts-1 (0 = all hosts).
	Hosts int `yaml:"hosts"`
	// Offset is the shift of `kind: shift` (host i sends to host (i+offset) mod hosts).
	Offset int `yaml:"offset"`
	// Senders is the incast fan-in: hosts Receiver+1 .. Receiver+Senders (mod hosts), unless
	// SenderHosts lists them.
	Senders     int    `yaml:"senders"`
	SenderHosts []int  `yaml:"sender_hosts"`
	Receiver    int    `yaml:"receiver"`
	Flows       []Flow `yaml:"flows"`
	File        string `yaml:"file"`
}

// Parse decodes and validates a scenario from YAML. name is used in messages; dir resolves
// relative paths in the file.
func Parse(data []byte, name, dir string) (*Scenario, error) {
	root, err := yamlstrict.Parse(data, name, "a scenario: name, topology, fabric, traffic")
	if err != nil {
		return nil, err
	}
	return ParseNode(root, name, dir)
}

// ParseNode is Parse for a document already decoded into a YAML node tree. Positions in errors
// are the nodes' own, so a caller that assembles a scenario from parts of another file (the
// fabric variants of a compare scenario) reports the lines the user wrote; name is the file
// those lines are in.
func ParseNode(root *yaml.Node, name, dir string) (*Scenario, error) {
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	if n.Kind != yaml.MappingNode {
		return nil, &Error{File: name, Pos: Pos{Line: n.Line, Col: n.Column}, Msg: "want a mapping with keys name, seed, topology, fabric, traffic"}
	}
	s := &Scenario{File: name, Dir: dir, d: yamlstrict.NewDecoder(name)}
	if err := s.d.Decode(n, reflect.ValueOf(s).Elem(), ""); err != nil {
		return nil, err
	}
	if err := s.decodeFabric(); err != nil {
		return nil, err
	}
	s.applyDefaults()
	if err := s.validate(); err != nil {
		return nil, err
	}
	return s, nil
}

// Load reads a scenario file.
func Load(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &Error{File: path, Msg: "cannot read scenario: " + unwrapPathErr(err)}
	}
	return Parse(data, path, filepath.Dir(path))
}

// Path resolves a path written in the scenario relative to the scenario's directory.
func (s *Scenario) Path(p string) string {
	if filepath.IsAbs(p) || s.Dir == "" {
		return p
	}
	return filepath.Join(s.Dir, p)
}

// Pos is a position in a source file.
type Pos = yamlstrict.Pos

// Error is a scenario error: file, position, the dotted field path and what is wrong.
type Error = yamlstrict.Error

// errf returns an error at the position of field path (or its nearest written parent).
func (s *Scenario) errf(path, format string, args ...any) error {
	return s.d.At(path, format, args...)
}

// Has reports whether the file set field path.
func (s *Scenario) Has(path string) bool { return s.d.Has(path) }
