// Package nccltests is fabricsim's nccl-tests front end: it reads an nccl-tests command line
// (all_reduce_perf -b 8 -e 8G -f 2 -g 8 ...), sweeps the sizes nccl-tests would, asks a Runner
// for the time of each collective, and prints the result in nccl-tests' own table, byte for
// byte, so that scripts that parse nccl-tests logs read simulated runs unchanged.
//
// The layout follows nccl-tests' src/common.cu of the v2.13 series (the "classic" table that
// most published logs show; later versions moved it to src/util.cu and changed the number
// formatting): a "# nThread ..." parameter line, one "#  Rank" line per GPU, a three-line
// column header, one row per size with out-of-place and in-place time, algbw, busbw and
// #wrong, then "# Out of bounds values" and "# Avg bus bandwidth" lines.
//
// What is simulated and what is not: each (collective, size, in-place) is timed once by the
// Runner (the simulation is deterministic, so nccl-tests' -n iterations and -w warm-ups would
// all give the same number; they are echoed, not repeated), data is never corrupted so #wrong
// is 0 (N/A with -c 0, and for the in-place alltoall and sendrecv that nccl-tests does not
// check), -m aggregation, -G CUDA graphs, -a averaging and the other host-side flags are
// accepted and echoed without effect, and cputime (-C 1) equals the GPU time.
package nccltests

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/fabricsim/fabricsim/collective"
	"github.com/fabricsim/fabricsim/units"
)

// Runner times one collective call of bytes bytes (nccl-tests' S, the size column: see
// collective.Spec.Bytes) on all ranks, in place or out of place.
type Runner func(op collective.Op, bytes units.Size, inPlace bool) (units.Time, error)

// Config describes the simulated launch around the command line: how many MPI processes
// (mpirun -np) and how they sit on hosts, and what the "#  Rank" lines call the hardware.
// The zero value is one process on one host with NVIDIA H100 GPUs.
type Config struct {
	// Procs is the number of MPI processes; ranks = Procs x -t x -g. 0 means 1.
	Procs int
	// ProcsPerHost is how many processes share a host (it numbers the CUDA devices); 0 means
	// all on one host.
	ProcsPerHost int
	// HostName names host h; nil gives "node00", "node01", ...
	HostName func(h int) string
	// GPUName is the modelled GPU's name as cudaGetDeviceProperties reports it; "" means
	// "NVIDIA H100 80GB HBM3".
	GPUName string
	// BusIDs are the PCI bus numbers of CUDA devices 0, 1, ...; nil means a DGX H100's
	// (0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb; est., as nvidia-smi lists them).
	BusIDs []int
	// PIDBase is the simulated process id of process 0; 0 means 10000.
	PIDBase int
	// Progress, when set, is called with the rows timed and the rows in all: once before the
	// first and after each.
	Progress func(done, total int)
}

var dgxH100BusIDs = []int{0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb}

// Run parses args (args[0] is the binary), runs the sweep with runner on one process and
// writes nccl-tests' output to w. A *UsageError means a bad command line (exit status 2).
func Run(args []string, runner Runner, w io.Writer) error {
	return Config{}.Run(args, runner, w)
}

// Result is one timed variant (out-of-place or in-place) of a row.
type Result struct {
	Time  units.Time
	AlgBW float64 // GB/s
	BusBW float64 // GB/s
	// Wrong is nccl-tests' #wrong; -1 when not checked (printed N/A).
	Wrong int64
}

// Row is one line of the table.
type Row struct {
	Size       int64 // bytes: the size column, max(send, receive) bytes per rank
	Count      int64 // elements: the count column
	Type       string
	RedOp      string
	Root       int
	OutOfPlace Result
	InPlace    Result
}

// Report is a whole run.
type Report struct {
	Options *Options
	Ranks   int
	Rows    []Row
	// AvgBusBW is the mean busbw over every out-of-place and in-place result (GB/s).
	AvgBusBW float64
	// RowsPlanned is the number of rows the command line asks for; below it when Measure
	// was cut short (then Rows holds the rows timed before).
	RowsPlanned int
}

// Unfinished is the number of rows the command line asked for that were not timed.
func (rep *Report) Unfinished() int { return max(0, rep.RowsPlanned-len(rep.Rows)) }

func (c Config) procs() int {
	if c.Procs <= 0 {
		return 1
	}
	return c.Procs
}

