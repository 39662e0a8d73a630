package cost

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/units"
)

func TestDefaultCatalogue(t *testing.T) {
	c := Default()
	// The parts docs/references.md [EST] prices, at the mid-points of its ranges.
	for _, w := range []struct {
		key       string
		low, high float64
	}{
		{"ib-ndr-switch-64x400g", 25000, 35000},
		{"connectx7-400g", 1500, 2500},
		{"eth-switch-51.2t-64x800g", 40000, 100000},
		{"transceiver-400g", 600, 1500},
		{"transceiver-800g-twin-2x400g", 1000, 2500},
		{"dac-400g", 100, 300},
	} {
		it := c.Items[w.key]
		if it == nil {
			t.Fatalf("default catalogue lacks %s", w.key)
		}
		if it.LowUSD != w.low || it.HighUSD != w.high || it.PriceUSD != (w.low+w.high)/2 {
			t.Errorf("%s: price %g range [%g, %g]; want mid-point of [%g, %g]", w.key, it.PriceUSD, it.LowUSD, it.HighUSD, w.low, w.high)
		}
	}
	for _, k := range c.Keys() {
		it := c.Items[k]
		if it.Source == "" || it.Date == "" || it.Description == "" {
			t.Errorf("%s: every item needs a description, a source and a date", k)
		}
		if it.LowUSD != 0 && it.PriceUSD != (it.LowUSD+it.HighUSD)/2 {
			t.Errorf("%s: price %g is not the mid-point of [%g, %g]", k, it.PriceUSD, it.LowUSD, it.HighUSD)
		}
	}
	if got := c.Items["eth-switch-51.2t-64x800g"].PortsAt(400 * units.Gbps); got != 128 {
		t.Errorf("51.2T switch: %d ports at 400G, want 128", got)
	}
	if got := c.Items["eth-switch-51.2t-64x800g"].Capacity(); got != 51200*units.Gbps {
		t.Errorf("51.2T switch capacity %s", got)
	}
	// Default returns a copy: changing it does not leak into the next.
	c.Items["dac-400g"].PriceUSD = 1
	if Default().Items["dac-400g"].PriceUSD != 200 {
		t.Fatal("Default shares state between calls")
	}
}

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "prices.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadCatalogueOverride(t *testing.T) {
	p := writeFile(t, `# our quotes
items:
  ib-ndr-switch-64x400g:
    price_usd: 27000
    source: quote ACME-123
    date: 2026-11
  eth-switch-25.6t-64x400g:
    disabled: true
  dac-400g:
    range_usd: [50, 150]
    price_usd: 90
    source: quote ACME-124
  lab-switch-32x400g:
    kind: switch
    fabrics: [ethernet]
    description: small lab switch
    ports: 32
    port_rate: 400Gbps
    price_usd: 9000
    source: quote ACME-125
    date: 2026-11
`)
	c, err := LoadCatalogue(p)
	if err != nil {
		t.Fatal(err)
	}
	ib := c.Items["ib-ndr-switch-64x400g"]
	if ib.PriceUSD != 27000 || ib.Source != "quote ACME-123" || ib.Ports != 32 || ib.PortRate != 800*units.Gbps || ib.LowUSD != 25000 {
		t.Fatalf("partial override lost fields: %+v", ib)
	}
	if c.Items["dac-400g"].PriceUSD != 90 || c.Items["dac-400g"].MaxLengthM != 3 {
		t.Fatalf("dac override: %+v", c.Items["dac-400g"])
	}
	// With the 25.6T switch disabled, a 64-port Ethernet leaf gets the 51.2T switch; a 32-port
	// one the new lab switch (smallest capacity).
	b, err := BOM(star(repeat(g400, 64)...), Ethernet, c, Options{})
	if err != nil || b.Lines[0].Item != "eth-switch-51.2t-64x800g" {
		t.Fatalf("disabled 25.6T: %v %+v", err, b)
	}
	b, err = BOM(star(repeat(g400, 32)...), Ethernet, c, Options{})
	if err != nil || b.Lines[0].Item != "lab-switch-32x400g" || b.Lines[0].UnitUSD != 9000 {
		t.Fatalf("lab switch: %v %+v", err, b)
	}
	// The default catalogue is unchanged.
	if Default().Items["ib-ndr-switch-64x400g"].PriceUSD != 30000 {
		t.Fatal("override leaked into the default")
	}
	if c, err := LoadCatalogue(""); err != nil || c.Items["dac-400g"].PriceUSD != 200 {
		t.Fatalf("empty path: %v", err)
	}
}

