package sweep

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Error is a problem with a user's input, located in a file (a sweep file, a base scenario or
// a command-line flag when File is empty) and, when known, at a line and column.
type Error struct {
	File      string
	Line, Col int
	Msg       string
}

func (e *Error) Error() string {
	switch {
	case e.File == "":
		return e.Msg
	case e.Line > 0 && e.Col > 0:
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
	case e.Line > 0:
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	default:
		return fmt.Sprintf("%s: %s", e.File, e.Msg)
	}
}

func errorf(file string, line int, format string, args ...any) *Error {
	return &Error{File: file, Line: line, Msg: fmt.Sprintf(format, args...)}
}

// ErrInterrupted is wrapped by the command's error when SIGINT or SIGTERM stopped the sweep
// (the fabricsim command exits 130 for it); finished runs stay committed.
var ErrInterrupted = errors.New("interrupted")

// ErrorList is several input errors found at once; it prints one per line.
type ErrorList []error

func (l ErrorList) Error() string {
	parts := make([]string, len(l))
	for i, e := range l {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "\n")
}

// Unwrap lets errors.As find the individual errors.
func (l ErrorList) Unwrap() []error { return l }

// yamlLine matches the location prefix of go.yaml.in/yaml/v3 syntax errors.
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// yamlError turns a YAML syntax error into an Error located in file.
func yamlError(file string, err error) error {
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return errorf(file, line, "invalid YAML: %s", m[2])
	}
	return errorf(file, 0, "invalid YAML: %s", strings.TrimPrefix(msg, "yaml: "))
}
