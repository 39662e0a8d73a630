package cost

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

// Default cable lengths for links whose topo.Link.LengthM is 0 (est., fabricsim authors: typical
// of a hall of 19-inch racks; set Link.LengthM or the Options fields where the floor plan is known).
const (
	// DefaultHostToRM: a server to the top-of-rack leaf in its own rack; short enough for DAC.
	DefaultHostToRM = 2.0
	// DefaultHostRailM: a server NIC to its rail leaf, which sits in a network rack of the row.
	DefaultHostRailM = 20.0
	// DefaultLeafSpineM: leaf (tier 1) to spine (tier 2), across a row or two.
	DefaultLeafSpineM = 30.0
	// DefaultSpineCoreM: spine (tier 2) to core (tier 3), across the hall.
	DefaultSpineCoreM = 100.0
)

// Options tune a bill of materials. The zero value is a cluster with one GPU per host NIC, racks
// with a top-of-rack leaf, the default lengths above and no server price.
type Options struct {
	// GPUs in the cluster, for the per-GPU cost; 0 means one per host (one NIC per GPU, as in
	// HGX H100 servers, [H100]).
	GPUs int `json:"gpus,omitempty" yaml:"gpus"`
	// Server is the catalogue key of a GPU server; when set the bill reports the cost of
	// ceil(GPUs / server GPUs) servers and the network's share of network + servers.
	Server string `json:"server,omitempty" yaml:"server"`
	// RailOptimized says every host link goes to a rail leaf outside the server's rack (NIC i of
	// every server to leaf i), so its default length is DefaultHostRailM and it needs optics.
	// Without it, a host link is a rail link when its leaf has topo.Node.Rail >= 0 (as
	// topo.RailOptimized builds), else an in-rack top-of-rack link of DefaultHostToRM.
	RailOptimized bool `json:"rail_optimized,omitempty" yaml:"rail_optimized"`
	// HostLinkM, LeafSpineM, SpineCoreM override the default lengths (metres) of links with
	// unknown length; 0 keeps the default.
	HostLinkM  float64 `json:"host_link_m,omitempty" yaml:"host_link_m"`
	LeafSpineM float64 `json:"leaf_spine_m,omitempty" yaml:"leaf_spine_m"`
	SpineCoreM float64 `json:"spine_core_m,omitempty" yaml:"spine_core_m"`
	// SwitchModel forces the catalogue switch used at a tier (1 leaf, 2 spine, 3 core) instead
	// of the smallest one with enough ports.
	SwitchModel map[int]string `json:"switch_model,omitempty" yaml:"switch_model"`
	// TwinPortOptics fits switch ends of optical links with twin-port modules (two links per
	// cage, as QM9700 and 51.2T switches with 800G OSFP cages do) where the catalogue has one
	// at the link rate; host ends keep single-port modules.
	TwinPortOptics bool `json:"twin_port_optics,omitempty" yaml:"twin_port_optics"`
	// PreferAOC uses an active optical cable instead of two transceivers and a fibre for links
	// within an AOC's reach.
	PreferAOC bool `json:"prefer_aoc,omitempty" yaml:"prefer_aoc"`
}

// Line is one row of a bill.
type Line struct {
	Category    string  `json:"category"` // switch, nic, transceiver, dac, aoc, fibre, server
	Item        string  `json:"item"`     // catalogue key
	Description string  `json:"description"`
	Tier        int     `json:"tier,omitempty"` // switches: 1 leaf, 2 spine, 3 core
	Qty         int     `json:"qty"`
	UnitUSD     float64 `json:"unit_usd"`
	SubtotalUSD float64 `json:"subtotal_usd"`
	LowUSD      float64 `json:"low_usd"`  // subtotal at the low end of the price range
	HighUSD     float64 `json:"high_usd"` // subtotal at the high end
	Note        string  `json:"note,omitempty"`
	Source      string  `json:"source"`
	Date        string  `json:"date"`
}

// Counts are the physical quantities behind a bill.
type Counts struct {
	Switches     int            `json:"switches"`
	SwitchesTier map[int]int    `json:"switches_by_tier"`
	NICs         int            `json:"nics"`
	Links        int            `json:"links"`
	CopperLinks  int            `json:"copper_links"`  // DAC
	AOCLinks     int            `json:"aoc_links"`     // active optical cables
	OpticalLinks int            `json:"optical_links"` // two transceivers + a fibre
	Transceivers int            `json:"transceivers"`  // modules (a twin-port module counts once)
	Fibres       int            `json:"fibres"`
	LinksByClass map[string]int `json:"links_by_class"` // "host-tor", "host-rail", "leaf-spine", ...
	// LinksByReach counts links by cable length class (topo.Reach: rack, row, hall, unknown).
	LinksByReach map[string]int `json:"links_by_reach"`
}

