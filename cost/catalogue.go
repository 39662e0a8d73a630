// Package cost prices a cluster network: a catalogue of parts (switches, NICs, transceivers,
// cables, optionally GPU servers) with a price, a price range, a source and a date for each, and
// a bill of materials (BOM) that counts the parts a topology needs on InfiniBand or Ethernet.
//
// Prices of network gear are rarely public and move quickly, so every price is a parameter: the
// default catalogue (catalogue.yaml, embedded) holds the mid-points of fabricsim's estimated
// ranges (docs/references.md, [EST]) and a user file can override any field of any item.
package cost

import (
	_ "embed"
	"fmt"
	"math"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/fabricsim/fabricsim/units"
	"github.com/fabricsim/fabricsim/yamlstrict"
)

// Fabric names accepted by BOM and by an item's fabrics list.
const (
	InfiniBand = "infiniband"
	Ethernet   = "ethernet"
)

// Kinds of catalogue item.
const (
	KindSwitch      = "switch"
	KindNIC         = "nic"
	KindTransceiver = "transceiver"
	KindDAC         = "dac"   // direct-attach copper cable, both ends included
	KindAOC         = "aoc"   // active optical cable, both ends included
	KindFibre       = "fibre" // passive fibre between two transceivers
	KindServer      = "server"
)

var kinds = []string{KindSwitch, KindNIC, KindTransceiver, KindDAC, KindAOC, KindFibre, KindServer}

//go:embed catalogue.yaml
var defaultCatalogue []byte

// Item is one part in the catalogue.
type Item struct {
	Key         string   `yaml:"-" json:"key"`
	Kind        string   `yaml:"kind" json:"kind"`
	Fabrics     []string `yaml:"fabrics" json:"fabrics,omitempty"` // empty: any fabric
	Description string   `yaml:"description" json:"description"`
	// PriceUSD is the unit price used in bills; LowUSD..HighUSD the range it was taken from
	// (both 0 when only a point estimate is known).
	PriceUSD float64 `yaml:"price_usd" json:"price_usd"`
	LowUSD   float64 `yaml:"-" json:"low_usd,omitempty"`
	HighUSD  float64 `yaml:"-" json:"high_usd,omitempty"`
	// PricePerMUSD is added per metre of length (fibre, AOC).
	PricePerMUSD float64 `yaml:"price_per_m_usd" json:"price_per_m_usd,omitempty"`
	Source       string  `yaml:"source" json:"source"`
	Date         string  `yaml:"date" json:"date"`
	// Disabled items stay in the catalogue but are never chosen.
	Disabled bool `yaml:"disabled" json:"disabled,omitempty"`

	// Switch: Ports cages at PortRate; each cage may be split into any of Breakout lanes
	// (1 = unsplit; [1,2] lets a 64 x 800G switch serve 128 x 400G).
	Ports    int        `yaml:"ports" json:"ports,omitempty"`
	PortRate units.Rate `yaml:"port_rate" json:"port_rate,omitempty"`
	Breakout []int      `yaml:"breakout" json:"breakout,omitempty"`

	// NIC, transceiver, DAC, AOC, fibre: the link rate served (fibre: 0 = any rate).
	Rate units.Rate `yaml:"rate" json:"rate,omitempty"`
	// Transceiver: links one module serves (2 for a twin-port module in one switch cage).
	Links int `yaml:"links" json:"links,omitempty"`
	// DAC, AOC, transceiver: longest cable run in metres (0 = no limit).
	MaxLengthM float64 `yaml:"max_length_m" json:"max_length_m,omitempty"`

	// Server: GPUs per server.
	GPUs int `yaml:"gpus" json:"gpus,omitempty"`

	// file and line: where the item was last written, for messages about it.
	file      string
	line, col int
}

// ForFabric reports whether the item may be used on fabric f.
func (it *Item) ForFabric(f string) bool {
	if len(it.Fabrics) == 0 {
		return true
	}
	return slices.Contains(it.Fabrics, f)
}

// Capacity is the switch's total bandwidth (ports x port rate).
func (it *Item) Capacity() units.Rate { return units.Rate(it.Ports) * it.PortRate }

// PortsAt is how many ports of rate r the switch offers when every cage is split the finest way
// that still gives each port at least r; 0 if r is faster than a cage.
func (it *Item) PortsAt(r units.Rate) int {
	if b := it.breakoutFor(r); b > 0 {
		return it.Ports * b
	}
	return 0
}

