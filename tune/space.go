package tune

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/headroom"
	"github.com/fabricsim/fabricsim/units"
	"github.com/fabricsim/fabricsim/yamlstrict"
)

// Scale is how a parameter's range is searched: evenly (linear) or evenly in its logarithm
// (log: each factor of ten gets the same share, for values spanning orders of magnitude).
type Scale string

// Scales.
const (
	Linear Scale = "linear"
	Log    Scale = "log"
)

// Param is one fabric setting the search varies, with its range.
type Param struct {
	// Key is the setting's scenario key under fabric: ("dcqcn_rate_ai", "ib_cc.threshold").
	Key string
	// Min and Max bound it in the field's own unit: bit/s for rates, bytes for sizes,
	// picoseconds for times, the number itself otherwise.
	Min, Max float64
	Scale    Scale
	// Source is "built-in" or "scenario" (the tune: section).
	Source string

	typ     reflect.Type
	index   []int
	integer bool
}

// paramFor returns the Param of fabric key name for fabric kind, or an error saying why the key
// cannot be searched.
func paramFor(name string, kind fabric.Kind) (Param, error) {
	var keys []string
	for _, k := range fabric.Keys() {
		if !k.For(kind) {
			continue
		}
		keys = append(keys, k.Name)
		if k.Name != name {
			continue
		}
		t := reflect.TypeOf(fabric.Config{}).FieldByIndex(k.Index).Type
		p := Param{Key: name, typ: t, index: k.Index}
		switch t.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			p.integer = true
		case reflect.Float32, reflect.Float64:
		default:
			return Param{}, fmt.Errorf("is a %s setting; only numbers, rates, sizes and times have a range to search", describeType(t))
		}
		return p, nil
	}
	for _, k := range fabric.Keys() {
		if k.Name == name {
			return Param{}, fmt.Errorf("is not a setting of fabric kind %s", kind)
		}
	}
	return Param{}, fmt.Errorf("is not a fabric key (keys of kind %s: %s)", kind, strings.Join(keys, ", "))
}

func describeType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "true/false"
	case reflect.String:
		return "named (mode)"
	case reflect.Slice, reflect.Array:
		return "list"
	}
	return t.String()
}

// Value maps u in [0,1] onto the range (log or linear), rounded to 3 significant digits (whole
// numbers for integer fields) and kept inside the range.
func (p *Param) Value(u float64) float64 {
	u = math.Min(1, math.Max(0, u))
	var x float64
	if p.Scale == Log {
		x = p.Min * math.Pow(p.Max/p.Min, u)
	} else {
		x = p.Min + u*(p.Max-p.Min)
	}
	return p.clamp(round3(x))
}

func (p *Param) clamp(x float64) float64 {
	if p.integer {
		x = math.Round(x)
		if x < p.Min {
			x = math.Ceil(p.Min)
		}
		if x > p.Max {
			x = math.Floor(p.Max)
		}
		return x
	}
	return math.Min(p.Max, math.Max(p.Min, x))
}

// Unit is Value's inverse: where x sits in the range, clamped to [0,1].
func (p *Param) Unit(x float64) float64 {
	var u float64
	switch {
	case p.Max <= p.Min:
		return 0.5
	case p.Scale == Log:
		if x <= 0 {
			return 0
		}
		u = math.Log(x/p.Min) / math.Log(p.Max/p.Min)
	default:
		u = (x - p.Min) / (p.Max - p.Min)
	}
	return math.Min(1, math.Max(0, u))
}

// round3 rounds x to 3 significant digits, so that candidates print as a user would write them
// ("12.3Mbps", "154KB") and nearby samples of an integer field coincide.
func round3(x float64) float64 {
	if x == 0 || math.IsInf(x, 0) || math.IsNaN(x) {
		return x
	}
	// Through the decimal text, so that 0.00114 is the float nearest 0.00114, not 0.0011400000000000002.
	r, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 3, 64), 64)
	return r
}

// roundUp3 rounds x > 0 up to 3 significant digits.
func roundUp3(x float64) float64 {
	r := round3(x)
	if r < x {
		m := math.Pow(10, math.Floor(math.Log10(x))-2)
		r = round3(r + m)
	}
	return r
}

// Get reads the parameter's value from a fabric configuration.
func (p *Param) Get(c fabric.Config) float64 {
	return p.valueOf(reflect.ValueOf(c).FieldByIndex(p.index))
}

// Set writes value x into c.
func (p *Param) Set(c *fabric.Config, x float64) {
	p.assign(reflect.ValueOf(c).Elem().FieldByIndex(p.index), x)
}

func (p *Param) assign(v reflect.Value, x float64) {
	switch {
	case v.CanInt():
		v.SetInt(int64(math.Round(x)))
	case v.CanUint():
		v.SetUint(uint64(math.Round(math.Max(0, x))))
	default:
		v.SetFloat(x)
	}
}

// Text writes x as the scenario would ("20Mbps", "2us", "150KB", "0.9").
func (p *Param) Text(x float64) string {
	v := reflect.New(p.typ).Elem()
	p.assign(v, x)
	return yamlstrict.Text(v)
}

// pairs are settings that must keep an order: Kmin <= Kmax, R_AI <= R_HAI (hyper increase
// steps faster than additive increase, [DCQCN] §3.2), XON <= XOFF. A candidate whose first
// exceeds its second has the second raised (Kmax, R_HAI) or the first lowered (XON) to meet it.
var pairs = [][2]string{{"ecn_kmin", "ecn_kmax"}, {"dcqcn_rate_ai", "dcqcn_rate_hai"}, {"pfc_xon", "pfc_xoff"}}