// Totals sum a bill.
type Totals struct {
	NetworkUSD      float64 `json:"network_usd"`
	NetworkLowUSD   float64 `json:"network_low_usd"`
	NetworkHighUSD  float64 `json:"network_high_usd"`
	SwitchesUSD     float64 `json:"switches_usd"`
	NICsUSD         float64 `json:"nics_usd"`
	OpticsUSD       float64 `json:"optics_usd"` // transceivers and AOCs
	CablesUSD       float64 `json:"cables_usd"` // DAC and fibre
	Hosts           int     `json:"hosts"`
	GPUs            int     `json:"gpus"`
	PerHostUSD      float64 `json:"per_host_usd"`
	PerGPUUSD       float64 `json:"per_gpu_usd"`
	Servers         int     `json:"servers,omitempty"`
	ServersUSD      float64 `json:"servers_usd,omitempty"`
	NetworkShare    float64 `json:"network_share,omitempty"` // network / (network + servers)
	ServerItem      string  `json:"server_item,omitempty"`
	ServerSource    string  `json:"server_source,omitempty"`
	ClusterTotalUSD float64 `json:"cluster_total_usd,omitempty"` // network + servers
}

// Bill is the bill of materials of one topology on one fabric.
type Bill struct {
	Topology string `json:"topology"`
	Fabric   string `json:"fabric"`
	Currency string `json:"currency"`
	Lines    []Line `json:"lines"`
	Counts   Counts `json:"counts"`
	Totals   Totals `json:"totals"`
	// Assumptions lists the defaults the bill relied on (lengths, GPU count), for the report.
	Assumptions []string `json:"assumptions"`
	// Tiers breaks the bill down by switch tier, and by plane in a multi-plane fabric: NICs
	// first, then each plane's leaf, spine and core tiers with the links from the tier below.
	Tiers []TierBill `json:"tiers"`
}

type lineKey struct {
	cat  string
	item string
	tier int
	len  string // length class for priced-by-length items
}

type acc struct {
	it        *Item
	qty       int
	unit      float64
	low, high float64
	used      int // switch ports used
	avail     int // switch ports available at the used rate
	rate      units.Rate
	lengthM   float64
}

