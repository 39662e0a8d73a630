package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/fabricsim/fabricsim/examples"
	"github.com/fabricsim/fabricsim/flow"
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

func newValidateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "validate SCENARIO.yaml",
		Short: "Check a scenario file (and the files it imports) without running it",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			s, err := loadScenario(args)
			if err != nil {
				return usageErr(err)
			}
			b, err := s.Build()
			if err != nil {
				return usageErr(err)
			}
			fmt.Fprintf(c.OutOrStdout(), "%s: ok (%d hosts, %d switches, %d links, %d messages)\n",
				s.File, len(b.Graph.Hosts), b.Graph.NumSwitches(), len(b.Graph.Links), len(b.Work.Msgs))
			return nil
		},
	}
}

type runFlags struct {
	out     string
	seed    uint64
	check   bool
	json    bool
	hpccFct string
	pcap    runner.PcapOptions
	series  string
	every   string
	backend string
	step    string
}

func newRunCmd() *cobra.Command {
	var f runFlags
	c := &cobra.Command{
		Use:   "run [SCENARIO.yaml]",
		Short: "Run a scenario (the built-in " + examples.Default + " when none is given)",
		Long: `Run a scenario on the packet backend (or, with --backend flow or the scenario's backend: flow,
on the flow-level backend) and print a summary.

With --out DIR it writes DIR/summary.json and DIR/flows.csv. With --check the simulator checks
its invariants while it runs (bytes conserved, buffers never above their size, no byte delivered
twice) and stops at the first violation. Ctrl-C stops the run and still writes what finished.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return runScenario(c, args, &f)
		},
	}
	c.Flags().StringVar(&f.out, "out", "", "write summary.json and flows.csv into this directory")
	c.Flags().Uint64Var(&f.seed, "seed", 0, "override the scenario's seed")
	c.Flags().BoolVar(&f.check, "check", false, "check invariants while running")
	c.Flags().BoolVar(&f.json, "json", false, "print summary.json to stdout instead of the text summary")
	c.Flags().StringVar(&f.hpccFct, "hpcc-fct", "", "also write per-flow results in HPCC ns-3 fct.txt format to this file")
	c.Flags().StringVar(&f.pcap.Dir, "pcap", "", "capture packets to pcap files in this directory (one per port)")
	c.Flags().StringVar(&f.pcap.Ports, "pcap-ports", "", "ports to capture: NODE:PORT,... with globs, e.g. 'edge0_0:*,host3:0' (default: every host's NIC port)")
	c.Flags().Int64Var(&f.pcap.MaxPackets, "pcap-max-packets", 0, "stop capturing a port after this many packets (0 = no limit)")
	c.Flags().IntVar(&f.pcap.SnapLen, "pcap-snaplen", 0, "bytes kept per captured packet (0 = whole frames)")
	c.Flags().StringVar(&f.series, "series", "", "write sampled queue depths and flow rates as CSV to this file (time_ns,kind,name,prio,value)")
	c.Flags().StringVar(&f.every, "series-every", "10us", "sampling period of --series")
	c.Flags().StringVar(&f.backend, "backend", "", "packet (every packet) or flow (fluid flows with the fabric's queues, PFC, credits and DCQCN; docs/flow.md); default: the scenario's")
	c.Flags().StringVar(&f.step, "flow-step", "", "the flow backend's time step while queues or rates change (default 1us, at most 4us)")
	return c
}

func runScenario(c *cobra.Command, args []string, f *runFlags) error {
	s, err := loadScenario(args)
	if err != nil {
		return usageErr(err)
	}
	opt := runner.Options{Check: f.check}
	if err := flowFlags(c, f.backend, f.step, s.Backend, &opt); err != nil {
		return err
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
	if f.series != "" {
		every, perr := units.ParseTime(f.every)
		if perr != nil || every <= 0 {
			return usageErr(fmt.Errorf("--series-every %q: want a positive duration such as 10us", f.every))
		}
		sf, ferr := os.Create(f.series)
		if ferr != nil {
			return failureErr(ferr)
		}
		defer sf.Close()
		opt.Series, opt.SeriesEvery = sf, every
	} else if c.Flags().Changed("series-every") {
		return usageErr(fmt.Errorf("--series-every needs --series FILE"))
	}
	var stop atomic.Bool
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	defer signal.Stop(sig)
	go func() {
		if _, ok := <-sig; ok {
			stop.Store(true)
		}
	}()
	stderr := c.ErrOrStderr()
	tty := isTerminal(stderr)
	lastDraw := time.Now()
	opt.Progress = func(now units.Time, done, total int) bool {
		if tty && time.Since(lastDraw) > 200*time.Millisecond {
			lastDraw = time.Now()
			fmt.Fprintf(stderr, "\r%s  %d/%d messages  t=%v   ", bar(done, total, 30), done, total, now)
		}
		return !stop.Load()
	}
	res, built, err := runner.Run(s, opt)
	if tty {
		fmt.Fprint(stderr, "\r\033[K")
	}
	if res == nil {
		return usageErr(err)
	}
	if f.out != "" {
		if werr := writeOutputs(f.out, res); werr != nil {
			return failureErr(werr)
		}
	}
	if f.hpccFct != "" {
		if werr := writeFile(f.hpccFct, func(w io.Writer) error {
			return res.WriteHPCCFct(w, func(h int32) int { return built.Graph.NodeOfHost(int(h)) })
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
	if err != nil {
		if errors.Is(err, runner.ErrInterrupted) {
			return &exitError{exitInterrupted, fmt.Errorf("interrupted at %v simulated; partial results written", res.EndTime)}
		}
		return failureErr(err)
	}
	return nil
}

func bar(done, total, width int) string {
	if total == 0 {
		total = 1
	}
	n := done * width / total
	b := make([]byte, width)
	for i := range b {
		if i < n {
			b[i] = '#'
		} else {
			b[i] = '.'
		}
	}
	return "[" + string(b) + "]"
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// writeFile writes a file atomically: a temp file in the same directory, then rename.
func writeFile(path string, fill func(io.Writer) error) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
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
	if len(res.Ports) > 0 {
		if err := writeFile(filepath.Join(dir, "ports.csv"), res.WritePortsCSV); err != nil {
			return err
		}
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
	fmt.Fprintf(w, "  topology  %s: %d hosts, %d switches, %d links\n", s.Topology.Kind, len(b.Graph.Hosts), b.Graph.NumSwitches(), len(b.Graph.Links))
	fmt.Fprintf(w, "  traffic   %s: %d flows, %v\n", s.Traffic.Kind, sum.Flows, units.Size(total))
	fmt.Fprintf(w, "  finished  %d/%d flows at %v simulated\n", done, sum.Flows, res.SimTime)
	fmt.Fprintf(w, "  FCT       min %s  p50 %s  p99 %s  max %s\n", us(sum.FCTNs.Min), us(sum.FCTNs.P50), us(sum.FCTNs.P99), us(sum.FCTNs.Max))
	fmt.Fprintf(w, "  slowdown  p50 %.3f  p99 %.3f  (FCT / FCT alone on an idle network)\n", sum.Slowdown.P50, sum.Slowdown.P99)
	fmt.Fprintf(w, "  loss      %d drops, %v retransmitted, %d timeouts, %d NAKs\n", sum.Drops, units.Size(sum.BytesRetransmitted), sum.Timeouts, sum.NAKs)
	printRoCE(w, res) // roce_summary.go
	printIB(w, res)   // ib_summary.go
	if res.Backend == "flow" {
		fmt.Fprintf(w, "  engine    %.0f fluid steps and %.0f jumps in %.2f s\n", res.Counters["flow_steps"], res.Counters["flow_jumps"], res.WallSeconds)
		return
	}
	rate := 0.0
	if res.WallSeconds > 0 {
		rate = float64(res.Events) / res.WallSeconds / 1e6
	}
	fmt.Fprintf(w, "  engine    %d events, %d packet-hops in %.2f s (%.1f M events/s)\n", res.Events, res.PacketHops, res.WallSeconds, rate)
}

// flowFlags checks --backend and --flow-step against each other and the scenario's backend and
// sets them in opt.
func flowFlags(c *cobra.Command, backend, step, scenarioBackend string, opt *runner.Options) error {
	switch backend {
	case "", "packet", "flow":
	default:
		return usageErr(fmt.Errorf("--backend %q: valid: packet, flow", backend))
	}
	opt.Backend = backend
	if backend == "" {
		backend = scenarioBackend
	}
	if !c.Flags().Changed("flow-step") {
		return nil
	}
	if backend != "flow" {
		return usageErr(fmt.Errorf("--flow-step is an option of the flow backend, and this run uses the %s backend (add --backend flow)", backend))
	}
	d, err := units.ParseTime(step)
	if err != nil || d <= 0 || d > flow.MaxStep {
		return usageErr(fmt.Errorf("--flow-step %q: want a duration above 0 and at most %v, such as 1us", step, flow.MaxStep))
	}
	opt.FlowStep = d
	return nil
}
