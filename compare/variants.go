package compare

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/scenario"
	"github.com/fabricsim/fabricsim/yamlstrict"
)

// Variant is one fabric the workload runs on.
type Variant struct {
	Name  string `json:"name"`
	Label string `json:"label"`
	Base  string `json:"base,omitempty"`
	// Kind is the fabric kind asked for (infiniband, roce, ethernet); CostFabric the BOM's
	// (infiniband or ethernet).
	Kind       fabric.Kind `json:"kind"`
	CostFabric string      `json:"cost_fabric"`
	// FabricYAML is the variant's fabric section after overrides, as loaded.
	FabricYAML string        `json:"fabric_yaml"`
	Fabric     fabric.Config `json:"fabric"`
	// Params is the parameter table of the report: the effective fabric configuration under
	// its scenario keys (paramTable).
	Params [][2]string `json:"params"`
	node   *yaml.Node
	// tunedFile and tunedNodes: the tune.json a from_tune variant read, and the positions of
	// the values it took from it, so that an error there names that file.
	tunedFile  string
	tunedNodes map[yamlstrict.Pos]bool
}

// builtinVariants are the variants a scenario gets without a variants: list, and the bases a
// listed variant can start from. The DCQCN values: ConnectX firmware defaults
// ([ConnectX-DCQCN]), and the production-tuned 400G values ByteDance reported ([ByteDance25]): CNP interval
// 0-2 us, minimum decrease factor 80-98 %, decrease period 1-4 us, additive increase 8-20 Mb/s,
// increase timer 20-100 us (the tuned variant takes values inside each range). The vendor
// default ECN thresholds are NVIDIA's "RoCE lossless" switch defaults, min 150 KB, max 1500 KB
// ([NVIDIA-RoCE]). InfiniBand runs adaptive routing, which NCCL turns on for IB messages above
// 8 KiB ([NCCL] NCCL_IB_AR_THRESHOLD).
const builtinVariants = `
- name: ib-ndr
  label: InfiniBand NDR (credit flow control, adaptive routing as NCCL enables it)
  fabric: {kind: infiniband, generation: ndr, adaptive_routing: true}
- name: roce-default
  label: RoCEv2, vendor defaults (ConnectX DCQCN, NVIDIA switch ECN 150 KB-1.5 MB, PFC)
  fabric: {kind: roce, dcqcn_preset: connectx, ecn_kmin: 150KB, ecn_kmax: 1500KB}
- name: roce-tuned
  label: RoCEv2, production-tuned DCQCN (ByteDance ATC'25 values)
  base: roce-default
  fabric:
    dcqcn_cnp_interval: 2us
    dcqcn_min_dec_factor: 0.9
    dcqcn_decrease_period: 2us
    dcqcn_rate_ai: 10Mbps
    dcqcn_increase_timer: 50us
- name: roce-pfc-only
  label: RoCEv2, PFC only (DCQCN and ECN off, as Meta ran it, SIGCOMM'24)
  fabric: {kind: roce, dcqcn: false, ecn: false}
`

// DefaultVariantNames are run when a scenario lists no variants.
var DefaultVariantNames = []string{"ib-ndr", "roce-default", "roce-tuned"}

// VariantSpec is one entry of a `variants:` list as written: the name of a built-in variant,
// or a mapping that names a variant and gives its fabric section, its base, or both.
type VariantSpec struct {
	Builtin string     `yaml:"-"`
	Name    string     `yaml:"name"`
	Label   string     `yaml:"label"`
	Base    string     `yaml:"base"`
	Fabric  *yaml.Node `yaml:"fabric"`
	// FromTune is a tune.json written by `fabricsim tune` (relative to the scenario): the
	// variant is the tuned variant (or Base, when given) with the winner's fabric settings,
	// and Fabric on top (tuned.go).
	FromTune string `yaml:"from_tune"`
}

// DecodeYAML reads a built-in variant's name or a variant mapping.
func (v *VariantSpec) DecodeYAML(d *yamlstrict.Decoder, n *yaml.Node, path string) error {
	switch n.Kind {
	case yaml.ScalarNode:
		*v = VariantSpec{Builtin: n.Value}
		return nil
	case yaml.MappingNode:
		type plain VariantSpec
		if err := d.Decode(n, reflect.ValueOf((*plain)(v)).Elem(), path); err != nil {
			return err
		}
		if v.Fabric != nil && v.Fabric.Kind != yaml.MappingNode {
			return d.ErrAt(v.Fabric, path+".fabric", "want a mapping of fabric keys (kind, mtu, ...)")
		}
		return nil
	}
	return d.ErrAt(n, path, "want a variant mapping {name, label, base, fabric, from_tune} or a built-in name")
}

