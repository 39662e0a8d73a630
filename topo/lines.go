package topo

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// maxLineBytes bounds one line of an imported text file (a switch-id line of a very large
// topology is the longest legitimate line).
const maxLineBytes = 64 << 20

// lineReader yields the non-blank lines of a text file split into whitespace-separated fields,
// with 1-based line numbers for error messages.
type lineReader struct {
	sc   *bufio.Scanner
	name string
	line int
	err  error
}

func newLineReader(r io.Reader, name string) *lineReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLineBytes)
	return &lineReader{sc: sc, name: name}
}

// next returns the next non-blank line's number and fields; ok is false at the end of input or
// on a read error (then lr.err is set).
func (lr *lineReader) next() (line int, fields []string, ok bool) {
	for lr.sc.Scan() {
		lr.line++
		f := strings.Fields(lr.sc.Text())
		if len(f) > 0 {
			return lr.line, f, true
		}
	}
	if err := lr.sc.Err(); err != nil {
		lr.err = fmt.Errorf("%s:%d: %w (lines are limited to %d bytes)", lr.name, lr.line+1, err, maxLineBytes)
	}
	return lr.line, nil, false
}
