package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/fabricsim/fabricsim/compare"
	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/roceconf"
	"github.com/fabricsim/fabricsim/scenario"
	"github.com/fabricsim/fabricsim/units"
)

type exportFlags struct {
	format, variant, out, rate, cable, ports string
}

func newConfigExportCmd() *cobra.Command {
	var f exportFlags
	c := &cobra.Command{
		Use:   "config-export --format nvue|sonic|eos|connectx [--variant NAME] [--out FILE] SOURCE",
		Short: "Write a RoCE fabric's PFC, ECN and DCQCN settings as switch or NIC configuration",
		Long: `config-export writes the RoCE settings of SOURCE as real configuration (docs/config-export.md):

  nvue      NVIDIA Cumulus Linux NVUE commands (nv set qos ...)
  sonic     a SONiC config_db.json fragment (WRED_PROFILE, BUFFER_*, PORT_QOS_MAP, QUEUE, SCHEDULER, PFC_WD)
  eos       Arista EOS CLI (a qos profile, uc-tx-queue ECN, priority-flow-control, watchdog)
  connectx  the host side: mlnx_qos, the mlx5 DCQCN cc_params, the MTU, NCCL's QPs per connection

SOURCE is a run scenario with a roce fabric, a compare scenario with --variant naming a roce
variant, or a tune.json ({"scenario": PATH, "variant": NAME, "best": {"fabric": {KEY: VALUE}}}:
the best fabric keys merged over the scenario's, or over the variant's). ECN thresholds and the
PFC headroom that fabricsim sizes per port are written for a port of the scenario's host link
(--rate and --cable override it). Values a format holds only rounded are noted on stderr; a
value outside a format's range is an error naming the scenario key (exit 2). The same input
gives the same bytes.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error { return runConfigExport(c, args[0], &f) },
	}
	c.Flags().StringVar(&f.format, "format", "", "nvue, sonic, eos or connectx (required)")
	c.Flags().StringVar(&f.variant, "variant", "", "the compare scenario's variant to export (a roce one)")
	c.Flags().StringVar(&f.out, "out", "", "write to this file instead of stdout")
	c.Flags().StringVar(&f.rate, "rate", "", "port rate the per-port values are for (default: the host link's)")
	c.Flags().StringVar(&f.cable, "cable", "", "cable length, e.g. 7m (default: the host link's latency at 5 ns/m)")
	c.Flags().StringVar(&f.ports, "ports", "", "interfaces the per-port settings name, comma-separated (default: swp1, Ethernet0, Ethernet1/1, eth0)")
	return c
}

func runConfigExport(c *cobra.Command, source string, f *exportFlags) error {
	if f.format == "" {
		return usageErr(fmt.Errorf("--format is required (valid: %s)", roceconf.FormatNames()))
	}
	format, err := roceconf.ParseFormat(f.format)
	if err != nil {
		return usageErr(fmt.Errorf("--format: %v", err))
	}
	cfg, t, err := exportSource(source, f.variant)
	if err != nil {
		return usageErr(err)
	}
	if f.rate != "" {
		r, err := units.ParseRate(f.rate)
		if err != nil {
			return usageErr(fmt.Errorf("--rate %q: want a link rate such as 100G or 400Gbps", f.rate))
		}
		t.Rate = r
	}
	if f.cable != "" {
		m, err := parseMetres(f.cable)
		if err != nil {
			return usageErr(err)
		}
		t.Latency = units.Time(m * 5 * float64(units.Nanosecond))
	}
	if f.ports != "" {
		for _, p := range strings.Split(f.ports, ",") {
			if p = strings.TrimSpace(p); p == "" || strings.ContainsAny(p, " \t\"'|") {
				return usageErr(fmt.Errorf("--ports %q: want interface names separated by commas", f.ports))
			}
			t.Ports = append(t.Ports, strings.TrimSpace(p))
		}
	}
	var buf bytes.Buffer
	notes, err := roceconf.Export(&buf, format, cfg, t)
	if err != nil {
		return usageErr(fmt.Errorf("%s: %v", source, err))
	}
	for _, n := range notes {
		fmt.Fprintf(c.ErrOrStderr(), "fabricsim: note: %s\n", n)
	}
	return writeOut(c.OutOrStdout(), f.out, buf.Bytes())
}

// writeOut writes data to path, or to w when path is "".
func writeOut(w io.Writer, path string, data []byte) error {
	if path == "" {
		_, err := w.Write(data)
		return err
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return failureErr(fmt.Errorf("--out %s: %v", path, err))
	}
	return nil
}

// exportSource loads SOURCE's RoCE fabric configuration and the port it is sized for.
func exportSource(path, variant string) (fabric.Config, roceconf.Target, error) {
	var t roceconf.Target
	data, err := os.ReadFile(path)
	if err != nil {
		return fabric.Config{}, t, fileErr(path, "source", err)
	}
	if bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) && strings.HasSuffix(path, ".json") {
		return tuneSource(path, data, variant)
	}
	return scenarioSource(path, data, variant, "")
}

// scenarioSource reads a run or compare scenario (data, named name in messages when not "").
func scenarioSource(path string, data []byte, variant, name string) (fabric.Config, roceconf.Target, error) {
	var t roceconf.Target
	if name == "" {
		name = path
	}
	t.Source = filepath.Base(path)
	if fileKind(data) == kindCompare {
		s, err := compare.Parse(data, name, dirOf(path))
		if err != nil {
			return fabric.Config{}, t, err
		}
		var roce []string
		for _, v := range s.Variants {
			if v.Kind == fabric.KindRoCE {
				roce = append(roce, v.Name)
			}
		}
		if variant == "" {
			return fabric.Config{}, t, fmt.Errorf("%s is a compare scenario: name the variant to export with --variant (roce variants: %s)", name, strings.Join(roce, ", "))
		}
		for _, v := range s.Variants {
			if v.Name != variant {
				continue
			}
			if v.Kind != fabric.KindRoCE {
				return fabric.Config{}, t, fmt.Errorf("--variant %s: its fabric is %s; config-export writes RoCE settings (roce variants: %s)", variant, v.Kind, strings.Join(roce, ", "))
			}
			t.Rate, t.Latency = s.Cluster.LinkRate, s.Cluster.LinkLatency
			t.Source += " variant " + variant
			return v.Fabric, t, nil
		}
		var all []string
		for _, v := range s.Variants {
			all = append(all, v.Name)
		}
		return fabric.Config{}, t, fmt.Errorf("--variant %s: %s has no such variant (variants: %s)", variant, name, strings.Join(all, ", "))
	}
	if variant != "" {
		return fabric.Config{}, t, fmt.Errorf("--variant %s: %s is a run scenario, which has one fabric", variant, name)
	}
	s, err := scenario.Parse(data, name, dirOf(path))
	if err != nil {
		return fabric.Config{}, t, err
	}
	cfg := s.FabricConfig()
	if cfg.Kind != fabric.KindRoCE {
		return fabric.Config{}, t, fmt.Errorf("%s: fabric kind %q; config-export writes RoCE settings (kind roce)", name, cfg.Kind)
	}
	g, err := s.BuildTopology()
	if err != nil {
		return fabric.Config{}, t, err
	}
	if len(g.Hosts) == 0 {
		return fabric.Config{}, t, fmt.Errorf("%s: the topology has no hosts", name)
	}
	l := g.PortLink(g.Hosts[0], 0)
	t.Rate, t.Latency = l.Rate, l.Latency
	return cfg, t, nil
}

// tuneFile is the part of a tune.json config-export reads: the scenario tuned, the variant the
// search started from (compare scenarios) and the best candidate's fabric keys.
type tuneFile struct {
	Scenario string `json:"scenario"`
	Variant  string `json:"variant"`
	Best     struct {
		Fabric map[string]json.RawMessage `json:"fabric"`
	} `json:"best"`
}

// tuneSource merges the best candidate's fabric keys over the tuned scenario's fabric section
// (a run scenario) or adds them as a variant based on the tuned one (a compare scenario).
func tuneSource(path string, data []byte, variant string) (fabric.Config, roceconf.Target, error) {
	var tf tuneFile
	var t roceconf.Target
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&tf); err != nil {
		return fabric.Config{}, t, fmt.Errorf("%s: not a tune result: %v", path, err)
	}
	if tf.Scenario == "" || tf.Best.Fabric == nil {
		return fabric.Config{}, t, fmt.Errorf(`%s: a tune result needs "scenario" (the tuned scenario's path) and "best": {"fabric": {...}}`, path)
	}
	sp := tf.Scenario
	if !filepath.IsAbs(sp) {
		sp = filepath.Join(filepath.Dir(path), sp)
	}
	sdata, err := os.ReadFile(sp)
	if err != nil {
		return fabric.Config{}, t, fileErr(sp, "the tuned scenario", err)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(sdata, &root); err != nil || len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return fabric.Config{}, t, fmt.Errorf("%s: not a scenario", sp)
	}
	best, err := jsonMapping(tf.Best.Fabric)
	if err != nil {
		return fabric.Config{}, t, fmt.Errorf(`%s: "best.fabric": %v`, path, err)
	}
	doc := root.Content[0]
	name := fmt.Sprintf("%s (the best of %s)", sp, path)
	if fileKind(sdata) == kindCompare {
		if variant == "" {
			variant = tf.Variant
		}
		if variant == "" {
			return fabric.Config{}, t, fmt.Errorf(`%s: tuned a compare scenario: name the variant the best fabric keys apply to (--variant, or "variant" in the file)`, path)
		}
		v := &yaml.Node{Kind: yaml.MappingNode}
		v.Content = append(v.Content, scalarNode("name"), scalarNode("tuned"), scalarNode("base"), scalarNode(variant), scalarNode("fabric"), best)
		list := mapValue(doc, "variants")
		if list == nil {
			list = &yaml.Node{Kind: yaml.SequenceNode}
			for _, n := range compare.DefaultVariantNames {
				list.Content = append(list.Content, scalarNode(n))
			}
			doc.Content = append(doc.Content, scalarNode("variants"), list)
		}
		list.Content = append(list.Content, v)
		out, err := marshalYAML(&root)
		if err != nil {
			return fabric.Config{}, t, err
		}
		cfg, t, err := scenarioSource(sp, out, "tuned", name)
		t.Source = fmt.Sprintf("%s variant %s tuned (%s)", filepath.Base(sp), variant, filepath.Base(path))
		return cfg, t, err
	}
	if variant != "" {
		return fabric.Config{}, t, fmt.Errorf("--variant %s: %s tuned a run scenario, which has one fabric", variant, path)
	}
	fab := mapValue(doc, "fabric")
	if fab == nil || fab.Kind != yaml.MappingNode {
		return fabric.Config{}, t, fmt.Errorf("%s: the tuned scenario has no fabric section", sp)
	}
	setKeys(fab, best)
	out, err := marshalYAML(&root)
	if err != nil {
		return fabric.Config{}, t, err
	}
	cfg, t, err := scenarioSource(sp, out, "", name)
	t.Source = fmt.Sprintf("%s tuned (%s)", filepath.Base(sp), filepath.Base(path))
	return cfg, t, err
}

// marshalYAML writes a document with the 2-space indent scenarios use.
func marshalYAML(root *yaml.Node) ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func scalarNode(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
}

// mapValue is the value of key in mapping n, or nil.
func mapValue(n *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// setKeys sets every key of the mapping src in the mapping dst (replacing the value of a key
// dst has).
func setKeys(dst, src *yaml.Node) {
	for i := 0; i+1 < len(src.Content); i += 2 {
		if v := mapValue(dst, src.Content[i].Value); v != nil {
			*v = *src.Content[i+1]
			continue
		}
		dst.Content = append(dst.Content, src.Content[i], src.Content[i+1])
	}
}

// jsonMapping turns JSON fabric keys into a YAML mapping in key order: numbers, strings and
// booleans as scalars a scenario would write, lists of them as flow sequences.
func jsonMapping(m map[string]json.RawMessage) (*yaml.Node, error) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	n := &yaml.Node{Kind: yaml.MappingNode}
	for _, k := range keys {
		v, err := jsonNode(m[k])
		if err != nil {
			return nil, fmt.Errorf("%s: %v", k, err)
		}
		n.Content = append(n.Content, scalarNode(k), v)
	}
	return n, nil
}

func jsonNode(raw json.RawMessage) (*yaml.Node, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	var conv func(v any) (*yaml.Node, error)
	conv = func(v any) (*yaml.Node, error) {
		switch v := v.(type) {
		case string:
			return scalarNode(v), nil
		case json.Number:
			return &yaml.Node{Kind: yaml.ScalarNode, Value: v.String()}, nil
		case bool:
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: fmt.Sprint(v)}, nil
		case []any:
			s := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
			for _, x := range v {
				c, err := conv(x)
				if err != nil {
					return nil, err
				}
				s.Content = append(s.Content, c)
			}
			return s, nil
		}
		return nil, fmt.Errorf("want a number, string, boolean or list, got %s", raw)
	}
	return conv(v)
}