func TestLoadCatalogueErrors(t *testing.T) {
	for _, c := range []struct {
		name, body, want string
	}{
		{"unknown item field", "items:\n  dac-400g:\n    prise_usd: 10\n",
			`:3:5: items.dac-400g.prise_usd: unknown key (valid keys here: breakout, date, description, disabled, fabrics, gpus, kind, links, max_length_m, port_rate, ports, price_per_m_usd, price_usd, range_usd, rate, source)`},
		{"unknown top-level", "currency: USD\nitem:\n  x: {}\n", `:2:1: item: unknown key (valid keys here: currency, items)`},
		{"currency", "currency: EUR\n", `:1:11: currency: only USD is supported, got "EUR"`},
		{"price outside range", "items:\n  dac-400g:\n    price_usd: 500\n", `:2:3: items.dac-400g.price_usd: 500 is outside range_usd [100, 300]`},
		{"range reversed", "items:\n  dac-400g:\n    range_usd: [300, 100]\n", `:3:16: items.dac-400g.range_usd: low 300 is above high 100`},
		{"negative", "items:\n  dac-400g:\n    price_usd: -5\n", `:3:16: items.dac-400g.price_usd: -5 must not be negative`},
		{"not a number", "items:\n  dac-400g:\n    price_usd: cheap\n", `:3:16: items.dac-400g.price_usd: "cheap" is not a number`},
		{"bad rate", "items:\n  dac-400g:\n    rate: 400\n", `:3:11: items.dac-400g.rate: rate "400" has no unit`},
		{"bad kind", "items:\n  x:\n    kind: router\n", `:3:11: items.x.kind: unknown kind "router" (valid: switch, nic, transceiver, dac, aoc, fibre, server)`},
		{"bad fabric", "items:\n  x:\n    fabrics: [omnipath]\n", `:3:15: items.x.fabrics[0]: unknown fabric "omnipath" (valid: infiniband, ethernet)`},
		{"new item without kind", "items:\n  x:\n    price_usd: 1\n    source: me\n", `:2:3: items.x.kind: missing`},
		{"new item without source", "items:\n  x:\n    kind: nic\n    rate: 400Gbps\n    price_usd: 1\n", `:2:3: items.x.source: missing`},
		{"switch without ports", "items:\n  x:\n    kind: switch\n    source: me\n    port_rate: 400Gbps\n", `items.x.ports: a switch needs its port (cage) count`},
		{"bad breakout", "items:\n  x:\n    kind: switch\n    source: me\n    ports: 8\n    port_rate: 400Gbps\n    breakout: [3]\n", `items.x.breakout: 3 does not divide port_rate 400Gbps evenly`},
		{"dac without reach", "items:\n  x:\n    kind: dac\n    source: me\n    rate: 400Gbps\n", `items.x.max_length_m: a dac cable needs its longest reach`},
		{"items not a mapping", "items: [1, 2]\n", `:1:8: items: want a mapping, got a list`},
		{"ports zero", "items:\n  ib-ndr-switch-64x400g:\n    ports: 0\n", `:3:12: items.ib-ndr-switch-64x400g.ports: 0 is below the minimum 1`},
		{"duplicate", "items:\n  dac-400g:\n    price_usd: 150\n    price_usd: 160\n", `:4:5: items.dac-400g.price_usd: key given twice`},
		{"yaml syntax", "items:\n  x: [\n", `not valid YAML: `},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := writeFile(t, c.body)
			_, err := LoadCatalogue(p)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), p) {
				t.Fatalf("error %v\nwant it to start with the file name and contain %q", err, c.want)
			}
		})
	}
	if _, err := LoadCatalogue(filepath.Join(t.TempDir(), "missing.yaml")); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Fatalf("missing file: %v", err)
	}
}

func FuzzParseCatalogue(f *testing.F) {
	f.Add([]byte(defaultCatalogue))
	f.Add([]byte("items:\n  dac-400g:\n    price_usd: 150\n"))
	f.Add([]byte("items:\n  x: {kind: switch, source: s, ports: 8, port_rate: 800G, breakout: [1, 2]}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseCatalogue(data, "fuzz.yaml")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.yaml") {
				t.Fatalf("error without the file name: %v", err)
			}
			return
		}
		// Whatever parsed must price a small graph or fail cleanly, never panic.
		_, _ = BOM(star(repeat(g400, 4)...), Ethernet, c, Options{})
	})
}
