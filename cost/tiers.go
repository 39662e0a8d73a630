package cost

import (
	"fmt"
	"sort"
	"strings"

	"github.com/fabricsim/fabricsim/topo"
)

// Media a link is cabled with, as TierBill.Cables names them.
const (
	MediumDAC     = "dac"     // one direct-attach copper cable
	MediumAOC     = "aoc"     // one active optical cable
	MediumOptical = "optical" // a transceiver at each end and a fibre between
)

// TierBill is the part of a bill at one switch tier of one plane: the tier's switches and the
// links that join it to the tier below (a leaf's host links, a spine's leaf links, a core's
// spine links) with their cables and optics. Tier 0 holds the hosts' NICs, which serve every
// plane. The tiers of a bill add up to its totals.
type TierBill struct {
	// Plane is the plane of a multi-plane fabric (topo.Node.Plane of the tier's switches); -1
	// for a fabric of one plane and for the NICs.
	Plane int `json:"plane"`
	// Tier is 0 for the NICs, 1 leaf, 2 spine, 3 core (topo.Node.Tier).
	Tier int `json:"tier"`
	// Switches counts the tier's switches; SwitchModels the same by catalogue key.
	Switches     int            `json:"switches"`
	SwitchModels map[string]int `json:"switch_models,omitempty"`
	NICs         int            `json:"nics,omitempty"`
	// Links counts the links from the tier below; Cables the same by length class and medium.
	Links  int          `json:"links"`
	Cables []CableCount `json:"cables,omitempty"`
	// Transceivers counts modules (a twin-port module once), TwinTransceivers those of them
	// that serve two links; DACs, AOCs and Fibres one per link so cabled.
	Transceivers     int `json:"transceivers"`
	TwinTransceivers int `json:"twin_transceivers"`
	DACs             int `json:"dacs"`
	AOCs             int `json:"aocs"`
	Fibres           int `json:"fibres"`
	// Costs of the tier's parts (OpticsUSD: transceivers and AOCs; CablesUSD: DACs and fibre).
	SwitchesUSD float64 `json:"switches_usd"`
	NICsUSD     float64 `json:"nics_usd"`
	OpticsUSD   float64 `json:"optics_usd"`
	CablesUSD   float64 `json:"cables_usd"`
	TotalUSD    float64 `json:"total_usd"`
}

// CableCount is how many links of one length class a tier cables with one medium.
type CableCount struct {
	// Reach is the length class (topo.Reach: rack, row, hall, or unknown where the topology
	// does not say and the link's length chose the medium).
	Reach  string `json:"reach"`
	Medium string `json:"medium"` // dac, aoc, optical
	Links  int    `json:"links"`
}

// Name is the tier's name: "NICs", "leaf", "spine", "core" (with the plane where there are
// several: "plane 1 spine").
func (t *TierBill) Name() string {
	var n string
	switch t.Tier {
	case 0:
		return "NICs"
	case 1:
		n = "leaf"
	case 2:
		n = "spine"
	case 3:
		n = "core"
	default:
		n = fmt.Sprintf("tier %d", t.Tier)
	}
	if t.Plane >= 0 {
		return fmt.Sprintf("plane %d %s", t.Plane, n)
	}
	return n
}

// LinksAt is the tier's link count of one length class ("rack", "row", "hall", "unknown").
func (t *TierBill) LinksAt(reach string) int {
	n := 0
	for _, c := range t.Cables {
		if c.Reach == reach {
			n += c.Links
		}
	}
	return n
}

// CablesText lists the tier's links by length class and medium: "row 16,384 optical".
func (t *TierBill) CablesText() string {
	parts := make([]string, len(t.Cables))
	for i, c := range t.Cables {
		parts[i] = fmt.Sprintf("%s %s %s", c.Reach, money(float64(c.Links)), c.Medium)
	}
	return strings.Join(parts, ", ")
}

// SwitchText lists the tier's switch models: "512 x ib-ndr-switch-64x400g".
func (t *TierBill) SwitchText() string {
	keys := make([]string, 0, len(t.SwitchModels))
	for k := range t.SwitchModels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s x %s", money(float64(t.SwitchModels[k])), k)
	}
	return strings.Join(parts, ", ")
}