// breakoutFor is the largest allowed split b with PortRate/b >= r, 0 if none.
func (it *Item) breakoutFor(r units.Rate) int {
	best := 0
	for _, b := range it.breakouts() {
		if it.PortRate/units.Rate(b) >= r && b > best {
			best = b
		}
	}
	return best
}

func (it *Item) breakouts() []int {
	if len(it.Breakout) == 0 {
		return []int{1}
	}
	return it.Breakout
}

// where names the item and the place it was defined, for error messages.
func (it *Item) where() string {
	if it.file != "" && it.line > 0 {
		return fmt.Sprintf("%s (%s:%d)", it.Key, it.file, it.line)
	}
	return it.Key
}

// Catalogue is a set of priced parts, by key.
type Catalogue struct {
	Currency string           `yaml:"currency" json:"currency"`
	Items    map[string]*Item `yaml:"items" json:"items"`
}

// Default returns a fresh copy of the embedded default catalogue.
func Default() *Catalogue {
	c := &Catalogue{Items: map[string]*Item{}}
	if err := c.merge(defaultCatalogue, "catalogue.yaml(default)"); err != nil {
		panic("cost: embedded catalogue is invalid: " + err.Error())
	}
	return c
}

// LoadCatalogue returns the default catalogue with the user file at path merged over it: an
// item whose key exists overrides only the fields it gives; a new key adds an item, which must
// then be complete. An empty path returns the default.
func LoadCatalogue(path string) (*Catalogue, error) {
	c := Default()
	if path == "" {
		return c, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		if pe, ok := err.(*os.PathError); ok {
			err = pe.Err // the path is already in the message
		}
		return nil, fmt.Errorf("%s: cannot read price catalogue: %w", path, err)
	}
	if err := c.merge(data, path); err != nil {
		return nil, err
	}
	return c, nil
}

// ParseCatalogue merges YAML data (named file in errors) over the default catalogue.
func ParseCatalogue(data []byte, file string) (*Catalogue, error) {
	c := Default()
	if err := c.merge(data, file); err != nil {
		return nil, err
	}
	return c, nil
}

// merge decodes a catalogue file over c: an item whose key exists overrides only the fields
// it gives (yamlstrict decodes a map entry over a copy of the old one); then every item the file
// touched is validated.
func (c *Catalogue) merge(data []byte, file string) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return &yamlstrict.Error{File: file, Msg: "not valid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	if len(doc.Content) == 0 {
		return nil // empty file: nothing to override
	}
	d := yamlstrict.NewDecoder(file)
	if err := d.Decode(&doc, reflect.ValueOf(c).Elem(), ""); err != nil {
		return err
	}
	if c.Currency != "USD" {
		return d.At("currency", "only USD is supported, got %q", c.Currency)
	}
	var names []string
	if items := d.Node("items"); items != nil {
		for i := 0; i+1 < len(items.Content); i += 2 {
			k := items.Content[i]
			it := c.Items[k.Value]
			it.Key, it.file, it.line, it.col = k.Value, file, k.Line, k.Column
			names = append(names, k.Value)
		}
	}
	sort.Strings(names)
	for _, k := range names {
		if err := c.Items[k].validate(); err != nil {
			return err
		}
	}
	return nil
}

// DecodeYAML decodes an item's fields over it and checks each value where it is written:
// kind and fabrics among the known ones, range_usd as [low, high], prices and lengths not
// negative, counts at least 1.
func (it *Item) DecodeYAML(d *yamlstrict.Decoder, n *yaml.Node, path string) error {
	type Fields Item
	in := struct {
		Fields `yaml:",inline"`
		Range  []float64 `yaml:"range_usd"`
	}{Fields: Fields(*it)}
	if err := d.Decode(n, reflect.ValueOf(&in).Elem(), path); err != nil {
		return err
	}
	*it = Item(in.Fields)
	at := func(key string) string { return path + "." + key }
	if d.Has(at("kind")) && !slices.Contains(kinds, it.Kind) {
		return d.At(at("kind"), "unknown kind %q (valid: %s)", it.Kind, strings.Join(kinds, ", "))
	}
	for i, f := range it.Fabrics {
		if f != InfiniBand && f != Ethernet {
			return d.At(fmt.Sprintf("%s[%d]", at("fabrics"), i), "unknown fabric %q (valid: %s, %s)", f, InfiniBand, Ethernet)
		}
	}
	if d.Has(at("range_usd")) {
		if len(in.Range) != 2 {
			return d.At(at("range_usd"), "want [low, high], got %d values", len(in.Range))
		}
		it.LowUSD, it.HighUSD = in.Range[0], in.Range[1]
	}
	for _, f := range []struct {
		key string
		v   float64
	}{{"price_usd", it.PriceUSD}, {"range_usd", it.LowUSD}, {"range_usd", it.HighUSD}, {"price_per_m_usd", it.PricePerMUSD}, {"max_length_m", it.MaxLengthM}} {
		if f.v < 0 {
			return d.At(at(f.key), "%g must not be negative", f.v)
		}
	}
	if it.LowUSD > it.HighUSD {
		return d.At(at("range_usd"), "low %g is above high %g", it.LowUSD, it.HighUSD)
	}
	for _, f := range []struct {
		key string
		v   int
	}{{"ports", it.Ports}, {"links", it.Links}, {"gpus", it.GPUs}} {
		if d.Has(at(f.key)) && f.v < 1 {
			return d.At(at(f.key), "%d is below the minimum 1", f.v)
		}
	}
	for i, b := range it.Breakout {
		if b < 1 {
			return d.At(fmt.Sprintf("%s[%d]", at("breakout"), i), "%d is below the minimum 1", b)
		}
	}
	return nil
}

