package scenario

import (
	"reflect"
	"strings"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/units"
)

// Fabric is the fabric section. It decodes straight into the packet backend's configuration:
// fabric.Config, fabric.RoCEConfig, fabric.IBConfig and dcqcn.Params hold every key, its
// default and its checks. HPCCConfig is the one key only a scenario file has.
type Fabric struct {
	fabric.Config `yaml:",inline"`
	// HPCCConfig reads HPCC ns-3's config.txt (docs/roce.md maps its names); keys written in
	// the scenario win over it.
	HPCCConfig string `yaml:"hpcc_config" fabric:"roce"`
}

// FabricKeys lists the keys of the fabric section with the kind each belongs to ("" = every
// kind), in declaration order.
func FabricKeys() []fabric.Key {
	return append(fabric.Keys(), fabric.Key{Name: "hpcc_config", Kind: fabric.KindRoCE})
}

// kindNames are the kinds as messages name them.
var kindNames = map[fabric.Kind]string{fabric.KindRoCE: "a RoCE", fabric.KindInfiniBand: "an InfiniBand"}

// decodeFabric decodes the fabric section a second time, over the defaults of the kind (and the
// InfiniBand generation and DCQCN preset) the first pass found, then fills the defaults that
// follow from other keys.
func (s *Scenario) decodeFabric() error {
	f := &s.Fabric
	preset := f.RoCE.DCQCNPreset
	if preset == "" && f.RoCE.DCQCNModel != "" {
		preset = string(f.RoCE.DCQCNModel) // each model's parameters default to its source's
	}
	*f = Fabric{Config: fabric.Defaults(f.Kind, f.IB.Generation, preset)}
	if n := s.d.Node("fabric"); n != nil {
		if err := s.d.Decode(n, reflect.ValueOf(f).Elem(), "fabric"); err != nil {
			return err
		}
	}
	f.Derive(func(key string) bool { return s.Has("fabric." + key) })
	return nil
}

// validateFabric checks the fabric section: keys of another kind, the rules about which keys the
// file wrote together, then the values (fabric.Config.Validate, placed at the keys' lines).
func (s *Scenario) validateFabric() error {
	f := &s.Fabric
	// A key of another kind, reported at the first one the file wrote.
	owner := map[string]fabric.Kind{}
	for _, k := range FabricKeys() {
		top, _, _ := strings.Cut(k.Name, ".")
		owner[top] = k.Kind
	}
	if n := s.d.Node("fabric"); n != nil {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			if kind := owner[k]; kind != "" && kind != f.Kind {
				return s.errf("fabric."+k, "is %s key; it needs `kind: %s` (kind is %q)", kindNames[kind], kind, f.Kind)
			}
		}
	}
	has := func(k string) bool { return s.Has("fabric." + k) }
	switch f.Kind {
	case fabric.KindRoCE:
		if f.HPCCConfig != "" {
			if err := s.applyHPCCConfig(); err != nil {
				return err
			}
		}
		r := &f.RoCE
		if m := fabric.RoCEMTU(r.NetdevMTU); has("mtu") && has("netdev_mtu") && m > 0 && int(f.MTU) > m {
			return s.errf("fabric.mtu", "%d B does not fit netdev_mtu %d (RoCE MTU = largest IB MTU <= netdev_mtu - 96 = %d)", f.MTU, r.NetdevMTU, m)
		}
		for _, k := range r.DCQCNModel.Unused() {
			if has(k) {
				return s.errf("fabric."+k, "is not a parameter of dcqcn_model %s (its reaction point has no use for it; see docs/transports.md)", r.DCQCNModel)
			}
		}
		if has("dctcp_g") && !r.DCTCP {
			return s.errf("fabric.dctcp_g", "is a parameter of DCTCP: set dctcp: true (and dcqcn: false), or leave it out")
		}
		for _, k := range []string{"swift_base_target", "swift_hop_scaling", "swift_fs_range", "swift_ai", "swift_beta", "swift_max_mdf", "swift_min_cwnd", "swift_endpoint_target"} {
			if has(k) && !r.Swift {
				return s.errf("fabric."+k, "is a parameter of Swift: set swift: true (and dcqcn: false), or leave it out")
			}
		}
		for _, k := range []string{"uet_cc", "uet_ooo_threshold", "uet_target_delay", "uet_load_balance"} {
			if has(k) && f.Transport != fabric.TransportUET {
				return s.errf("fabric."+k, "is a parameter of Ultra Ethernet's transport: set transport: uet (and dcqcn: false), or leave it out")
			}
		}
		for _, k := range []string{"timely_alpha", "timely_beta", "timely_t_low", "timely_t_high", "timely_min_rtt", "timely_delta", "timely_min_rate", "timely_segment"} {
			if has(k) && !r.Timely {
				return s.errf("fabric."+k, "is a parameter of TIMELY: set timely: true (and dcqcn: false), or leave it out")
			}
		}
		if r.ECN && has("ecn_kmin") != has("ecn_kmax") {
			return s.errf("fabric.ecn_kmin", "give both ecn_kmin and ecn_kmax, or neither (HPCC's 100 KB and 400 KB per 25 Gb/s of each port)")
		}
	case fabric.KindInfiniBand:
		if has("routing") {
			return s.errf("fabric.routing", "InfiniBand routes by the subnet manager: use routing_engine (minhop, dmodk, updown) and adaptive_routing")
		}
	}
	return s.d.Place("fabric", f.Config.Validate())
}

// defaultsInfiniBand applies the InfiniBand generation to the topology: its rate to every link
// class whose rate the file leaves out (topology.link, topology.host_link; a leaf-spine's spine
// link rate then follows from the oversubscription). Rates written in the file, and HPCC
// topology files, are kept. (The generation's switch latency is in fabric.DefaultInfiniBand.)
func (s *Scenario) defaultsInfiniBand() {
	gen, ok := fabric.LookupIBGeneration(s.Fabric.IB.Generation)
	if !ok {
		gen, _ = fabric.LookupIBGeneration("ndr") // validation reports the name
	}
	for _, l := range []struct {
		path string
		rate *units.Rate
	}{{"topology.link.rate", &s.Topology.Link.Rate}, {"topology.host_link.rate", &s.Topology.HostLink.Rate}} {
		if !s.Has(l.path) {
			*l.rate = gen.Rate
		}
	}
}

// FabricConfig returns the packet backend's configuration.
func (s *Scenario) FabricConfig() fabric.Config {
	c := s.Fabric.Config
	c.Seed = s.Seed
	return c
}