// Run is the package-level Run with this launch configuration.
func (c Config) Run(args []string, runner Runner, w io.Writer) error {
	o, err := Parse(args)
	if err != nil {
		return err
	}
	if o.Help {
		_, err := io.WriteString(w, usage(o.Binary))
		return err
	}
	rep, err := c.Measure(o, runner)
	if err != nil {
		return err
	}
	if o.JSON {
		return rep.WriteJSON(w)
	}
	return c.WriteTable(w, rep)
}

// Measure validates o for this launch and times every row with runner. When runner fails (or
// is interrupted) part way, the report of the rows timed before is returned with the error.
func (c Config) Measure(o *Options, runner Runner) (*Report, error) {
	nranks := c.procs() * o.NThreads * o.NGpus
	if err := o.Validate(nranks); err != nil {
		return nil, err
	}
	if runner == nil {
		return nil, fmt.Errorf("%s: no runner", o.Binary)
	}
	type key struct {
		bytes   int64
		inPlace bool
	}
	cache := map[key]units.Time{}
	timeOf := func(bytes int64, inPlace bool) (units.Time, error) {
		k := key{bytes, inPlace}
		if t, ok := cache[k]; ok {
			return t, nil
		}
		t, err := runner(o.Op, units.Size(bytes), inPlace)
		if err != nil {
			return 0, fmt.Errorf("%s: %d bytes %s: %w", o.Binary, bytes, placeName(inPlace), err)
		}
		if t < 0 || (t == 0 && bytes > 0) {
			return 0, fmt.Errorf("%s: %d bytes %s: runner returned time %v, want a positive time", o.Binary, bytes, placeName(inPlace), t)
		}
		cache[k] = t
		return t, nil
	}
	rep := &Report{Options: o, Ranks: nranks}
	redops := []string{"none"}
	if hasRedOp(o.Op) {
		redops = o.RedOps
	}
	roots := []int{-1}
	if hasRoot(o.Op) {
		roots = []int{o.Root}
		if o.Root == -1 {
			roots = make([]int, nranks)
			for i := range roots {
				roots[i] = i
			}
		}
	}
	factor := collective.BusBWFactor(o.Op, nranks)
	var sum float64
	var n int
	rows := len(o.DataTypes) * len(redops) * len(roots) * o.RunCycles * len(o.Sizes())
	rep.RowsPlanned = rows
	if c.Progress != nil {
		c.Progress(0, rows)
	}
	partial := func(err error) (*Report, error) {
		if n > 0 {
			rep.AvgBusBW = sum / float64(n)
		}
		return rep, err
	}
	// nccl-tests' loop nest: datatypes, then operators, then roots (each *RunTest), then run
	// cycles and sizes (TimeTest).
	for _, dt := range o.DataTypes {
		for _, ro := range redops {
			for _, root := range roots {
				for cyc := 0; cyc < o.RunCycles; cyc++ {
					for _, size := range o.Sizes() {
						bytes, count := counts(o.Op, size, dt.Size, nranks)
						row := Row{Size: bytes, Count: count, Type: dt.Name, RedOp: ro, Root: root}
						for _, inPlace := range []bool{false, true} {
							t, err := timeOf(bytes, inPlace)
							if err != nil {
								return partial(err)
							}
							r := Result{Time: t}
							if t > 0 {
								r.AlgBW = collective.AlgBW(units.Size(bytes), t)
								r.BusBW = r.AlgBW * factor
							}
							if o.Check == 0 || inPlace && (o.Op == collective.AllToAll || o.Op == collective.SendRecv) {
								r.Wrong = -1
							}
							if inPlace {
								row.InPlace = r
							} else {
								row.OutOfPlace = r
							}
						}
						// A row counts (in the table and the average) once both its times are in.
						sum += row.OutOfPlace.BusBW
						sum += row.InPlace.BusBW
						n += 2
						rep.Rows = append(rep.Rows, row)
						if c.Progress != nil {
							c.Progress(len(rep.Rows), rows)
						}
					}
				}
			}
		}
	}
	return partial(nil)
}

func placeName(inPlace bool) string {
	if inPlace {
		return "in-place"
	}
	return "out-of-place"
}

