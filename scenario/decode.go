package scenario

import (
	"reflect"

	"github.com/fabricsim/fabricsim/yamlstrict"
)

// Pos is a position in a source file.
type Pos = yamlstrict.Pos

// Error is a scenario error: file, position, the dotted field path and what is wrong.
type Error = yamlstrict.Error

func reflectOf(s *Scenario) reflect.Value { return reflect.ValueOf(s).Elem() }
