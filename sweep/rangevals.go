package sweep

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// maxAxisValues bounds the values one axis may have.
const maxAxisValues = 10000

// numberWithUnit splits "1.5us" into the number "1.5" and the unit "us".
var numberWithUnit = regexp.MustCompile(`^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)([A-Za-z%/]*)$`)

type rangeNumber struct {
	text  string // the number's own text
	unit  string
	value float64
	isInt bool
	i     int64
}

func parseRangeNumber(s string) (rangeNumber, error) {
	m := numberWithUnit.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return rangeNumber{}, fmt.Errorf("%q is not a number with an optional unit (e.g. 4, 0.5, 100Gbps, 1.5us)", s)
	}
	n := rangeNumber{text: m[1], unit: m[2]}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil || math.IsInf(v, 0) {
		return rangeNumber{}, fmt.Errorf("%q is out of range", s)
	}
	n.value = v
	if !strings.ContainsAny(m[1], ".eE") {
		i, err := strconv.ParseInt(m[1], 10, 64)
		if err == nil && i > -(1<<53) && i < 1<<53 {
			n.isInt, n.i = true, i
		}
	}
	return n, nil
}

// decimals is how many digits follow the decimal point, or -1 for exponent notation.
func (n rangeNumber) decimals() int {
	if strings.ContainsAny(n.text, "eE") {
		return -1
	}
	if _, frac, ok := strings.Cut(n.text, "."); ok {
		return len(frac)
	}
	return 0
}

// stepRange lists from, from+step, ... up to and including to. Values keep the unit of from
// and to; step may carry the same unit or none. Integers stay integers; decimals print with
// as many digits as from and step have, so 0.1 steps never print as 0.30000000000000004.
func stepRange(fromS, toS, stepS string) ([]string, error) {
	from, to, step, unit, err := parseRange(fromS, toS, stepS, "step", true)
	if err != nil {
		return nil, err
	}
	if step.value == 0 {
		return nil, fmt.Errorf("step must not be 0")
	}
	if (to.value-from.value)*step.value < 0 {
		return nil, fmt.Errorf("from %s to %s with step %s gives no values (the step must point from 'from' towards 'to')", fromS, toS, stepS)
	}
	count := math.Floor((to.value-from.value)/step.value*(1+1e-12)+1e-9) + 1
	if count > maxAxisValues {
		return nil, fmt.Errorf("gives %.0f values; an axis may have at most %d", count, maxAxisValues)
	}
	var out []string
	if from.isInt && step.isInt && to.isInt {
		for v := from.i; (step.i > 0 && v <= to.i) || (step.i < 0 && v >= to.i); v += step.i {
			out = append(out, strconv.FormatInt(v, 10)+unit)
		}
		return out, nil
	}
	d := max(from.decimals(), step.decimals())
	if from.decimals() < 0 || step.decimals() < 0 {
		d = -1
	}
	for i := 0; i < int(count); i++ {
		v := from.value + float64(i)*step.value
		out = append(out, formatNumber(v, d)+unit)
	}
	return out, nil
}

// factorRange lists from, from*factor, ... while the value stays between from and to.
func factorRange(fromS, toS, factorS string) ([]string, error) {
	from, to, factor, unit, err := parseRange(fromS, toS, factorS, "factor", false)
	if err != nil {
		return nil, err
	}
	if from.value <= 0 || to.value <= 0 {
		return nil, fmt.Errorf("a range with a factor needs from and to above 0")
	}
	if from.value == to.value {
		return []string{from.text + unit}, nil
	}
	up := to.value > from.value
	if factor.value <= 0 || factor.value == 1 || (up && factor.value < 1) || (!up && factor.value > 1) {
		return nil, fmt.Errorf("from %s to %s with factor %s gives no values (the factor must be above 1 to grow, between 0 and 1 to shrink)", fromS, toS, factorS)
	}
	var out []string
	if from.isInt && factor.isInt && to.isInt && up {
		for v := from.i; v <= to.i; v *= factor.i {
			out = append(out, strconv.FormatInt(v, 10)+unit)
			if len(out) > maxAxisValues {
				return nil, fmt.Errorf("gives more than %d values; an axis may have at most %d", maxAxisValues, maxAxisValues)
			}
			if v > math.MaxInt64/factor.i {
				break
			}
		}
		return out, nil
	}
	for i := 0; ; i++ {
		v := from.value * math.Pow(factor.value, float64(i))
		if (up && v > to.value*(1+1e-12)) || (!up && v < to.value*(1-1e-12)) {
			break
		}
		if len(out) >= maxAxisValues {
			return nil, fmt.Errorf("gives more than %d values; an axis may have at most %d", maxAxisValues, maxAxisValues)
		}
		out = append(out, formatNumber(v, -1)+unit)
	}
	return out, nil
}

// parseRange reads from, to and step (or factor) and checks that their units agree. The step
// may omit the unit; a factor must have none.
func parseRange(fromS, toS, stepS, stepName string, stepMayHaveUnit bool) (from, to, step rangeNumber, unit string, err error) {
	if from, err = parseRangeNumber(fromS); err != nil {
		return from, to, step, "", fmt.Errorf("from: %v", err)
	}
	if to, err = parseRangeNumber(toS); err != nil {
		return from, to, step, "", fmt.Errorf("to: %v", err)
	}
	if step, err = parseRangeNumber(stepS); err != nil {
		return from, to, step, "", fmt.Errorf("%s: %v", stepName, err)
	}
	if from.unit != to.unit {
		return from, to, step, "", fmt.Errorf("from %s and to %s have different units (%q, %q); write both in the same unit", fromS, toS, from.unit, to.unit)
	}
	if step.unit != "" && (!stepMayHaveUnit || step.unit != from.unit) {
		if !stepMayHaveUnit {
			return from, to, step, "", fmt.Errorf("%s %s must be a plain number", stepName, stepS)
		}
		return from, to, step, "", fmt.Errorf("%s %s has unit %q but from has %q", stepName, stepS, step.unit, from.unit)
	}
	return from, to, step, from.unit, nil
}

// formatNumber prints v with d decimals without trailing zeros, or, for d < 0, in the
// shortest form of v rounded to 12 significant digits (hiding float noise such as 0.1*3).
func formatNumber(v float64, d int) string {
	if d < 0 {
		r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 12, 64), 64)
		return strconv.FormatFloat(r, 'f', -1, 64)
	}
	s := strconv.FormatFloat(v, 'f', d, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}
