// Package msggraph is the contract between workloads and backends: a workload (random flows, a
// collective, a training step) compiles to a dependency graph of messages, and every backend
// (packet, flow, analytic) runs that graph. Backends do not know what a transformer or an
// all-reduce is; workloads do not know what a packet is.
//
// A message becomes ready when all its dependencies have completed (a message completes when its
// last byte is delivered to the destination application) and its own start time has come; it
// then waits Delay more (compute time, CPU copy latency) before its first byte is offered to the
// sender's NIC. A message with Bytes == 0 is a pure delay node (a compute step) that completes
// Delay after it is ready, on its source endpoint.
package msggraph

import (
	"fmt"

	"github.com/fabricsim/fabricsim/units"
)

// ID indexes Graph.Msgs.
type ID int32

// Message is one transfer from endpoint Src to endpoint Dst (dense host indices of the
// topology), or a delay node when Bytes == 0.
type Message struct {
	Src, Dst int32
	Bytes    units.Size
	// Start is the earliest time the message may begin (absolute simulated time).
	Start units.Time
	// Delay is added after the message becomes ready (compute gap, copy latency).
	Delay units.Time
	// Deps must all complete before this message is ready.
	Deps []ID
	// Prio is the traffic class / service level requested (0 = default data class).
	Prio uint8
	// Conn groups messages that share one transport connection (queue pair set) between the
	// same endpoints; 0 means "a connection of its own". Collectives put each channel on its own.
	Conn int32
	// Tag is a free label for reports (collective name, step, chunk).
	Tag string
}

// Graph is a set of messages with dependencies.
type Graph struct {
	Msgs []Message
	// Endpoints is the number of endpoints the graph addresses (Src/Dst < Endpoints).
	Endpoints int
}

// Add appends a message and returns its ID.
func (g *Graph) Add(m Message) ID {
	g.Msgs = append(g.Msgs, m)
	return ID(len(g.Msgs) - 1)
}

// Validate checks endpoints, sizes and that dependencies point backwards (which also rules out
// cycles: every graph built by Add in dependency order satisfies it).
func (g *Graph) Validate() error {
	for i, m := range g.Msgs {
		if m.Src < 0 || int(m.Src) >= g.Endpoints || m.Dst < 0 || int(m.Dst) >= g.Endpoints {
			return fmt.Errorf("message %d (%s): endpoint %d->%d outside 0..%d", i, m.Tag, m.Src, m.Dst, g.Endpoints-1)
		}
		if m.Bytes < 0 || m.Delay < 0 || m.Start < 0 {
			return fmt.Errorf("message %d (%s): negative size, delay or start", i, m.Tag)
		}
		if m.Bytes > 0 && m.Src == m.Dst {
			return fmt.Errorf("message %d (%s): sends %d bytes from endpoint %d to itself", i, m.Tag, m.Bytes, m.Src)
		}
		for _, d := range m.Deps {
			if d < 0 || int(d) >= i {
				return fmt.Errorf("message %d (%s): dependency %d does not precede it", i, m.Tag, d)
			}
		}
	}
	return nil
}
