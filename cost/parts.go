package cost

import (
	"fmt"
	"strings"

	"github.com/fabricsim/fabricsim/units"
)

// What the catalogue has, for messages about a part it lacks: a bill that cannot be priced
// names the missing part and lists the usable ones of its kind, so the user sees at once whether
// a rate, a reach or a fabric is what is missing.

// summary is one line about an item's fitness: "transceiver-400g (400Gbps, 1 link, 500 m)".
func (it *Item) summary() string {
	switch it.Kind {
	case KindSwitch:
		ways := make([]string, len(it.breakouts()))
		for i, b := range it.breakouts() {
			ways[i] = fmt.Sprintf("%d x %s", it.Ports*b, it.PortRate/units.Rate(b))
		}
		return fmt.Sprintf("%s (%s)", it.Key, strings.Join(ways, " or "))
	case KindTransceiver:
		links := it.Links
		if links == 0 {
			links = 1
		}
		s := fmt.Sprintf("%s (%s, %d link", it.Key, it.Rate, links)
		if links > 1 {
			s += "s"
		}
		return s + reach(it) + ")"
	case KindDAC, KindAOC:
		return fmt.Sprintf("%s (%s%s)", it.Key, it.Rate, reach(it))
	case KindFibre:
		if it.Rate == 0 {
			return it.Key + " (any rate)"
		}
	}
	if it.Rate > 0 {
		return fmt.Sprintf("%s (%s)", it.Key, it.Rate)
	}
	return it.Key
}

func reach(it *Item) string {
	if it.MaxLengthM > 0 {
		return fmt.Sprintf(", %g m", it.MaxLengthM)
	}
	return ""
}

// has lists the usable items of a kind for a fabric: "the catalogue's infiniband transceivers:
// a (...), b (...)", or says there is none.
func (c *Catalogue) has(kind, fabric string) string {
	items := c.usable(kind, fabric)
	if len(items) == 0 {
		return fmt.Sprintf("the catalogue has no enabled %s %s at all", fabric, plural(kind))
	}
	parts := make([]string, len(items))
	for i, it := range items {
		parts[i] = it.summary()
	}
	return fmt.Sprintf("the catalogue's %s %s: %s", fabric, plural(kind), strings.Join(parts, ", "))
}

func plural(kind string) string {
	switch kind {
	case KindSwitch:
		return "switches"
	case KindNIC, KindDAC, KindAOC:
		return strings.ToUpper(kind) + "s"
	}
	return kind + "s"
}

// picker memoizes the part choices of one bill: a cluster has tens of thousands of links but a
// handful of distinct (kind, rate, length, links) questions, and each choice scans the catalogue.
type picker struct {
	cat    *Catalogue
	fabric string
	memo   map[pickKey]*Item
}

type pickKey struct {
	kind    string
	rate    units.Rate
	lengthM float64
	links   int
}

func newPicker(cat *Catalogue, fabric string) *picker {
	return &picker{cat: cat, fabric: fabric, memo: map[pickKey]*Item{}}
}

func (p *picker) pick(k pickKey) *Item {
	if it, ok := p.memo[k]; ok {
		return it
	}
	var it *Item
	switch k.kind {
	case KindDAC, KindAOC:
		it = chooseCable(p.cat, k.kind, p.fabric, k.rate, k.lengthM)
	case KindTransceiver:
		it = chooseTransceiver(p.cat, p.fabric, k.rate, k.lengthM, k.links)
	case KindFibre:
		it = chooseFibre(p.cat, p.fabric, k.rate)
	case KindNIC:
		it = chooseNIC(p.cat, p.fabric, k.rate)
	}
	p.memo[k] = it
	return it
}

func (p *picker) cable(kind string, r units.Rate, m float64) *Item {
	return p.pick(pickKey{kind: kind, rate: r, lengthM: m})
}

func (p *picker) transceiver(r units.Rate, m float64, links int) *Item {
	return p.pick(pickKey{kind: KindTransceiver, rate: r, lengthM: m, links: links})
}

func (p *picker) fibre(r units.Rate) *Item { return p.pick(pickKey{kind: KindFibre, rate: r}) }

func (p *picker) nic(r units.Rate) *Item { return p.pick(pickKey{kind: KindNIC, rate: r}) }
