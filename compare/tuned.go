package compare

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"

	"go.yaml.in/yaml/v3"

	"github.com/fabricsim/fabricsim/yamlstrict"
)

// tuned is what a variant takes from a tune result (tune.json, written by `fabricsim tune`,
// docs/tune.md): the name of the variant that was tuned ("" when a run scenario's fabric was)
// and the winner's fabric settings under their scenario keys, as a mapping node whose positions
// are tune.json's lines.
type tuned struct {
	Path    string
	Variant string
	Fabric  *yaml.Node
	nodes   map[yamlstrict.Pos]bool
}

// readTuned reads the tune result at p (relative to dir). JSON is read as YAML so that an error
// in a value names its line in tune.json.
func readTuned(p, dir string) (*tuned, error) {
	path := p
	if !filepath.IsAbs(path) && dir != "" {
		path = filepath.Join(dir, p)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		if pe, ok := err.(*os.PathError); ok {
			err = pe.Err
		}
		return nil, fmt.Errorf("cannot read tune result %s: %v", p, err)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil || len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s is not a tune result (tune.json of fabricsim tune): not a JSON object", p)
	}
	top := root.Content[0]
	fab := yamlstrict.Lookup(yamlstrict.Lookup(top, "best"), "fabric")
	if fab == nil || fab.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s is not a tune result (tune.json of fabricsim tune): it has no best.fabric settings", p)
	}
	t := &tuned{Path: path, Fabric: fab, nodes: map[yamlstrict.Pos]bool{}}
	if v := yamlstrict.Lookup(top, "variant"); v != nil && v.Kind == yaml.ScalarNode {
		t.Variant = v.Value
	}
	for i := 0; i+1 < len(fab.Content); i += 2 {
		k, v := fab.Content[i], fab.Content[i+1]
		if v.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("%s:%d:%d: best.fabric.%s: want a value such as \"20Mbps\", got a %s", path, v.Line, v.Column, k.Value, yamlstrict.KindName(v))
		}
		v.Tag = "!!str" // JSON strings and numbers alike: the scenario loader parses the text
		t.nodes[yamlstrict.Pos{Line: k.Line, Col: k.Column}] = true
		t.nodes[yamlstrict.Pos{Line: v.Line, Col: v.Column}] = true
	}
	return t, nil
}

// BuiltinOverrides returns what a built-in variant writes over its base: the base's name ("" for
// none) and its fabric keys with their values as written, in order. ok is false for a name that
// is not a built-in. `fabricsim tune` takes roce-tuned's as the published production values.
func BuiltinOverrides(name string) (base string, fabric [][2]string, ok bool) {
	var root yaml.Node
	if err := yaml.Unmarshal([]byte(builtinVariants), &root); err != nil {
		panic("compare: built-in variants: " + err.Error())
	}
	var list VariantList
	if err := yamlstrict.NewDecoder("<built-in variants>").Decode(&root, reflect.ValueOf(&list).Elem(), "variants"); err != nil {
		panic("compare: built-in variants: " + err.Error())
	}
	for _, v := range list {
		if v.Name != name {
			continue
		}
		if v.Fabric != nil {
			for i := 0; i+1 < len(v.Fabric.Content); i += 2 {
				fabric = append(fabric, [2]string{v.Fabric.Content[i].Value, v.Fabric.Content[i+1].Value})
			}
		}
		return v.Base, fabric, true
	}
	return "", nil, false
}
