package scenario

import (
	"errors"
	"fmt"
	"os"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/ibsm"
	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/sim"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/traffic"
)

// MemoryLimit is the most memory a scenario may plan to use; larger ones are refused up front
// with the estimate (the machines this runs on in CI have 24 GiB).
var MemoryLimit int64 = 16 << 30

// Built is a scenario turned into the typed values the backends take.
type Built struct {
	Graph  *topo.Graph
	Routes *topo.Routes
	Work   *msggraph.Graph
	Fabric fabric.Config
}

// BuildTopology builds the network graph.
func (s *Scenario) BuildTopology() (*topo.Graph, error) {
	t := &s.Topology
	switch t.Kind {
	case "fat-tree":
		h, sw, l := topo.FatTreeSize(t.K)
		if err := topo.CheckMemory(fmt.Sprintf("a k=%d fat tree", t.K), h, sw, l, MemoryLimit); err != nil {
			return nil, s.errf("topology.k", "%v", err)
		}
		g, err := topo.FatTree(t.K, topo.LinkSpec{Rate: t.Link.Rate, Latency: t.Link.Latency})
		if err != nil {
			return nil, s.errf("topology", "%v", err)
		}
		return g, nil
	case "leaf-spine":
		hosts, links := t.Leaves*t.HostsPerLeaf, t.Leaves*t.HostsPerLeaf+t.Leaves*t.Spines
		if err := topo.CheckMemory("this leaf-spine", hosts, t.Leaves+t.Spines, links, MemoryLimit); err != nil {
			return nil, s.errf("topology", "%v", err)
		}
		g, err := topo.LeafSpine(topo.LeafSpineSpec{
			Leaves: t.Leaves, Spines: t.Spines, HostsPerLeaf: t.HostsPerLeaf,
			Host:             topo.LinkSpec{Rate: t.HostLink.Rate, Latency: t.HostLink.Latency},
			Uplink:           topo.LinkSpec{Rate: t.SpineLink.Rate, Latency: t.SpineLink.Latency},
			Oversubscription: t.Oversubscription,
		})
		if err != nil {
			return nil, s.errf("topology", "%v", err)
		}
		return g, nil
	case "clos":
		p, err := topo.PlanClos(t.closSpec())
		if err != nil {
			return nil, s.errf("topology", "%v", err)
		}
		if err := topo.CheckMemory("this clos", p.Hosts, p.Switches, p.Links, MemoryLimit); err != nil {
			return nil, s.errf("topology", "%v", err)
		}
		g, err := topo.Clos(t.closSpec())
		if err != nil {
			return nil, s.errf("topology", "%v", err)
		}
		return g, nil
	case "hpcc":
		path := s.Path(t.File)
		f, err := os.Open(path)
		if err != nil {
			return nil, s.errf("topology.file", "cannot read %s: %s", path, unwrapPathErr(err))
		}
		defer f.Close()
		g, err := topo.ImportHPCC(f, path)
		if err != nil {
			return nil, fmt.Errorf("%w (topology.file of %s)", err, s.File)
		}
		// Known only now: its size, and whether it routes as a tree or by a table.
		if err := topo.CheckGraphMemory(path, g, MemoryLimit); err != nil {
			return nil, s.errf("topology.file", "%v", err)
		}
		return g, nil
	}
	return nil, s.errf("topology.kind", "%q unknown", t.Kind)
}

