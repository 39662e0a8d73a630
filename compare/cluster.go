package compare

import (
	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/ibsm"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

// dataPath is how a GPU's bytes reach its NIC ([GPUDirect]): the payload bandwidth the path
// sustains per GPU and direction, and the latency it adds to every network message.
type dataPath struct {
	Name      string     `json:"name"`
	Bandwidth units.Rate `json:"bandwidth"`
	Latency   units.Time `json:"latency"`
	About     string     `json:"about"`
}

// defaultP2PEfficiency is gpu.Server's default share of the PCIe rate that GPUDirect RDMA
// sustains (0.92, from perftest's ~23 GB/s GPUDirect on a 25 GB/s link, [perftest], est.).
const defaultP2PEfficiency = 0.92

// dataPath derives the data path's closed form from the server model of package gpu (whose
// packet-level server graph and package datapath model the same paths link by link):
//   - gpudirect: the NIC reads and writes GPU memory peer-to-peer over the shared PCIe switch,
//     at the GPU port's P2P rate (0.92 x 52 GB/s = 47.8 GB/s on H100: the 46-48 GB/s
//     busbw measured per NDR NIC, [EST]); no added latency.
//   - rdma-host: every byte crosses the PCIe switch's uplink to host memory twice per side, in
//     opposite directions; a GPU that sends and receives at once (any ring) loads each direction
//     with two streams: half the PCIe rate. A device-host copy launch on each side.
//   - host-staged: rdma-host plus the proxy thread's CPU copy, which serves a GPU's sent and
//     received bytes together: half the CPU copy bandwidth; a copy launch and a proxy
//     poll-and-post per side.
func (s *Scenario) dataPath() dataPath {
	srv := s.server
	eff := srv.P2PEfficiency
	if eff == 0 {
		eff = defaultP2PEfficiency
	}
	switch s.Cluster.DataPath {
	case "rdma-host":
		return dataPath{"rdma-host", srv.PCIe.Rate / 2, 2 * srv.CopyLatency, "GPU -> host copy, NIC DMA from registered host memory"}
	case "host-staged":
		return dataPath{"host-staged", min(srv.PCIe.Rate/2, srv.CPUCopy/2), 2 * (srv.CopyLatency + srv.CPUCopyLatency),
			"GPU -> host copy, CPU copy into NIC buffers, NIC send"}
	}
	return dataPath{"gpudirect", units.Rate(float64(srv.PCIe.Rate) * eff), 0, "NIC DMA to and from GPU memory over the shared PCIe switch (GPUDirect RDMA)"}
}

func dataPathNames() []string { return []string{"gpudirect", "host-staged", "rdma-host"} }

// railSpec is the cluster's rail-optimized topology with NIC links at rate.
func (s *Scenario) railSpec(rate units.Rate) topo.RailSpec {
	c := &s.Cluster
	return topo.RailSpec{
		Servers:          c.Servers,
		NICsPerServer:    c.GPUsPerServer,
		NIC:              topo.LinkSpec{Rate: rate, Latency: c.LinkLatency},
		Radix:            c.Radix,
		Oversubscription: c.Oversubscription,
		Spine:            topo.LinkSpec{Rate: c.LinkRate, Latency: c.SpineLatency},
		Spines:           c.Spines,
	}
}

// closSpec is the cluster as a topo.Clos with NIC links at rate: the shape of clusters that
// two tiers do not hold, or that ask for tiers, scalable units or planes.
func (s *Scenario) closSpec(rate units.Rate) topo.ClosSpec {
	c := &s.Cluster
	cs := topo.ClosSpec{
		Servers: c.Servers, NICsPerServer: c.GPUsPerServer, PortsPerNIC: c.NICPorts, RailPlanes: c.RailPlanes,
		RailOptimized: true, Tiers: c.Tiers, Radix: c.Radix, ServersPerSU: c.ServersPerSU,
		Oversubscription: []float64{c.Oversubscription, c.SpineOversubscription},
		NIC:              topo.LinkSpec{Rate: rate, Latency: c.LinkLatency},
		LeafSpine:        topo.LinkSpec{Rate: c.LinkRate, Latency: c.SpineLatency},
		SpineCore:        topo.LinkSpec{Rate: c.LinkRate, Latency: c.SpineLatency},
		Spines:           c.Spines,
	}
	if c.SpineLinkRate > 0 {
		cs.LeafSpine.Rate, cs.SpineCore.Rate = c.SpineLinkRate, c.SpineLinkRate
	}
	if c.CoreLinkRate > 0 {
		cs.SpineCore.Rate = c.CoreLinkRate
	}
	if c.CoreLatency > 0 {
		cs.SpineCore.Latency = c.CoreLatency
	}
	return cs
}

// useClos says whether the cluster is built by topo.Clos rather than topo.RailOptimized (which
// builds the same two tiers, port for port, and keeps the graph's name): when a key of the
// multi-tier shape is set, or two tiers do not hold the cluster.
func (s *Scenario) useClos() bool {
	c := &s.Cluster
	if c.Tiers != 0 || c.ServersPerSU != 0 || c.SpineOversubscription != 0 || c.NICPorts > 1 || c.RailPlanes ||
		c.SpineLinkRate != 0 || c.CoreLinkRate != 0 || c.CoreLatency != 0 {
		return true
	}
	_, err := topo.PlanRail(s.railSpec(c.LinkRate))
	if err == nil {
		return false
	}
	p, err := topo.PlanClos(s.closSpec(c.LinkRate))
	return err == nil && p.Tiers == 3
}

// build builds the cluster with NIC links at rate.
func (s *Scenario) build(rate units.Rate) (*topo.Graph, error) {
	var g *topo.Graph
	var err error
	if s.useClos() {
		g, err = topo.Clos(s.closSpec(rate))
	} else {
		g, err = topo.RailOptimized(s.railSpec(rate))
	}
	if err != nil {
		return nil, s.d.At("cluster", "%v", err)
	}
	return g, nil
}

// Topology is the cluster as built for the bill of materials: NIC links at the link rate.
func (s *Scenario) Topology() (*topo.Graph, error) { return s.build(s.Cluster.LinkRate) }

// simRate is the NIC link rate simulated for fabric c: the link rate, or lower where the data
// path cannot feed the NIC at its payload rate. The GPU-NIC path, not the wire, then limits what
// a GPU injects and absorbs, so the NIC link runs at the wire rate that carries exactly the
// path's bandwidth of payload under c's framing.
func (s *Scenario) simRate(c fabric.Config) units.Rate {
	dp := s.dataPath()
	wire := float64(int(c.MTU)+c.HeaderBytes+c.L1Overhead) / float64(c.MTU)
	r := units.Rate(float64(dp.Bandwidth) * wire)
	return min(r, s.Cluster.LinkRate)
}

// simTopology is the simulated cluster with NIC links at rate.
func (s *Scenario) simTopology(rate units.Rate) (*topo.Graph, error) { return s.build(rate) }

// serverOf is the server of GPU rank r: Megatron's rank order puts consecutive ranks in one
// server, and GPU g of server s is NIC (host) s x GPUsPerServer + g, so rank r is host r.
func (s *Scenario) serverOf(rank int) int { return rank / s.Cluster.GPUsPerServer }

// checkLIDs refuses a cluster whose InfiniBand subnet (one per plane) needs more unicast LIDs
// than one subnet holds, when one of the variants runs InfiniBand: every NIC port and every
// switch of a plane takes a LID (ibsm.CheckLIDs, on the plan instead of a built graph).
func (s *Scenario) checkLIDs(variants []*Variant) error {
	ib := false
	for _, v := range variants {
		ib = ib || v.Fabric.Kind == fabric.KindInfiniBand
	}
	if !ib {
		return nil
	}
	var ports, switches int
	if s.useClos() {
		p, err := topo.PlanClos(s.closSpec(s.Cluster.LinkRate))
		if err != nil {
			return s.d.At("cluster", "%v", err)
		}
		ports, switches = p.HostsPerPlane, p.Leaves+p.Spines+p.Cores
	} else {
		p, err := topo.PlanRail(s.railSpec(s.Cluster.LinkRate))
		if err != nil {
			return s.d.At("cluster", "%v", err)
		}
		ports, switches = p.Hosts, p.Switches
	}
	if ports+switches > ibsm.MaxUnicastLIDs {
		return s.d.At("cluster", "an InfiniBand subnet of %d NIC ports and %d switches needs %d LIDs, more than the %d unicast LIDs one subnet holds (IBA vol. 1, 4.1.3); split the fabric into planes, each its own subnet: nic_ports: 2 (two ports per NIC on two planes) or rail_planes: true (a plane per rail)",
			ports, switches, ports+switches, ibsm.MaxUnicastLIDs)
	}
	return nil
}

// checkTopology plans the cluster's network (nothing is built) so that a tier count, radix or
// oversubscription that cannot build it is an input error at parse time.
func (s *Scenario) checkTopology() error {
	var err error
	if s.useClos() {
		_, err = topo.PlanClos(s.closSpec(s.Cluster.LinkRate))
	} else {
		_, err = topo.PlanRail(s.railSpec(s.Cluster.LinkRate))
	}
	if err != nil {
		return s.d.At("cluster", "%v", err)
	}
	return nil
}