// BOM counts and prices the parts that g needs on fabric ("infiniband" or "ethernet").
//
// Switches: each switch node gets the smallest (by capacity, then price) catalogue switch of the
// fabric whose cages hold all its ports at their rates, or Options.SwitchModel for its tier.
// NICs: one per host node (a host is one NIC port), or one per NIC where hosts are the ports of
// a multi-port NIC (topo.Clos planes: hosts of one server and rail), at the sum of its ports'
// rates.
//
// Links whose length class is known (topo.Link.Reach, set by topo.Clos) take the medium of
// their class: in a rack a DAC, between racks of a row an AOC, across the hall two transceivers
// and a fibre; where the catalogue has no such part that reaches the link's length, the next
// class's medium (a row link with no AOC gets optics). A switch end of optics takes a twin-port
// module when the switch's cage carries two links at the link's rate (a QM9700 cage: two NDR
// ports) and the catalogue has one; otherwise, and at hosts, single-port modules.
//
// Links of unknown class keep the rule by length: a link no longer than a DAC's reach at its
// rate is a DAC; otherwise an AOC (with PreferAOC, within reach) or two transceivers and a fibre,
// twin-port modules at switch ends with TwinPortOptics. A link's length is Link.LengthM, else
// the default for its class (host-tor, host-rail, leaf-spine, spine-core; see the Default*M
// constants and Options).
//
// The bill's Tiers break it down by tier (and plane): see TierBill.
func BOM(g *topo.Graph, fabric string, cat *Catalogue, opts Options) (*Bill, error) {
	if fabric != InfiniBand && fabric != Ethernet {
		return nil, fmt.Errorf("bill of materials: unknown fabric %q (valid: %s, %s)", fabric, InfiniBand, Ethernet)
	}
	if g == nil || cat == nil {
		return nil, fmt.Errorf("bill of materials: nil topology or catalogue")
	}
	if err := g.Validate(); err != nil {
		return nil, fmt.Errorf("bill of materials: %w", err)
	}
	if opts.GPUs < 0 {
		return nil, fmt.Errorf("bill of materials: gpus %d must not be negative", opts.GPUs)
	}
	b := &Bill{Topology: g.Name, Fabric: fabric, Currency: cat.Currency}
	b.Counts.SwitchesTier = map[int]int{}
	b.Counts.LinksByClass = map[string]int{}
	b.Counts.LinksByReach = map[string]int{}
	lines := map[lineKey]*acc{}
	add := func(k lineKey, it *Item, qty int, unit, low, high float64) *acc {
		a := lines[k]
		if a == nil {
			a = &acc{it: it, unit: unit}
			lines[k] = a
		}
		a.qty += qty
		a.low, a.high = low, high
		return a
	}
	tiers := newTierAcc(g)
	pk := newPicker(cat, fabric)

	// Switches.
	model := make([]*Item, len(g.Nodes)) // the catalogue switch of each switch node
	for i := range g.Nodes {
		n := &g.Nodes[i]
		if n.Kind != topo.Switch {
			continue
		}
		need := map[units.Rate]int{}
		var maxRate units.Rate
		for p := range n.Ports {
			r := g.PortLink(n.ID, p).Rate
			need[r]++
			if r > maxRate {
				maxRate = r
			}
		}
		it, err := chooseSwitch(cat, fabric, n, need, opts.SwitchModel)
		if err != nil {
			return nil, err
		}
		model[i] = it
		a := add(lineKey{cat: KindSwitch, item: it.Key, tier: n.Tier}, it, 1, it.PriceUSD, it.low(), it.high())
		a.used += len(n.Ports)
		a.avail += it.PortsAt(maxRate)
		if maxRate > a.rate {
			a.rate = maxRate
		}
		b.Counts.Switches++
		b.Counts.SwitchesTier[n.Tier]++
		tb := tiers.at(n, max(n.Tier, 1))
		tb.Switches++
		if tb.SwitchModels == nil {
			tb.SwitchModels = map[string]int{}
		}
		tb.SwitchModels[it.Key]++
		tb.SwitchesUSD += it.PriceUSD
	}

	// NICs: one per host node, or one per NIC of several ports (hosts sharing server and rail).
	if err := addNICs(g, pk, func(it *Item) {
		add(lineKey{cat: KindNIC, item: it.Key}, it, 1, it.PriceUSD, it.low(), it.high())
		b.Counts.NICs++
		tb := tiers.at(nil, 0)
		tb.NICs++
		tb.NICsUSD += it.PriceUSD
	}); err != nil {
		return nil, err
	}

	// Links.
	lens := resolveLengths(opts)
	usedDefault := map[string]float64{}
	type fallbackKey struct {
		reach topo.Reach
		rate  units.Rate
	}
	fallbacks := map[fallbackKey]bool{}
	twinEnds := map[twinKey]int{} // switch ends waiting for twin-port modules
	for i := range g.Links {
		l := &g.Links[i]
		upper, tier := linkEnds(g, l)
		tb := tiers.at(upper, tier)
		class := linkClass(g, l, opts.RailOptimized)
		if l.Reach != topo.ReachUnknown {
			class = reachClass(g, l)
		}
		length := l.LengthM
		if length <= 0 {
			length = lens[class]
			usedDefault[class] = length
		}
		b.Counts.Links++
		b.Counts.LinksByClass[class]++
		b.Counts.LinksByReach[l.Reach.String()]++
		where := func() string { // for messages only
			if l.Reach != topo.ReachUnknown {
				return fmt.Sprintf("link %d (%s-%s, %s, %s reach, %s, %g m)", i, g.Nodes[l.A].Name, g.Nodes[l.B].Name, class, l.Reach, l.Rate, length)
			}
			return fmt.Sprintf("link %d (%s-%s, %s, %s, %g m)", i, g.Nodes[l.A].Name, g.Nodes[l.B].Name, class, l.Rate, length)
		}

		dacOK, aocOK := true, opts.PreferAOC
		if l.Reach != topo.ReachUnknown {
			dacOK, aocOK = l.Reach == topo.ReachRack, l.Reach <= topo.ReachRow
		}
		if dacOK {
			if dac := pk.cable(KindDAC, l.Rate, length); dac != nil {
				add(lineKey{cat: KindDAC, item: dac.Key}, dac, 1, dac.PriceUSD, dac.low(), dac.high())
				b.Counts.CopperLinks++
				tiers.cable(tb, l.Reach, MediumDAC)
				tb.DACs++
				tb.CablesUSD += dac.PriceUSD
				continue
			}
		}
		if aocOK {
			if aoc := pk.cable(KindAOC, l.Rate, length); aoc != nil {
				k := lineKey{cat: KindAOC, item: aoc.Key, len: fmtLen(length)}
				a := add(k, aoc, 1, aoc.lengthPrice(length), aoc.low()+aoc.PricePerMUSD*length, aoc.high()+aoc.PricePerMUSD*length)
				a.lengthM = length
				b.Counts.AOCLinks++
				tiers.cable(tb, l.Reach, MediumAOC)
				tb.AOCs++
				tb.OpticsUSD += aoc.lengthPrice(length)
				continue
			}
		}
		if k := (fallbackKey{l.Reach, l.Rate}); l.Reach != topo.ReachUnknown && l.Reach != topo.ReachHall && !fallbacks[k] {
			// The class's own medium is missing or does not reach: say so once per class and rate.
			fallbacks[k] = true
			medium := "AOC"
			if l.Reach == topo.ReachRack {
				medium = "DAC or AOC"
			}
			b.Assumptions = append(b.Assumptions, fmt.Sprintf("%s-reach links at %s: the catalogue has no %s %s that reaches them, cabled with transceivers and fibre",
				l.Reach, l.Rate, fabric, medium))
		}
		// Optics: a transceiver at each end and a fibre between.
		b.Counts.OpticalLinks++
		tiers.cable(tb, l.Reach, MediumOptical)
		for _, end := range []topo.NodeID{l.A, l.B} {
			if g.Nodes[end].Kind == topo.Switch {
				perCage := 0 // links one module serves at this end: twin-port where > 1
				if l.Reach == topo.ReachUnknown {
					if opts.TwinPortOptics {
						perCage = 2
					}
				} else if m := model[end]; m != nil {
					perCage = m.breakoutFor(l.Rate)
				}
				if perCage > 1 {
					if tw := pk.transceiver(l.Rate, length, perCage); tw != nil {
						twinEnds[twinKey{node: end, item: tw.Key, tier: tier}]++
						continue
					}
				}
			}
			x := pk.transceiver(l.Rate, length, 1)
			if x == nil {
				return nil, fmt.Errorf("bill of materials: %s: the catalogue has no %s transceiver for %s with reach >= %g m (%s); add one: kind: transceiver, rate: %s, links: 1, max_length_m: %g or more",
					where(), fabric, l.Rate, length, cat.has(KindTransceiver, fabric), l.Rate, length)
			}
			add(lineKey{cat: KindTransceiver, item: x.Key}, x, 1, x.PriceUSD, x.low(), x.high())
			b.Counts.Transceivers++
			tb.Transceivers++
			tb.OpticsUSD += x.PriceUSD
		}
		f := pk.fibre(l.Rate)
		if f == nil {
			return nil, fmt.Errorf("bill of materials: %s: the catalogue has no %s fibre for %s (%s); add one: kind: fibre",
				where(), fabric, l.Rate, cat.has(KindFibre, fabric))
		}
		k := lineKey{cat: KindFibre, item: f.Key, len: fmtLen(length)}
		a := add(k, f, 1, f.lengthPrice(length), f.low()+f.PricePerMUSD*length, f.high()+f.PricePerMUSD*length)
		a.lengthM = length
		b.Counts.Fibres++
		tb.Fibres++
		tb.CablesUSD += f.lengthPrice(length)
	}
	// Twin-port modules: ceil(ends / links per module) per switch and tier.
	twinKeys := make([]twinKey, 0, len(twinEnds))
	for k := range twinEnds {
		twinKeys = append(twinKeys, k)
	}
	sort.Slice(twinKeys, func(i, j int) bool {
		x, y := twinKeys[i], twinKeys[j]
		if x.node != y.node {
			return x.node < y.node
		}
		if x.tier != y.tier {
			return x.tier < y.tier
		}
		return x.item < y.item
	})
	for _, k := range twinKeys {
		it := cat.Items[k.item]
		q := (twinEnds[k] + it.Links - 1) / it.Links
		add(lineKey{cat: KindTransceiver, item: it.Key}, it, q, it.PriceUSD, it.low(), it.high())
		b.Counts.Transceivers += q
		tb := tiers.at(&g.Nodes[k.node], k.tier)
		tb.Transceivers += q
		tb.TwinTransceivers += q
		tb.OpticsUSD += float64(q) * it.PriceUSD
	}
	b.Tiers = tiers.finish()

	// Lines, in a fixed order.
	order := map[string]int{KindSwitch: 0, KindNIC: 1, KindTransceiver: 2, KindAOC: 3, KindDAC: 4, KindFibre: 5}
	keys := make([]lineKey, 0, len(lines))
	for k := range lines {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, c := keys[i], keys[j]
		if order[a.cat] != order[c.cat] {
			return order[a.cat] < order[c.cat]
		}
		if a.tier != c.tier {
			return a.tier < c.tier
		}
		if a.item != c.item {
			return a.item < c.item
		}
		return lines[a].lengthM < lines[c].lengthM
	})
	t := &b.Totals
	for _, k := range keys {
		a := lines[k]
		ln := Line{
			Category: k.cat, Item: a.it.Key, Description: a.it.Description, Tier: k.tier, Qty: a.qty,
			UnitUSD: roundCents(a.unit), SubtotalUSD: roundCents(a.unit * float64(a.qty)),
			LowUSD: roundCents(a.low * float64(a.qty)), HighUSD: roundCents(a.high * float64(a.qty)),
			Source: a.it.Source, Date: a.it.Date,
		}
		switch k.cat {
		case KindSwitch:
			ln.Note = fmt.Sprintf("%s: %d of %d ports used at %s", tierName(k.tier), a.used, a.avail, a.rate)
			t.SwitchesUSD += ln.SubtotalUSD
		case KindNIC:
			t.NICsUSD += ln.SubtotalUSD
		case KindTransceiver, KindAOC:
			t.OpticsUSD += ln.SubtotalUSD
			if k.cat == KindAOC {
				ln.Note = k.len + " m"
			}
		case KindDAC, KindFibre:
			t.CablesUSD += ln.SubtotalUSD
			if k.cat == KindFibre {
				ln.Note = k.len + " m"
			}
		}
		t.NetworkUSD += ln.SubtotalUSD
		t.NetworkLowUSD += ln.LowUSD
		t.NetworkHighUSD += ln.HighUSD
		b.Lines = append(b.Lines, ln)
	}
	t.NetworkUSD = roundCents(t.NetworkUSD)
	t.NetworkLowUSD = roundCents(t.NetworkLowUSD)
	t.NetworkHighUSD = roundCents(t.NetworkHighUSD)
	t.Hosts = len(g.Hosts)
	t.GPUs = opts.GPUs
	if t.GPUs == 0 {
		// One GPU per NIC: a NIC of several ports (one per plane) still serves one GPU.
		t.GPUs = b.Counts.NICs
		b.Assumptions = append(b.Assumptions, fmt.Sprintf("one GPU per host NIC: %d GPUs", t.GPUs))
	}
	t.PerHostUSD = roundCents(t.NetworkUSD / float64(t.Hosts))
	t.PerGPUUSD = roundCents(t.NetworkUSD / float64(t.GPUs))
	if opts.Server != "" {
		s, ok := cat.Items[opts.Server]
		if !ok || s.Kind != KindServer {
			return nil, fmt.Errorf("bill of materials: server %q is not a server in the price catalogue (servers: %s)",
				opts.Server, strings.Join(keysOfKind(cat, KindServer), ", "))
		}
		t.Servers = (t.GPUs + s.GPUs - 1) / s.GPUs
		t.ServersUSD = roundCents(float64(t.Servers) * s.PriceUSD)
		t.ServerItem, t.ServerSource = s.Key, s.Source
		t.ClusterTotalUSD = roundCents(t.NetworkUSD + t.ServersUSD)
		t.NetworkShare = t.NetworkUSD / t.ClusterTotalUSD
	}
	for _, c := range []string{"host-tor", "host-rail", "leaf-spine", "spine-core", "switch-switch"} {
		if m, ok := usedDefault[c]; ok {
			b.Assumptions = append(b.Assumptions, fmt.Sprintf("%s links of unknown length taken as %g m", c, m))
		}
	}
	if opts.RailOptimized && b.Counts.LinksByReach[topo.ReachUnknown.String()] > 0 {
		b.Assumptions = append(b.Assumptions, "rail-optimized: host links leave the rack")
	}
	return b, nil
}

