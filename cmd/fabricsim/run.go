package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fabricsim/fabricsim/backend"
	"github.com/fabricsim/fabricsim/examples"
	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/flow"
	"github.com/fabricsim/fabricsim/internal/outpath"
	"github.com/fabricsim/fabricsim/result"
	"github.com/fabricsim/fabricsim/runner"
	"github.com/fabricsim/fabricsim/scenario"
	"github.com/fabricsim/fabricsim/units"
)

// loadScenario reads the file named by args, or the embedded default scenario.
func loadScenario(args []string) (*scenario.Scenario, error) {
	if len(args) == 0 {
		data, err := examples.Read(examples.Default)
		if err != nil {
			return nil, err
		}
		return scenario.Parse(data, "<embedded>/"+examples.Default, "")
	}
	return scenario.Load(args[0])
}

type runFlags struct {
	backend  string
	budget   time.Duration
	step     string
	out      string
	seed     uint64
	check    bool
	json     bool
	hpccFct  string
	hpccSA   string
	pcap     runner.PcapOptions
	series   string
	every    string
	threads  int
	progress progressFlags
}

func newRunCmd() *cobra.Command {
	var f runFlags
	c := &cobra.Command{
		Use:   "run [SCENARIO.yaml]",
		Short: "Run a scenario (the built-in " + examples.Default + " when none is given)",
		Long: `Run a scenario and print a summary: on the packet backend (every packet; the default), or
with --backend analytic on the max-min fluid model (seconds for any size, no queues, no loss and
none of the fabric's flow or congestion control).

With --out DIR it writes DIR/summary.json, DIR/flows.csv and DIR/ports.csv (the same bytes for the
same scenario and seed) and DIR/timing.json (the host time the run took). With --check the simulator checks
its invariants while it runs (bytes conserved, buffers never above their size, no byte delivered
twice) and stops at the first violation. Progress goes to stderr: a bar on a terminal, a line
every few seconds otherwise (--quiet: none). Ctrl-C (or SIGTERM) stops the run, still writes
and prints what finished, and exits with status 130.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return runScenario(c, args, &f)
		},
	}
	c.Flags().StringVar(&f.backend, "backend", "", "packet, flow (fluid flows with the fabric's queues, PFC, credits and DCQCN; docs/flow.md), analytic or auto (packet within --auto-budget, else flow) (default: the scenario's, packet)")
	c.Flags().DurationVar(&f.budget, "auto-budget", backend.DefaultAutoBudget, "--backend auto runs the packet backend when its estimated time on one core is within this, else flow")
	c.Flags().StringVar(&f.step, "flow-step", "", "the flow backend's base time step while queues or rates change, its finest resolution; where congestion control is at rest the step doubles up to 4us (default 1us, at most 4us)")
	c.Flags().StringVar(&f.out, "out", "", "write summary.json, flows.csv, ports.csv and timing.json into this directory")
	c.Flags().Uint64Var(&f.seed, "seed", 0, "override the scenario's seed")
	c.Flags().BoolVar(&f.check, "check", false, "check invariants while running")
	c.Flags().BoolVar(&f.json, "json", false, "print summary.json to stdout instead of the text summary")
	c.Flags().StringVar(&f.hpccFct, "hpcc-fct", "", "also write per-flow results in HPCC ns-3 fct.txt format to this file")
	c.Flags().StringVar(&f.hpccSA, "hpcc-standalone", "ideal", "the standalone FCT column of --hpcc-fct: ideal (fabricsim's lone-flow FCT with its framing) or hpcc (HPCC third.cc's formula: base RTT + (size + 48 B per packet) / bottleneck)")
	c.Flags().StringVar(&f.pcap.Dir, "pcap", "", "capture packets to pcap files in this directory (one per port)")
	c.Flags().StringVar(&f.pcap.Ports, "pcap-ports", "", "ports to capture: NODE:PORT,... with globs, e.g. 'edge0_0:*,host3:0' (default: every host's NIC port)")
	c.Flags().Int64Var(&f.pcap.MaxPackets, "pcap-max-packets", 0, "stop capturing a port after this many packets (0 = no limit)")
	c.Flags().IntVar(&f.pcap.SnapLen, "pcap-snaplen", 0, "bytes kept per captured packet (0 = whole frames)")
	c.Flags().StringVar(&f.series, "series", "", "write sampled queue depths and flow rates as CSV to this file (time_ns,kind,name,prio,value)")
	c.Flags().StringVar(&f.every, "series-every", "10us", "sampling period of --series")
	c.Flags().IntVar(&f.threads, "threads", 0, fmt.Sprintf("worker threads of the packet engine, the same results for every count (0: every core for fabrics of %d hosts or more, else 1; docs/architecture.md says which runs go parallel)", fabric.AutoThreadsHosts))
	f.progress.add(c)
	return c
}

func runScenario(c *cobra.Command, args []string, f *runFlags) error {
	s, err := loadScenario(args)
	if err != nil {
		return usageErr(err)
	}
	if f.backend != "" {
		b, err := backend.Parse(f.backend)
		if err != nil {
			return usageErr(fmt.Errorf("--backend: %v", err))
		}
		s.Backend = string(b)
	}
	if f.budget <= 0 {
		return usageErr(fmt.Errorf("--auto-budget %v: want a positive duration (e.g. 60s, 5m)", f.budget))
	}
	opt := runner.Options{Check: f.check, AutoBudget: f.budget, Threads: backend.ThreadsAuto, OwnProcess: true}
	if c.Flags().Changed("threads") {
		if f.threads < 0 {
			return usageErr(fmt.Errorf("--threads %d: want 0 (automatic) or a positive count", f.threads))
		}
		if s.Backend != string(backend.Packet) && s.Backend != string(backend.Auto) && s.Backend != "" {
			return usageErr(fmt.Errorf("--threads is an option of the packet backend, and this run uses the %s backend", s.Backend))
		}
		if f.threads > 0 {
			opt.Threads = f.threads
		}
	}
	if c.Flags().Changed("flow-step") {
		if s.Backend != string(backend.Flow) && s.Backend != string(backend.Auto) {
			return usageErr(fmt.Errorf("--flow-step is an option of the flow backend, and this run uses the %s backend (add --backend flow)", s.Backend))
		}
		d, err := units.ParseTime(f.step)
		if err != nil || d <= 0 || d > flow.MaxStep {
			return usageErr(fmt.Errorf("--flow-step %q: want a duration above 0 and at most %v, such as 1us", f.step, flow.MaxStep))
		}
		opt.FlowStep = d
	}
	if f.pcap.Dir != "" {
		opt.Pcap = &f.pcap
	} else if c.Flags().Changed("pcap-ports") || c.Flags().Changed("pcap-max-packets") || c.Flags().Changed("pcap-snaplen") {
		return usageErr(fmt.Errorf("--pcap-ports, --pcap-max-packets and --pcap-snaplen need --pcap DIR"))
	}
	if f.pcap.SnapLen < 0 || f.pcap.MaxPackets < 0 {
		return usageErr(fmt.Errorf("--pcap-snaplen and --pcap-max-packets must not be negative"))
	}
	if c.Flags().Changed("seed") {
		opt.Seed = &f.seed
	}
	// Every place the run writes to is checked before it simulates anything.
	for _, o := range []struct{ flag, path string }{{"--out", f.out}, {"--pcap", f.pcap.Dir}} {
		if o.path != "" {
			if err := outpath.Dir(o.flag, o.path); err != nil {
				return usageErr(err)
			}
		}
	}
	if f.hpccSA != "ideal" && f.hpccSA != "hpcc" {
		return usageErr(fmt.Errorf("--hpcc-standalone %q: want ideal or hpcc", f.hpccSA))
	}
	for _, o := range []struct{ flag, path string }{{"--hpcc-fct", f.hpccFct}, {"--series", f.series}} {
		if o.path != "" {
			if err := outpath.File(o.flag, o.path); err != nil {
				return usageErr(err)
			}
		}
	}
	if f.series != "" {
		every, perr := units.ParseTime(f.every)
		if perr != nil || every <= 0 {
			return usageErr(fmt.Errorf("--series-every %q: want a positive duration such as 10us", f.every))
		}
		sf, ferr := os.OpenFile(f.series, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, outputMode)
		if ferr != nil {
			return usageErr(fmt.Errorf("--series %s: %v", f.series, ferr))
		}
		defer sf.Close()
		opt.Series, opt.SeriesEvery = sf, every
	} else if c.Flags().Changed("series-every") {
		return usageErr(fmt.Errorf("--series-every needs --series FILE"))
	}
	ctx, stop := interruptible(c)
	defer stop()
	meter := f.progress.meter(c, "run", "messages")
	opt.Progress = func(now units.Time, done, total int) bool {
		meter.Note("t=" + now.String() + " simulated")
		meter.Set(done, total)
		return ctx.Err() == nil
	}
	res, built, err := runner.Run(s, opt)
	if res != nil {
		// The engine reports every 2^18 events; the last report is where the run ended.
		done := 0
		for i := range res.Messages {
			if res.Messages[i].Done() {
				done++
			}
		}
		meter.Note("t=" + res.EndTime.String() + " simulated")
		meter.Set(done, len(res.Messages))
	}
	meter.Stop()
	if res == nil {
		return usageErr(err)
	}
	autoIgnored(c, res)
	if f.out != "" {
		if werr := writeOutputs(f.out, res); werr != nil {
			return failureErr(werr)
		}
	}
	if f.hpccFct != "" {
		nodeOf := func(h int32) int { return built.Graph.NodeOfHost(int(h)) }
		standalone := func(m *result.Message) int64 { return int64(m.IdealFCT) / 1000 }
		if f.hpccSA == "hpcc" {
			sa, serr := runner.HPCCStandalone(built)
			if serr != nil {
				return usageErr(fmt.Errorf("--hpcc-standalone hpcc: %v", serr))
			}
			standalone = sa
		}
		if werr := writeFile(f.hpccFct, func(w io.Writer) error {
			return res.WriteHPCCFctStandalone(w, nodeOf, standalone)
		}); werr != nil {
			return failureErr(werr)
		}
	}
	sum := res.Summary()
	if f.json {
		if werr := sum.WriteJSON(c.OutOrStdout()); werr != nil {
			return failureErr(werr)
		}
	} else {
		printSummary(c.OutOrStdout(), s, built, res, sum)
	}
	if opt.Pcap != nil {
		w := c.OutOrStdout()
		if f.json {
			w = c.ErrOrStderr() // stdout is summary.json
		}
		printPcap(w, built.Fabric.Kind, opt.Pcap)
	}
	if err != nil {
		if errors.Is(err, runner.ErrInterrupted) {
			return interrupted("interrupted at %v simulated; partial results written", res.EndTime)
		}
		return failureErr(err)
	}
	return nil
}

// autoIgnored warns, on stderr, when --backend auto chose a backend that does not take an
// option given for the other: --flow-step on a run auto gave to the packet backend, --threads
// on one it gave to the flow backend. The run is valid as it is (auto's choice is the one its
// budget allows), so it is a warning, not an error; naming the backend makes the option apply.
func autoIgnored(c *cobra.Command, res *result.Run) {
	if res.BackendReason == "" {
		return // the backend was named, and its options checked before the run
	}
	for _, o := range []struct {
		flag string
		on   backend.Name
	}{{"flow-step", backend.Flow}, {"threads", backend.Packet}} {
		if c.Flags().Changed(o.flag) && res.Backend != string(o.on) {
			fmt.Fprintf(c.ErrOrStderr(), "warning: --%s %s is an option of the %s backend, and --backend auto ran the %s backend (%s): not used; add --backend %s to apply it\n",
				o.flag, c.Flags().Lookup(o.flag).Value, o.on, res.Backend, res.BackendReason, o.on)
		}
	}
}

// outputMode is the permission of every file fabricsim writes: readable by all, as a file
// made by a shell redirect under the usual umask (os.CreateTemp alone would give 0600).
const outputMode = 0o644

// writeFile writes a file atomically: a temp file in the same directory, then rename.
func writeFile(path string, fill func(io.Writer) error) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(outputMode); err != nil {
		tmp.Close()
		return err
	}
	if err := fill(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func writeOutputs(dir string, res *result.Run) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, "flows.csv"), res.WriteFlowsCSV); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, "ports.csv"), res.WritePortsCSV); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, "timing.json"), func(w io.Writer) error { return res.Timing().WriteJSON(w) }); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, "summary.json"), func(w io.Writer) error { return res.Summary().WriteJSON(w) })
}

func printSummary(w io.Writer, s *scenario.Scenario, b *scenario.Built, res *result.Run, sum result.Summary) {
	var total int64
	done := 0
	for i := range res.Messages {
		m := &res.Messages[i]
		if m.Bytes > 0 {
			total += m.Bytes
			if m.Done() {
				done++
			}
		}
	}
	us := func(ns float64) string { return units.Time(ns * 1000).String() }
	fmt.Fprintf(w, "fabricsim %s: %s backend, seed %d\n", s.Name, res.Backend, res.Seed)
	if res.BackendReason != "" {
		fmt.Fprintf(w, "  backend   %s\n", res.BackendReason)
	}
	fmt.Fprintf(w, "  topology  %s: %d hosts, %d switches, %d links\n", s.Topology.Kind, len(b.Graph.Hosts), b.Graph.NumSwitches(), len(b.Graph.Links))
	fmt.Fprintf(w, "  traffic   %s: %d flows, %v\n", s.Traffic.Kind, sum.Flows, units.Size(total))
	fmt.Fprintf(w, "  finished  %d/%d flows at %v simulated\n", done, sum.Flows, res.SimTime)
	fmt.Fprintf(w, "  FCT       min %s  p50 %s  p99 %s  max %s\n", us(sum.FCTNs.Min), us(sum.FCTNs.P50), us(sum.FCTNs.P99), us(sum.FCTNs.Max))
	fmt.Fprintf(w, "  slowdown  p50 %.3f  p99 %.3f  (FCT / FCT alone on an idle network)\n", sum.Slowdown.P50, sum.Slowdown.P99)
	if res.Counters == nil {
		// A backend without queues (analytic) models no loss: say so rather than print zeros.
		fmt.Fprintf(w, "  loss      not modelled by the %s backend (no queues)\n", res.Backend)
		if len(res.Omitted) > 0 {
			fmt.Fprintf(w, "  omitted   %s: the fabric turns them on, the %s backend leaves them out\n", strings.Join(res.Omitted, ", "), res.Backend)
		}
		fmt.Fprintf(w, "  engine    fluid model in %.2f s\n", res.WallSeconds)
		return
	}
	fmt.Fprintf(w, "  loss      %d drops, %v retransmitted, %d timeouts, %d NAKs\n", sum.Drops, units.Size(sum.BytesRetransmitted), sum.Timeouts, sum.NAKs)
	printRoCE(w, res) // roce_summary.go
	printIB(w, res)   // ib_summary.go
	if res.Backend == string(backend.Flow) {
		fmt.Fprintf(w, "  engine    %.0f fluid steps and %.0f jumps in %.2f s\n", res.Counters["flow_steps"], res.Counters["flow_jumps"], res.WallSeconds)
		return
	}
	rate := 0.0
	if res.WallSeconds > 0 {
		rate = float64(res.Events) / res.WallSeconds / 1e6
	}
	fmt.Fprintf(w, "  engine    %d events, %d packet-hops in %.2f s (%.1f M events/s)\n", res.Events, res.PacketHops, res.WallSeconds, rate)
}

// printPcap says where --pcap wrote how much: files, packets and bytes, and how to open them.
func printPcap(w io.Writer, kind fabric.Kind, p *runner.PcapOptions) {
	var pkts, bytes int64
	for _, f := range p.Written {
		pkts += f.Packets
		bytes += f.Bytes
	}
	how := "LINKTYPE_ETHERNET"
	if kind == fabric.KindInfiniBand {
		// tshark/Wireshark 4.0 refuse LINKTYPE_INFINIBAND (247); docs/infiniband.md has the recipe.
		how = "LINKTYPE_INFINIBAND; with Wireshark/tshark 4.0 see docs/infiniband.md, Captures"
	}
	fmt.Fprintf(w, "  pcap      %d files in %s: %d packets, %d bytes (%s)\n", len(p.Written), p.Dir, pkts, bytes, how)
}
