package tune

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Small helpers on YAML node trees: evaluations are the scenario's own document with a few keys
// set, so that everything else (units, comments, the user's spelling) passes through unchanged.

func scalarNode(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
}

// mappingNode builds a mapping from key, value pairs (values *yaml.Node or anything printed
// with fmt).
func mappingNode(kv ...any) *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for i := 0; i+1 < len(kv); i += 2 {
		v, ok := kv[i+1].(*yaml.Node)
		if !ok {
			v = scalarNode(fmt.Sprint(kv[i+1]))
		}
		m.Content = append(m.Content, scalarNode(fmt.Sprint(kv[i])), v)
	}
	return m
}

// clone deep-copies a node tree.
func clone(n *yaml.Node) *yaml.Node {
	if n == nil {
		return nil
	}
	c := *n
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, x := range n.Content {
		c.Content[i] = clone(x)
	}
	return &c
}

// lookup returns the value of key in mapping m, or nil.
func lookup(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// setKey sets key in mapping m to v, appending the key when absent.
func setKey(m *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, scalarNode(key), v)
}

// deleteKey removes key from mapping m.
func deleteKey(m *yaml.Node, key string) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content = append(m.Content[:i], m.Content[i+2:]...)
			return
		}
	}
}

// merge applies override on base: for two mappings key by key (recursively), otherwise the
// override replaces base. Neither argument is modified.
func merge(base, override *yaml.Node) *yaml.Node {
	if base == nil || override == nil || base.Kind != yaml.MappingNode || override.Kind != yaml.MappingNode {
		if override == nil {
			return clone(base)
		}
		return clone(override)
	}
	out := clone(base)
	for i := 0; i+1 < len(override.Content); i += 2 {
		k, v := override.Content[i].Value, override.Content[i+1]
		setKey(out, k, merge(lookup(out, k), v))
	}
	return out
}

// nested turns settings under dotted keys ("ib_cc.threshold") into a mapping of mappings.
func nested(settings [][2]string) *yaml.Node {
	m := mappingNode()
	for _, kv := range settings {
		at := m
		parts := strings.Split(kv[0], ".")
		for _, p := range parts[:len(parts)-1] {
			next := lookup(at, p)
			if next == nil {
				next = mappingNode()
				setKey(at, p, next)
			}
			at = next
		}
		setKey(at, parts[len(parts)-1], scalarNode(kv[1]))
	}
	return m
}

// encode writes a node tree as YAML.
func encode(n *yaml.Node) (string, error) {
	b, err := yaml.Marshal(n)
	return string(b), err
}

// flowText writes a small mapping on one line, as a reader would write it.
func flowText(n *yaml.Node) string {
	c := clone(n)
	var set func(*yaml.Node)
	set = func(x *yaml.Node) {
		x.Style = yaml.FlowStyle
		x.HeadComment, x.LineComment, x.FootComment = "", "", ""
		for _, y := range x.Content {
			set(y)
		}
	}
	set(c)
	s, err := encode(c)
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(s)
}