type twinKey struct {
	node topo.NodeID
	item string
	tier int // the tier of the links served
}

func fmtLen(m float64) string { return strconv.FormatFloat(m, 'f', -1, 64) }

func tierName(t int) string {
	switch t {
	case 1:
		return "tier 1 leaf"
	case 2:
		return "tier 2 spine"
	case 3:
		return "tier 3 core"
	}
	return fmt.Sprintf("tier %d", t)
}

// linkClass names a link by the tiers of its ends.
func linkClass(g *topo.Graph, l *topo.Link, rail bool) string {
	a, b := g.Nodes[l.A], g.Nodes[l.B]
	if a.Kind == topo.Host || b.Kind == topo.Host {
		sw := a
		if a.Kind == topo.Host {
			sw = b
		}
		// A leaf that serves a rail (topo.RailOptimized sets Node.Rail) takes NIC i of many
		// servers, so it cannot sit in each server's rack.
		if rail || (sw.Kind == topo.Switch && sw.Rail >= 0) {
			return "host-rail"
		}
		return "host-tor"
	}
	hi := max(a.Tier, b.Tier)
	switch {
	case hi >= 3:
		return "spine-core"
	case hi == 2:
		return "leaf-spine"
	}
	return "switch-switch"
}

// reachClass names a link of known length class by its ends: a host link is host-tor in a rack
// and host-rail beyond; a switch link is named by tiers as linkClass does.
func reachClass(g *topo.Graph, l *topo.Link) string {
	if g.Nodes[l.A].Kind == topo.Host || g.Nodes[l.B].Kind == topo.Host {
		if l.Reach == topo.ReachRack {
			return "host-tor"
		}
		return "host-rail"
	}
	return linkClass(g, l, false)
}

