package traffic

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// parseScaled parses a non-negative decimal number (digits, optional fraction, optional
// exponent: "2", "2.000000001", "1.5e-3") and returns value * 10^scale as an exact integer,
// without going through float64: "2.000000001" seconds at scale 12 is 2000000001000 ps exactly.
// It fails when the scaled value is not whole (finer than the unit), negative or beyond int64.
func parseScaled(s string, scale int) (int64, error) {
	t := s
	if strings.HasPrefix(t, "+") {
		t = t[1:]
	}
	if strings.HasPrefix(t, "-") {
		if v, err := parseScaled(t[1:], scale); err == nil && v == 0 {
			return 0, nil // "-0"
		}
		return 0, fmt.Errorf("must not be negative")
	}
	mant, exp := t, 0
	if i := strings.IndexAny(t, "eE"); i >= 0 {
		mant = t[:i]
		e, err := strconv.Atoi(t[i+1:])
		if err != nil || e > 1000 || e < -1000 {
			return 0, fmt.Errorf("is not a decimal number")
		}
		exp = e
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	if intPart == "" && frac == "" {
		return 0, fmt.Errorf("is not a decimal number")
	}
	digits := intPart + frac
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, fmt.Errorf("is not a decimal number")
		}
	}
	exp += scale - len(frac)
	digits = strings.TrimLeft(digits, "0")
	// Move trailing zeros into the exponent; a negative exponent left over is a fraction.
	for len(digits) > 0 && digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
		exp++
	}
	if digits == "" {
		return 0, nil
	}
	if exp < 0 {
		return 0, fmt.Errorf("has more decimal places than the unit resolves")
	}
	if len(digits)+exp > 19 {
		return 0, fmt.Errorf("is too large")
	}
	v, err := strconv.ParseUint(digits+strings.Repeat("0", exp), 10, 63)
	if err != nil {
		return 0, fmt.Errorf("is too large")
	}
	return int64(v), nil
}

// formatScaled prints v / 10^scale as the shortest exact decimal ("2", "2.000000001").
func formatScaled(v int64, scale int) string {
	neg := v < 0
	if neg {
		v = -v
	}
	s := strconv.FormatInt(v, 10)
	if len(s) <= scale {
		s = strings.Repeat("0", scale-len(s)+1) + s
	}
	whole, frac := s[:len(s)-scale], strings.TrimRight(s[len(s)-scale:], "0")
	if frac != "" {
		whole += "." + frac
	}
	if neg {
		whole = "-" + whole
	}
	return whole
}

// maxLineBytes bounds one line of an imported file.
const maxLineBytes = 1 << 20

// lineReader yields the non-blank lines of a text file split into whitespace-separated fields,
// with 1-based line numbers; with comments set, lines whose first field starts with '#' are
// skipped too.
type lineReader struct {
	sc       *bufio.Scanner
	name     string
	line     int
	comments bool
	err      error
}

func newLineReader(r io.Reader, name string, comments bool) *lineReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLineBytes)
	return &lineReader{sc: sc, name: name, comments: comments}
}

func (lr *lineReader) next() (line int, fields []string, ok bool) {
	for lr.sc.Scan() {
		lr.line++
		f := strings.Fields(lr.sc.Text())
		if len(f) > 0 && !(lr.comments && strings.HasPrefix(f[0], "#")) {
			return lr.line, f, true
		}
	}
	if err := lr.sc.Err(); err != nil {
		lr.err = fmt.Errorf("%s:%d: %w (lines are limited to %d bytes)", lr.name, lr.line+1, err, maxLineBytes)
	}
	return lr.line, nil, false
}
