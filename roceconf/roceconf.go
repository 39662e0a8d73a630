// Package roceconf converts fabricsim's RoCE fabric settings (fabric.Config with kind roce) to
// and from the configuration real switches and NICs take, so that a setting tuned in the
// simulator can be applied to a cluster and a cluster's configuration can be simulated:
//
//   - nvue: NVIDIA Cumulus Linux NVUE commands (`nv set qos ...`, [NVUE-QoS]);
//   - sonic: SONiC config_db.json tables (WRED_PROFILE, BUFFER_POOL, BUFFER_PROFILE, BUFFER_PG,
//     PORT_QOS_MAP, QUEUE, SCHEDULER, DSCP_TO_TC_MAP, PFC_WD; [SONiC-YANG], [SAI-buffer]);
//   - eos: Arista EOS CLI (`qos profile`, `uc-tx-queue`, `random-detect ecn`,
//     `priority-flow-control`; [EOS-AVD]);
//   - connectx: the host side, a shell script of `mlnx_qos` (trust, PFC, DSCP to priority), the
//     mlx5 DCQCN parameters under debugfs cc_params ([ConnectX-DCQCN], [mlx5-ifc]), the netdev
//     MTU and NCCL's QPs per connection.
//
// Export resolves the settings fabricsim derives per port (rate-scaled ECN thresholds, the
// automatic headroom) for one port of the target's rate, converts units (bytes, percent, Mb/s,
// microseconds, the /1024 encodings of alpha and g) and writes every line in a fixed order, so
// that the same input gives the same bytes. Import reads the same formats back into scenario
// keys under `fabric:`; what it cannot express is reported with file:line and the key.
// docs/config-export.md maps every field both ways.
package roceconf

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/units"
)

// Format is a configuration dialect.
type Format string

// The dialects.
const (
	NVUE     Format = "nvue"
	SONiC    Format = "sonic"
	EOS      Format = "eos"
	ConnectX Format = "connectx"
)

// Formats lists the dialects.
var Formats = []Format{NVUE, SONiC, EOS, ConnectX}

// FormatNames is the list of dialects for messages: "nvue, sonic, eos, connectx".
func FormatNames() string {
	s := make([]string, len(Formats))
	for i, f := range Formats {
		s[i] = string(f)
	}
	return strings.Join(s, ", ")
}

// ParseFormat reads a dialect name.
func ParseFormat(s string) (Format, error) {
	for _, f := range Formats {
		if s == string(f) {
			return f, nil
		}
	}
	return "", fmt.Errorf("%q is not a configuration format (valid: %s)", s, FormatNames())
}

// DSCP values of RoCE traffic in NVIDIA's RoCE defaults ([NVIDIA-RoCE]): data on DSCP 26, CNPs
// on DSCP 48. fabricsim classifies by priority; the exports map these two DSCPs to the data and
// CNP priorities, and the imports read the data and CNP priorities from them.
const (
	DSCPData = 26
	DSCPCNP  = 48
)

// Target is the port the exported settings are for, and what they came from.
type Target struct {
	// Rate is the port rate: fabricsim scales ECN thresholds and sizes the automatic headroom
	// by each port's rate and cable; an export writes the values of a port of this rate.
	Rate units.Rate
	// Latency is the link's propagation delay, giving the cable length at 5 ns per metre.
	Latency units.Time
	// Ports are the interfaces the per-port settings are written for; nil takes the format's
	// example (swp1, Ethernet0, Ethernet1/1, eth0).
	Ports []string
	// Source says what was exported (a scenario and variant), for the header comment.
	Source string
}

// CableMetres is the cable length of the target's link, rounded to whole metres (at least 1).
func (t Target) CableMetres() int {
	return max(1, int(math.Round(float64(t.Latency)/float64(units.Nanosecond)/5)))
}

// defaultPorts are each format's example interface.
var defaultPorts = map[Format]string{NVUE: "swp1", SONiC: "Ethernet0", EOS: "Ethernet1/1", ConnectX: "eth0"}