// tierKey indexes the tier accumulators.
type tierKey struct{ plane, tier int }

type cableKey struct {
	reach  topo.Reach
	medium string
}

// tierAcc accumulates a bill's tiers as parts are added.
type tierAcc struct {
	planes bool // more than one plane: keep planes apart
	m      map[tierKey]*TierBill
	cables map[tierKey]map[cableKey]int
}

func newTierAcc(g *topo.Graph) *tierAcc {
	seen := map[int32]bool{}
	for i := range g.Nodes {
		if n := &g.Nodes[i]; n.Kind == topo.Switch && n.Plane >= 0 {
			seen[n.Plane] = true
		}
	}
	return &tierAcc{planes: len(seen) > 1, m: map[tierKey]*TierBill{}, cables: map[tierKey]map[cableKey]int{}}
}

// at is the tier bill of a switch tier in the plane of node n (NICs: tier 0 and n nil).
func (a *tierAcc) at(n *topo.Node, tier int) *TierBill {
	k := tierKey{plane: -1, tier: tier}
	if a.planes && n != nil && tier > 0 && n.Plane >= 0 {
		k.plane = int(n.Plane)
	}
	t := a.m[k]
	if t == nil {
		t = &TierBill{Plane: k.plane, Tier: k.tier}
		a.m[k] = t
	}
	return t
}

func (a *tierAcc) cable(t *TierBill, r topo.Reach, medium string) {
	k := tierKey{t.Plane, t.Tier}
	if a.cables[k] == nil {
		a.cables[k] = map[cableKey]int{}
	}
	a.cables[k][cableKey{r, medium}]++
	t.Links++
}

// linkEnds returns a link's upper end (the switch of the higher tier; the switch of a host
// link) and the link's tier, which is that switch's.
func linkEnds(g *topo.Graph, l *topo.Link) (*topo.Node, int) {
	a, b := &g.Nodes[l.A], &g.Nodes[l.B]
	if b.Kind == topo.Host || (a.Kind == topo.Switch && a.Tier > b.Tier) {
		a, b = b, a
	}
	return b, max(b.Tier, 1)
}

var mediumOrder = map[string]int{MediumDAC: 0, MediumAOC: 1, MediumOptical: 2}

// finish rounds the tiers' costs and returns them NICs first, then plane by plane, tier by tier.
func (a *tierAcc) finish() []TierBill {
	keys := make([]tierKey, 0, len(a.m))
	for k := range a.m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		x, y := keys[i], keys[j]
		if (x.tier == 0) != (y.tier == 0) {
			return x.tier == 0
		}
		if x.plane != y.plane {
			return x.plane < y.plane
		}
		return x.tier < y.tier
	})
	out := make([]TierBill, 0, len(keys))
	for _, k := range keys {
		t := a.m[k]
		cks := make([]cableKey, 0, len(a.cables[k]))
		for ck := range a.cables[k] {
			cks = append(cks, ck)
		}
		sort.Slice(cks, func(i, j int) bool {
			if cks[i].reach != cks[j].reach {
				// rack, row, hall, then unknown
				return (cks[i].reach+3)%4 < (cks[j].reach+3)%4
			}
			return mediumOrder[cks[i].medium] < mediumOrder[cks[j].medium]
		})
		for _, ck := range cks {
			t.Cables = append(t.Cables, CableCount{Reach: ck.reach.String(), Medium: ck.medium, Links: a.cables[k][ck]})
		}
		t.SwitchesUSD = roundCents(t.SwitchesUSD)
		t.NICsUSD = roundCents(t.NICsUSD)
		t.OpticsUSD = roundCents(t.OpticsUSD)
		t.CablesUSD = roundCents(t.CablesUSD)
		t.TotalUSD = roundCents(t.SwitchesUSD + t.NICsUSD + t.OpticsUSD + t.CablesUSD)
		out = append(out, *t)
	}
	return out
}
