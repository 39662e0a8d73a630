package compare

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/fabricsim/fabricsim/cost"
	"github.com/fabricsim/fabricsim/report"
)

// bomSection is report.html's bill of materials by tier: for each fabric priced, one row per
// tier (per plane in a multi-plane fabric) with its switches, the links from the tier below by
// cable length class and medium, the optics, and what they cost (cost.Bill.Tiers).
func (r *Result) bomSection() report.Section {
	sec := report.Section{Title: "Bill of materials by tier",
		Text: []string{"Each switch tier with the links that join it to the tier below (a leaf's NIC links, a spine's leaf links, a core's spine links) and their cables and optics; the NICs on a row of their own. " +
			"Links are counted by length class and medium: rack (in the rack: direct-attach copper, DAC), row (between racks of a row: active optical cable, AOC, or a transceiver at each end and a fibre where the catalogue has no AOC for the fabric), " +
			"hall (across the hall to the network rows: transceivers and fibre); unknown where the topology gives no class, and the medium follows the link's assumed length. " +
			"A switch end of optics is a twin-port module (two links) where the switch's cage carries two links at the link rate. Costs are in US dollars at the catalogue's prices."}}
	seen := map[string]bool{}
	for _, v := range r.Variants {
		b := v.Bill
		if b == nil || seen[b.Fabric] || len(b.Tiers) == 0 {
			continue
		}
		seen[b.Fabric] = true
		sec.Tables = append(sec.Tables, tierTable(b))
		if len(b.Assumptions) > 0 {
			sec.Text = append(sec.Text, b.Fabric+": "+strings.Join(b.Assumptions, "; ")+".")
		}
	}
	if len(sec.Tables) == 0 {
		sec.Text = append(sec.Text, "No variant's network could be priced (see Cost).")
	}
	return sec
}

// tierTable is one bill's tiers as a table, with a total row.
func tierTable(b *cost.Bill) *report.Table {
	t := &report.Table{
		Caption: fmt.Sprintf("%s: %s network, %s per GPU (%d GPUs)", b.Fabric, money(b.Totals.NetworkUSD), money(b.Totals.PerGPUUSD), b.Totals.GPUs),
		Head: []string{"tier", "switches", "NICs", "links by length class and medium", "transceivers", "DAC", "AOC", "fibres",
			"switches $", "NICs $", "optics $", "cables $", "total $"},
		RightAlign: []bool{false, false, true, false, true, true, true, true, true, true, true, true, true},
	}
	var sum cost.TierBill
	for i := range b.Tiers {
		tb := &b.Tiers[i]
		t.Rows = append(t.Rows, []string{tb.Name(), tb.SwitchText(), blank(tb.NICs), tb.CablesText(),
			modules(tb.Transceivers, tb.TwinTransceivers), blank(tb.DACs), blank(tb.AOCs), blank(tb.Fibres),
			blankUSD(tb.SwitchesUSD), blankUSD(tb.NICsUSD), blankUSD(tb.OpticsUSD), blankUSD(tb.CablesUSD), money(tb.TotalUSD)})
		sum.Switches += tb.Switches
		sum.NICs += tb.NICs
		sum.Links += tb.Links
		sum.Transceivers += tb.Transceivers
		sum.TwinTransceivers += tb.TwinTransceivers
		sum.DACs += tb.DACs
		sum.AOCs += tb.AOCs
		sum.Fibres += tb.Fibres
		sum.SwitchesUSD += tb.SwitchesUSD
		sum.NICsUSD += tb.NICsUSD
		sum.OpticsUSD += tb.OpticsUSD
		sum.CablesUSD += tb.CablesUSD
	}
	t.Rows = append(t.Rows, []string{"total", thousands(sum.Switches), thousands(sum.NICs), thousands(sum.Links) + " links",
		modules(sum.Transceivers, sum.TwinTransceivers), thousands(sum.DACs), thousands(sum.AOCs), thousands(sum.Fibres),
		money(sum.SwitchesUSD), money(sum.NICsUSD), money(sum.OpticsUSD), money(sum.CablesUSD), money(b.Totals.NetworkUSD)})
	return t
}

// blank is a count, empty when 0 so that a tier's row shows only what it has.
func blank(n int) string {
	if n == 0 {
		return ""
	}
	return thousands(n)
}

func blankUSD(x float64) string {
	if x == 0 {
		return ""
	}
	return money(x)
}

// modules is a transceiver count with its twin-port modules: "24,576 (8,192 twin-port)".
func modules(n, twin int) string {
	if twin == 0 {
		return blank(n)
	}
	return fmt.Sprintf("%s (%s twin-port)", thousands(n), thousands(twin))
}

// thousands prints a count with thousands separators: 16,384.
func thousands(n int) string {
	s := strconv.Itoa(n)
	var out []byte
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 && s[i-1] != '-' {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}
