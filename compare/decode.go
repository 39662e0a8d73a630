package compare

import (
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/fabricsim/fabricsim/yamlstrict"
)

// Error is an input error in a compare scenario: file:line:column, the dotted field path and
// what is wrong. The command exits with status 2 on it.
type Error = yamlstrict.Error

// parseCount parses a count with an optional SI suffix: "15T" = 15e12, "300B" = 3e11,
// "2.5M", "1e12", "1000000".
func parseCount(s string) (float64, error) {
	t := strings.TrimSpace(s)
	mult := 1.0
	if t != "" {
		switch t[len(t)-1] {
		case 'K', 'k':
			mult = 1e3
		case 'M':
			mult = 1e6
		case 'B', 'G':
			mult = 1e9
		case 'T':
			mult = 1e12
		}
		if mult != 1 {
			t = t[:len(t)-1]
		}
	}
	x, err := strconv.ParseFloat(strings.ReplaceAll(t, "_", ""), 64)
	if err != nil || x < 0 {
		return 0, fmt.Errorf("%q is not a count (e.g. 1T, 300B, 2.5e12)", s)
	}
	return x * mult, nil
}

// cloneNode deep-copies a YAML node tree, keeping positions.
func cloneNode(n *yaml.Node) *yaml.Node {
	if n == nil {
		return nil
	}
	c := *n
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, x := range n.Content {
		c.Content[i] = cloneNode(x)
	}
	return &c
}

// mergeNode applies override on base: mapping keys present in override replace or (for two
// mappings) merge into base's; anything else replaces base. Positions of overridden values are
// the override's, so errors name the line the user wrote.
func mergeNode(base, override *yaml.Node) *yaml.Node {
	if base == nil {
		return cloneNode(override)
	}
	if override == nil {
		return cloneNode(base)
	}
	if base.Kind != yaml.MappingNode || override.Kind != yaml.MappingNode {
		return cloneNode(override)
	}
	out := cloneNode(base)
	for i := 0; i+1 < len(override.Content); i += 2 {
		k, v := override.Content[i], override.Content[i+1]
		found := false
		for j := 0; j+1 < len(out.Content); j += 2 {
			if out.Content[j].Value == k.Value {
				out.Content[j+1] = mergeNode(out.Content[j+1], v)
				out.Content[j] = cloneNode(k)
				found = true
				break
			}
		}
		if !found {
			out.Content = append(out.Content, cloneNode(k), cloneNode(v))
		}
	}
	return out
}

// mapping builds a YAML mapping node from key/value pairs (values: *yaml.Node or a scalar).
func mapping(kv ...any) *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for i := 0; i+1 < len(kv); i += 2 {
		m.Content = append(m.Content, scalar(fmt.Sprint(kv[i])))
		switch v := kv[i+1].(type) {
		case *yaml.Node:
			m.Content = append(m.Content, v)
		default:
			m.Content = append(m.Content, scalar(fmt.Sprint(v)))
		}
	}
	return m
}

func scalar(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }
