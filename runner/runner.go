// Package runner ties a scenario to a backend: scenario -> topology -> workload -> backend ->
// result. The CLI, sweeps and tests all run scenarios through it.
package runner

import (
	"errors"
	"io"
	"strings"

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
	// Backend overrides the scenario's ("packet" or "flow") when set; FlowStep is the flow
	// backend's time step (0: its default).
	Backend  string
	FlowStep units.Time
}

// PcapOptions select what to capture.
type PcapOptions struct {
	Dir        string
	Ports      string // selector, see fabric.ParsePortSelector; "" = every host's NIC port
	SnapLen    int
	MaxPackets int64
}

// Run builds and runs s. The returned error is either a scenario error (bad input, from
// Build) or a run error (an invariant violation, a deadlock, an interrupt); in the latter case
// the partial result is returned too.
func Run(s *scenario.Scenario, opt Options) (*result.Run, *scenario.Built, error) {
	if opt.Seed != nil {
		s.Seed = *opt.Seed
	}
	b, err := s.Build()
	if err != nil {
		return nil, nil, err
	}
	b.Fabric.Check = opt.Check
	if opt.Backend != "" {
		s.Backend = opt.Backend
	}
	if s.Backend == "flow" {
		res, err := runFlow(s, b, opt)
		return res, b, err
	}
	net, err := fabric.New(b.Graph, b.Routes, b.Fabric)
	if err != nil {
		return nil, b, err
	}
	var capture *fabric.Capture
	if opt.Pcap != nil {
		sel := opt.Pcap.Ports
		if sel == "" {
			sel = hostPorts(b)
		}
		capture, err = net.EnableCapture(opt.Pcap.Dir, sel, opt.Pcap.SnapLen, opt.Pcap.MaxPackets)
		if err != nil {
			return nil, b, &scenario.Error{File: "--pcap-ports", Msg: err.Error()}
		}
	}
	var series *fabric.Series
	if opt.Series != nil {
		if series, err = net.EnableSeries(opt.Series, opt.SeriesEvery); err != nil {
			return nil, b, &scenario.Error{File: "--series-every", Msg: err.Error()}
		}
	}
	if opt.Progress != nil {
		sm := net.Sim()
		sm.ProgressEvery = 1 << 18
		sm.Progress = func(now units.Time, _ uint64) {
			done, total := net.Progress()
			if !opt.Progress(now, done, total) {
				sm.Stop(ErrInterrupted)
			}
		}
	}
	until := units.MaxTime
	if s.Duration > 0 {
		until = s.Duration
	}
	res, err := net.Run(b.Work, until)
	if series != nil {
		if serr := series.Flush(); serr != nil && err == nil {
			err = serr
		}
	}
	if capture != nil {
		if cerr := capture.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}
	if res != nil {
		res.Scenario = s.Name
		res.Seed = s.Seed
	}
	return res, b, err
}

// ErrInterrupted is returned when a Progress callback stopped the run.
var ErrInterrupted = interrupted{}

type interrupted struct{}

func (interrupted) Error() string { return "interrupted" }

// hostPorts selects every host's NIC port by name.
func hostPorts(b *scenario.Built) string {
	var sel []string
	for _, h := range b.Graph.Hosts {
		sel = append(sel, b.Graph.Nodes[h].Name+":0")
	}
	return strings.Join(sel, ",")
}

// runFlow runs a built scenario on the flow backend (package flow).
func runFlow(s *scenario.Scenario, b *scenario.Built, opt Options) (*result.Run, error) {
	if opt.Pcap != nil || opt.Series != nil {
		return nil, &scenario.Error{File: "--backend", Msg: "pcap capture and --series need the packet backend (the flow backend has no packets)"}
	}
	fo := flow.Options{Step: opt.FlowStep, Until: s.Duration, Check: opt.Check, MemoryLimit: scenario.MemoryLimit}
	if opt.Progress != nil {
		fo.Progress = opt.Progress
	}
	res, err := flow.Run(b.Graph, b.Routes, b.Fabric, b.Work, fo)
	if res != nil {
		res.Scenario = s.Name
		res.Seed = s.Seed
	}
	if errors.Is(err, flow.ErrStopped) {
		err = ErrInterrupted
	}
	var le *flow.LimitError
	if errors.As(err, &le) {
		return nil, &scenario.Error{File: s.File, Msg: err.Error()}
	}
	return res, err
}
