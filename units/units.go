// Package units holds the physical quantities fabricsim works in — link rates, byte sizes and
// times — as integer types with explicit units, and parses and prints them the way network
// engineers write them ("400Gbps", "2MiB", "1.5us").
//
// Time is kept in integer picoseconds so that serialization times at every common link rate are
// exact (one byte at 400 Gb/s is 20 ps, at 100 Gb/s 80 ps) and so that runs are deterministic:
// no floating-point rounding ever decides the order of two events.
package units

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// Rate is a data rate in bits per second.
type Rate int64

// Common rates.
const (
	BitPerSecond Rate = 1
	Kbps         Rate = 1e3
	Mbps         Rate = 1e6
	Gbps         Rate = 1e9
	Tbps         Rate = 1e12
)

// Size is an amount of data in bytes.
type Size int64

// Decimal (SI) and binary (IEC) byte multiples.
const (
	Byte Size = 1
	KB   Size = 1000
	MB   Size = 1000 * KB
	GB   Size = 1000 * MB
	TB   Size = 1000 * GB
	KiB  Size = 1024
	MiB  Size = 1024 * KiB
	GiB  Size = 1024 * MiB
	TiB  Size = 1024 * GiB
)

// Time is a simulated instant or span in picoseconds. 2^63 ps is about 106 days of simulated time.
type Time int64

// Time units.
const (
	Picosecond  Time = 1
	Nanosecond  Time = 1000
	Microsecond Time = 1000 * Nanosecond
	Millisecond Time = 1000 * Microsecond
	Second      Time = 1000 * Millisecond
)

// MaxTime is the largest representable time, used as "never".
const MaxTime Time = math.MaxInt64

// TransmitTime is how long n bytes take to serialize at rate r, rounded up to a whole picosecond.
// It panics if r is not positive: rates are validated where they enter the program.
func (r Rate) TransmitTime(n Size) Time {
	if r <= 0 {
		panic("units: TransmitTime on non-positive rate")
	}
	if n <= 0 {
		return 0
	}
	// n*8*1e12 overflows int64 above ~1.1 MB, so multiply in 128 bits.
	hi, lo := bits.Mul64(uint64(n)*8, uint64(Second))
	if hi >= uint64(r) {
		return MaxTime
	}
	q, rem := bits.Div64(hi, lo, uint64(r))
	if rem != 0 {
		q++
	}
	if q > math.MaxInt64 {
		return MaxTime
	}
	return Time(q)
}

// BytesIn is how many whole bytes rate r carries in time t (rounded down).
func (r Rate) BytesIn(t Time) Size {
	if t <= 0 || r <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(t), uint64(r))
	d := uint64(8) * uint64(Second)
	if hi >= d {
		return Size(math.MaxInt64)
	}
	q, _ := bits.Div64(hi, lo, d)
	return Size(q)
}

// BitsPerSecond returns r as a float for reporting.
func (r Rate) BitsPerSecond() float64 { return float64(r) }

// Gbps returns r in Gb/s as a float for reporting.
func (r Rate) Gbps() float64 { return float64(r) / 1e9 }

// Seconds returns t in seconds.
func (t Time) Seconds() float64 { return float64(t) / float64(Second) }

// Nanoseconds returns t in nanoseconds (fractional).
func (t Time) Nanoseconds() float64 { return float64(t) / float64(Nanosecond) }

// Microseconds returns t in microseconds (fractional).
func (t Time) Microseconds() float64 { return float64(t) / float64(Microsecond) }

type unit struct {
	suffix string
	mult   float64
}

// Suffixes are matched longest first, case-sensitively for sizes (b vs B matters) and with a
// few accepted spellings for rates.
var rateUnits = []unit{
	{"Tbps", 1e12}, {"Gbps", 1e9}, {"Mbps", 1e6}, {"Kbps", 1e3}, {"kbps", 1e3}, {"bps", 1},
	{"Tb/s", 1e12}, {"Gb/s", 1e9}, {"Mb/s", 1e6}, {"Kb/s", 1e3}, {"kb/s", 1e3}, {"b/s", 1},
	{"T", 1e12}, {"G", 1e9}, {"M", 1e6}, {"K", 1e3}, {"k", 1e3},
}

var sizeUnits = []unit{
	{"TiB", float64(TiB)}, {"GiB", float64(GiB)}, {"MiB", float64(MiB)}, {"KiB", float64(KiB)},
	{"TB", float64(TB)}, {"GB", float64(GB)}, {"MB", float64(MB)}, {"KB", float64(KB)}, {"kB", float64(KB)},
	{"B", 1},
}

var timeUnits = []unit{
	{"ps", 1}, {"ns", 1e3}, {"us", 1e6}, {"µs", 1e6}, {"ms", 1e9}, {"s", 1e12},
}

func splitNumber(s string) (num, suffix string) {
	i := 0
	for i < len(s) {
		c := s[i]
		if (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E' {
			// 'e' only counts as exponent when followed by a digit or sign.
			if (c == 'e' || c == 'E') && !(i+1 < len(s) && (s[i+1] >= '0' && s[i+1] <= '9' || s[i+1] == '-' || s[i+1] == '+')) {
				break
			}
			i++
			continue
		}
		break
	}
	return s[:i], strings.TrimSpace(s[i:])
}

func parseWith(kind, s string, units []unit, bare bool, valid string) (float64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("empty %s (want e.g. %s)", kind, valid)
	}
	num, suf := splitNumber(t)
	if num == "" {
		return 0, fmt.Errorf("%s %q has no number (want e.g. %s)", kind, s, valid)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%s %q: %q is not a number (want e.g. %s)", kind, s, num, valid)
	}
	if suf == "" {
		if bare {
			return v, nil
		}
		return 0, fmt.Errorf("%s %q has no unit (want e.g. %s)", kind, s, valid)
	}
	for _, u := range units {
		if suf == u.suffix {
			return v * u.mult, nil
		}
	}
	return 0, fmt.Errorf("%s %q: unknown unit %q (want e.g. %s)", kind, s, suf, valid)
}