// addNICs picks a NIC for every NIC of g and passes it to use. A host is one NIC port: hosts
// with the same server and rail (topo.Clos with ports_per_nic > 1: one port per plane) are the
// ports of one NIC, which must carry their summed rate; every other host is a NIC of its own.
func addNICs(g *topo.Graph, pk *picker, use func(*Item)) error {
	type nicKey struct{ server, rail int32 }
	type nic struct {
		host  topo.NodeID
		ports int
		rate  units.Rate
	}
	var nics []nic
	index := map[nicKey]int{}
	for _, h := range g.Hosts {
		n := &g.Nodes[h]
		r := g.PortLink(h, 0).Rate
		if n.Server >= 0 && n.Rail >= 0 {
			k := nicKey{n.Server, n.Rail}
			if i, ok := index[k]; ok {
				nics[i].ports++
				nics[i].rate += r
				continue
			}
			index[k] = len(nics)
		}
		nics = append(nics, nic{host: h, ports: 1, rate: r})
	}
	for _, c := range nics {
		it := pk.nic(c.rate)
		if it == nil {
			what := fmt.Sprintf("host %s has a %s link", g.Nodes[c.host].Name, c.rate)
			if c.ports > 1 {
				n := &g.Nodes[c.host]
				what = fmt.Sprintf("NIC %d of server %d (host %s) has %d ports, %s in all", n.Rail, n.Server, n.Name, c.ports, c.rate)
			}
			return fmt.Errorf("bill of materials: %s; the price catalogue has no %s NIC that fast (%s); add one: kind: nic, rate: %s",
				what, pk.fabric, pk.cat.has(KindNIC, pk.fabric), c.rate)
		}
		use(it)
	}
	return nil
}

func resolveLengths(o Options) map[string]float64 {
	pick := func(v, d float64) float64 {
		if v > 0 {
			return v
		}
		return d
	}
	return map[string]float64{
		"host-tor":      pick(o.HostLinkM, DefaultHostToRM),
		"host-rail":     pick(o.HostLinkM, DefaultHostRailM),
		"leaf-spine":    pick(o.LeafSpineM, DefaultLeafSpineM),
		"switch-switch": pick(o.LeafSpineM, DefaultLeafSpineM),
		"spine-core":    pick(o.SpineCoreM, DefaultSpineCoreM),
	}
}

// cagesNeeded is how many cages of sw hold ports needing the given count per rate (a cage is
// split one way for all its lanes), or -1 if some rate is faster than a cage.
func cagesNeeded(sw *Item, need map[units.Rate]int) int {
	total := 0
	for r, n := range need {
		b := sw.breakoutFor(r)
		if b == 0 {
			return -1
		}
		total += (n + b - 1) / b
	}
	return total
}

func describeNeed(need map[units.Rate]int) string {
	rates := make([]units.Rate, 0, len(need))
	for r := range need {
		rates = append(rates, r)
	}
	sort.Slice(rates, func(i, j int) bool { return rates[i] > rates[j] })
	parts := make([]string, len(rates))
	for i, r := range rates {
		parts[i] = fmt.Sprintf("%d at %s", need[r], r)
	}
	return strings.Join(parts, " + ")
}

func chooseSwitch(cat *Catalogue, fabric string, n *topo.Node, need map[units.Rate]int, forced map[int]string) (*Item, error) {
	if key, ok := forced[n.Tier]; ok {
		it, ok := cat.Items[key]
		if !ok || it.Kind != KindSwitch {
			return nil, fmt.Errorf("bill of materials: switch model %q for tier %d is not a switch in the price catalogue (switches: %s)",
				key, n.Tier, strings.Join(keysOfKind(cat, KindSwitch), ", "))
		}
		if !it.ForFabric(fabric) {
			return nil, fmt.Errorf("bill of materials: switch model %s for tier %d is not listed for fabric %s", it.where(), n.Tier, fabric)
		}
		if c := cagesNeeded(it, need); c < 0 || c > it.Ports {
			return nil, fmt.Errorf("bill of materials: switch %s (tier %d) needs %d ports (%s); forced model %s has %d cages at %s",
				n.Name, n.Tier, len(n.Ports), describeNeed(need), it.where(), it.Ports, it.PortRate)
		}
		return it, nil
	}
	cands := cat.usable(KindSwitch, fabric)
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if a.Capacity() != b.Capacity() {
			return a.Capacity() < b.Capacity()
		}
		return a.PriceUSD < b.PriceUSD
	})
	for _, it := range cands {
		if c := cagesNeeded(it, need); c >= 0 && c <= it.Ports {
			return it, nil
		}
	}
	if len(cands) == 0 {
		return nil, fmt.Errorf("bill of materials: the price catalogue has no %s switch", fabric)
	}
	biggest := cands[len(cands)-1]
	return nil, fmt.Errorf("bill of materials: switch %s (tier %d) needs %d ports (%s); the largest %s switch in the catalogue, %s, has %d cages of %s (breakout %v), and none holds them (%s); add a switch with enough cages at these rates (kind: switch, ports, port_rate, breakout) or build the topology with a smaller radix",
		n.Name, n.Tier, len(n.Ports), describeNeed(need), fabric, biggest.where(), biggest.Ports, biggest.PortRate, biggest.breakouts(), cat.has(KindSwitch, fabric))
}

// chooseNIC is the slowest NIC of at least rate r, the cheapest among equals; nil if none.
func chooseNIC(cat *Catalogue, fabric string, r units.Rate) *Item {
	var best *Item
	for _, it := range cat.usable(KindNIC, fabric) {
		if it.Rate < r {
			continue
		}
		if best == nil || it.Rate < best.Rate || (it.Rate == best.Rate && it.PriceUSD < best.PriceUSD) {
			best = it
		}
	}
	return best
}

// chooseCable is the cheapest DAC or AOC at rate r that reaches length m, or nil.
func chooseCable(cat *Catalogue, kind, fabric string, r units.Rate, m float64) *Item {
	var best *Item
	for _, it := range cat.usable(kind, fabric) {
		if it.Rate != r || (it.MaxLengthM > 0 && m > it.MaxLengthM) {
			continue
		}
		if best == nil || it.lengthPrice(m) < best.lengthPrice(m) {
			best = it
		}
	}
	return best
}

// chooseTransceiver is the cheapest module serving `links` links at rate r with reach >= m.
func chooseTransceiver(cat *Catalogue, fabric string, r units.Rate, m float64, links int) *Item {
	var best *Item
	for _, it := range cat.usable(KindTransceiver, fabric) {
		l := it.Links
		if l == 0 {
			l = 1
		}
		if it.Rate != r || l != links || (it.MaxLengthM > 0 && m > it.MaxLengthM) {
			continue
		}
		if best == nil || it.PriceUSD < best.PriceUSD {
			best = it
		}
	}
	return best
}

