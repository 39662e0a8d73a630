package roceconf

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/scenario"
	"github.com/fabricsim/fabricsim/transport/cc/dcqcn"
	"github.com/fabricsim/fabricsim/units"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// target is the port the tests export for: 400G with a 20 m cable (100 ns).
var target = Target{Rate: 400 * units.Gbps, Latency: 100 * units.Nanosecond, Source: "test preset"}

// preset is a RoCE configuration the round trips start from.
type preset struct {
	name string
	cfg  func() fabric.Config
}

var presets = []preset{
	// The RoCE defaults: dynamic PFC (alpha 1/8), rate-scaled ECN, ConnectX DCQCN.
	{"default", fabric.DefaultRoCE},
	// compare's roce-tuned variant (NVIDIA switch ECN, ByteDance's DCQCN) with a PFC watchdog
	// and 2 QPs per connection: what a tune result looks like.
	{"tuned", func() fabric.Config {
		c := fabric.DefaultRoCE()
		r := &c.RoCE
		r.Kmin, r.Kmax = 150*units.KB, 1500*units.KB
		p := &r.DCQCNParams
		p.CNPInterval, p.MinDecFactor, p.DecreasePeriod, p.AI, p.IncreaseTimer = 2*units.Microsecond, 0.9, 2*units.Microsecond, 10*units.Mbps, 50*units.Microsecond
		r.Watchdog, r.WatchdogRestore = 200*units.Millisecond, 400*units.Millisecond
		c.QPsPerConn = 2
		return c
	}},
	// The DCQCN paper's parameters with static PFC thresholds, an explicit headroom, 1 % Pmax,
	// uneven DWRR weights and one strict class.
	{"paper-static", func() fabric.Config {
		c := fabric.DefaultRoCE()
		r := &c.RoCE
		r.DCQCNPreset, r.DCQCNParams = "paper", dcqcn.Paper()
		r.PFCThreshold, r.XOFF, r.XON, r.Headroom = fabric.PFCStatic, 300*units.KB, 250*units.KB, 160*units.KB
		r.Kmin, r.Kmax, r.Pmax = 5*units.KB, 200*units.KB, 0.01
		r.Watchdog, r.WatchdogRestore = msec(1000), msec(2000)
		r.Strict = 1 << 6
		r.Weights = [8]int{1, 2, 1, 4, 1, 1, 1, 1}
		c.CNPPriority = 7
		c.Buffer = 64 * units.MiB
		r.NetdevMTU = 9000
		return c
	}},
	// compare's roce-pfc-only variant: PFC, no ECN, no DCQCN.
	{"pfc-only", func() fabric.Config {
		c := fabric.DefaultRoCE()
		c.RoCE.ECN, c.RoCE.DCQCN = false, false
		return c
	}},
	// Lossy RoCE: ECN and DCQCN without PFC.
	{"lossy", func() fabric.Config {
		c := fabric.DefaultRoCE()
		c.RoCE.PFC = false
		return c
	}},
}

func msec(ms int64) units.Time { return units.Time(ms) * units.Millisecond }

// carried are the fabric keys format f writes for configuration c: the round trip must give
// back each of them, and the import must set no other.
func carried(f Format, c *fabric.Config) []string {
	r := &c.RoCE
	var k []string
	add := func(cond bool, keys ...string) {
		if cond {
			k = append(k, keys...)
		}
	}
	wd := r.PFC && r.Watchdog > 0
	static := r.PFCThreshold == fabric.PFCStatic
	switch f {
	case ConnectX:
		add(true, "netdev_mtu", "pfc", "data_priority", "cnp_priority", "dcqcn", "qps_per_conn")
		add(r.PFC, "pfc_priorities")
		add(r.DCQCN, "dcqcn_g", "dcqcn_alpha_timer", "dcqcn_alpha_init", "dcqcn_increase_timer", "dcqcn_byte_counter",
			"dcqcn_f", "dcqcn_rate_ai", "dcqcn_rate_hai", "dcqcn_cnp_interval", "dcqcn_decrease_period", "dcqcn_min_rate",
			"dcqcn_min_dec_factor", "dcqcn_clamp_target")
		return k
	}
	add(true, "data_priority", "cnp_priority", "pfc", "ecn", "strict_priorities", "weights")
	add(r.PFC, "pfc_priorities")
	add(r.ECN, "ecn_kmin", "ecn_kmax", "ecn_pmax")
	add(wd, "pfc_watchdog")
	switch f {
	case NVUE:
		add(r.PFC, "pfc_headroom", "pfc_threshold")
		add(r.PFC && static, "pfc_xoff", "pfc_xon")
		add(r.PFC && !static, "pfc_alpha")
	case SONiC:
		add(true, "buffer")
		add(r.PFC, "pfc_headroom", "pfc_threshold")
		add(r.PFC && static, "pfc_xoff", "pfc_xon")
		add(r.PFC && !static, "pfc_alpha", "pfc_xon_offset")
		add(wd, "pfc_watchdog_restore")
	case EOS:
		add(wd, "pfc_watchdog_restore")
	}
	return k
}