// validate checks an item after merging: the fields its kind needs are present and the price
// sits inside its range.
func (it *Item) validate() error {
	bad := func(field, format string, args ...any) error {
		return &yamlstrict.Error{File: it.file, Pos: yamlstrict.Pos{Line: it.line, Col: it.col}, Field: "items." + it.Key + "." + field, Msg: fmt.Sprintf(format, args...)}
	}
	if it.Kind == "" {
		return bad("kind", "missing (valid: %s)", strings.Join(kinds, ", "))
	}
	if it.Source == "" {
		return bad("source", "missing: every price needs a source (a quote, a paper, or \"est.\" with why)")
	}
	if it.LowUSD != 0 || it.HighUSD != 0 {
		if it.PriceUSD < it.LowUSD || it.PriceUSD > it.HighUSD {
			return bad("price_usd", "%g is outside range_usd [%g, %g]", it.PriceUSD, it.LowUSD, it.HighUSD)
		}
	}
	switch it.Kind {
	case KindSwitch:
		if it.Ports == 0 {
			return bad("ports", "a switch needs its port (cage) count")
		}
		if it.PortRate == 0 {
			return bad("port_rate", "a switch needs its port rate, e.g. 400Gbps")
		}
		for _, b := range it.Breakout {
			if units.Rate(b) > it.PortRate || it.PortRate%units.Rate(b) != 0 {
				return bad("breakout", "%d does not divide port_rate %s evenly", b, it.PortRate)
			}
		}
	case KindNIC, KindTransceiver, KindDAC, KindAOC:
		if it.Rate == 0 {
			return bad("rate", "a %s needs the link rate it serves, e.g. 400Gbps", it.Kind)
		}
	case KindServer:
		if it.GPUs == 0 {
			return bad("gpus", "a server needs its GPU count")
		}
	}
	if (it.Kind == KindDAC || it.Kind == KindAOC) && it.MaxLengthM == 0 {
		return bad("max_length_m", "a %s cable needs its longest reach in metres", it.Kind)
	}
	return nil
}

// Keys lists the catalogue's keys in order.
func (c *Catalogue) Keys() []string {
	keys := make([]string, 0, len(c.Items))
	for k := range c.Items {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// usable lists enabled items of a kind for a fabric, in key order (deterministic ties).
func (c *Catalogue) usable(kind, fabric string) []*Item {
	var out []*Item
	for _, k := range c.Keys() {
		it := c.Items[k]
		if it.Kind == kind && !it.Disabled && it.ForFabric(fabric) {
			out = append(out, it)
		}
	}
	return out
}

// lengthPrice is the price of one unit of a cable of length m.
func (it *Item) lengthPrice(m float64) float64 { return it.PriceUSD + it.PricePerMUSD*m }

// low and high are the ends of the price range, or the price when no range is known.
func (it *Item) low() float64 {
	if it.LowUSD == 0 && it.HighUSD == 0 {
		return it.PriceUSD
	}
	return it.LowUSD
}

func (it *Item) high() float64 {
	if it.LowUSD == 0 && it.HighUSD == 0 {
		return it.PriceUSD
	}
	return it.HighUSD
}

// roundCents rounds a dollar amount to whole cents so totals print and compare cleanly.
func roundCents(v float64) float64 { return math.Round(v*100) / 100 }