func chooseFibre(cat *Catalogue, fabric string, r units.Rate) *Item {
	var best *Item
	for _, it := range cat.usable(KindFibre, fabric) {
		if it.Rate != 0 && it.Rate != r {
			continue
		}
		if best == nil || it.PriceUSD < best.PriceUSD {
			best = it
		}
	}
	return best
}

func keysOfKind(cat *Catalogue, kind string) []string {
	var out []string
	for _, k := range cat.Keys() {
		if cat.Items[k].Kind == kind {
			out = append(out, k)
		}
	}
	return out
}

// WriteText writes the bill as an aligned table with totals and the price sources.
func (b *Bill) WriteText(w io.Writer) error {
	var sb strings.Builder
	fmt.Fprintf(&sb, "Bill of materials: %s on %s (%s)\n\n", b.Topology, b.Fabric, b.Currency)
	tw := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "item\t%8s\t%10s\t%14s\tnote\n", "qty", "unit", "subtotal")
	for _, l := range b.Lines {
		fmt.Fprintf(tw, "%s\t%8d\t%10s\t%14s\t%s\n", l.Item, l.Qty, money(l.UnitUSD), money(l.SubtotalUSD), l.Note)
	}
	tw.Flush()
	t := b.Totals
	c := b.Counts
	fmt.Fprintf(&sb, "\nswitches %d, NICs %d, links %d (DAC %d, AOC %d, optical %d), transceivers %d, fibres %d\n",
		c.Switches, c.NICs, c.Links, c.CopperLinks, c.AOCLinks, c.OpticalLinks, c.Transceivers, c.Fibres)
	fmt.Fprintf(&sb, "network total %s (price range %s - %s)\n", money(t.NetworkUSD), money(t.NetworkLowUSD), money(t.NetworkHighUSD))
	fmt.Fprintf(&sb, "  switches %s, NICs %s, optics %s, cables %s\n", money(t.SwitchesUSD), money(t.NICsUSD), money(t.OpticsUSD), money(t.CablesUSD))
	fmt.Fprintf(&sb, "per GPU %s (%d GPUs), per host NIC %s (%d hosts)\n", money(t.PerGPUUSD), t.GPUs, money(t.PerHostUSD), t.Hosts)
	if t.ServerItem != "" {
		fmt.Fprintf(&sb, "servers %d x %s = %s; network share of network + servers %.1f %%\n",
			t.Servers, t.ServerItem, money(t.ServersUSD), 100*t.NetworkShare)
	}
	if len(b.Assumptions) > 0 {
		fmt.Fprintf(&sb, "assumptions: %s\n", strings.Join(b.Assumptions, "; "))
	}
	if len(b.Tiers) > 0 {
		sb.WriteString("\nby tier (switches, and the links from the tier below by length class and medium):\n")
		tw := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "tier\tswitches\tNICs\tlinks\ttransceivers (twin)\tcost\n")
		for i := range b.Tiers {
			t := &b.Tiers[i]
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s (%s)\t%s\n", t.Name(), t.SwitchText(), money(float64(t.NICs)), t.CablesText(),
				money(float64(t.Transceivers)), money(float64(t.TwinTransceivers)), money(t.TotalUSD))
		}
		tw.Flush()
	}
	sb.WriteString("\nsources:\n")
	seen := map[string]bool{}
	for _, l := range b.Lines {
		if seen[l.Item] {
			continue
		}
		seen[l.Item] = true
		fmt.Fprintf(&sb, "  %s: %s (%s)\n", l.Item, l.Source, l.Date)
	}
	if t.ServerItem != "" {
		fmt.Fprintf(&sb, "  %s: %s\n", t.ServerItem, t.ServerSource)
	}
	_, err := io.WriteString(w, sb.String())
	return err
}

// money formats whole dollars with thousands separators ("1,234,567"); cents only when present.
func money(v float64) string {
	neg := v < 0
	v = math.Abs(v)
	whole := int64(v)
	cents := int64(math.Round((v - float64(whole)) * 100))
	if cents == 100 {
		whole, cents = whole+1, 0
	}
	s := strconv.FormatInt(whole, 10)
	var out []byte
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	r := string(out)
	if cents != 0 {
		r += fmt.Sprintf(".%02d", cents)
	}
	if neg {
		r = "-" + r
	}
	return r
}
