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
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/fabricsim/fabricsim/units"
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
	Key         string   `json:"key"`
	Kind        string   `json:"kind"`
	Fabrics     []string `json:"fabrics,omitempty"` // empty: any fabric
	Description string   `json:"description"`
	// PriceUSD is the unit price used in bills; LowUSD..HighUSD the range it was taken from
	// (both 0 when only a point estimate is known).
	PriceUSD float64 `json:"price_usd"`
	LowUSD   float64 `json:"low_usd,omitempty"`
	HighUSD  float64 `json:"high_usd,omitempty"`
	// PricePerMUSD is added per metre of length (fibre, AOC).
	PricePerMUSD float64 `json:"price_per_m_usd,omitempty"`
	Source       string  `json:"source"`
	Date         string  `json:"date"`
	// Disabled items stay in the catalogue but are never chosen.
	Disabled bool `json:"disabled,omitempty"`

	// Switch: Ports cages at PortRate; each cage may be split into any of Breakout lanes
	// (1 = unsplit; [1,2] lets a 64 x 800G switch serve 128 x 400G).
	Ports    int        `json:"ports,omitempty"`
	PortRate units.Rate `json:"port_rate,omitempty"`
	Breakout []int      `json:"breakout,omitempty"`

	// NIC, transceiver, DAC, AOC, fibre: the link rate served (fibre: 0 = any rate).
	Rate units.Rate `json:"rate,omitempty"`
	// Transceiver: links one module serves (2 for a twin-port module in one switch cage).
	Links int `json:"links,omitempty"`
	// DAC, AOC, transceiver: longest cable run in metres (0 = no limit).
	MaxLengthM float64 `json:"max_length_m,omitempty"`

	// Server: GPUs per server.
	GPUs int `json:"gpus,omitempty"`

	file string
	line int
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
	Currency string           `json:"currency"`
	Items    map[string]*Item `json:"items"`
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

var itemFields = []string{"kind", "fabrics", "description", "price_usd", "range_usd", "price_per_m_usd",
	"source", "date", "disabled", "ports", "port_rate", "breakout", "rate", "links", "max_length_m", "gpus"}

func (c *Catalogue) merge(data []byte, file string) error {
	d := decoder{file: file}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("%s: %v", file, err)
	}
	if len(doc.Content) == 0 {
		return nil // empty file: nothing to override
	}
	root := doc.Content[0]
	touched := map[string]bool{}
	err := d.mapping(root, "", []string{"currency", "items"}, func(key string, _, v *yaml.Node) error {
		switch key {
		case "currency":
			s, err := d.str(v, key)
			if err != nil {
				return err
			}
			if s != "USD" {
				return d.errf(v, key, "only USD is supported, got %q", s)
			}
			c.Currency = s
			return nil
		}
		return d.mapping(v, "items", nil, func(name string, k, iv *yaml.Node) error {
			it, ok := c.Items[name]
			if !ok {
				it = &Item{Key: name}
			} else {
				cp := *it
				it = &cp
			}
			it.file, it.line = file, k.Line
			if err := d.item(iv, "items."+name, it); err != nil {
				return err
			}
			c.Items[name] = it
			touched[name] = true
			return nil
		})
	})
	if err != nil {
		return err
	}
	if c.Currency == "" {
		c.Currency = "USD"
	}
	names := make([]string, 0, len(touched))
	for k := range touched {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if err := c.Items[k].validate(); err != nil {
			return err
		}
	}
	return nil
}

func (d decoder) item(n *yaml.Node, path string, it *Item) error {
	return d.mapping(n, path, itemFields, func(key string, _, v *yaml.Node) error {
		f := path + "." + key
		var err error
		switch key {
		case "kind":
			var s string
			if s, err = d.str(v, f); err == nil {
				if !slices.Contains(kinds, s) {
					return d.errf(v, f, "unknown kind %q (valid: %s)", s, strings.Join(kinds, ", "))
				}
				it.Kind = s
			}
		case "fabrics":
			var l []*yaml.Node
			if l, err = d.list(v, f); err != nil {
				return err
			}
			it.Fabrics = nil
			for _, e := range l {
				s, err := d.str(e, f)
				if err != nil {
					return err
				}
				if s != InfiniBand && s != Ethernet {
					return d.errf(e, f, "unknown fabric %q (valid: %s, %s)", s, InfiniBand, Ethernet)
				}
				it.Fabrics = append(it.Fabrics, s)
			}
		case "description":
			it.Description, err = d.str(v, f)
		case "price_usd":
			it.PriceUSD, err = d.number(v, f)
		case "range_usd":
			var l []*yaml.Node
			if l, err = d.list(v, f); err != nil {
				return err
			}
			if len(l) != 2 {
				return d.errf(v, f, "want [low, high], got %d values", len(l))
			}
			if it.LowUSD, err = d.number(l[0], f); err != nil {
				return err
			}
			if it.HighUSD, err = d.number(l[1], f); err != nil {
				return err
			}
			if it.LowUSD > it.HighUSD {
				return d.errf(v, f, "low %g is above high %g", it.LowUSD, it.HighUSD)
			}
		case "price_per_m_usd":
			it.PricePerMUSD, err = d.number(v, f)
		case "source":
			it.Source, err = d.str(v, f)
		case "date":
			it.Date, err = d.str(v, f)
		case "disabled":
			it.Disabled, err = d.boolean(v, f)
		case "ports":
			it.Ports, err = d.integer(v, f, 1)
		case "port_rate":
			it.PortRate, err = d.rate(v, f)
		case "breakout":
			var l []*yaml.Node
			if l, err = d.list(v, f); err != nil {
				return err
			}
			it.Breakout = nil
			for _, e := range l {
				b, err := d.integer(e, f, 1)
				if err != nil {
					return err
				}
				it.Breakout = append(it.Breakout, b)
			}
		case "rate":
			it.Rate, err = d.rate(v, f)
		case "links":
			it.Links, err = d.integer(v, f, 1)
		case "max_length_m":
			it.MaxLengthM, err = d.number(v, f)
		case "gpus":
			it.GPUs, err = d.integer(v, f, 1)
		}
		return err
	})
}

// validate checks an item after merging: the fields its kind needs are present and the price
// sits inside its range.
func (it *Item) validate() error {
	bad := func(field, format string, args ...any) error {
		return &posError{file: it.file, line: it.line, field: "items." + it.Key + "." + field, msg: fmt.Sprintf(format, args...)}
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