func (t Target) ports(f Format) []string {
	if len(t.Ports) > 0 {
		return t.Ports
	}
	return []string{defaultPorts[f]}
}

// Resolve returns c with the settings fabricsim derives per port written out for a port of the
// target: the ECN thresholds (fabric.RoCEConfig.ECNThresholds) and, with PFC, the automatic
// headroom (fabric.AutoHeadroom) when pfc_headroom is 0. Real configurations carry concrete
// values; the import of an export gives back these.
func Resolve(c fabric.Config, t Target) fabric.Config {
	r := &c.RoCE
	if r.ECN {
		kmin, kmax, pmax := r.ECNThresholds(t.Rate)
		r.Kmin, r.Kmax, r.Pmax, r.ECNMap = units.Size(kmin), units.Size(kmax), pmax, nil
	}
	if r.PFC && r.Headroom == 0 {
		r.Headroom = units.Size(fabric.AutoHeadroom(&c, t.Rate, t.Latency))
	}
	return c
}

// ExportError is a fabricsim setting a format cannot express (out of the vendor's range).
type ExportError struct {
	Format Format
	// Key is the scenario key under `fabric:`.
	Key string
	Msg string
}

func (e *ExportError) Error() string {
	return fmt.Sprintf("fabric.%s: %s (format %s)", e.Key, e.Msg, e.Format)
}

// exporter collects an export's output, the values it had to round and the first error.
type exporter struct {
	f     Format
	buf   bytes.Buffer
	notes []string
	err   error
}

func (x *exporter) line(format string, args ...any) {
	fmt.Fprintf(&x.buf, format, args...)
	x.buf.WriteByte('\n')
}

// fail records the first error: key cannot be written.
func (x *exporter) fail(key, format string, args ...any) {
	if x.err == nil {
		x.err = &ExportError{Format: x.f, Key: key, Msg: fmt.Sprintf(format, args...)}
	}
}

// round notes that key's value was rounded to what the format holds ("" = a note about the
// output as a whole).
func (x *exporter) round(key, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if key != "" {
		msg = "fabric." + key + ": " + msg
	}
	x.notes = append(x.notes, msg)
}

// Export writes the RoCE settings of c (resolved for t) in format f. It returns notes for
// values the format holds only rounded (written to stderr by the CLI); a value outside the
// format's range is an *ExportError naming the scenario key. Nothing is written on error.
func Export(w io.Writer, f Format, c fabric.Config, t Target) (notes []string, err error) {
	if c.Kind != fabric.KindRoCE {
		return nil, fmt.Errorf("fabric kind %q: config-export writes RoCE settings (kind roce)", c.Kind)
	}
	if t.Rate <= 0 {
		return nil, fmt.Errorf("no port rate to size the settings for")
	}
	c = Resolve(c, t)
	x := &exporter{f: f}
	switch f {
	case NVUE:
		exportNVUE(x, &c, t)
	case SONiC:
		exportSONiC(x, &c, t)
	case EOS:
		exportEOS(x, &c, t)
	case ConnectX:
		exportConnectX(x, &c, t)
	default:
		_, err := ParseFormat(string(f))
		return nil, err
	}
	if x.err != nil {
		return nil, x.err
	}
	_, err = w.Write(x.buf.Bytes())
	return x.notes, err
}

// header is the comment every text format starts with (prefix "#" or "!").
func header(x *exporter, prefix string, c *fabric.Config, t Target) {
	x.line("%s fabricsim config-export --format %s", prefix, x.f)
	if t.Source != "" {
		x.line("%s source: %s", prefix, t.Source)
	}
	x.line("%s values for %v ports, %d m cable (ECN thresholds and headroom are per port rate and cable)", prefix, t.Rate, t.CableMetres())
}

// percent converts a fraction to whole percent in lo..hi, noting a rounding and failing outside.
func (x *exporter) percent(key string, v float64, lo, hi int, what string) int {
	p := int(math.Round(v * 100))
	if p < lo || p > hi {
		x.fail(key, "%g is %d %%, outside %s's %d..%d %%", v, p, what, lo, hi)
		return p
	}
	if math.Abs(v*100-float64(p)) > 1e-9 {
		x.round(key, "%g written as %d %% (%s takes whole percent)", v, p, what)
	}
	return p
}

