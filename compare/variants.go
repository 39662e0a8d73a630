package compare

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/scenario"
	"github.com/fabricsim/fabricsim/units"
	"github.com/fabricsim/fabricsim/yamlstrict"
)

// Variant is one fabric the workload runs on.
type Variant struct {
	Name  string `json:"name"`
	Label string `json:"label"`
	Base  string `json:"base,omitempty"`
	// Kind is the fabric kind asked for (infiniband, roce, ethernet); CostFabric the BOM's
	// (infiniband or ethernet).
	Kind       string `json:"kind"`
	CostFabric string `json:"cost_fabric"`
	// Fallback says why the variant ran on a stand-in (a fabric kind not in this build).
	Fallback string `json:"fallback,omitempty"`
	// FabricYAML is the variant's fabric section after overrides, as loaded.
	FabricYAML string        `json:"fabric_yaml"`
	Fabric     fabric.Config `json:"fabric"`
	// Params is the parameter table of the report: the effective fabric configuration.
	Params [][2]string `json:"params"`
	node   *yaml.Node
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

func parseVariantList(n *yaml.Node, d *yamlstrict.Decoder, path string, builtin map[string]*Variant) ([]*Variant, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, d.ErrAt(n, path, "want a list of variants ({name, base, fabric}) or names of built-in ones")
	}
	var out []*Variant
	known := map[string]*Variant{}
	for k, v := range builtin {
		known[k] = v
	}
	seen := map[string]bool{}
	for i, item := range n.Content {
		p := fmt.Sprintf("%s[%d]", path, i)
		if item.Kind == yaml.ScalarNode {
			b, ok := builtin[item.Value]
			if !ok {
				return nil, d.ErrAt(item, p, "%q is not a built-in variant (built-in: %s)", item.Value, strings.Join(builtinNames(builtin), ", "))
			}
			v := *b
			if seen[v.Name] {
				return nil, d.ErrAt(item, p, "variant %q listed twice", v.Name)
			}
			seen[v.Name] = true
			out = append(out, &v)
			continue
		}
		if item.Kind != yaml.MappingNode {
			return nil, d.ErrAt(item, p, "want a variant mapping {name, label, base, fabric} or a built-in name")
		}
		v := &Variant{}
		var fab *yaml.Node
		for j := 0; j+1 < len(item.Content); j += 2 {
			k, val := item.Content[j], item.Content[j+1]
			switch k.Value {
			case "name", "label", "base":
				if val.Kind != yaml.ScalarNode {
					return nil, d.ErrAt(val, p+"."+k.Value, "want a single value")
				}
				switch k.Value {
				case "name":
					v.Name = val.Value
				case "label":
					v.Label = val.Value
				case "base":
					v.Base = val.Value
				}
			case "fabric":
				if val.Kind != yaml.MappingNode {
					return nil, d.ErrAt(val, p+".fabric", "want a mapping of fabric keys (kind, mtu, ...)")
				}
				fab = val
			default:
				return nil, d.ErrAt(k, p+"."+k.Value, "unknown key (valid keys here: base, fabric, label, name)")
			}
		}
		if v.Name == "" {
			return nil, d.ErrAt(item, p+".name", "missing: every variant needs a name")
		}
		if seen[v.Name] {
			return nil, d.ErrAt(item, p+".name", "variant %q listed twice", v.Name)
		}
		seen[v.Name] = true
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
		} else if fab == nil {
			return nil, d.ErrAt(item, p, "variant %q needs a fabric: section or a base: to start from", v.Name)
		}
		v.node = mergeNode(base, fab)
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
	vs, err := parseVariantList(root.Content[0], d, "variants", map[string]*Variant{})
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
	if s.variantsNode == nil {
		for _, n := range DefaultVariantNames {
			v := *b[n]
			vs = append(vs, &v)
		}
	} else {
		var err error
		if vs, err = parseVariantList(s.variantsNode, s.d, "variants", b); err != nil {
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

// kindLanded reports whether this build's scenario loader knows fabric kind k's own keys.
func kindLanded(k string) bool {
	switch k {
	case "roce":
		return reflect.TypeOf(scenario.RoCE{}).NumField() > 0
	case "infiniband":
		return reflect.TypeOf(scenario.InfiniBand{}).NumField() > 0
	}
	return true
}

// genericKeys are the fabric keys every kind has (scenario.Fabric's own fields).
func genericKeys() map[string]bool {
	out := map[string]bool{}
	t := reflect.TypeOf(scenario.Fabric{})
	for i := 0; i < t.NumField(); i++ {
		tag := t.Field(i).Tag.Get("yaml")
		name, _, _ := strings.Cut(tag, ",")
		if name != "" && name != "-" {
			out[name] = true
		}
	}
	return out
}

// resolveFabric loads the variant's fabric section through the scenario loader (strict, with
// the positions of the file it came from) inside a stand-in scenario whose topology has the
// cluster's link rate, and takes the packet backend's configuration from it.
func (s *Scenario) resolveFabric(v *Variant) error {
	node := v.node
	kind := "ethernet"
	if k := lookup(node, "kind"); k != nil {
		kind = k.Value
	}
	v.Kind = kind
	v.CostFabric = "ethernet"
	if kind == "infiniband" {
		v.CostFabric = "infiniband"
	}
	if !kindLanded(kind) {
		// Keep only the generic keys and run the generic Ethernet fabric with this kind's framing.
		g := genericKeys()
		stripped := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: node.Line, Column: node.Column}
		var dropped []string
		for i := 0; i+1 < len(node.Content); i += 2 {
			k := node.Content[i].Value
			if k == "kind" {
				continue
			}
			if g[k] {
				stripped.Content = append(stripped.Content, node.Content[i], node.Content[i+1])
			} else {
				dropped = append(dropped, k)
			}
		}
		node = mergeNode(fallbackFraming(kind), stripped)
		v.Fallback = fmt.Sprintf("fabric kind %q is not in this build: ran the generic ethernet fabric with %s framing and latency (no %s)",
			kind, kind, map[string]string{"roce": "PFC, ECN or DCQCN", "infiniband": "credit flow control or adaptive routing"}[kind])
		if len(dropped) > 0 {
			v.Fallback += "; ignored: " + strings.Join(dropped, ", ")
		}
	}
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
			return se
		}
		return s.d.At("variants", "variant %s: %v", v.Name, err)
	}
	v.Fabric = sc.FabricConfig()
	if err := v.Fabric.Validate(); err != nil {
		return s.d.At("variants", "variant %s: %v", v.Name, err)
	}
	out, _ := yaml.Marshal(v.node)
	v.FabricYAML = string(out)
	v.Params = flattenConfig(v.Fabric)
	return nil
}

