package topo

import (
	"fmt"
	"math"
	"unsafe"
)

// Planning constants for EstimateMemory (est.): what the packet backend keeps per switch or NIC
// port (queues per traffic class, PFC/credit counters, ECN state, link event slots, the port's
// share of the routes' per-switch port sets), and what the tree routes keep per host (a group and
// a child index per tier, up to four tiers, its leaf and its top group).
const (
	BytesPerPort      = 2048
	BytesPerHostRoute = 40
)

// EstimateMemory estimates the bytes a run needs for a fabric of this size: the graph itself
// (nodes, both ends of every link, link records), the routes of a generated (tree) fabric
// (hosts*BytesPerHostRoute; Routes), and the simulator's per-port state (2*links*BytesPerPort).
// Every term is linear in the fabric. It saturates at math.MaxInt64 instead of overflowing.
// Callers check it before building: a k=64 fat tree needs about 0.8 GiB, dominated by the
// per-port state.
func EstimateMemory(hosts, switches, links int) int64 {
	if hosts < 0 || switches < 0 || links < 0 {
		return 0
	}
	nodes := float64(hosts) + float64(switches)
	ports := 2 * float64(links)
	graph := nodes*(float64(unsafe.Sizeof(Node{}))+16) + // 16: a typical short name
		ports*float64(unsafe.Sizeof(Port{})) +
		float64(links)*float64(unsafe.Sizeof(Link{})) +
		float64(hosts)*float64(unsafe.Sizeof(NodeID(0)))
	total := graph + float64(hosts)*BytesPerHostRoute + ports*BytesPerPort
	if total >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(total)
}

// CheckMemory returns an error naming the estimate when a fabric of this size would need more
// than limit bytes (see EstimateMemory), so a scenario is refused before anything is built.
// what names the fabric in the message, e.g. "fat tree k=64".
func CheckMemory(what string, hosts, switches, links int, limit int64) error {
	est := EstimateMemory(hosts, switches, links)
	if est <= limit {
		return nil
	}
	return fmt.Errorf("%s: estimated memory %s (%d hosts, %d switches, %d links; %d B per port, %d B of routes per host) exceeds the limit of %s; choose a smaller fabric or raise the limit",
		what, humanBytes(est), hosts, switches, links, BytesPerPort, BytesPerHostRoute, humanBytes(limit))
}

// BytesPerTableEntry is the most the breadth-first table form of Routes keeps per (switch,
// destination host): a 4-byte index of its next-hop set (2 bytes with fewer than 65,536
// distinct sets) and a 2-byte hop count (tableRoutes).
const BytesPerTableEntry = 6

// EstimateGraphMemory is EstimateMemory for a built graph, with the routes ComputeRoutes will
// give it: a layered tree keeps BytesPerHostRoute per host (EstimateMemory's term), any other
// graph the breadth-first table, switches x hosts entries of BytesPerTableEntry, quadratic. (GPU
// clusters, the cluster form, are built by package cluster, not imported: counted as tables
// here.) The tree test is linear in the graph; ComputeRoutes repeats it.
func EstimateGraphMemory(g *Graph) int64 {
	switches := g.NumSwitches()
	est := EstimateMemory(len(g.Hosts), switches, len(g.Links))
	if len(g.Hosts) == 0 || g.Validate() != nil || buildTreeTiers(g, hostAttachments(g)) != nil {
		return est
	}
	table := float64(switches)*float64(len(g.Hosts))*BytesPerTableEntry - float64(len(g.Hosts))*BytesPerHostRoute
	if float64(est)+table >= math.MaxInt64 {
		return math.MaxInt64
	}
	return est + int64(table)
}

// CheckGraphMemory is CheckMemory for a graph already built or imported (an imported topology's
// size is known only once it is read), with its routes' form (EstimateGraphMemory).
func CheckGraphMemory(what string, g *Graph, limit int64) error {
	est := EstimateGraphMemory(g)
	if est <= limit {
		return nil
	}
	form := "tree routes"
	if est > EstimateMemory(len(g.Hosts), g.NumSwitches(), len(g.Links)) {
		form = fmt.Sprintf("not a layered tree, so routed by a table of %d switches x %d hosts at %d B", g.NumSwitches(), len(g.Hosts), BytesPerTableEntry)
	}
	return fmt.Errorf("%s: estimated memory %s (%d hosts, %d switches, %d links; %d B per port; %s) exceeds the limit of %s; choose a smaller fabric or raise the limit",
		what, humanBytes(est), len(g.Hosts), g.NumSwitches(), len(g.Links), BytesPerPort, form, humanBytes(limit))
}

// humanBytes prints n in the largest binary unit that keeps one decimal meaningful.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v := float64(n)
	for _, u := range []string{"KiB", "MiB", "GiB", "TiB", "PiB"} {
		v /= unit
		if v < unit {
			return fmt.Sprintf("%.1f %s", v, u)
		}
	}
	return fmt.Sprintf("%.1f EiB", v/unit)
}