const (
	validRate = `"100Gbps", "400G", "1.6Tbps", "25Gb/s"`
	validSize = `"4096", "4096B", "2MB" (10^6), "2MiB" (2^20), "1GiB"`
	validTime = `"500ps", "1us", "1.5us", "0.001ms", "2s"`
)

// ParseRate parses a rate such as "100Gbps", "400G", "1.6Tbps" or "25.78125Gb/s". A bare number
// is rejected: a rate without a unit is too easy to get wrong by a factor of 10^9.
func ParseRate(s string) (Rate, error) {
	v, err := parseWith("rate", s, rateUnits, false, validRate)
	if err != nil {
		return 0, err
	}
	if v <= 0 {
		return 0, fmt.Errorf("rate %q must be positive", s)
	}
	if v > 1e16 {
		return 0, fmt.Errorf("rate %q is beyond 10 Pb/s", s)
	}
	r := math.Round(v)
	if r < 1 {
		return 0, fmt.Errorf("rate %q is below 1 bit/s", s)
	}
	return Rate(r), nil
}

// ParseSize parses a byte size such as "4096", "4096B", "2MB" (decimal) or "2MiB" (binary).
// Fractions are allowed when they come to a whole number of bytes ("1.5KiB").
func ParseSize(s string) (Size, error) {
	v, err := parseWith("size", s, sizeUnits, true, validSize)
	if err != nil {
		return 0, err
	}
	if v < 0 {
		return 0, fmt.Errorf("size %q must not be negative", s)
	}
	if v > 9e18 {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	if v != math.Trunc(v) {
		return 0, fmt.Errorf("size %q is not a whole number of bytes", s)
	}
	return Size(v), nil
}

// ParseTime parses a duration such as "1us", "1.5us", "0.001ms" or "500ps". A bare "0" is
// accepted; any other bare number is rejected for lack of a unit.
func ParseTime(s string) (Time, error) {
	t := strings.TrimSpace(s)
	if t == "0" {
		return 0, nil
	}
	v, err := parseWith("duration", s, timeUnits, false, validTime)
	if err != nil {
		return 0, err
	}
	if v < 0 {
		return 0, fmt.Errorf("duration %q must not be negative", s)
	}
	if v > 9e18 {
		return 0, fmt.Errorf("duration %q is too long (limit about 106 days)", s)
	}
	r := math.Round(v)
	if math.Abs(r-v) > 1e-6*math.Max(1, v) {
		return 0, fmt.Errorf("duration %q is finer than a picosecond", s)
	}
	return Time(r), nil
}

// format prints v/mult with the shortest decimal that parses back to exactly v.
func format(v int64, units []unit) string {
	for _, u := range units {
		m := int64(u.mult)
		if m > 1 && v%m == 0 && v != 0 {
			return strconv.FormatInt(v/m, 10) + u.suffix
		}
	}
	return ""
}

// String formats r so that ParseRate(r.String()) == r, e.g. "100Gbps", "1.6Tbps", "25.78125Gbps".
func (r Rate) String() string {
	for _, u := range []unit{{"Tbps", 1e12}, {"Gbps", 1e9}, {"Mbps", 1e6}, {"Kbps", 1e3}} {
		if int64(r) >= int64(u.mult) {
			s := strconv.FormatFloat(float64(r)/u.mult, 'f', -1, 64) + u.suffix
			if back, err := ParseRate(s); err == nil && back == r {
				return s
			}
		}
	}
	return strconv.FormatInt(int64(r), 10) + "bps"
}

// String formats s exactly in the shortest of its binary ("2MiB"), decimal ("256MB") and plain
// byte ("4097B") spellings, binary on a tie.
func (s Size) String() string {
	if s == 0 {
		return "0B"
	}
	best := strconv.FormatInt(int64(s), 10) + "B"
	for _, f := range []string{
		format(int64(s), []unit{{"TiB", float64(TiB)}, {"GiB", float64(GiB)}, {"MiB", float64(MiB)}, {"KiB", float64(KiB)}}),
		format(int64(s), []unit{{"TB", float64(TB)}, {"GB", float64(GB)}, {"MB", float64(MB)}, {"KB", float64(KB)}}),
	} {
		if f != "" && len(f) < len(best) {
			best = f
		}
	}
	return best
}

// String formats t exactly in the largest unit that keeps it readable, e.g. "1us", "1.5us",
// "83.88608us", so that ParseTime(t.String()) == t.
func (t Time) String() string {
	if t == 0 {
		return "0s"
	}
	neg := ""
	v := int64(t)
	if v < 0 {
		neg, v = "-", -v
	}
	for _, u := range []unit{{"s", 1e12}, {"ms", 1e9}, {"us", 1e6}, {"ns", 1e3}} {
		if v >= int64(u.mult) {
			whole, frac := v/int64(u.mult), v%int64(u.mult)
			if frac == 0 {
				return neg + strconv.FormatInt(whole, 10) + u.suffix
			}
			digits := len(strconv.FormatInt(int64(u.mult), 10)) - 1
			fs := fmt.Sprintf("%0*d", digits, frac)
			fs = strings.TrimRight(fs, "0")
			return neg + strconv.FormatInt(whole, 10) + "." + fs + u.suffix
		}
	}
	return neg + strconv.FormatInt(v, 10) + "ps"
}
