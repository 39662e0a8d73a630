package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/fabricsim/fabricsim/backend"
	"github.com/fabricsim/fabricsim/cluster"
	"github.com/fabricsim/fabricsim/collective"
	"github.com/fabricsim/fabricsim/datapath"
	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/flow"
	"github.com/fabricsim/fabricsim/gpu"
	"github.com/fabricsim/fabricsim/ibsm"
	"github.com/fabricsim/fabricsim/internal/progress"
	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/nccl"
	"github.com/fabricsim/fabricsim/nccltests"
	"github.com/fabricsim/fabricsim/scenario"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

const ncclTestsHelp = `Run an nccl-tests binary (all_reduce_perf, all_gather_perf, reduce_scatter_perf,
alltoall_perf, broadcast_perf, reduce_perf, sendrecv_perf) on a simulated GPU cluster and print
nccl-tests' own table (or --json). nccl-tests' flags (-b -e -f -i -n -w -g -t -o -d -r -c ...)
mean what they mean there; the fabricsim flags below say what cluster to simulate.

  --cluster FILE        scenario file: its fabric section (kind, mtu, headers, roce/infiniband
                        keys) and, if it has one, its topology as the network between the NICs
                        (host s*NICs+k is NIC k of server s); without a topology the network is
                        rail-optimized. A traffic section is ignored.
  --nodes N             servers (default: 1, or what --gpus or the cluster file imply)
  --gpus-per-node G     GPUs per server (default: the server model's, 8)
  --gpus N              total GPUs; must be a multiple of --gpus-per-node
  --server MODEL        server model: h100 (default), h200, a100, pcie
  --fabric KIND         ethernet (default), roce or infiniband, with fabricsim's defaults
  --backend B           packet (default: every packet simulated), flow (fluid flows with the
                        fabric's queues, PFC, credits and DCQCN), analytic (max-min fluid model)
                        or auto (packet while a size's estimated run is within a minute of one
                        core, flow above it; stderr says where it switches and why)
  --data-path P         gpudirect (default), rdma-host or host-staged
  --algo A              ring (default), tree, hierarchical; direct for alltoall/sendrecv
  --channels C          rings (default: one per GPU of a server)
  --chunk SIZE          pipelining step (default 512KiB, NCCL's Simple step)
  --pxn                 send between different rails of different servers as NCCL's PXN does:
                        NVLink to the GPU on the destination's rail, then its NIC (default: the
                        sender's own NIC and a spine)
  --packet-scale K|auto merge K packets into one to simulate faster (default 1: real packets);
                        auto merges above a million packets, at most 8-fold (4 on infiniband).
                        Merged runs are labelled: their busbw can differ from real packets by
                        several per cent (docs/gpu.md). Packet backend (or auto) only
  --radix R, --oversubscription X, --spines S   rail-optimized network shape
  --tiers T, --servers-per-su N, --nic-ports P, --rail-planes, --spine-oversubscription X
                        a rail-optimized Clos of T (2 or 3) tiers: scalable units of N servers
                        with their own spines and a core tier between them, P ports per NIC each
                        on its own plane, or every rail on planes of its own (topo.Clos,
                        docs/topologies.md); a cluster two tiers do not hold gets three anyway
  --quiet               print no progress on stderr (default: a bar on a terminal, otherwise
                        a line every few seconds)

Ctrl-C (or SIGTERM) stops the run, prints the rows that finished and exits with status 130.
`

// ncclFlags are the fabricsim-side options of the nccl-tests command.
type ncclFlags struct {
	cluster     string
	nodes       int
	gpusPerNode int
	gpus        int
	server      string
	fabric      string
	backend     backend.Name
	dataPath    string
	algo        string
	channels    int
	chunk       units.Size
	packetScale int
	pxn         bool
	radix       int
	oversub     float64
	spines      int
	quiet       bool
	every       time.Duration
	tiers       int
	su          int
	nicPorts    int
	railPlanes  bool
	spineOver   float64
	set         map[string]bool
}

