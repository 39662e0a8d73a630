package compare

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/fabricsim/fabricsim/units"
)

// Error is an input error in a compare scenario: file:line:column, the dotted field path and
// what is wrong. The command exits with status 2 on it.
type Error struct {
	File      string
	Line, Col int
	Field     string
	Msg       string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", e.Line, e.Col)
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// decoder decodes the compare-specific sections strictly (unknown keys, duplicate keys and
// wrong types are errors with positions) and records where every field was written, so that
// defaults fill only what is absent and validation points at the line.
type decoder struct {
	file    string
	pos     map[string]*yaml.Node
	present map[string]bool
}

var (
	rateType = reflect.TypeOf(units.Rate(0))
	sizeType = reflect.TypeOf(units.Size(0))
	timeType = reflect.TypeOf(units.Time(0))
)

func (d *decoder) errAt(n *yaml.Node, path, format string, args ...any) *Error {
	e := &Error{File: d.file, Field: path, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		e.Line, e.Col = n.Line, n.Column
	}
	return e
}

// at returns an error placed at field path, or at its nearest written parent.
func (d *decoder) at(path, format string, args ...any) *Error {
	for p := path; ; {
		if n, ok := d.pos[p]; ok {
			return d.errAt(n, path, format, args...)
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			return d.errAt(nil, path, format, args...)
		}
		p = p[:i]
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string) error {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	d.pos[path] = n
	d.present[path] = true
	if n.Tag == "!!null" {
		return d.errAt(n, path, "has no value")
	}
	switch v.Type() {
	case rateType, sizeType, timeType:
		if n.Kind != yaml.ScalarNode {
			return d.errAt(n, path, "want a single value, got a %s", kindName(n))
		}
		var x int64
		var err error
		switch v.Type() {
		case rateType:
			var r units.Rate
			r, err = units.ParseRate(n.Value)
			x = int64(r)
		case sizeType:
			var s units.Size
			s, err = units.ParseSize(n.Value)
			x = int64(s)
		default:
			var t units.Time
			t, err = units.ParseTime(n.Value)
			x = int64(t)
		}
		if err != nil {
			return d.errAt(n, path, "%v", err)
		}
		v.SetInt(x)
		return nil
	}
	switch v.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return d.errAt(n, path, "want a mapping of keys, got a %s", kindName(n))
		}
		fields := map[string]int{}
		var names []string
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
			if name == "" || name == "-" || !t.Field(i).IsExported() {
				continue
			}
			fields[name] = i
			names = append(names, name)
		}
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			idx, ok := fields[k.Value]
			if !ok {
				sort.Strings(names)
				return d.errAt(k, join(path, k.Value), "unknown key (valid keys here: %s)", strings.Join(names, ", "))
			}
			if seen[k.Value] {
				return d.errAt(k, join(path, k.Value), "key given twice")
			}
			seen[k.Value] = true
			if err := d.decode(val, v.Field(idx), join(path, k.Value)); err != nil {
				return err
			}
		}
		return nil
	case reflect.Slice:
		if n.Kind == yaml.ScalarNode && v.Type().Elem().Kind() == reflect.String {
			// "a,b" or a single name.
			parts := strings.Split(n.Value, ",")
			s := reflect.MakeSlice(v.Type(), 0, len(parts))
			for _, p := range parts {
				s = reflect.Append(s, reflect.ValueOf(strings.TrimSpace(p)))
			}
			v.Set(s)
			return nil
		}
		if n.Kind != yaml.SequenceNode {
			return d.errAt(n, path, "want a list, got a %s", kindName(n))
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, c := range n.Content {
			if err := d.decode(c, s.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		v.Set(s)
		return nil
	}
	if n.Kind != yaml.ScalarNode {
		return d.errAt(n, path, "want a single value, got a %s", kindName(n))
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(n.Value)
	case reflect.Bool:
		b, err := strconv.ParseBool(n.Value)
		if err != nil {
			return d.errAt(n, path, "%q is not true or false", n.Value)
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int64:
		x, err := strconv.ParseInt(n.Value, 0, 64)
		if err != nil || v.OverflowInt(x) {
			return d.errAt(n, path, "%q is not a whole number", n.Value)
		}
		v.SetInt(x)
	case reflect.Uint64:
		x, err := strconv.ParseUint(n.Value, 0, 64)
		if err != nil {
			return d.errAt(n, path, "%q is not a whole number >= 0", n.Value)
		}
		v.SetUint(x)
	case reflect.Float64:
		x, err := strconv.ParseFloat(n.Value, 64)
		if err != nil {
			return d.errAt(n, path, "%q is not a number", n.Value)
		}
		v.SetFloat(x)
	default:
		return d.errAt(n, path, "unsupported field type %s", v.Type())
	}
	return nil
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.ScalarNode:
		return fmt.Sprintf("value %q", n.Value)
	}
	return "node"
}

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

// lookup returns the value of key in mapping n, or nil.
func lookup(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}
