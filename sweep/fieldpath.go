package sweep

import (
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// A FieldPath names one field of a scenario: mapping keys joined by dots, each optionally
// followed by list indexes, as in "topology.link.rate" or "traffic.flows[2].size".
type FieldPath []PathStep

// A PathStep is one mapping key (Key != "") or one list index.
type PathStep struct {
	Key   string
	Index int
}

// maxIndex bounds list indexes in field paths; scenarios with longer lists are not swept by
// index.
const maxIndex = 1 << 20

// ParseFieldPath parses "a.b[2].c". Keys are letters, digits, '_' and '-'.
func ParseFieldPath(s string) (FieldPath, error) {
	if s == "" {
		return nil, fmt.Errorf("empty field path")
	}
	var p FieldPath
	for _, seg := range strings.Split(s, ".") {
		key, rest, _ := strings.Cut(seg, "[")
		if key == "" {
			return nil, fmt.Errorf("field path %q: empty key (write keys joined by dots, e.g. topology.link.rate)", s)
		}
		for _, r := range key {
			if !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
				return nil, fmt.Errorf("field path %q: key %q has %q (keys use letters, digits, '_' and '-')", s, key, r)
			}
		}
		p = append(p, PathStep{Key: key})
		if len(seg) > len(key) {
			rest = "[" + rest
		}
		for rest != "" {
			if rest[0] != '[' {
				return nil, fmt.Errorf("field path %q: unexpected %q after index (write list indexes as name[2])", s, rest)
			}
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				return nil, fmt.Errorf("field path %q: missing ']'", s)
			}
			n, err := strconv.Atoi(rest[1:end])
			if err != nil || n < 0 || n > maxIndex || rest[1] == '+' {
				return nil, fmt.Errorf("field path %q: list index %q is not a number from 0 to %d", s, rest[1:end], maxIndex)
			}
			p = append(p, PathStep{Index: n})
			rest = rest[end+1:]
		}
	}
	return p, nil
}

// String formats the path the way ParseFieldPath reads it.
func (p FieldPath) String() string {
	var b strings.Builder
	for i, st := range p {
		if st.Key != "" {
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(st.Key)
		} else {
			fmt.Fprintf(&b, "[%d]", st.Index)
		}
	}
	return b.String()
}

// contains reports whether q is p or lies inside it.
func (p FieldPath) contains(q FieldPath) bool {
	if len(q) < len(p) {
		return false
	}
	for i := range p {
		if p[i] != q[i] {
			return false
		}
	}
	return true
}

// Set puts value at path p in the mapping root, creating missing mappings on the way (a null
// value counts as missing). It returns an error naming the part of the path that cannot be
// set and the line of the offending node.
func (p FieldPath) Set(root, value *yaml.Node) error {
	cur := root
	for i, st := range p {
		last := i == len(p)-1
		prefix := p[:i].String()
		where := func() string {
			if prefix == "" {
				return "the scenario"
			}
			return prefix
		}
		if isNull(cur) {
			*cur = yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: cur.Line, Column: cur.Column}
		}
		if st.Key != "" {
			if cur.Kind != yaml.MappingNode {
				return fmt.Errorf("%s (line %d) is %s, not a mapping with key %q", where(), cur.Line, kindName(cur), st.Key)
			}
			_, v := mappingGet(cur, st.Key)
			if v == nil {
				if !last && p[i+1].Key == "" {
					return fmt.Errorf("%s (line %d) has no list %q to index", where(), cur.Line, st.Key)
				}
				k := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: st.Key}
				v = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
				cur.Content = append(cur.Content, k, v)
			}
			if last {
				*v = *value
				return nil
			}
			cur = v
			continue
		}
		if cur.Kind != yaml.SequenceNode {
			return fmt.Errorf("%s (line %d) is %s, not a list", where(), cur.Line, kindName(cur))
		}
		if st.Index >= len(cur.Content) {
			return fmt.Errorf("%s (line %d) has %d items; index %d is out of range", where(), cur.Line, len(cur.Content), st.Index)
		}
		if last {
			*cur.Content[st.Index] = *value
			return nil
		}
		cur = cur.Content[st.Index]
	}
	return nil
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}