func newNCCLTestsCmd() *cobra.Command {
	return &cobra.Command{
		Use:                "nccl-tests BINARY [nccl-tests flags] [--cluster FILE] [--nodes N] [--gpus-per-node G] [--fabric infiniband|roce|ethernet] [--backend packet|flow|analytic|auto] [--data-path gpudirect|rdma-host|host-staged] [--json]",
		Short:              "Run nccl-tests (all_reduce_perf ...) on a simulated GPU cluster",
		Long:               ncclTestsHelp,
		DisableFlagParsing: true,
		RunE: func(c *cobra.Command, args []string) error {
			ctx, stop := interruptible(c)
			defer stop()
			return runNCCLTests(ctx, args, c.OutOrStdout(), c.ErrOrStderr())
		},
	}
}

// splitNCCLArgs separates fabricsim's long options from nccl-tests' command line.
func splitNCCLArgs(args []string) (*ncclFlags, []string, error) {
	f := &ncclFlags{backend: backend.Packet, dataPath: "gpudirect", server: "h100", every: progress.DefaultEvery, set: map[string]bool{}}
	var rest []string
	type opt struct {
		set func(v string) error
	}
	intv := func(name string, p *int, min int) func(string) error {
		return func(v string) error {
			x, err := strconv.Atoi(v)
			if err != nil || x < min {
				return fmt.Errorf("--%s %q: want an integer >= %d", name, v, min)
			}
			*p = x
			return nil
		}
	}
	str := func(p *string) func(string) error { return func(v string) error { *p = v; return nil } }
	opts := map[string]opt{
		"cluster":       {str(&f.cluster)},
		"nodes":         {intv("nodes", &f.nodes, 1)},
		"gpus-per-node": {intv("gpus-per-node", &f.gpusPerNode, 1)},
		"gpus":          {intv("gpus", &f.gpus, 1)},
		"server":        {str(&f.server)},
		"fabric":        {str(&f.fabric)},
		"backend": {func(v string) error {
			b, err := backend.Parse(v)
			if err != nil {
				return fmt.Errorf("--backend: %v", err)
			}
			f.backend = b
			return nil
		}},
		"data-path": {str(&f.dataPath)},
		"algo":      {str(&f.algo)},
		"channels":  {intv("channels", &f.channels, 1)},
		"packet-scale": {func(v string) error {
			if v == "auto" {
				f.packetScale = cluster.PacketScaleAuto
				return nil
			}
			x, err := strconv.Atoi(v)
			if err != nil || x < 1 {
				return fmt.Errorf("--packet-scale %q: want auto or an integer >= 1 (1 = real packets)", v)
			}
			f.packetScale = x
			return nil
		}},
		"radix":          {intv("radix", &f.radix, 2)},
		"spines":         {intv("spines", &f.spines, 1)},
		"tiers":          {intv("tiers", &f.tiers, 1)},
		"servers-per-su": {intv("servers-per-su", &f.su, 1)},
		"nic-ports":      {intv("nic-ports", &f.nicPorts, 1)},
		"spine-oversubscription": {func(v string) error {
			x, err := strconv.ParseFloat(v, 64)
			if err != nil || !(x > 0) {
				return fmt.Errorf("--spine-oversubscription %q: want a positive ratio such as 1 or 2", v)
			}
			f.spineOver = x
			return nil
		}},
		"chunk": {func(v string) error {
			s, err := units.ParseSize(v)
			if err != nil || s <= 0 {
				return fmt.Errorf("--chunk %q: want a positive size such as 512KiB", v)
			}
			f.chunk = s
			return nil
		}},
		"progress-every": {func(v string) error { // hidden, as on the other commands
			d, err := time.ParseDuration(v)
			if err != nil {
				return fmt.Errorf("--progress-every %q: want a duration such as 5s", v)
			}
			f.every = d
			return nil
		}},
		"oversubscription": {func(v string) error {
			x, err := strconv.ParseFloat(v, 64)
			if err != nil || !(x > 0) {
				return fmt.Errorf("--oversubscription %q: want a positive ratio such as 1 or 3", v)
			}
			f.oversub = x
			return nil
		}},
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--pxn" {
			f.pxn = true
			continue
		}
		if a == "--quiet" {
			f.quiet = true
			continue
		}
		if a == "--rail-planes" {
			f.railPlanes = true
			continue
		}
		if !strings.HasPrefix(a, "--") {
			rest = append(rest, a)
			continue
		}
		name, val, hasVal := strings.Cut(a[2:], "=")
		o, ok := opts[name]
		if !ok {
			rest = append(rest, a) // nccl-tests' own (or unknown: nccltests.Parse says so)
			continue
		}
		if !hasVal {
			if i+1 >= len(args) {
				return nil, nil, fmt.Errorf("option --%s needs a value", name)
			}
			i++
			val = args[i]
		}
		if err := o.set(val); err != nil {
			return nil, nil, err
		}
		f.set[name] = true
	}
	return f, rest, nil
}

