//go:build tools

// Package deps pins the module's third-party dependencies while the packages that use them land.
package deps

import (
	_ "github.com/parquet-go/parquet-go"
	_ "github.com/schollz/progressbar/v3"
	_ "github.com/spf13/cobra"
	_ "go.yaml.in/yaml/v3"
	_ "golang.org/x/term"
)
