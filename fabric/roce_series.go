package fabric

import (
	"bufio"
	"fmt"
	"io"

	"github.com/fabricsim/fabricsim/sim"
	"github.com/fabricsim/fabricsim/units"
)

// Series samples the network every period into CSV rows `time_ns,kind,name,prio,value`:
// kind "queue" is the bytes queued at a switch egress queue (only queues holding any), kind
// "rate" the pacing rate in bits per second of each flow (QP) still sending. Sampling stops when
// every message is complete.
type Series struct {
	n     *Network
	every units.Time
	w     *bufio.Writer
	err   error
	names []string // switch port names, by node and port, built once
}

// EnableSeries starts sampling into w every period; call Flush after the run.
func (n *Network) EnableSeries(w io.Writer, every units.Time) (*Series, error) {
	if every <= 0 {
		return nil, fmt.Errorf("series period must be positive, got %v", every)
	}
	s := &Series{n: n, every: every, w: bufio.NewWriterSize(w, 1<<16)}
	_, s.err = fmt.Fprintln(s.w, "time_ns,kind,name,prio,value")
	n.sim.Schedule(0, s, 0, 0, nil)
	return s, nil
}

// PortName names port p as node:index(->peer).
func (n *Network) PortName(p *Port) string {
	nd := &n.g.Nodes[p.Owner]
	return fmt.Sprintf("%s:%d(->%s)", nd.Name, p.Index, n.g.Nodes[nd.Ports[p.Index].Peer].Name)
}

// Handle takes one sample.
func (s *Series) Handle(*sim.Event) {
	n := s.n
	if s.err != nil {
		return
	}
	t := n.sim.Now().Nanoseconds()
	for _, sw := range n.Switches {
		if sw == nil {
			continue
		}
		for _, p := range sw.Ports {
			for prio := range p.q[:p.nprio] {
				q := p.q[prio].bytes
				if q > 0 {
					_, s.err = fmt.Fprintf(s.w, "%.3f,queue,%s,%d,%d\n", t, n.PortName(p), prio, q)
				}
			}
		}
	}
	for _, f := range n.flows {
		if f == nil || f.snd.Done() || !f.active && f.snd.NextNew() == 0 {
			continue
		}
		_, s.err = fmt.Fprintf(s.w, "%.3f,rate,flow%d,%d,%d\n", t, f.id, f.prio, int64(n.FlowRate(f.id)))
	}
	if done, total := n.Progress(); done < total {
		n.sim.After(s.every, s, 0, 0, nil)
	}
}

// Flush writes out what is buffered and reports the first error.
func (s *Series) Flush() error {
	if err := s.w.Flush(); err != nil && s.err == nil {
		s.err = err
	}
	return s.err
}