func runNCCLTests(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, rest, err := splitNCCLArgs(args)
	if err != nil {
		return usageErr(err)
	}
	if len(rest) == 0 {
		return usageErr(fmt.Errorf("nccl-tests needs a binary name: all_reduce_perf, all_gather_perf, reduce_scatter_perf, alltoall_perf, broadcast_perf, reduce_perf or sendrecv_perf (see 'fabricsim nccl-tests --help')"))
	}
	if rest[0] == "-h" || rest[0] == "--help" || rest[0] == "help" {
		fmt.Fprint(stdout, "Usage: fabricsim nccl-tests BINARY [flags]\n\n"+ncclTestsHelp)
		return nil
	}
	o, err := nccltests.Parse(rest)
	if err != nil {
		return usageErr(err)
	}
	if o.Help {
		fmt.Fprint(stdout, "Usage: fabricsim nccl-tests "+o.Binary+" [flags]\n\n"+ncclTestsHelp+"\nnccl-tests flags:\n")
		return nccltests.Run(rest, nil, stdout)
	}
	mode, err := datapath.Parse(f.dataPath)
	if err != nil {
		return usageErr(fmt.Errorf("--data-path: %v", err))
	}
	if f.fabric != "" {
		var k fabric.Kind
		if err := k.UnmarshalText([]byte(f.fabric)); err != nil {
			return usageErr(fmt.Errorf("--fabric: %v", err))
		}
	}
	algo, err := collective.ParseAlgo(f.algo)
	if err != nil {
		return usageErr(fmt.Errorf("--algo: %v", err))
	}
	srv, err := gpu.Preset(f.server)
	if err != nil {
		return usageErr(fmt.Errorf("--server: %v", err))
	}
	if srv.NICs == 0 {
		srv.NICs = srv.GPUs
	}
	if f.gpusPerNode > 0 {
		// Keep the model's GPUs per NIC (one on HGX, two on the PCIe model) and sockets.
		ratio := srv.GPUs / srv.NICs
		srv.GPUs = f.gpusPerNode
		srv.NICs = max(f.gpusPerNode/ratio, 1)
		if srv.GPUs%srv.NICs != 0 {
			srv.NICs = srv.GPUs
		}
		if srv.GPUs%srv.Sockets != 0 {
			srv.Sockets = 1
		}
	}
	G := srv.GPUs
	cfg, net, scen, err := ncclFabric(f)
	if err != nil {
		return usageErr(err)
	}
	// Packet merging is the packet backend's; the flow and analytic backends move flows, so a
	// --packet-scale given to them would change nothing the user could see.
	if f.set["packet-scale"] && f.backend != backend.Packet && f.backend != backend.Auto {
		return usageErr(fmt.Errorf("--packet-scale is an option of the packet backend, and this run uses the %s backend (drop it, or use --backend packet or auto)", f.backend))
	}
	if len(scen.Faults) > 0 && f.backend == backend.Analytic {
		return usageErr(fmt.Errorf("--cluster %s has faults: the analytic backend does not model them (valid: --backend packet, flow or auto)", f.cluster))
	}
	nodes := f.nodes
	if net != nil && nodes == 0 {
		nics := srv.NICs
		if len(net.Hosts)%nics != 0 {
			return usageErr(fmt.Errorf("--cluster %s: its topology has %d hosts (NICs), not a multiple of %d NICs per server", f.cluster, len(net.Hosts), nics))
		}
		nodes = len(net.Hosts) / nics
	}
	if f.gpus > 0 {
		if f.gpus%G != 0 {
			return usageErr(fmt.Errorf("--gpus %d does not divide into servers of %d GPUs (--gpus-per-node)", f.gpus, G))
		}
		if nodes > 0 && nodes*G != f.gpus {
			return usageErr(fmt.Errorf("--gpus %d but --nodes %d x %d GPUs per node = %d", f.gpus, nodes, G, nodes*G))
		}
		nodes = f.gpus / G
	}
	if nodes == 0 {
		nodes = 1
	}
	total := nodes * G
	perProc := o.NThreads * o.NGpus
	if perProc < 1 || total%perProc != 0 {
		return usageErr(fmt.Errorf("%s: -t %d x -g %d GPUs per process does not divide the %d GPUs (%d nodes x %d)", o.Binary, o.NThreads, o.NGpus, total, nodes, G))
	}
	procs := total / perProc
	if procs%nodes != 0 && perProc <= G {
		return usageErr(fmt.Errorf("%s: %d processes of %d GPUs do not divide into %d nodes", o.Binary, procs, perProc, nodes))
	}
	if perProc > G {
		return usageErr(fmt.Errorf("%s: -t %d x -g %d = %d GPUs per process, more than the %d GPUs of a node", o.Binary, o.NThreads, o.NGpus, perProc, G))
	}
	if err := o.Validate(total); err != nil {
		return usageErr(err)
	}
	spec := cluster.Spec{Servers: nodes, Server: srv, Framing: cluster.Framing{MTU: cfg.MTU, Header: cfg.HeaderBytes, L1: cfg.L1Overhead},
		Net: cluster.Network{Radix: f.radix, Oversubscription: f.oversub, Spines: f.spines}}
	if f.tiers > 0 || f.su > 0 || f.nicPorts > 0 || f.railPlanes || f.spineOver > 0 {
		spec.Net.Kind = cluster.NetClos
		spec.Net.Clos = topo.ClosSpec{RailOptimized: true, Tiers: f.tiers, ServersPerSU: f.su, PortsPerNIC: f.nicPorts, RailPlanes: f.railPlanes}
		if f.spineOver > 0 {
			spec.Net.Clos.Oversubscription = []float64{f.oversub, f.spineOver}
		}
	}
	if net != nil {
		spec.Net = cluster.Network{Kind: cluster.NetGraph, Graph: net}
	}
	cl, err := cluster.Build(spec)
	if err != nil {
		return usageErr(err)
	}
	if cfg.Kind == fabric.KindInfiniBand {
		if err := ibsm.CheckLIDs(cl.Graph); err != nil {
			return usageErr(err)
		}
	}
	if cfg.Faults, err = ncclFaults(scen, cl); err != nil {
		return usageErr(err)
	}
	copts := nccl.Options{Algo: algo, Channels: f.channels, ChunkBytes: f.chunk, Root: o.Root, PXN: f.pxn}
	if o.Root < 0 {
		copts.Root = 0
	}
	type key struct {
		bytes int64
		root  int
	}
	cache := map[key]units.Time{}
	var lastScale int
	var lastBackend string
	var merged []string // "from SIZE: K-fold", for the table's label
	modelled := false
	runner := func(op collective.Op, b units.Size, _ bool) (units.Time, error) {
		k := key{int64(b), copts.Root}
		if t, ok := cache[k]; ok {
			return t, nil
		}
		// A flat ring too large for its message graph: the ring pipeline model (nccl/ring.go).
		if f.backend == backend.Analytic && mode == datapath.GPUDirect && nccl.RingMessages(cl, op, b, copts) > nccl.RingModelMessages {
			t, ok, err := nccl.RingTime(cl, op, b, copts, cfg)
			if err != nil {
				return 0, err
			}
			if ok {
				if !modelled {
					fmt.Fprintf(stderr, "fabricsim: rings of more than %d messages (%d bytes and up here) computed with the ring pipeline model (docs/architecture.md)\n", nccl.RingModelMessages, b)
					modelled = true
				}
				cache[k] = t
				return t, nil
			}
		}
		// A tree too large for its message graph: the pipeline model (nccl/tree.go).
		if f.backend == backend.Analytic && mode == datapath.GPUDirect && nccl.TreeMessages(cl, op, b, copts) > nccl.RingModelMessages {
			t, ok, err := nccl.TreeTime(cl, op, b, copts, cfg)
			if err != nil {
				return 0, err
			}
			if ok {
				if !modelled {
					fmt.Fprintf(stderr, "fabricsim: trees of more than %d messages (%d bytes and up here) computed with the tree pipeline model (docs/architecture.md)\n", nccl.RingModelMessages, b)
					modelled = true
				}
				cache[k] = t
				return t, nil
			}
		}
		g, err := nccl.Compile(cl, op, b, copts)
		if err != nil {
			return 0, err
		}
		var dg *msggraph.Graph
		if dg, err = datapath.Apply(g, cl, mode); err != nil {
			return 0, err
		}
		res, err := cl.Run(ctx, dg, cluster.RunOptions{Backend: f.backend, Fabric: cfg, PacketScale: f.packetScale})
		if err != nil {
			return 0, err
		}
		if res.PacketScale > 1 && res.PacketScale != lastScale {
			fmt.Fprintf(stderr, "fabricsim: %d bytes and up simulated with %d-fold packets (--packet-scale 1 for real ones)\n", b, res.PacketScale)
			merged = append(merged, fmt.Sprintf("%d-fold from %d B", res.PacketScale, b))
		}
		lastScale = res.PacketScale
		if res.BackendReason != "" && res.Backend != lastBackend {
			fmt.Fprintf(stderr, "fabricsim: %d bytes and up: backend %s\n", b, res.BackendReason)
		}
		lastBackend = res.Backend
		cache[k] = res.SimTime
		return res.SimTime, nil
	}
	fmt.Fprintf(stderr, "fabricsim: %d x %s server (%d GPUs, %d NICs at %v), %s fabric, %s backend, %s data path, network %s\n",
		nodes, srv.Name, G, cl.Server.NICs, cl.Server.NICRate, cfg.Kind, f.backend, mode, cl.Graph.Name)
	if omits := backend.AnalyticOmits(cfg); f.backend == backend.Analytic && len(omits) > 0 {
		fmt.Fprintf(stderr, "fabricsim: ! the analytic backend leaves out %s: its times do not show them (--backend packet or flow does)\n", strings.Join(omits, ", "))
	}
	meter := progress.Start(stderr, progress.Options{Label: "nccl-tests", Unit: "rows", Quiet: f.quiet, Every: f.every})
	nc := nccltests.Config{Procs: procs, ProcsPerHost: procs / nodes, GPUName: srv.GPUName, Progress: meter.Set}
	rep, err := nc.Measure(o, runner)
	meter.Stop()
	var stopped error
	if err != nil {
		var ue *nccltests.UsageError
		switch {
		case errors.As(err, &ue), errors.As(err, new(*flow.LimitError)):
			return usageErr(err)
		case ctx.Err() != nil && rep != nil:
			stopped = interrupted("nccl-tests interrupted: %d of %d rows finished", len(rep.Rows), rep.RowsPlanned)
		default:
			return failureErr(err)
		}
	}
	if o.JSON {
		err = rep.WriteJSON(stdout)
	} else {
		if len(merged) > 0 {
			// Label merged results where they are kept, not only on stderr.
			fmt.Fprintf(stdout, "# fabricsim: packets merged (--packet-scale): %s; busbw may differ from real packets by several per cent (docs/gpu.md)\n", strings.Join(merged, ", "))
		}
		err = nc.WriteTable(stdout, rep)
	}
	if err != nil {
		return failureErr(err)
	}
	return stopped
}

