package cost

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/fabricsim/fabricsim/units"
	"github.com/fabricsim/fabricsim/yamlstrict"
)

// The catalogue is decoded by hand from yaml.Node rather than with Decoder.KnownFields so that
// every error, unknown key or bad value, names the file, the line and the dotted field path.

// posError is a user-input error at a place in a YAML file.
type posError struct {
	file  string
	line  int
	field string
	msg   string
}

func (e *posError) Error() string {
	var b strings.Builder
	if e.file != "" {
		b.WriteString(e.file)
		b.WriteString(":")
	}
	if e.line > 0 {
		fmt.Fprintf(&b, "%d:", e.line)
	}
	if b.Len() > 0 {
		b.WriteString(" ")
	}
	if e.field != "" {
		b.WriteString(e.field)
		b.WriteString(": ")
	}
	b.WriteString(e.msg)
	return b.String()
}

type decoder struct{ file string }

func (d decoder) errf(n *yaml.Node, field, format string, args ...any) error {
	line := 0
	if n != nil {
		line = n.Line
	}
	return &posError{file: d.file, line: line, field: field, msg: fmt.Sprintf(format, args...)}
}

// mapping walks a mapping node, calling set for each key; keys not in allowed are errors that
// list the valid keys.
func (d decoder) mapping(n *yaml.Node, path string, allowed []string, set func(key string, k, v *yaml.Node) error) error {
	if n.Kind != yaml.MappingNode {
		return d.errf(n, path, "want a mapping, got %s", yamlstrict.Describe(n))
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := k.Value
		field := key
		if path != "" {
			field = path + "." + key
		}
		if allowed != nil && !slices.Contains(allowed, key) {
			valid := append([]string(nil), allowed...)
			sort.Strings(valid)
			return d.errf(k, field, "unknown field %q (valid: %s)", key, strings.Join(valid, ", "))
		}
		if seen[key] {
			return d.errf(k, field, "field %q given twice", key)
		}
		seen[key] = true
		if err := set(key, k, v); err != nil {
			return err
		}
	}
	return nil
}

func (d decoder) scalar(n *yaml.Node, field string) (string, error) {
	return yamlstrict.Scalar(n, field, d.errf)
}

func (d decoder) str(n *yaml.Node, field string) (string, error) { return d.scalar(n, field) }

func (d decoder) integer(n *yaml.Node, field string, min int) (int, error) {
	s, err := d.scalar(n, field)
	if err != nil {
		return 0, err
	}
	v, err := strconv.Atoi(strings.ReplaceAll(s, "_", ""))
	if err != nil {
		return 0, d.errf(n, field, "want a whole number, got %q", s)
	}
	if v < min {
		return 0, d.errf(n, field, "%d is below the minimum %d", v, min)
	}
	return v, nil
}

func (d decoder) number(n *yaml.Node, field string) (float64, error) {
	s, err := d.scalar(n, field)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseFloat(strings.ReplaceAll(s, "_", ""), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, d.errf(n, field, "want a number, got %q", s)
	}
	if v < 0 {
		return 0, d.errf(n, field, "%g must not be negative", v)
	}
	return v, nil
}

func (d decoder) boolean(n *yaml.Node, field string) (bool, error) {
	return yamlstrict.Bool(n, field, d.errf)
}

func (d decoder) rate(n *yaml.Node, field string) (units.Rate, error) {
	return yamlstrict.Parsed(n, field, d.errf, units.ParseRate)
}

func (d decoder) list(n *yaml.Node, field string) ([]*yaml.Node, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, d.errf(n, field, "want a list, got %s", yamlstrict.Describe(n))
	}
	return n.Content, nil
}
