// Package runner ties a scenario to a backend: scenario -> topology -> workload -> backend ->
// result. The CLI, sweeps and tests all run scenarios through it.
package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/fabricsim/fabricsim/backend"
	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/flow"
	"github.com/fabricsim/fabricsim/result"
	"github.com/fabricsim/fabricsim/scenario"
	"github.com/fabricsim/fabricsim/units"
)

// Options adjust a run without editing the scenario.
type Options struct {
	// Seed overrides the scenario's seed when non-nil.
	Seed *uint64
	// Check turns on the run-time invariant checks.
	Check bool
	// Progress, when set, is called periodically with messages done and total. Returning
	// false stops the run (an interrupt); the results so far are still returned.
	Progress func(now units.Time, done, total int) bool
	// Pcap, when set, captures the selected ports' packets to pcap files.
	Pcap *PcapOptions
	// Series, when set, receives sampled time series (queue depths, flow rates) as CSV every
	// SeriesEvery (fabric.Series).
	Series      io.Writer
	SeriesEvery units.Time
	// FlowStep is the flow backend's time step (0: its default).
	FlowStep units.Time
	// AutoBudget is backend auto's budget (0: backend.DefaultAutoBudget).
	AutoBudget time.Duration
	// Threads is the packet engine's worker count (backend.PacketOptions.Threads: 0 and 1
	// sequential, backend.ThreadsAuto the default rule); Parallel, when set, is told how the run
	// was split.
	Threads  int
	Parallel func(fabric.ParallelInfo)
	// OwnProcess says this run is the only one in its process (backend.PacketOptions.OwnProcess:
	// the collector is then set for the packet run); fabricsim run sets it.
	OwnProcess bool
}

// PcapOptions select what to capture.
type PcapOptions struct {
	Dir        string
	Ports      string // selector, see fabric.ParsePortSelector; "" = every host's NIC port
	SnapLen    int
	MaxPackets int64
	// Written is filled by Run: every file written, with its packets and bytes.
	Written []fabric.CaptureFile
}

// Run builds and runs s. The returned error is either a scenario error (bad input, from
// Build) or a run error (an invariant violation, a deadlock, an interrupt); in the latter case
// the partial result is returned too.
func Run(s *scenario.Scenario, opt Options) (*result.Run, *scenario.Built, error) {
	return RunContext(context.Background(), s, opt)
}

// RunContext is Run that also stops, with what finished so far and an error that is
// ErrInterrupted, when ctx is cancelled.
func RunContext(ctx context.Context, s *scenario.Scenario, opt Options) (*result.Run, *scenario.Built, error) {
	if opt.Seed != nil {
		s.Seed = *opt.Seed
	}
	b, err := s.Build()
	if err != nil {
		return nil, nil, err
	}
	name, err := backend.Parse(s.Backend)
	if err != nil {
		return nil, b, &scenario.Error{File: s.File, Msg: "backend: " + err.Error()}
	}
	job := &backend.Job{Scenario: s.Name, Work: b.Work, Net: backend.NewNetwork(b.Graph, b.Routes), Fabric: b.Fabric,
		Seed: s.Seed, Until: s.Duration, Check: opt.Check}
	if opt.Pcap != nil || opt.Series != nil {
		if name != backend.Packet {
			return nil, b, &scenario.Error{File: s.File, Msg: fmt.Sprintf("packet captures and series need the packet backend, not %s", name)}
		}
		job.Packet.Instrument = func(net *fabric.Network) (func() error, error) { return instrument(net, b, opt) }
	}
	if opt.Progress != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		job.Progress = func(now units.Time, done, total int) {
			if !opt.Progress(now, done, total) {
				cancel()
			}
		}
	}
	job.Packet.Threads, job.Packet.Parallel, job.Packet.OwnProcess = opt.Threads, opt.Parallel, opt.OwnProcess
	job.Flow = backend.FlowOptions{Step: opt.FlowStep, MemoryLimit: scenario.MemoryLimit}
	job.Auto.Budget = opt.AutoBudget
	res, err := backend.Run(ctx, name, job)
	var le *flow.LimitError
	if errors.As(err, &le) {
		return nil, b, &scenario.Error{File: s.File, Msg: err.Error()}
	}
	var fe *fabric.FaultAfterEndError
	if errors.As(err, &fe) {
		return nil, b, s.FaultAfterEnd(fe.Fault, fe.At, fe.End) // bad input: no result, exit 2
	}
	return res, b, err
}

// instrument attaches the packet captures and the sampled series opt asks for to net, and
// returns what flushes and closes them after the run.
func instrument(net *fabric.Network, b *scenario.Built, opt Options) (func() error, error) {
	var capture *fabric.Capture
	var err error
	if opt.Pcap != nil {
		sel := opt.Pcap.Ports
		if sel == "" {
			sel = hostPorts(b)
		}
		capture, err = net.EnableCapture(opt.Pcap.Dir, sel, opt.Pcap.SnapLen, opt.Pcap.MaxPackets)
		if err != nil {
			return nil, &scenario.Error{File: "--pcap-ports", Msg: err.Error()}
		}
	}
	var series *fabric.Series
	if opt.Series != nil {
		if series, err = net.EnableSeries(opt.Series, opt.SeriesEvery); err != nil {
			return nil, &scenario.Error{File: "--series-every", Msg: err.Error()}
		}
	}
	return func() error {
		var err error
		if series != nil {
			err = series.Flush()
		}
		if capture != nil {
			if cerr := capture.Close(); cerr != nil && err == nil {
				err = cerr
			}
			opt.Pcap.Written = capture.Written()
		}
		return err
	}, nil
}

// ErrInterrupted is returned (errors.Is) when a Progress callback or the context stopped the
// run.
var ErrInterrupted = backend.ErrInterrupted

// hostPorts selects every host's NIC port by name.
func hostPorts(b *scenario.Built) string {
	var sel []string
	for _, h := range b.Graph.Hosts {
		sel = append(sel, b.Graph.Nodes[h].Name+":0")
	}
	return strings.Join(sel, ",")
}
