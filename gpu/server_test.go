package gpu

import (
	"strings"
	"testing"
)

// TestPresetUnknown: an unknown server model is an error that names the valid ones.
func TestPresetUnknown(t *testing.T) {
	if _, err := Preset("b300"); err == nil || !strings.Contains(err.Error(), "h100") {
		t.Errorf("unknown preset: %v", err)
	}
}