// fallbackFraming is the stand-in fabric of a kind not yet in the build: its framing and switch
// latency on the generic fabric.
func fallbackFraming(kind string) *yaml.Node {
	switch kind {
	case "infiniband":
		// LRH 8 + BTH 12 + ICRC 4 + VCRC 2 = 26 B; ACK adds AETH 4; no preamble/IFG
		// ([IBA] Vol. 1); NDR switch 130-150 ns ([QM9700], est.).
		return mapping("kind", "ethernet", "header_bytes", 26, "ack_bytes", 30, "l1_overhead", 0, "switch_latency", "140ns")
	case "roce":
		// Ethernet 14 + 802.1Q 4 + IPv4 20 + UDP 8 + BTH 12 + ICRC 4 + FCS 4 = 66 B ([IBA] Annex A17).
		return mapping("kind", "ethernet", "header_bytes", 66, "ack_bytes", 70)
	}
	return mapping("kind", "ethernet")
}

// flattenConfig lists a fabric configuration as dotted key/value pairs for the report, with
// units written out; the other kinds' parameter blocks are left out.
func flattenConfig(c fabric.Config) [][2]string {
	var out [][2]string
	var walk func(prefix string, v reflect.Value)
	walk = func(prefix string, v reflect.Value) {
		switch v.Type() {
		case reflect.TypeOf(units.Time(0)):
			out = append(out, [2]string{prefix, units.Time(v.Int()).String()})
			return
		case reflect.TypeOf(units.Size(0)):
			out = append(out, [2]string{prefix, units.Size(v.Int()).String()})
			return
		case reflect.TypeOf(units.Rate(0)):
			out = append(out, [2]string{prefix, units.Rate(v.Int()).String()})
			return
		}
		switch v.Kind() {
		case reflect.Struct:
			t := v.Type()
			for i := 0; i < t.NumField(); i++ {
				f := t.Field(i)
				if !f.IsExported() {
					continue
				}
				if prefix == "" && ((f.Name == "RoCE" && c.Kind != "roce") || (f.Name == "IB" && c.Kind != "infiniband")) {
					continue
				}
				p := f.Name
				if prefix != "" {
					p = prefix + "." + f.Name
				}
				walk(p, v.Field(i))
			}
		case reflect.Float64, reflect.Float32:
			out = append(out, [2]string{prefix, strconv.FormatFloat(v.Float(), 'g', -1, 64)})
		case reflect.Slice, reflect.Array, reflect.Map, reflect.Pointer, reflect.Interface:
			b, _ := json.Marshal(v.Interface())
			out = append(out, [2]string{prefix, string(b)})
		default:
			out = append(out, [2]string{prefix, fmt.Sprint(v.Interface())})
		}
	}
	walk("", reflect.ValueOf(c))
	return out
}