type importFlags struct {
	format, base, out string
}

func newConfigImportCmd() *cobra.Command {
	var f importFlags
	c := &cobra.Command{
		Use:   "config-import [--format nvue|sonic|eos|connectx] [--base SCENARIO] [--out FILE] FILE...",
		Short: "Read switch and NIC configuration into a scenario's RoCE settings: what does my configuration do?",
		Long: `config-import reads NVUE commands, SONiC config_db.json, Arista EOS configuration and ConnectX
host settings (mlnx_qos lines, the mlx5 DCQCN cc_params as 'echo V > PATH' or 'grep -H' output)
and writes the RoCE settings they set as scenario keys under fabric:, each with the file:line it
came from (docs/config-export.md maps every field). Without --format each file's dialect is
detected; files may mix a switch's and a host's configuration, and must agree where they overlap.

Without --base the output is a fabric: section to paste into a scenario. With --base SCENARIO it
is that scenario with the settings merged into its fabric section (a run scenario), or with a
variant "imported" based on roce-default added (a compare scenario), checked by loading it.
Lines and keys that are not imported are listed on stderr and as comments. A file in an unknown
dialect, a syntax error or a value out of range is an error naming file:line and the key (exit 2).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error { return runConfigImport(c, args, &f) },
	}
	c.Flags().StringVar(&f.format, "format", "", "nvue, sonic, eos or connectx (default: detect each file's)")
	c.Flags().StringVar(&f.base, "base", "", "a run or compare scenario to merge the settings into")
	c.Flags().StringVar(&f.out, "out", "", "write to this file instead of stdout")
	return c
}

func runConfigImport(c *cobra.Command, paths []string, f *importFlags) error {
	var format roceconf.Format
	if f.format != "" {
		var err error
		if format, err = roceconf.ParseFormat(f.format); err != nil {
			return usageErr(fmt.Errorf("--format: %v", err))
		}
	}
	var files []roceconf.File
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return usageErr(fileErr(p, "configuration", err))
		}
		files = append(files, roceconf.File{Name: p, Data: data})
	}
	im, err := roceconf.Import(format, files)
	if err != nil {
		return usageErr(err)
	}
	for _, n := range im.Notes {
		fmt.Fprintf(c.ErrOrStderr(), "fabricsim: not imported: %s\n", n)
	}
	var buf bytes.Buffer
	if f.base == "" {
		header := []string{
			"fabricsim config-import " + strings.Join(paths, " "),
			"The RoCE settings these files set, as scenario keys (merge them into a scenario's fabric:",
			"section, or give --base SCENARIO); each comment says where the value came from.",
		}
		if err := im.WriteYAML(&buf, header); err != nil {
			return failureErr(err)
		}
		return writeOut(c.OutOrStdout(), f.out, buf.Bytes())
	}
	out, err := mergeImported(f.base, im, paths)
	if err != nil {
		return usageErr(err)
	}
	return writeOut(c.OutOrStdout(), f.out, out)
}

// mergeImported writes the base scenario with the imported keys: merged into a run scenario's
// fabric section, or as a variant "imported" of a compare scenario. The result is loaded to check it.
func mergeImported(base string, im *roceconf.Imported, paths []string) ([]byte, error) {
	data, err := os.ReadFile(base)
	if err != nil {
		return nil, fileErr(base, "--base scenario", err)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil || len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("--base %s: not a scenario (a YAML mapping)", base)
	}
	doc := root.Content[0]
	keys := &yaml.Node{Kind: yaml.MappingNode}
	for _, k := range im.Keys() {
		var v yaml.Node
		if err := yaml.Unmarshal([]byte(im.Text(k)), &v); err != nil || len(v.Content) == 0 {
			return nil, fmt.Errorf("fabric.%s: %s does not read back as YAML", k, im.Text(k))
		}
		val := v.Content[0]
		p, _ := im.Origin(k)
		val.LineComment = "# " + p.String()
		keys.Content = append(keys.Content, scalarNode(k), val)
	}
	kind := fileKind(data)
	switch kind {
	case kindCompare:
		if list := mapValue(doc, "variants"); list != nil {
			for _, v := range list.Content {
				if v.Value == "imported" || mapValue(v, "name") != nil && mapValue(v, "name").Value == "imported" {
					return nil, fmt.Errorf("--base %s: already has a variant named imported", base)
				}
			}
		}
		v := &yaml.Node{Kind: yaml.MappingNode}
		v.Content = append(v.Content, scalarNode("name"), scalarNode("imported"),
			scalarNode("label"), scalarNode("RoCEv2, imported configuration ("+strings.Join(paths, ", ")+")"),
			scalarNode("base"), scalarNode("roce-default"), scalarNode("fabric"), keys)
		list := mapValue(doc, "variants")
		if list == nil {
			list = &yaml.Node{Kind: yaml.SequenceNode}
			for _, n := range compare.DefaultVariantNames {
				list.Content = append(list.Content, scalarNode(n))
			}
			doc.Content = append(doc.Content, scalarNode("variants"), list)
		}
		list.Content = append(list.Content, v)
	case kindRun:
		fab := mapValue(doc, "fabric")
		if fab == nil {
			fab = &yaml.Node{Kind: yaml.MappingNode}
			doc.Content = append(doc.Content, scalarNode("fabric"), fab)
		}
		if fab.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("--base %s: fabric is not a mapping", base)
		}
		if k := mapValue(fab, "kind"); k == nil {
			fab.Content = append([]*yaml.Node{scalarNode("kind"), scalarNode("roce")}, fab.Content...)
		} else if k.Value != "roce" {
			return nil, fmt.Errorf("--base %s: its fabric is %s; the imported settings are RoCE's (kind roce)", base, k.Value)
		}
		setKeys(fab, keys)
	default:
		return nil, fmt.Errorf("--base %s: a %s; give a run or compare scenario", base, kind)
	}
	out, err := marshalYAML(&root)
	if err != nil {
		return nil, err
	}
	name := base + " with the imported settings"
	if kind == kindCompare {
		_, err = compare.Parse(out, name, dirOf(base))
	} else {
		_, err = scenario.Parse(out, name, dirOf(base))
	}
	if err != nil {
		return nil, err
	}
	head := fmt.Sprintf("# fabricsim config-import --base %s %s\n", base, strings.Join(paths, " "))
	return append([]byte(head), out...), nil
}