// VariantList is a `variants:` list.
type VariantList []VariantSpec

// DecodeYAML reads the list.
func (l *VariantList) DecodeYAML(d *yamlstrict.Decoder, n *yaml.Node, path string) error {
	if n.Kind != yaml.SequenceNode {
		return d.ErrAt(n, path, "want a list of variants ({name, base, fabric}) or names of built-in ones")
	}
	var list []VariantSpec
	if err := d.Decode(n, reflect.ValueOf(&list).Elem(), path); err != nil {
		return err
	}
	*l = list
	return nil
}

// resolveVariants turns a decoded list into variants: built-ins copied, a base's fabric section
// merged under the variant's own, a tune result's settings (from_tune, read relative to dir)
// between the two. d holds the list's positions (at path).
func resolveVariants(list VariantList, d *yamlstrict.Decoder, path, dir string, builtin map[string]*Variant) ([]*Variant, error) {
	var out []*Variant
	known := map[string]*Variant{}
	for k, v := range builtin {
		known[k] = v
	}
	seen := map[string]bool{}
	for i, spec := range list {
		p := fmt.Sprintf("%s[%d]", path, i)
		item := d.Node(p)
		if spec.Builtin != "" {
			b, ok := builtin[spec.Builtin]
			if !ok {
				return nil, d.ErrAt(item, p, "%q is not a built-in variant (built-in: %s)", spec.Builtin, strings.Join(builtinNames(builtin), ", "))
			}
			v := *b
			if seen[v.Name] {
				return nil, d.ErrAt(item, p, "variant %q listed twice", v.Name)
			}
			seen[v.Name] = true
			out = append(out, &v)
			continue
		}
		v := &Variant{Name: spec.Name, Label: spec.Label, Base: spec.Base}
		if v.Name == "" {
			return nil, d.ErrAt(item, p+".name", "missing: every variant needs a name")
		}
		if seen[v.Name] {
			return nil, d.ErrAt(item, p+".name", "variant %q listed twice", v.Name)
		}
		seen[v.Name] = true
		var tuned *yaml.Node
		if spec.FromTune != "" {
			t, err := readTuned(spec.FromTune, dir)
			if err != nil {
				return nil, d.At(p+".from_tune", "%v", err)
			}
			if v.Base == "" {
				if t.Variant == "" {
					return nil, d.At(p+".from_tune", "%s tuned a run scenario's fabric, not a compare variant: give base: (e.g. roce-default) to apply its settings to", spec.FromTune)
				}
				v.Base = t.Variant
			}
			if v.Label == "" {
				v.Label = fmt.Sprintf("RoCEv2, autotuned by fabricsim tune (%s, from %s)", spec.FromTune, v.Base)
			}
			tuned, v.tunedFile, v.tunedNodes = t.Fabric, t.Path, t.nodes
		}
		var base *yaml.Node
		if v.Base != "" {
			b, ok := known[v.Base]
			if !ok {
				return nil, d.ErrAt(item, p+".base", "%q is neither a built-in variant nor one listed above (known: %s)", v.Base, strings.Join(builtinNames(known), ", "))
			}
			base = b.node
			if v.Label == "" {
				v.Label = b.Label + " (modified)"
			}
		} else if spec.Fabric == nil {
			return nil, d.ErrAt(item, p, "variant %q needs a fabric: section or a base: to start from", v.Name)
		}
		v.node = mergeNode(mergeNode(base, tuned), spec.Fabric)
		if v.Label == "" {
			v.Label = v.Name
		}
		known[v.Name] = v
		out = append(out, v)
	}
	return out, nil
}

func builtinNames(m map[string]*Variant) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// builtins parses the built-in variants.
func builtins() map[string]*Variant {
	var root yaml.Node
	if err := yaml.Unmarshal([]byte(builtinVariants), &root); err != nil {
		panic("compare: built-in variants: " + err.Error())
	}
	d := yamlstrict.NewDecoder("<built-in variants>")
	var list VariantList
	if err := d.Decode(&root, reflect.ValueOf(&list).Elem(), "variants"); err != nil {
		panic("compare: built-in variants: " + err.Error())
	}
	vs, err := resolveVariants(list, d, "variants", "", map[string]*Variant{})
	if err != nil {
		panic("compare: built-in variants: " + err.Error())
	}
	out := map[string]*Variant{}
	for _, v := range vs {
		out[v.Name] = v
	}
	return out
}

// BuiltinVariants lists the built-in variants' names and labels.
func BuiltinVariants() [][2]string {
	b := builtins()
	var out [][2]string
	for _, n := range builtinNames(b) {
		out = append(out, [2]string{n, b[n].Label})
	}
	return out
}