// cG formats v as C's printf("%g"): six significant digits, trailing zeros dropped, exponent
// form below 1e-4 and from 1e6.
func cG(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

// timeStr is nccl-tests' time column: %7.0f from 10 ms, %7.1f from 100 us, else %7.2f.
func timeStr(us float64) string {
	switch {
	case us >= 10000:
		return fmt.Sprintf("%7.0f", us)
	case us >= 100:
		return fmt.Sprintf("%7.1f", us)
	}
	return fmt.Sprintf("%7.2f", us)
}

// WriteTable prints rep in nccl-tests' layout.
func (c Config) WriteTable(w io.Writer, rep *Report) error {
	o := rep.Options
	var b strings.Builder
	step, kind := o.StepBytes, "bytes"
	if o.StepFactor > 1 {
		step, kind = o.StepFactor, "factor"
	}
	fmt.Fprintf(&b, "# nThread %d nGpus %d minBytes %d maxBytes %d step: %d(%s) warmup iters: %d iters: %d agg iters: %d validation: %d graph: %d\n",
		o.NThreads, o.NGpus, o.MinBytes, o.MaxBytes, step, kind, o.WarmupIters, o.Iters, o.AggIters, o.Check, o.CudaGraph)
	if o.Blocking != 0 {
		b.WriteString("# Blocking Enabled: wait for completion and barrier after each collective \n")
	}
	if o.ParallelInit != 0 {
		b.WriteString("# Parallel Init Enabled: threads call into NcclInitRank concurrently \n")
	}
	b.WriteString("#\n# Using devices\n")
	c.rankLines(&b, o)
	tcol := "time"
	if o.ReportCPUTime != 0 {
		tcol = "cputime"
	}
	b.WriteString("#\n")
	fmt.Fprintf(&b, "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n", "", "", "", "", "")
	fmt.Fprintf(&b, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s\n", "size", "count", "type", "redop", "root",
		tcol, "algbw", "busbw", "#wrong", tcol, "algbw", "busbw", "#wrong")
	fmt.Fprintf(&b, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s\n", "(B)", "(elements)", "", "", "",
		"(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "")
	for _, r := range rep.Rows {
		fmt.Fprintf(&b, "%12d  %12d  %8s  %6s  %6d", r.Size, r.Count, r.Type, r.RedOp, r.Root)
		for _, x := range []Result{r.OutOfPlace, r.InPlace} {
			wrong := "N/A"
			if x.Wrong >= 0 {
				wrong = cG(float64(x.Wrong))
			}
			fmt.Fprintf(&b, "  %7s  %6.2f  %6.2f  %5s", timeStr(x.Time.Microseconds()), x.AlgBW, x.BusBW, wrong)
		}
		b.WriteString("\n")
	}
	if n := rep.Unfinished(); n > 0 {
		// Not in nccl-tests' output (it prints nothing more when killed); a comment line, which
		// parsers of its logs skip, so that a saved log says its table is incomplete.
		fmt.Fprintf(&b, "# Interrupted: %d of %d rows not run; the average below is over the rows above\n", n, rep.RowsPlanned)
	}
	b.WriteString("# Out of bounds values : 0 OK\n")
	fmt.Fprintf(&b, "# Avg bus bandwidth    : %s \n", cG(rep.AvgBusBW))
	b.WriteString("#\n\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func (c Config) rankLines(b *strings.Builder, o *Options) {
	perHost := c.ProcsPerHost
	if perHost <= 0 {
		perHost = c.procs()
	}
	name := c.HostName
	if name == nil {
		name = func(h int) string { return fmt.Sprintf("node%02d", h) }
	}
	gpu := c.GPUName
	if gpu == "" {
		gpu = "NVIDIA H100 80GB HBM3"
	}
	bus := c.BusIDs
	if len(bus) == 0 {
		bus = dgxH100BusIDs
	}
	pid := c.PIDBase
	if pid == 0 {
		pid = 10000
	}
	perProc := o.NThreads * o.NGpus
	for p := 0; p < c.procs(); p++ {
		local := p % perHost
		for i := 0; i < perProc; i++ {
			dev := local*perProc + i
			fmt.Fprintf(b, "#  Rank %2d Group %2d Pid %6d on %10s device %2d [0x%02x] %s\n",
				p*perProc+i, 0, pid+p, name(p/perHost), dev, bus[dev%len(bus)], gpu)
		}
	}
}

// jsonResult and jsonRow follow the key names of nccl-tests' own JSON output (v2.17+).
type jsonResult struct {
	Time   float64  `json:"time"`   // us
	AlgBW  float64  `json:"alg_bw"` // GB/s
	BusBW  float64  `json:"bus_bw"` // GB/s
	NWrong *float64 `json:"nwrong"` // null when not checked
}

type jsonRow struct {
	Size       int64      `json:"size"`
	Count      int64      `json:"count"`
	Type       string     `json:"type"`
	RedOp      string     `json:"redop"`
	Root       int        `json:"root"`
	OutOfPlace jsonResult `json:"out_of_place"`
	InPlace    jsonResult `json:"in_place"`
}

type jsonReport struct {
	Binary       string    `json:"binary"`
	Collective   string    `json:"collective"`
	Ranks        int       `json:"nranks"`
	NThreads     int       `json:"nthreads"`
	NGpus        int       `json:"ngpus"`
	MinBytes     int64     `json:"minbytes"`
	MaxBytes     int64     `json:"maxbytes"`
	StepBytes    int64     `json:"stepbytes"`
	StepFactor   int64     `json:"stepfactor"`
	WarmupIters  int       `json:"warmup_iters"`
	Iters        int       `json:"iters"`
	AggIters     int       `json:"agg_iters"`
	Validation   int       `json:"validation"`
	Results      []jsonRow `json:"results"`
	OutOfBounds  int       `json:"out_of_bounds"`
	AvgBusBWGBps float64   `json:"avg_bus_bw"`
	// Unfinished is fabricsim's: rows not run because the run was interrupted (absent when 0).
	Unfinished int `json:"unfinished_rows,omitempty"`
}

func toJSON(r Result) jsonResult {
	j := jsonResult{Time: r.Time.Microseconds(), AlgBW: r.AlgBW, BusBW: r.BusBW}
	if r.Wrong >= 0 {
		w := float64(r.Wrong)
		j.NWrong = &w
	}
	return j
}

// WriteJSON prints rep as one indented JSON document (the --json rendering): the same rows as
// the table, with times in microseconds and bandwidths in GB/s, unrounded.
func (rep *Report) WriteJSON(w io.Writer) error {
	o := rep.Options
	j := jsonReport{Binary: o.Binary, Collective: o.Op.String(), Ranks: rep.Ranks, NThreads: o.NThreads, NGpus: o.NGpus,
		MinBytes: o.MinBytes, MaxBytes: o.MaxBytes, StepBytes: o.StepBytes, StepFactor: o.StepFactor,
		WarmupIters: o.WarmupIters, Iters: o.Iters, AggIters: o.AggIters, Validation: o.Check,
		Results: make([]jsonRow, 0, len(rep.Rows)), AvgBusBWGBps: finite(rep.AvgBusBW), Unfinished: rep.Unfinished()}
	for _, r := range rep.Rows {
		j.Results = append(j.Results, jsonRow{Size: r.Size, Count: r.Count, Type: r.Type, RedOp: r.RedOp, Root: r.Root,
			OutOfPlace: toJSON(r.OutOfPlace), InPlace: toJSON(r.InPlace)})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(j)
}

func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

func usage(bin string) string {
	return "USAGE: " + bin + ` [options]  (nccl-tests command line, simulated by fabricsim)
	[-t,--nthreads <threads per process>]
	[-g,--ngpus <GPUs per thread>]
	[-b,--minbytes <smallest size, K/M/G = 2^10/2^20/2^30>]
	[-e,--maxbytes <largest size>]
	[-i,--stepbytes <increment in bytes>]
	[-f,--stepfactor <multiplier; above 1 it replaces -i>]
	[-n,--iters <iterations>]
	[-m,--agg_iters <operations aggregated per iteration>]
	[-w,--warmup_iters <warm-up iterations>]
	[-N,--run_cycles <times to repeat the sweep>]
	[-p,--parallel_init <0/1>]
	[-c,--check <validation iterations; 0 prints N/A>]
	[-o,--op <sum/prod/max/min/avg/mulsum/all>]
	[-d,--datatype <int8/uint8/int32/uint32/int64/uint64/half/float/double/bfloat16/all>]
	[-r,--root <root rank; -1 = every rank>]
	[-z,--blocking <0/1>]
	[-y,--stream_null <0/1>]
	[-T,--timeout <seconds>]
	[-G,--cudagraph <graph launches>]
	[-C,--report_cputime <0/1>]
	[-a,--average <0 rank 0/1 mean/2 min/3 max>]
	[-R,--local_register <0/1>]
	[--json <print the rows as JSON>]
	[-h,--help]
`
}
