package scenario

import "github.com/fabricsim/fabricsim/fabric"

// RoCE holds the keys of `fabric: {kind: roce, ...}` (PFC, ECN, DCQCN, loss recovery).
type RoCE struct {
}

// validateRoCE checks RoCE parameters; called for kind roce.
func (s *Scenario) validateRoCE() error { return nil }

// defaultsRoCE fills RoCE defaults for kind roce.
func (s *Scenario) defaultsRoCE() {}

// roceConfig copies the RoCE parameters into the packet backend's configuration.
func (s *Scenario) roceConfig(c *fabric.Config) {}
