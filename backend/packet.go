package backend

import (
	"context"
	"fmt"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/result"
	"github.com/fabricsim/fabricsim/units"
)

// PacketOptions are the packet backend's own options. The zero value runs the job as it is,
// with real packets.
type PacketOptions struct {
	// Scale merges Scale real packets into one (ScalePackets): 0 and 1 keep real packets,
	// ScaleAuto picks the scale by AutoScale.
	Scale int
	// GPUCluster says the network holds GPU servers' insides (package cluster: NVLink, PCIe and
	// host-memory links as links of the topology). Those links are lossless and their traffic
	// is paced by DMA engines, which the fabric's mechanisms do not model, so the packet backend
	// adapts the run (packet_cluster.go): on InfiniBand it spreads messages over the VLs, on
	// the generic Ethernet fabric it gives switches lossless buffers and paces every flow at its
	// path's bottleneck.
	GPUCluster bool
	// Instrument, when set, is called with the built network before the run, to attach what
	// watches it (packet captures, sampled series). The function it returns, when not nil, is
	// called after the run; its error becomes the run's if the run had none.
	Instrument func(*fabric.Network) (after func() error, err error)
	// Threads is the packet engine's worker count (fabric.Network.SetThreads): 0 and 1 run
	// sequentially, k > 1 up to k partitions in parallel where the run allows, ThreadsAuto the
	// fabric's rule (every core for large fabrics). The results are the same bytes for every
	// count.
	Threads int
	// Parallel, when set, is told after the run how it was split.
	Parallel func(fabric.ParallelInfo)
	// OwnProcess says the run is the only one in its process (fabricsim run), so the collector
	// may be set for it (gcForRun: one collection after the set-up, then room for RunHeadroom
	// or the live heap, whichever is larger, before the next). The setting is process-wide:
	// compare and sweeps, which run several jobs at once, leave it false.
	OwnProcess bool
	// DrawSeed, when not 0, seeds the run's random draws (ECN marks, losses) apart from
	// Job.Seed, which then drives routing alone (fabric.Config.DrawSeed); it replaces
	// Fabric.DrawSeed, as Job.Seed replaces Fabric.Seed.
	DrawSeed uint64
}

// ThreadsAuto asks the packet backend for the fabric's default thread rule
// (fabric.AutoThreadsHosts).
const ThreadsAuto = -1

// ScaleAuto asks the packet backend to pick the packet scale (AutoScale).
const ScaleAuto = -1

// progressEvery is how many events pass between two calls of Job.Progress and two looks at
// the context (about 30-100 ms of a run).
const progressEvery = 1 << 18

type packetBackend struct{}

func (packetBackend) Name() Name { return Packet }

// Run builds the fabric (fabric.New) over the job's network and runs the message graph.
func (packetBackend) Run(ctx context.Context, j *Job) (*result.Run, error) {
	if err := ctx.Err(); err != nil {
		return nil, interrupted(ctx)
	}
	routes, err := j.Net.Routes()
	if err != nil {
		return nil, err
	}
	cfg := j.Fabric
	cfg.Seed, cfg.Check = j.Seed, cfg.Check || j.Check
	if j.Packet.DrawSeed != 0 {
		cfg.DrawSeed = j.Packet.DrawSeed
	}
	work := j.Work
	k := j.Packet.Scale
	if k == ScaleAuto {
		k = AutoScale(work, cfg.MTU, cfg.Kind)
	}
	cfg = ScalePackets(cfg, k)
	if j.Packet.GPUCluster {
		work, cfg = adaptToCluster(work, cfg)
	}
	net, err := fabric.New(j.Net.Graph, routes, cfg)
	if err != nil {
		return nil, err
	}
	if j.Packet.GPUCluster && cfg.Kind == fabric.KindEthernet {
		net.SetCongestionControl(newPacer(j.Net.Graph, routes))
	}
	switch t := j.Packet.Threads; {
	case t == ThreadsAuto:
		err = net.SetThreads(fabric.ThreadsAuto)
	case t > 1:
		err = net.SetThreads(t)
	case t < 0:
		err = fmt.Errorf("packet threads %d: want %d (automatic), 0 or a positive count", t, ThreadsAuto)
	}
	if err != nil {
		return nil, err
	}
	var after func() error
	if j.Packet.Instrument != nil {
		if after, err = j.Packet.Instrument(net); err != nil {
			return nil, err
		}
	}
	if j.Progress != nil || ctx.Done() != nil {
		sm := net.Sim()
		sm.ProgressEvery = progressEvery
		sm.Progress = func(now units.Time, _ uint64) {
			if j.Progress != nil {
				done, total := net.Progress()
				j.Progress(now, done, total)
			}
			if ctx.Err() != nil {
				sm.Stop(interrupted(ctx))
			}
		}
	}
	until := j.Until
	if until <= 0 {
		until = units.MaxTime
	}
	if j.Packet.OwnProcess {
		defer gcForRun(RunHeadroom)()
	}
	res, err := net.Run(work, until)
	if j.Packet.Parallel != nil {
		j.Packet.Parallel(net.Parallel())
	}
	if after != nil {
		if aerr := after(); aerr != nil && err == nil {
			err = aerr
		}
	}
	if res != nil {
		res.Scenario, res.Seed, res.PacketScale = j.Scenario, j.Seed, max(k, 1)
	}
	return res, err
}
