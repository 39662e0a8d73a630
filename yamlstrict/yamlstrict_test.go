package yamlstrict

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/fabricsim/fabricsim/units"
)

type inner struct {
	Rate  units.Rate `yaml:"rate"`
	Delay units.Time `yaml:"delay"`
}

type extra struct {
	Knob int `yaml:"knob"`
}

type doc struct {
	Name  string     `yaml:"name"`
	Size  units.Size `yaml:"size"`
	Link  inner      `yaml:"link"`
	Extra extra      `yaml:",inline"`
	Names []string   `yaml:"names"`
	Ptr   *inner     `yaml:"ptr"`
	Seed  uint8      `yaml:"seed"`
}

func decode(t *testing.T, src string) (*doc, *Decoder, error) {
	t.Helper()
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(src), &n); err != nil {
		t.Fatal(err)
	}
	var d doc
	dec := NewDecoder("f.yaml")
	err := dec.Decode(&n, reflect.ValueOf(&d).Elem(), "")
	return &d, dec, err
}

func TestDecodeValuesAndPositions(t *testing.T) {
	d, dec, err := decode(t, "name: x\nsize: 2MiB\nlink: {rate: 400G, delay: 1.5us}\nknob: 7\nnames: a, b\nptr: {rate: 1Gbps}\n")
	if err != nil {
		t.Fatal(err)
	}
	if d.Size != 2*units.MiB || d.Link.Rate != 400*units.Gbps || d.Link.Delay != 1500*units.Nanosecond || d.Extra.Knob != 7 {
		t.Fatalf("decoded %+v", d)
	}
	if len(d.Names) != 2 || d.Names[1] != "b" || d.Ptr == nil || d.Ptr.Rate != units.Gbps {
		t.Fatalf("names %q ptr %+v", d.Names, d.Ptr)
	}
	if !dec.Has("link.delay") || dec.Has("seed") || !dec.Has("knob") {
		t.Fatal("presence not recorded")
	}
	// An absent field is reported where its nearest written parent is: link sits on line 3.
	if e := dec.At("link.mtu", "bad").Error(); e != "f.yaml:3:7: link.mtu: bad" {
		t.Fatalf("At: %q", e)
	}
}

func TestDecodeErrors(t *testing.T) {
	for src, want := range map[string]string{
		"colour: red\n":              "f.yaml:1:1: colour: unknown key (valid keys here: knob, link, name, names, ptr, seed, size)",
		"name: a\nname: b\n":         "f.yaml:2:1: name: key given twice",
		"link: {rate: 100Gbs}\n":     `f.yaml:1:14: link.rate: rate "100Gbs": unknown unit "Gbs"`,
		"seed: 300\n":                `f.yaml:1:7: seed: "300" is not a whole number >= 0 (or is too large)`,
		"link: [1, 2]\n":             "f.yaml:1:7: link: want a mapping of keys, got a list",
		"size:\n":                    "f.yaml:1:6: size: has no value",
		"link: {delay: -1us}\n":      `f.yaml:1:15: link.delay: duration "-1us" must not be negative`,
		"names: [a, {b: c}]\nx: 1\n": "f.yaml:1:12: names[1]: want a single value, got a mapping",
	} {
		_, _, err := decode(t, src)
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q: error %v\nwant prefix %q", src, err, want)
		}
	}
}

// TestNodeReaders: Scalar, Bool and Parsed read values and report problems through the caller's
// Errf with the node, the field and what was wrong.
func TestNodeReaders(t *testing.T) {
	var root yaml.Node
	if err := yaml.Unmarshal([]byte("a: yes\nb: [1]\nc: 100Gbps\nd: fast\ne: 100Gbs\n"), &root); err != nil {
		t.Fatal(err)
	}
	m := root.Content[0].Content
	node := func(key string) *yaml.Node {
		for i := 0; i < len(m); i += 2 {
			if m[i].Value == key {
				return m[i+1]
			}
		}
		t.Fatalf("no %s", key)
		return nil
	}
	errf := func(n *yaml.Node, field, format string, args ...any) error {
		return &Error{File: "f.yaml", Pos: Pos{Line: n.Line}, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	if v, err := Bool(node("a"), "a", errf); err != nil || !v {
		t.Fatalf("a: %v %v", v, err)
	}
	if _, err := Scalar(node("b"), "b", errf); err == nil || err.Error() != `f.yaml:2:0: b: want a single value, got a list` {
		t.Fatalf("b: %v", err)
	}
	if v, err := Parsed(node("c"), "c", errf, units.ParseRate); err != nil || v != 100*units.Gbps {
		t.Fatalf("c: %v %v", v, err)
	}
	if _, err := Bool(node("d"), "d", errf); err == nil || err.Error() != `f.yaml:4:0: d: want true or false, got "fast"` {
		t.Fatalf("d: %v", err)
	}
	if _, err := Parsed(node("e"), "e", errf, units.ParseRate); err == nil || !strings.HasPrefix(err.Error(), "f.yaml:5:0: e: ") {
		t.Fatalf("e: %v", err)
	}
}
