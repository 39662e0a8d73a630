package scenario

import "github.com/fabricsim/fabricsim/fabric"

// InfiniBand holds the keys of `fabric: {kind: infiniband, ...}` (credits, VLs, routing, IB CC).
type InfiniBand struct {
}

// validateInfiniBand checks InfiniBand parameters; called for kind infiniband.
func (s *Scenario) validateInfiniBand() error { return nil }

// defaultsInfiniBand fills InfiniBand defaults for kind infiniband.
func (s *Scenario) defaultsInfiniBand() {}

// infinibandConfig copies the InfiniBand parameters into the packet backend's configuration.
func (s *Scenario) infinibandConfig(c *fabric.Config) {}