func (s *Scenario) loadVariants() error {
	b := builtins()
	var vs []*Variant
	if !s.d.Has("variants") {
		for _, n := range DefaultVariantNames {
			v := *b[n]
			vs = append(vs, &v)
		}
	} else {
		var err error
		if vs, err = resolveVariants(s.VariantList, s.d, "variants", s.Dir, b); err != nil {
			return err
		}
		if len(vs) == 0 {
			return s.d.At("variants", "the list is empty: name at least one variant (built-in: %s)", strings.Join(builtinNames(b), ", "))
		}
	}
	for _, v := range vs {
		if err := s.resolveFabric(v); err != nil {
			return err
		}
	}
	s.Variants = vs
	return nil
}

// resolveFabric loads the variant's fabric section through the scenario loader (strict, with
// the positions of the file it came from) inside a stand-in scenario whose topology has the
// cluster's link rate, and takes the packet backend's configuration from it.
func (s *Scenario) resolveFabric(v *Variant) error {
	node := v.node
	link := mapping("rate", s.Cluster.LinkRate.String(), "latency", s.Cluster.LinkLatency.String())
	doc := mapping(
		"name", v.Name,
		"seed", s.Seed,
		"topology", mapping("kind", "leaf-spine", "leaves", 1, "spines", 0, "hosts_per_leaf", 2, "host_link", link),
		"fabric", node,
		"traffic", mapping("kind", "permutation"),
	)
	sc, err := scenario.ParseNode(doc, s.File, s.Dir)
	if err != nil {
		var se *scenario.Error
		if errors.As(err, &se) {
			// Name the variant in the field path: "variants[roce-x].fabric.dcqcn_rate_ai".
			se.Field = "variants[" + v.Name + "]." + se.Field
			if v.tunedNodes[se.Pos] {
				se.File = v.tunedFile // a value read from the tune result: its own line
			}
			return se
		}
		return s.d.At("variants", "variant %s: %v", v.Name, err)
	}
	v.Fabric = sc.FabricConfig()
	v.Kind, v.CostFabric = v.Fabric.Kind, "ethernet"
	if v.Kind == fabric.KindInfiniBand {
		v.CostFabric = "infiniband"
	}
	if err := v.Fabric.Validate(); err != nil {
		return s.d.At("variants", "variant %s: %v", v.Name, err)
	}
	out, _ := yaml.Marshal(v.node)
	v.FabricYAML = string(out)
	v.Params = paramTable(v.Fabric)
	return nil
}

// paramTable lists a variant's effective fabric settings for the report under their scenario
// keys ("fabric.dcqcn_rate_ai"), written as a scenario would write them: the keys of every kind
// first, then the variant kind's own.
func paramTable(c fabric.Config) [][2]string {
	var generic, own [][2]string
	v := reflect.ValueOf(c)
	for _, k := range fabric.Keys() {
		if !k.For(c.Kind) {
			continue
		}
		row := [2]string{"fabric." + k.Name, yamlstrict.Text(v.FieldByIndex(k.Index))}
		if k.Kind == "" {
			generic = append(generic, row)
		} else {
			own = append(own, row)
		}
	}
	return append(generic, own...)
}

// ParamRows merges the variants' parameter tables into one: a row per key (the keys of every
// kind first, then each kind's, in the fabric's declaration order), a cell per variant (""
// where a variant's kind has no such key), and whether the values differ between variants.
func ParamRows(vs []*Variant) (keys []string, cells [][]string, differ []bool) {
	rank := map[string]int{}
	for _, generic := range []bool{true, false} {
		for _, k := range fabric.Keys() {
			if (k.Kind == "") == generic {
				rank["fabric."+k.Name] = len(rank)
			}
		}
	}
	at := map[string]int{}
	for _, v := range vs {
		for _, kv := range v.Params {
			if _, ok := at[kv[0]]; !ok {
				at[kv[0]] = len(keys)
				keys = append(keys, kv[0])
			}
		}
	}
	sort.SliceStable(keys, func(i, j int) bool { return rank[keys[i]] < rank[keys[j]] })
	for r, k := range keys {
		at[k] = r
	}
	cells = make([][]string, len(keys))
	for r := range cells {
		cells[r] = make([]string, len(vs))
	}
	for i, v := range vs {
		for _, kv := range v.Params {
			cells[at[kv[0]]][i] = kv[1]
		}
	}
	differ = make([]bool, len(keys))
	for r, row := range cells {
		for _, c := range row[1:] {
			differ[r] = differ[r] || c != row[0]
		}
	}
	return keys, cells, differ
}
