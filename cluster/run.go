package cluster

import (
	"context"
	"fmt"

	"github.com/fabricsim/fabricsim/backend"
	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/result"
)

// RunOptions say how to run a message graph on the cluster.
type RunOptions struct {
	// Backend runs the graph; "" is the packet backend.
	Backend backend.Name
	// Fabric is the fabric's configuration; its framing must be the cluster's (Spec.Framing).
	// Its Seed is the run's.
	Fabric fabric.Config
	// PacketScale merges packets on the packet backend (backend.ScalePackets): 0 or 1 keeps
	// real packets, K > 1 merges K into one, PacketScaleAuto picks backend.AutoScale. Merging is
	// never implicit: it changes busbw by several per cent where flow control or fine-grained
	// arbitration matters (docs/gpu.md).
	PacketScale int
}

// PacketScaleAuto in RunOptions.PacketScale asks for backend.AutoScale's packet scale.
const PacketScaleAuto = backend.ScaleAuto

// Job is the backend job that runs g on the cluster: the cluster's network, the fabric, and
// the packet backend's GPU-cluster adaptations (backend.PacketOptions.GPUCluster).
func (c *Cluster) Job(g *msggraph.Graph, o RunOptions) *backend.Job {
	scale := o.PacketScale
	return &backend.Job{Scenario: c.Graph.Name, Work: g, Net: c.net, Fabric: o.Fabric, Seed: o.Fabric.Seed,
		Packet: backend.PacketOptions{Scale: scale, GPUCluster: true}}
}

// Run executes g on the cluster and checks that every message completed; the result's SimTime
// is the makespan.
func (c *Cluster) Run(ctx context.Context, g *msggraph.Graph, o RunOptions) (*result.Run, error) {
	name := o.Backend
	if name == "" {
		name = backend.Packet
	}
	res, err := backend.Run(ctx, name, c.Job(g, o))
	if err != nil {
		return res, err
	}
	for i := range res.Messages {
		if g.Msgs[i].Bytes > 0 && !res.Messages[i].Done() {
			return res, fmt.Errorf("message %d (%s) did not complete", i, g.Msgs[i].Tag)
		}
	}
	return res, nil
}
