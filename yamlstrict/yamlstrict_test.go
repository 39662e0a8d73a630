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
		"seed: 300\n":                `f.yaml:1:7: seed: 300 outside 0..255`,
		"seed: -1\n":                 `f.yaml:1:7: seed: -1 outside 0..255`,
		"seed: many\n":               `f.yaml:1:7: seed: "many" is not a whole number`,
		"seed: 1.5\n":                `f.yaml:1:7: seed: "1.5" is not a whole number`,
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

// mode is a typed mode parsed at the edge.
type mode uint8

func (m *mode) UnmarshalText(b []byte) error {
	switch string(b) {
	case "fast":
		*m = 1
	case "slow":
		*m = 2
	default:
		return fmt.Errorf("%q is not a mode (valid: fast, slow)", b)
	}
	return nil
}

// bits decodes a list of small numbers as a bit set, reporting a bad entry at its own position.
type bits uint8

func (b *bits) DecodeYAML(d *Decoder, n *yaml.Node, path string) error {
	var list []int
	if err := d.Decode(n, reflect.ValueOf(&list).Elem(), path); err != nil {
		return err
	}
	*b = 0
	for i, v := range list {
		if v < 0 || v > 7 {
			return d.At(fmt.Sprintf("%s[%d]", path, i), "%d outside 0..7", v)
		}
		*b |= 1 << v
	}
	return nil
}

type kinds struct {
	Mode    mode               `yaml:"mode"`
	Bits    bits               `yaml:"bits"`
	Weights [3]int             `yaml:"weights"`
	Table   [4]uint8           `yaml:"table,partial"`
	Ratio   float64            `yaml:"ratio"`
	On      bool               `yaml:"on"`
	Later   *yaml.Node         `yaml:"later"`
	Items   map[string]*inner  `yaml:"items"`
	Counts  map[string]float64 `yaml:"counts"`
}

func decodeKinds(t *testing.T, src string, into *kinds) (*Decoder, error) {
	t.Helper()
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(src), &n); err != nil {
		t.Fatal(err)
	}
	dec := NewDecoder("k.yaml")
	return dec, dec.Decode(&n, reflect.ValueOf(into).Elem(), "")
}

// TestDecodeKinds: modes, self-decoding types, arrays (whole and partial), maps decoded over
// existing entries, nodes kept for later, and defaults kept for what a file leaves out.
func TestDecodeKinds(t *testing.T) {
	k := kinds{Table: [4]uint8{9, 9, 9, 9}, Ratio: 0.5, Items: map[string]*inner{"a": {Rate: units.Gbps, Delay: units.Microsecond}}}
	_, err := decodeKinds(t, "mode: slow\nbits: [1, 3]\nweights: [1_000, 2e3, 3]\ntable: [0, 1]\non: yes\nlater: {x: [1]}\nitems: {a: {rate: 2Gbps}, b: {delay: 1ns}}\n", &k)
	if err != nil {
		t.Fatal(err)
	}
	if k.Mode != 2 || k.Bits != 1<<1|1<<3 || k.Weights != [3]int{1000, 2000, 3} || k.Table != [4]uint8{0, 1, 9, 9} || k.Ratio != 0.5 || !k.On {
		t.Fatalf("decoded %+v", k)
	}
	if k.Later == nil || k.Later.Kind != yaml.MappingNode || k.Later.Line != 6 {
		t.Fatalf("node not kept: %+v", k.Later)
	}
	// a keeps its delay (decoded over a copy of the entry), b is new.
	if a := k.Items["a"]; a.Rate != 2*units.Gbps || a.Delay != units.Microsecond || k.Items["b"].Delay != units.Nanosecond {
		t.Fatalf("items %+v %+v", *k.Items["a"], *k.Items["b"])
	}
	for src, want := range map[string]string{
		"mode: medium\n":           `k.yaml:1:7: mode: "medium" is not a mode (valid: fast, slow)`,
		"mode: [fast]\n":           `k.yaml:1:7: mode: want a single value, got a list`,
		"bits: [1, 9]\n":           `k.yaml:1:11: bits[1]: 9 outside 0..7`,
		"weights: [1, 2]\n":        `k.yaml:1:10: weights: want 3 entries, got 2`,
		"table: [1, 2, 3, 4, 5]\n": `k.yaml:1:8: table: 5 entries; at most 4`,
		"ratio: NaN\n":             `k.yaml:1:8: ratio: "NaN" is not a number`,
		"on: maybe\n":              `k.yaml:1:5: on: "maybe" is not true or false`,
		"items: {a: {x: 1}}\n":     `k.yaml:1:13: items.a.x: unknown key (valid keys here: delay, rate)`,
		"counts: [1]\n":            `k.yaml:1:9: counts: want a mapping, got a list`,
	} {
		var k kinds
		_, err := decodeKinds(t, src, &k)
		if err == nil || err.Error() != want {
			t.Errorf("%q: error %v\nwant %q", src, err, want)
		}
	}
}