// whole converts a duration to whole units of unit in lo..hi (hi < 0: no upper bound).
func (x *exporter) whole(key string, v units.Time, unit units.Time, unitName string, lo, hi int64, what string) int64 {
	n := int64(math.Round(float64(v) / float64(unit)))
	if v < units.Time(lo)*unit || hi >= 0 && v > units.Time(hi)*unit {
		if hi >= 0 {
			x.fail(key, "%v is outside %s's %d..%d %s", v, what, lo, hi, unitName)
		} else {
			x.fail(key, "%v is below %s's minimum %d %s", v, what, lo, unitName)
		}
		return n
	}
	if units.Time(n)*unit != v {
		x.round(key, "%v written as %d %s (%s takes whole %s)", v, n, unitName, what, unitName)
	}
	return n
}

// wholeRate converts a rate to whole Mb/s.
func (x *exporter) wholeMbps(key string, v units.Rate, what string) int64 {
	n := int64(math.Round(float64(v) / float64(units.Mbps)))
	if n < 0 || n > math.MaxUint32 {
		x.fail(key, "%v outside %s's 0..%d Mb/s", v, what, uint32(math.MaxUint32))
	}
	if units.Rate(n)*units.Mbps != v {
		x.round(key, "%v written as %d Mb/s (%s takes whole Mb/s)", v, n, what)
	}
	return n
}

// schedShares converts the DWRR weights of the classes not in strict into the bandwidth
// numbers of a format whose numbers are percent shares that may total at most 100 (NVUE
// bw-percent, EOS bandwidth percent): the weights times the largest whole factor that keeps
// the total within 100, so that the ratios (all DWRR uses) are exact. When the weights total
// more than 100 they are rounded to percent (largest remainder, at least 1 each), noted.
func (x *exporter) schedShares(c *fabric.Config) [8]int {
	r := &c.RoCE
	var out [8]int
	sum := 0
	for p := range 8 {
		if !r.Strict.Has(uint8(p)) {
			sum += r.Weights[p]
		}
	}
	if sum == 0 {
		return out
	}
	if sum <= 100 {
		k := 100 / sum
		for p := range 8 {
			if !r.Strict.Has(uint8(p)) {
				out[p] = r.Weights[p] * k
			}
		}
		return out
	}
	// Largest remainder: floor shares, then the classes with the largest remainders get the
	// points left, lowest class first on a tie; every class gets at least 1.
	type rem struct{ p, num int }
	var rs []rem
	total := 0
	for p := range 8 {
		if r.Strict.Has(uint8(p)) {
			continue
		}
		out[p] = max(1, r.Weights[p]*100/sum)
		total += out[p]
		rs = append(rs, rem{p, r.Weights[p] * 100 % sum})
	}
	for total < 100 {
		best := -1
		for i, e := range rs {
			if best < 0 || e.num > rs[best].num {
				best = i
			}
		}
		out[rs[best].p]++
		rs[best].num = -1
		total++
	}
	x.round("weights", "%v total %d: written as percent %v (the format's shares total at most 100)", r.Weights, sum, out)
	return out
}

// reduceWeights turns bandwidth shares read from a file into fabricsim weights: divided by
// their greatest common divisor (an export's shares come back as the weights they came from),
// a share of 0 taken as 1 (fabricsim's smallest weight).
func reduceWeights(shares map[int]int) map[int]int {
	g := 0
	for _, v := range shares {
		if v > 0 {
			g = gcd(g, v)
		}
	}
	out := map[int]int{}
	for p, v := range shares {
		if g > 0 {
			v /= g
		}
		out[p] = max(1, v)
	}
	return out
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// alphaLog2 is n with 2^n = alpha, rounded to the nearest whole n.
func alphaLog2(alpha float64) (n int, exact bool) {
	l := math.Log2(alpha)
	n = int(math.Round(l))
	return n, math.Abs(l-float64(n)) < 1e-12
}