// ratio is DWRR weights as the shares they give: each weight divided by the greatest common
// divisor of the weights of the classes not served strictly.
func ratio(c *fabric.Config) string {
	g := 0
	for p, w := range c.RoCE.Weights {
		if !c.RoCE.Strict.Has(uint8(p)) {
			g = gcd(g, w)
		}
	}
	var s []string
	for p, w := range c.RoCE.Weights {
		if !c.RoCE.Strict.Has(uint8(p)) {
			s = append(s, fmt.Sprintf("%d:%d", p, w/g))
		}
	}
	return strings.Join(s, " ")
}

func exportString(t *testing.T, f Format, c fabric.Config) (string, []string) {
	t.Helper()
	var b bytes.Buffer
	notes, err := Export(&b, f, c, target)
	if err != nil {
		t.Fatalf("export %s: %v", f, err)
	}
	return b.String(), notes
}

// TestRoundTrip exports every preset in every format, imports the file and checks that every
// setting the format carries comes back with the same value (weights as the same DWRR shares),
// that the import sets no other, that the export rounded nothing, and that the imported keys
// load as a scenario's fabric section with the same values.
func TestRoundTrip(t *testing.T) {
	for _, p := range presets {
		for _, f := range Formats {
			t.Run(p.name+"/"+string(f), func(t *testing.T) {
				cfg := p.cfg()
				if err := cfg.Validate(); err != nil {
					t.Fatalf("preset: %v", err)
				}
				out, notes := exportString(t, f, cfg)
				if len(notes) > 0 {
					t.Errorf("export rounded values: %q", notes)
				}
				want := Resolve(cfg, target)
				im, err := Import(f, []File{{Name: "x." + string(f), Data: []byte(out)}})
				if err != nil {
					t.Fatalf("import: %v\n%s", err, out)
				}
				keys := carried(f, &want)
				if !want.RoCE.ECN && f != ConnectX {
					keys = append(keys, "dcqcn") // a switch that does not mark turns DCQCN off
				}
				got := map[string]bool{}
				for _, k := range im.Keys() {
					got[k] = true
				}
				for _, k := range keys {
					if !got[k] {
						t.Errorf("fabric.%s (%s) not imported", k, keyText(&want, k))
						continue
					}
					delete(got, k)
					if k == "weights" {
						if a, b := ratio(&want), ratio(&im.Config); a != b {
							t.Errorf("weights: shares %s, imported %s", a, b)
						}
						continue
					}
					if a, b := keyText(&want, k), im.Text(k); a != b {
						t.Errorf("fabric.%s: exported %s, imported %s", k, a, b)
					}
				}
				for k := range got {
					t.Errorf("fabric.%s imported (%s) but not carried by %s", k, im.Text(k), f)
				}
				for _, n := range im.Notes {
					// The cable length and the watchdog's polling interval are written for the
					// device and have no fabricsim key.
					if !strings.Contains(n.String(), "cable") && !strings.Contains(n.String(), "POLL_INTERVAL") {
						t.Errorf("note on an exported file: %s", n)
					}
				}
				checkLoads(t, im)
			})
		}
	}
}

// checkLoads writes the imported keys as a scenario's fabric section and checks that the
// scenario loader reads the same values.
func checkLoads(t *testing.T, im *Imported) {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("name: imported\ntopology: {kind: leaf-spine, leaves: 1, spines: 0, hosts_per_leaf: 2, host_link: {rate: 400Gbps, latency: 100ns}}\ntraffic: {kind: permutation}\n")
	if err := im.WriteYAML(&b, nil); err != nil {
		t.Fatal(err)
	}
	s, err := scenario.Parse(b.Bytes(), "imported.yaml", "")
	if err != nil {
		t.Fatalf("the imported fabric section does not load: %v\n%s", err, b.String())
	}
	c := s.FabricConfig()
	for _, k := range im.Keys() {
		if a, b := im.Text(k), keyText(&c, k); a != b {
			t.Errorf("fabric.%s: imported %s, the scenario loads %s", k, a, b)
		}
	}
}

// TestExportDeterministic: the same input gives the same bytes.
func TestExportDeterministic(t *testing.T) {
	for _, p := range presets {
		for _, f := range Formats {
			a, _ := exportString(t, f, p.cfg())
			b, _ := exportString(t, f, p.cfg())
			if a != b {
				t.Errorf("%s/%s: two exports differ", p.name, f)
			}
		}
	}
}

// TestGolden compares the exports of the default and tuned presets with testdata/ (go test
// ./roceconf -run Golden -update rewrites them).
func TestGolden(t *testing.T) {
	ext := map[Format]string{NVUE: "nvue", SONiC: "json", EOS: "eos", ConnectX: "sh"}
	for _, p := range presets[:3] {
		for _, f := range Formats {
			out, _ := exportString(t, f, p.cfg())
			path := filepath.Join("testdata", p.name+"."+ext[f])
			if *update {
				if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if out != string(want) {
				t.Errorf("%s differs from the export (run go test ./roceconf -run Golden -update if the change is intended):\n%s", path, out)
			}
		}
	}
}