// BuildTraffic compiles the traffic section into a message graph for graph g.
func (s *Scenario) BuildTraffic(g *topo.Graph) (*msggraph.Graph, error) {
	tr := &s.Traffic
	hosts := len(g.Hosts)
	n := hosts
	if tr.Hosts > 0 {
		if tr.Hosts > hosts {
			return nil, s.errf("traffic.hosts", "%d hosts asked for, the topology has %d", tr.Hosts, hosts)
		}
		n = tr.Hosts
	}
	var flows []traffic.Flow
	var err error
	switch tr.Kind {
	case "permutation":
		if n < 2 {
			return nil, s.errf("traffic.kind", "a permutation needs at least 2 hosts, the topology has %d", n)
		}
		flows, err = traffic.PermutationFlows(n, tr.Size, tr.Start, sim.RNG(s.Seed, "traffic/permutation"))
	case "shift":
		if tr.Offset%n == 0 {
			return nil, s.errf("traffic.offset", "shift by %d on %d hosts sends every host to itself", tr.Offset, n)
		}
		flows, err = traffic.Shift(n, tr.Offset, tr.Size, tr.Start)
	case "incast":
		if tr.Receiver < 0 || tr.Receiver >= n {
			return nil, s.errf("traffic.receiver", "host %d does not exist (valid: 0..%d)", tr.Receiver, n-1)
		}
		senders := tr.SenderHosts
		if len(senders) == 0 {
			if tr.Senders < 1 || tr.Senders > n-1 {
				return nil, s.errf("traffic.senders", "%d senders into one receiver needs %d hosts, the topology has %d (valid: 1..%d)", tr.Senders, tr.Senders+1, n, n-1)
			}
			for i := 1; i <= tr.Senders; i++ {
				senders = append(senders, (tr.Receiver+i)%n)
			}
		}
		for i, h := range senders {
			if h < 0 || h >= n {
				return nil, s.errf(indexPath("traffic.sender_hosts", i), "host %d does not exist (valid: 0..%d)", h, n-1)
			}
			if h == tr.Receiver {
				return nil, s.errf(indexPath("traffic.sender_hosts", i), "host %d is the receiver", h)
			}
		}
		flows, err = traffic.Incast(senders, tr.Receiver, tr.Size, tr.Start)
	case "all-to-all":
		all := make([]int, n)
		for i := range all {
			all[i] = i
		}
		flows, err = traffic.AllToAll(all, tr.Size, tr.Start)
	case "flows":
		for i, fl := range tr.Flows {
			p := indexPath("traffic.flows", i)
			if fl.Src >= hosts {
				return nil, s.errf(p+".src", "host %d does not exist (the topology has hosts 0..%d)", fl.Src, hosts-1)
			}
			if fl.Dst >= hosts {
				return nil, s.errf(p+".dst", "host %d does not exist (the topology has hosts 0..%d)", fl.Dst, hosts-1)
			}
			flows = append(flows, traffic.Flow{ID: i, Src: fl.Src, Dst: fl.Dst, Size: fl.Size, Start: fl.Start, Prio: fl.Prio})
		}
	case "hpcc", "htsim":
		path := s.Path(tr.File)
		f, err := os.Open(path)
		if err != nil {
			return nil, s.errf("traffic.file", "cannot read %s: %s", path, unwrapPathErr(err))
		}
		defer f.Close()
		if tr.Kind == "hpcc" {
			flows, err = traffic.ImportHPCCFlows(f, path, g.HostOfNode)
		} else {
			var nodes int
			flows, nodes, err = traffic.ImportHtsimCM(f, path)
			if err == nil && nodes > hosts {
				return nil, fmt.Errorf("%s: declares %d nodes but the topology has %d hosts (traffic.file of %s)", path, nodes, hosts, s.File)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%w (traffic.file of %s)", err, s.File)
		}
		for _, fl := range flows {
			if fl.Src >= hosts || fl.Dst >= hosts {
				return nil, fmt.Errorf("%s: flow %d: host %d->%d outside the topology's hosts 0..%d (traffic.file of %s)", path, fl.ID, fl.Src, fl.Dst, hosts-1, s.File)
			}
		}
	default:
		return nil, s.errf("traffic.kind", "%q unknown", tr.Kind)
	}
	if err != nil {
		return nil, s.errf("traffic", "%v", err)
	}
	if len(flows) == 0 {
		return nil, s.errf("traffic", "produces no flows")
	}
	return traffic.ToGraph(flows, hosts), nil
}

// Build builds everything a backend needs.
func (s *Scenario) Build() (*Built, error) {
	g, err := s.BuildTopology()
	if err != nil {
		return nil, err
	}
	if err := g.Validate(); err != nil {
		return nil, s.errf("topology", "%v", err)
	}
	if s.Fabric.Kind == fabric.KindInfiniBand {
		if err := ibsm.CheckLIDs(g); err != nil {
			return nil, s.errf("topology", "%v", err)
		}
	}
	w, err := s.BuildTraffic(g)
	if err != nil {
		return nil, err
	}
	r, err := topo.ComputeRoutes(g)
	if err != nil {
		return nil, s.errf("topology", "%v", err)
	}
	cfg := s.FabricConfig()
	if err := cfg.Validate(); err != nil {
		return nil, s.d.Place("fabric", err)
	}
	if cfg.Faults, err = s.ResolveFaults(g); err != nil { // faults.go
		return nil, err
	}
	return &Built{Graph: g, Routes: r, Work: w, Fabric: cfg}, nil
}

// IsUserError reports whether err is an input error (exit code 2) rather than a failure.
func IsUserError(err error) bool {
	var e *Error
	return errors.As(err, &e)
}

// closSpec is the clos topology's topo.ClosSpec.
func (t *Topology) closSpec() topo.ClosSpec {
	return topo.ClosSpec{
		Servers: t.Servers, NICsPerServer: t.NICsPerServer, PortsPerNIC: t.NICPorts, RailPlanes: t.RailPlanes,
		RailOptimized: t.RailOptimized, Tiers: t.Tiers, Radix: t.Radix, ServersPerSU: t.ServersPerSU,
		Oversubscription: []float64{t.Oversubscription, t.SpineOversubscription},
		NIC:              topo.LinkSpec{Rate: t.HostLink.Rate, Latency: t.HostLink.Latency},
		LeafSpine:        topo.LinkSpec{Rate: t.SpineLink.Rate, Latency: t.SpineLink.Latency},
		SpineCore:        topo.LinkSpec{Rate: t.CoreLink.Rate, Latency: t.CoreLink.Latency},
		Spines:           t.Spines,
	}
}
