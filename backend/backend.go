// Package backend is the seam between workloads and the engines that run them. A Job is one
// message graph (package msggraph) on one network under one fabric configuration; a Backend
// runs it and fills a result.Run, the one result schema every backend shares. Everything that
// runs a workload (runner for `fabricsim run` and sweeps, compare, cluster for nccl-tests) builds
// a Job and calls Run with the backend's Name; nothing else switches on backend names.
//
// The engines do not import this package: each backend is an adapter in a file of its own here
// (packet.go over package fabric, analytic.go over package analytic) that translates the Job into
// what its engine takes and the engine's outcome into a result.Run. Adding a backend is one such
// file and one line in registry (docs/architecture.md, "The backend seam").
package backend

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/result"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

// Name names a backend: what --backend and a scenario's backend key take.
type Name string

// The backends.
const (
	// Packet simulates every packet, queue and link-level mechanism (package fabric).
	Packet Name = "packet"
	// Analytic is the max-min fair fluid model (package analytic): the fastest bound, with no
	// queues, no loss and none of the fabric's flow or congestion control.
	Analytic Name = "analytic"
)

// Backend runs jobs.
type Backend interface {
	// Name is the backend's name, as Parse takes it.
	Name() Name
	// Run runs the job. When ctx is cancelled the run stops soon after and Run returns what
	// finished so far (messages not done have Finish 0) with an error that is ErrInterrupted.
	// Any other error is a failed run (an invariant violated, a deadlock, bad input); the
	// result, when not nil, is then partial too.
	Run(ctx context.Context, job *Job) (*result.Run, error)
}

// registry lists the backends in the order error messages name them. Auto (auto.go) is last:
// it runs one of the others.
var registry = []Backend{packetBackend{}, flowBackend{}, analyticBackend{}, autoBackend{}}

// Names lists the valid backend names.
func Names() []Name {
	out := make([]Name, len(registry))
	for i, b := range registry {
		out[i] = b.Name()
	}
	return out
}

// valid is "packet, flow, analytic or auto": the names for an error message.
func valid() string {
	names := Names()
	s := make([]string, len(names))
	for i, n := range names {
		s[i] = string(n)
	}
	if len(s) == 1 {
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// Parse turns a user's backend name (a flag, a scenario key) into a Name, or says which names
// are valid.
func Parse(s string) (Name, error) {
	for _, b := range registry {
		if string(b.Name()) == s {
			return b.Name(), nil
		}
	}
	return "", fmt.Errorf("%q is not a backend: want %s", s, valid())
}

// Lookup returns the backend called name.
func Lookup(name Name) (Backend, error) {
	for _, b := range registry {
		if b.Name() == name {
			return b, nil
		}
	}
	return nil, fmt.Errorf("%q is not a backend: want %s", string(name), valid())
}

// Run runs job on the backend called name.
func Run(ctx context.Context, name Name, job *Job) (*result.Run, error) {
	b, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	if job.Work == nil || job.Net == nil || job.Net.Graph == nil {
		return nil, fmt.Errorf("%s backend: a job needs a message graph and a network", name)
	}
	return b.Run(ctx, job)
}

// Job is one run: a message graph on a network under a fabric configuration. Options that only
// one backend uses are in that backend's own struct (Packet, Analytic); the others ignore them.
type Job struct {
	// Scenario names the run in its result.
	Scenario string
	// Work is the message graph. Its endpoints are the network's hosts, in order.
	Work *msggraph.Graph
	// Net is the network: the topology, and its routes computed when a backend asks for them.
	Net *Network
	// Fabric is the fabric's configuration. Every backend reads its framing (MTU, headers) and
	// switch latency; the packet backend all of it; the analytic backend reports in
	// result.Run.Omitted what of it the fluid model leaves out.
	Fabric fabric.Config
	// Seed drives every random choice of the run (ECMP hashes, spraying, injected loss); it
	// replaces Fabric.Seed.
	Seed uint64
	// Until stops the run at this simulated time; 0 runs until every message is done. Messages
	// not done by then have Finish 0 and the run is no error.
	Until units.Time
	// Check turns on the backend's run-time invariant checks (bytes conserved, buffers within
	// their size, credits never negative); the first violation fails the run.
	Check bool
	// Progress, when set, is called now and then with the simulated time and the messages done
	// out of all (the packet backend: every 2^18 events; the analytic backend, whose runs take
	// seconds, not yet). It runs on the backend's goroutine: keep it short.
	Progress func(now units.Time, done, total int)

	// Packet holds the packet backend's own options.
	Packet PacketOptions
	// Flow holds the flow backend's own options.
	Flow FlowOptions
	// Analytic holds the analytic backend's own options.
	Analytic AnalyticOptions
	// Auto holds auto's options (its budget); the backend it picks reads its own struct above.
	Auto AutoOptions
}

// Network is a job's network: the topology and, on first use, its routes. Several jobs may
// share one Network and ask for its routes concurrently; they are computed once.
type Network struct {
	Graph *topo.Graph

	once   sync.Once
	routes *topo.Routes
	err    error
}

// NewNetwork returns the network of topology g with routes r; a nil r is computed
// (topo.ComputeRoutes) the first time a backend asks for it, so a backend that needs no routing
// tables never pays for them.
func NewNetwork(g *topo.Graph, r *topo.Routes) *Network {
	return &Network{Graph: g, routes: r}
}

// Routes returns the network's routes, computing them on first use.
func (n *Network) Routes() (*topo.Routes, error) {
	n.once.Do(func() {
		if n.routes == nil {
			n.routes, n.err = topo.ComputeRoutes(n.Graph)
		}
	})
	return n.routes, n.err
}

// ErrInterrupted is what a run stopped by its context's cancellation returns (errors.Is).
var ErrInterrupted = errors.New("interrupted")

// InterruptError is the error of a run stopped by its context: it is ErrInterrupted and wraps
// the context's cause (context.Canceled, context.DeadlineExceeded or the cancel's own cause).
type InterruptError struct{ Cause error }

func (e *InterruptError) Error() string { return "interrupted" }

// Is makes errors.Is(err, ErrInterrupted) true.
func (e *InterruptError) Is(target error) bool { return target == ErrInterrupted }

// Unwrap returns the context's cause.
func (e *InterruptError) Unwrap() error { return e.Cause }

func interrupted(ctx context.Context) error { return &InterruptError{Cause: context.Cause(ctx)} }