// TestPlace: a Validate method's FieldError lands on the line and column of its key; Within
// prefixes a nested section's keys.
func TestPlace(t *testing.T) {
	var k kinds
	dec, err := decodeKinds(t, "ratio: 2\nitems:\n  a: {rate: 1Gbps}\n", &k)
	if err != nil {
		t.Fatal(err)
	}
	verr := Within("items.a", Errorf("rate", "%v below 2Gbps", k.Items["a"].Rate))
	if got := dec.Place("", verr).Error(); got != "k.yaml:3:13: items.a.rate: 1Gbps below 2Gbps" {
		t.Errorf("Place: %q", got)
	}
	if got := dec.Place("items", Errorf("b", "missing")).Error(); got != "k.yaml:3:3: items.b: missing" {
		t.Errorf("Place of an unwritten key: %q", got)
	}
	if got := dec.Place("ratio", fmt.Errorf("too large")).Error(); got != "k.yaml:1:8: ratio: too large" {
		t.Errorf("Place of a plain error: %q", got)
	}
}

// TestFieldsDuplicateKey: two fields with one key (here through an inline struct) are a
// programming error caught when the type is first used.
func TestFieldsDuplicateKey(t *testing.T) {
	type twice struct {
		Name  string `yaml:"knob"`
		Extra extra  `yaml:",inline"`
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), `key "knob"`) {
			t.Fatalf("recovered %v", r)
		}
	}()
	Fields(reflect.TypeOf(twice{}))
}

// TestText: a value written by Text decodes back to itself.
func TestText(t *testing.T) {
	k := kinds{Mode: 2, Bits: 1 << 3, Weights: [3]int{1, 2, 3}, Table: [4]uint8{0, 1, 2, 3}, Ratio: 1.0 / 1024, On: true,
		Items: map[string]*inner{}, Counts: map[string]float64{}}
	d := doc{Name: "x", Size: 2 * units.MiB, Link: inner{Rate: 400 * units.Gbps, Delay: 1500 * units.Nanosecond}, Names: []string{"a", "b"}, Seed: 7}
	for _, c := range []struct {
		v    reflect.Value
		want string
	}{
		{reflect.ValueOf(d.Link), "{rate: 400Gbps, delay: 1.5us}"},
		{reflect.ValueOf(d.Names), "[a, b]"},
		{reflect.ValueOf(d.Size), "2MiB"},
		{reflect.ValueOf(k.Weights), "[1, 2, 3]"},
		{reflect.ValueOf(k.Ratio), "0.0009765625"},
		{reflect.ValueOf(k.On), "true"},
		{reflect.ValueOf(""), `""`},
		{reflect.ValueOf(d.Ptr), "null"},
	} {
		if got := Text(c.v); got != c.want {
			t.Errorf("Text(%v) = %q, want %q", c.v, got, c.want)
		}
	}
	var back inner
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(Text(reflect.ValueOf(d.Link))), &n); err != nil {
		t.Fatal(err)
	}
	if err := NewDecoder("t").Decode(&n, reflect.ValueOf(&back).Elem(), ""); err != nil || back != d.Link {
		t.Fatalf("round trip: %+v %v", back, err)
	}
}