// linkClass is one kind of link in the network, for the headroom its cable needs.
type linkClass struct {
	Rate    units.Rate
	Latency units.Time
}

// requiredHeadroom is the PFC headroom per port and lossless class that the longest cable of
// the network needs: the larger of the mlx5 formula and the IEEE 802.1Qbb-style breakdown
// ([mlx5-headroom], [IEEE 802.1Q]), computed as the packet backend sizes headroom when none is
// given (fabric autoHeadroom), at each link class's rate and cable length (latency / 5 ns per m).
func requiredHeadroom(c fabric.Config, links []linkClass) units.Size {
	frame := int(c.MTU) + c.HeaderBytes + c.FirstHeaderExtra + c.L1Overhead
	var need int64
	for _, l := range links {
		cable := float64(l.Latency) / float64(units.Nanosecond) / headroom.FibreNsPerMetre
		h := headroom.Headroom(headroom.Input{Rate: l.Rate, CableMetres: cable, MTU: frame, Response: c.SwitchLatency})
		need = max(need, headroom.Bytes(math.Max(h.MLX5, h.IEEE)))
	}
	return units.Size(need)
}

// builtinRange is a built-in parameter's range at 400 Gb/s; perRate ranges scale with the link
// rate (thresholds and rates), the others (timers, counters, fractions) do not.
type builtinRange struct {
	key      string
	min, max float64
	scale    Scale
	perRate  bool
	// when says whether the fabric as configured uses the setting.
	when func(r *fabric.RoCEConfig) bool
}

// ECN's marking thresholds matter only to DCQCN: nothing else reacts to a mark.
func ecnOn(r *fabric.RoCEConfig) bool      { return r.ECN && r.DCQCN }
func dcqcnOn(r *fabric.RoCEConfig) bool    { return r.DCQCN }
func pfcDynamic(r *fabric.RoCEConfig) bool { return r.PFC && r.PFCThreshold == fabric.PFCDynamic }
func pfcStatic(r *fabric.RoCEConfig) bool  { return r.PFC && r.PFCThreshold == fabric.PFCStatic }
func always(*fabric.RoCEConfig) bool       { return true }

// builtinRanges span the vendor defaults ([ConnectX-DCQCN], [NVIDIA-RoCE]) and the published
// production values ([ByteDance25]) by about an order of magnitude each way, where the setting
// allows (docs/tune.md gives each range and why).
var builtinRanges = []builtinRange{
	{"ecn_kmin", 40e3, 4e6, Log, true, ecnOn},
	{"ecn_kmax", 160e3, 16e6, Log, true, ecnOn},
	{"ecn_pmax", 0.01, 1, Log, false, ecnOn},
	{"dcqcn_g", 1.0 / 1024, 1.0 / 16, Log, false, dcqcnOn},
	{"dcqcn_rate_ai", 1e6, 200e6, Log, true, dcqcnOn},
	{"dcqcn_rate_hai", 5e6, 2e9, Log, true, dcqcnOn},
	{"dcqcn_increase_timer", float64(5 * units.Microsecond), float64(units.Millisecond), Log, false, dcqcnOn},
	{"dcqcn_byte_counter", 8e3, 64e6, Log, false, dcqcnOn},
	{"dcqcn_decrease_period", float64(units.Microsecond), float64(100 * units.Microsecond), Log, false, dcqcnOn},
	{"dcqcn_min_rate", 1e6, 40e9, Log, true, dcqcnOn},
	{"dcqcn_cnp_interval", float64(500 * units.Nanosecond), float64(100 * units.Microsecond), Log, false, dcqcnOn},
	{"dcqcn_alpha_timer", float64(units.Microsecond), float64(200 * units.Microsecond), Log, false, dcqcnOn},
	{"dcqcn_min_dec_factor", 0.5, 0.98, Linear, false, dcqcnOn},
	{"pfc_alpha", 1.0 / 64, 8, Log, false, pfcDynamic},
	{"pfc_xoff", 32e3, 4e6, Log, true, pfcStatic},
	{"pfc_xon", 16e3, 4e6, Log, true, pfcStatic},
	{"qps_per_conn", 1, 8, Linear, false, always},
}

// builtinSpace is the default search space of a RoCE fabric c on links of the given rate: the
// ranges above for the mechanisms c turns on, and the PFC headroom from what the cable needs
// (need) to four times that.
func builtinSpace(c fabric.Config, rate units.Rate, need units.Size) []Param {
	if c.Kind != fabric.KindRoCE {
		return nil
	}
	scale := float64(rate) / 400e9
	var out []Param
	for _, b := range builtinRanges {
		if !b.when(&c.RoCE) {
			continue
		}
		p, err := paramFor(b.key, "roce")
		if err != nil {
			panic("tune: built-in parameter " + b.key + ": " + err.Error())
		}
		p.Min, p.Max, p.Scale, p.Source = b.min, b.max, b.scale, "built-in"
		if b.perRate {
			p.Min, p.Max = round3(p.Min*scale), round3(p.Max*scale)
		}
		out = append(out, p)
		if b.key == "pfc_alpha" || b.key == "pfc_xon" {
			h, _ := paramFor("pfc_headroom", "roce")
			// The lower bound rounded up, so that no candidate falls below the cable's need.
			lo := roundUp3(float64(need))
			h.Min, h.Max, h.Scale, h.Source = lo, round3(4*lo), Log, "built-in"
			out = append(out, h)
		}
	}
	return out
}