// ncclFabric returns the packet backend's configuration and, when the cluster file has a
// topology, the network between the NICs. Both go through package scenario, so each fabric
// kind gets the same defaults and validation as `fabricsim run`.
func ncclFabric(f *ncclFlags) (fabric.Config, *topo.Graph, *scenario.Scenario, error) {
	var data []byte
	name := "<nccl-tests>"
	if f.cluster != "" {
		var err error
		if data, err = os.ReadFile(f.cluster); err != nil {
			return fabric.Config{}, nil, nil, fmt.Errorf("--cluster %w", fileErr(f.cluster, "cluster file", err))
		}
		name = f.cluster
	} else {
		kind := f.fabric
		if kind == "" {
			kind = "ethernet"
		}
		data = []byte("fabric: {kind: " + kind + "}\n")
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		// scenario.Parse reports it with the position.
		_, perr := scenario.Parse(data, name, "")
		return fabric.Config{}, nil, nil, perr
	}
	has := map[string]*yaml.Node{}
	if len(root.Content) > 0 && root.Content[0].Kind == yaml.MappingNode {
		m := root.Content[0]
		for i := 0; i+1 < len(m.Content); i += 2 {
			has[m.Content[i].Value] = m.Content[i+1]
		}
	}
	// Placeholders for what a cluster file may leave out, appended so that line numbers in
	// errors stay those of the file.
	var extra bytes.Buffer
	ownTopology := has["topology"] != nil
	if !ownTopology {
		extra.WriteString("\ntopology: {kind: leaf-spine, leaves: 1, spines: 0, hosts_per_leaf: 2}\n")
	}
	if has["traffic"] == nil {
		extra.WriteString("\ntraffic: {kind: permutation}\n")
	}
	if f.cluster != "" && f.fabric != "" {
		kind := "ethernet"
		if fb := has["fabric"]; fb != nil && fb.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(fb.Content); i += 2 {
				if fb.Content[i].Value == "kind" {
					kind = fb.Content[i+1].Value
				}
			}
		}
		if kind != f.fabric {
			return fabric.Config{}, nil, nil, fmt.Errorf("--fabric %s but %s has fabric kind %s: change one of them", f.fabric, f.cluster, kind)
		}
	}
	dir := ""
	if f.cluster != "" {
		dir = dirOf(f.cluster)
	}
	s, err := scenario.Parse(append(append([]byte{}, data...), extra.Bytes()...), name, dir)
	if err != nil {
		return fabric.Config{}, nil, nil, err
	}
	cfg := s.FabricConfig()
	if err := cfg.Validate(); err != nil {
		return fabric.Config{}, nil, nil, fmt.Errorf("%s: fabric: %v", name, err)
	}
	if !ownTopology {
		return cfg, nil, s, nil
	}
	g, err := s.BuildTopology()
	if err != nil {
		return fabric.Config{}, nil, nil, err
	}
	return cfg, g, s, nil
}

// ncclFaults resolves the cluster file's faults on the GPU cluster: links and switches of its
// network by the names the file's topology gives them (the cluster keeps them; a NIC is
// srv<s>_nic<k>). Every size's run gets the same plan; a run that ends before a fault is not
// touched by it. PFC storms and slow receivers name a host, which a GPU cluster's NICs are not.
func ncclFaults(s *scenario.Scenario, cl *cluster.Cluster) (fabric.FaultPlan, error) {
	for i, f := range s.Faults {
		if f.Kind == "pfc_storm" || f.Kind == "slow_receiver" {
			return fabric.FaultPlan{}, fmt.Errorf("%s: faults[%d]: %s is not available in nccl-tests (it names a host; the cluster's NICs are srv<s>_nic<k> switches); link_down, link_flap, switch_down and link_degrade are", s.File, i, f.Kind)
		}
	}
	plan, err := s.ResolveFaults(cl.Graph)
	plan.AfterEndOK = true
	return plan, err
}

func dirOf(path string) string {
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		return path[:i]
	}
	return "."
}
