package nccltests

import (
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/fabricsim/fabricsim/collective"
)

// UsageError is a bad command line: an unknown binary or option, a malformed value or an
// inconsistent combination. The CLI exits with status 2 for it (1 for other errors).
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

func usagef(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

// binaries maps nccl-tests' executables to the collective each one times.
var binaries = map[string]collective.Op{
	"all_reduce_perf":     collective.AllReduce,
	"all_gather_perf":     collective.AllGather,
	"reduce_scatter_perf": collective.ReduceScatter,
	"alltoall_perf":       collective.AllToAll,
	"broadcast_perf":      collective.Broadcast,
	"reduce_perf":         collective.Reduce,
	"sendrecv_perf":       collective.SendRecv,
}

const binaryList = "all_reduce_perf, all_gather_perf, reduce_scatter_perf, alltoall_perf, broadcast_perf, reduce_perf, sendrecv_perf"

// DataType is an NCCL element type as nccl-tests names it.
type DataType struct {
	Name string
	Size int // bytes per element
}

// dataTypes is nccl-tests' list in its order (test_typenames in src/common.cu, NCCL >= 2.10).
var dataTypes = []DataType{
	{"int8", 1}, {"uint8", 1}, {"int32", 4}, {"uint32", 4}, {"int64", 8}, {"uint64", 8},
	{"half", 2}, {"float", 4}, {"double", 8}, {"bfloat16", 2},
}

// redOps is nccl-tests' list of reduction operators in its order (test_opnames; "mulsum" is
// ncclRedOpCreatePreMulSum, NCCL >= 2.11).
var redOps = []string{"sum", "prod", "max", "min", "avg", "mulsum"}

// Options is a parsed nccl-tests command line. Field comments give the flag and nccl-tests'
// default.
type Options struct {
	Binary string        // basename of args[0], e.g. "all_reduce_perf"
	Op     collective.Op // the collective the binary times

	NThreads   int   // -t, --nthreads (1)
	NGpus      int   // -g, --ngpus: GPUs per thread (1)
	MinBytes   int64 // -b, --minbytes (32M)
	MaxBytes   int64 // -e, --maxbytes (32M)
	StepBytes  int64 // -i, --stepbytes (1M)
	StepFactor int64 // -f, --stepfactor (1: step by bytes)

	Iters       int // -n, --iters (20)
	WarmupIters int // -w, --warmup_iters (5)
	AggIters    int // -m, --agg_iters (1)
	RunCycles   int // -N, --run_cycles (1)

	Check         int // -c, --check: validation iterations (1); 0 prints N/A for #wrong
	Blocking      int // -z, --blocking (0)
	ParallelInit  int // -p, --parallel_init (0)
	StreamNull    int // -y, --stream_null (0)
	Timeout       int // -T, --timeout (0)
	CudaGraph     int // -G, --cudagraph (0)
	ReportCPUTime int // -C, --report_cputime (0): the column header says "cputime"
	Average       int // -a, --average (1): 0 rank 0, 1 mean, 2 min, 3 max
	LocalRegister int // -R, --local_register (0)

	RedOps    []string   // -o, --op (sum); "all" expands to every operator
	DataTypes []DataType // -d, --datatype (float); "all" expands to every type
	Root      int        // -r, --root (0); -1 runs every root (broadcast, reduce)

	JSON bool // --json (fabricsim): print the rows as JSON instead of the table
	Help bool // -h, --help
}

type optSpec struct {
	long  string
	short byte
	arg   bool
	set   func(o *Options, name, v string) error
}

func intOpt(field func(o *Options) *int) func(o *Options, name, v string) error {
	return func(o *Options, name, v string) error {
		x, err := parseInt(name, v)
		if err != nil {
			return err
		}
		if x < math.MinInt32 || x > math.MaxInt32 {
			return usagef("option %s: %d is out of range", name, x)
		}
		*field(o) = int(x)
		return nil
	}
}

func sizeOpt(field func(o *Options) *int64) func(o *Options, name, v string) error {
	return func(o *Options, name, v string) error {
		x, err := ParseSize(v)
		if err != nil {
			return usagef("option %s: %v", name, err)
		}
		*field(o) = x
		return nil
	}
}

func int64Opt(field func(o *Options) *int64) func(o *Options, name, v string) error {
	return func(o *Options, name, v string) error {
		x, err := parseInt(name, v)
		if err != nil {
			return err
		}
		*field(o) = x
		return nil
	}
}

// options lists nccl-tests' flags (getopt_long table in src/common.cu) plus --json.
var options = []optSpec{
	{"nthreads", 't', true, intOpt(func(o *Options) *int { return &o.NThreads })},
	{"ngpus", 'g', true, intOpt(func(o *Options) *int { return &o.NGpus })},
	{"minbytes", 'b', true, sizeOpt(func(o *Options) *int64 { return &o.MinBytes })},
	{"maxbytes", 'e', true, sizeOpt(func(o *Options) *int64 { return &o.MaxBytes })},
	{"stepbytes", 'i', true, int64Opt(func(o *Options) *int64 { return &o.StepBytes })},
	{"stepfactor", 'f', true, int64Opt(func(o *Options) *int64 { return &o.StepFactor })},
	{"iters", 'n', true, intOpt(func(o *Options) *int { return &o.Iters })},
	{"agg_iters", 'm', true, intOpt(func(o *Options) *int { return &o.AggIters })},
	{"warmup_iters", 'w', true, intOpt(func(o *Options) *int { return &o.WarmupIters })},
	{"run_cycles", 'N', true, intOpt(func(o *Options) *int { return &o.RunCycles })},
	{"parallel_init", 'p', true, intOpt(func(o *Options) *int { return &o.ParallelInit })},
	{"check", 'c', true, intOpt(func(o *Options) *int { return &o.Check })},
	{"op", 'o', true, setRedOp},
	{"datatype", 'd', true, setDataType},
	{"root", 'r', true, intOpt(func(o *Options) *int { return &o.Root })},
	{"blocking", 'z', true, intOpt(func(o *Options) *int { return &o.Blocking })},
	{"stream_null", 'y', true, intOpt(func(o *Options) *int { return &o.StreamNull })},
	{"timeout", 'T', true, intOpt(func(o *Options) *int { return &o.Timeout })},
	{"cudagraph", 'G', true, intOpt(func(o *Options) *int { return &o.CudaGraph })},
	{"report_cputime", 'C', true, intOpt(func(o *Options) *int { return &o.ReportCPUTime })},
	{"average", 'a', true, intOpt(func(o *Options) *int { return &o.Average })},
	{"local_register", 'R', true, intOpt(func(o *Options) *int { return &o.LocalRegister })},
	{"help", 'h', false, func(o *Options, _, _ string) error { o.Help = true; return nil }},
	{"json", 0, false, func(o *Options, _, _ string) error { o.JSON = true; return nil }},
}

func setRedOp(o *Options, name, v string) error {
	if v == "all" {
		o.RedOps = append([]string(nil), redOps...)
		return nil
	}
	for _, r := range redOps {
		if v == r {
			o.RedOps = []string{r}
			return nil
		}
	}
	return usagef("option %s: unknown reduction %q (want one of %s or all)", name, v, strings.Join(redOps, ", "))
}

func setDataType(o *Options, name, v string) error {
	if v == "all" {
		o.DataTypes = append([]DataType(nil), dataTypes...)
		return nil
	}
	for _, d := range dataTypes {
		if v == d.Name {
			o.DataTypes = []DataType{d}
			return nil
		}
	}
	names := make([]string, len(dataTypes))
	for i, d := range dataTypes {
		names[i] = d.Name
	}
	return usagef("option %s: unknown datatype %q (want one of %s or all)", name, v, strings.Join(names, ", "))
}

// parseInt reads an integer as strtol(v, NULL, 0) does (decimal, 0x hex, 0 octal) but rejects
// trailing garbage that strtol would silently drop.
func parseInt(name, v string) (int64, error) {
	x, err := strconv.ParseInt(strings.TrimSpace(v), 0, 64)
	if err != nil {
		return 0, usagef("option %s: %q is not an integer", name, v)
	}
	return x, nil
}

// ParseSize reads a byte count as nccl-tests' parsesize (src/common.cu) does: a number with an
// optional K, M or G suffix (either case) meaning 2^10, 2^20, 2^30; "1.5K" is 1536. Unlike
// parsesize it also accepts "KB"/"KiB" spellings, and rejects what parsesize would silently
// truncate or ignore: a fractional byte count or other trailing text.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	if i < len(t) && (t[i] == '+' || t[i] == '-') {
		i++
	}
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	if i < len(t) && (t[i] == 'e' || t[i] == 'E') {
		j := i + 1
		if j < len(t) && (t[j] == '+' || t[j] == '-') {
			j++
		}
		if j < len(t) && t[j] >= '0' && t[j] <= '9' {
			for j < len(t) && t[j] >= '0' && t[j] <= '9' {
				j++
			}
			i = j
		}
	}
	num, suf := t[:i], strings.TrimSpace(t[i:])
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("size %q: want a byte count with an optional K, M or G suffix (binary multiples, e.g. 8, 1K, 128M, 8G)", s)
	}
	mult := 1.0
	if suf != "" {
		switch suf[0] {
		case 'K', 'k':
			mult = 1 << 10
		case 'M', 'm':
			mult = 1 << 20
		case 'G', 'g':
			mult = 1 << 30
		default:
			return 0, fmt.Errorf("size %q: unknown suffix %q (want K, M or G, binary multiples)", s, suf)
		}
		switch strings.ToLower(suf[1:]) {
		case "", "b", "ib":
		default:
			return 0, fmt.Errorf("size %q: unknown suffix %q (want K, M or G, binary multiples)", s, suf)
		}
	}
	v *= mult
	if v < 0 {
		return 0, fmt.Errorf("size %q is negative", s)
	}
	if v >= 1<<62 {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	if v != math.Trunc(v) {
		return 0, fmt.Errorf("size %q is %g bytes, not a whole number (nccl-tests would truncate it)", s, v)
	}
	return int64(v), nil
}

// Parse reads an nccl-tests command line; args[0] is the binary (a path is fine). Options
// follow getopt_long: "-b 8", "-b8", "--minbytes 8", "--minbytes=8", and any unambiguous
// prefix of a long option ("--min 8"). Unlike nccl-tests, an unknown operator or datatype and
// a stray argument are errors rather than warnings.
func Parse(args []string) (*Options, error) {
	if len(args) == 0 {
		return nil, usagef("missing binary name (want one of %s)", binaryList)
	}
	o := &Options{
		Binary: filepath.Base(args[0]), NThreads: 1, NGpus: 1,
		MinBytes: 32 << 20, MaxBytes: 32 << 20, StepBytes: 1 << 20, StepFactor: 1,
		Iters: 20, WarmupIters: 5, AggIters: 1, RunCycles: 1, Check: 1, Average: 1,
		RedOps: []string{"sum"}, DataTypes: []DataType{{"float", 4}},
	}
	op, ok := binaries[o.Binary]
	if !ok {
		return nil, usagef("unknown collective binary %q (want one of %s)", o.Binary, binaryList)
	}
	o.Op = op
	rest := args[1:]
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		switch {
		case a == "--":
			if i+1 < len(rest) {
				return nil, usagef("%s: unexpected argument %q", o.Binary, rest[i+1])
			}
		case strings.HasPrefix(a, "--"):
			name, val, hasVal := strings.Cut(a[2:], "=")
			spec, err := lookupLong(name)
			if err != nil {
				return nil, usagef("%s: %v", o.Binary, err)
			}
			flag := "--" + spec.long
			switch {
			case !spec.arg && hasVal:
				return nil, usagef("%s: option %s takes no value", o.Binary, flag)
			case spec.arg && !hasVal:
				if i+1 >= len(rest) {
					return nil, usagef("%s: option %s needs a value", o.Binary, flag)
				}
				i++
				val = rest[i]
			}
			if err := spec.set(o, flag, val); err != nil {
				return nil, prefix(o.Binary, err)
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			for j := 1; j < len(a); j++ {
				spec := lookupShort(a[j])
				if spec == nil {
					return nil, usagef("%s: unknown option -%c (see -h)", o.Binary, a[j])
				}
				flag := "-" + string(a[j])
				if !spec.arg {
					if err := spec.set(o, flag, ""); err != nil {
						return nil, prefix(o.Binary, err)
					}
					continue
				}
				val := a[j+1:]
				if val == "" {
					if i+1 >= len(rest) {
						return nil, usagef("%s: option %s needs a value", o.Binary, flag)
					}
					i++
					val = rest[i]
				}
				if err := spec.set(o, flag, val); err != nil {
					return nil, prefix(o.Binary, err)
				}
				break
			}
		default:
			return nil, usagef("%s: unexpected argument %q (options start with -)", o.Binary, a)
		}
	}
	return o, nil
}

func prefix(bin string, err error) error {
	if ue, ok := err.(*UsageError); ok {
		return &UsageError{Msg: bin + ": " + ue.Msg}
	}
	return err
}

func lookupShort(c byte) *optSpec {
	for i := range options {
		if options[i].short == c && c != 0 {
			return &options[i]
		}
	}
	return nil
}

func lookupLong(name string) (*optSpec, error) {
	var matches []*optSpec
	for i := range options {
		if options[i].long == name {
			return &options[i], nil
		}
		if name != "" && strings.HasPrefix(options[i].long, name) {
			matches = append(matches, &options[i])
		}
	}
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
		return nil, fmt.Errorf("unknown option --%s (see -h)", name)
	}
	names := make([]string, len(matches))
	for i, m := range matches {
		names[i] = "--" + m.long
	}
	return nil, fmt.Errorf("option --%s is ambiguous (%s)", name, strings.Join(names, ", "))
}

// hasRedOp says whether the binary prints and loops over the reduction operator (nccl-tests
// passes "none" for the others).
func hasRedOp(op collective.Op) bool {
	return op == collective.AllReduce || op == collective.ReduceScatter || op == collective.Reduce || op == collective.SendRecv
}

func hasRoot(op collective.Op) bool { return op == collective.Broadcast || op == collective.Reduce }

// granule is the size -b and -e must be a multiple of so that nccl-tests would not round them:
// its element counts are size/wordsize, then per rank count/nranks (alltoall) or, for
// all-gather and reduce-scatter, count/(4 nranks) x 4 (ALIGN 4 in src/all_gather.cu and
// src/reduce_scatter.cu).
func granule(op collective.Op, wordSize, nranks int) int64 {
	switch op {
	case collective.AllGather, collective.ReduceScatter:
		return int64(4 * nranks * wordSize)
	case collective.AllToAll:
		return int64(nranks * wordSize)
	}
	return int64(wordSize)
}

// maxRows bounds a sweep so that a typo (-i 1 up to -e 8G) is an error, not a hang.
const maxRows = 100000

// Validate checks the options against the number of ranks the run will have.
func (o *Options) Validate(nranks int) error {
	b := o.Binary
	for _, c := range []struct {
		flag string
		v    int
		min  int
		why  string
	}{
		{"-t", o.NThreads, 1, ""}, {"-g", o.NGpus, 1, ""}, {"-n", o.Iters, 1, ""}, {"-w", o.WarmupIters, 0, ""},
		{"-m", o.AggIters, 1, ""}, {"-N", o.RunCycles, 1, " (nccl-tests' 0 runs forever)"}, {"-c", o.Check, 0, ""},
	} {
		if c.v < c.min {
			return usagef("%s: %s %d must be at least %d%s", b, c.flag, c.v, c.min, c.why)
		}
	}
	if o.Average < 0 || o.Average > 3 {
		return usagef("%s: -a %d: want 0 (rank 0), 1 (average), 2 (min) or 3 (max)", b, o.Average)
	}
	if o.StepBytes < 0 || o.StepFactor < 0 {
		return usagef("%s: -i %d and -f %d must not be negative", b, o.StepBytes, o.StepFactor)
	}
	if o.MinBytes > o.MaxBytes {
		return usagef("%s: invalid sizes for 'minbytes' and 'maxbytes': %d > %d", b, o.MinBytes, o.MaxBytes)
	}
	if o.StepFactor <= 1 && o.StepBytes == 0 {
		return usagef("%s: -f %d with -i 0 never advances from %d bytes: use -f 2 or more, or -i above 0", b, o.StepFactor, o.MinBytes)
	}
	if o.StepFactor > 1 && o.MinBytes == 0 {
		return usagef("%s: -b 0 with -f %d never advances (0 x %d = 0): start at -b 1 or more, or use -i", b, o.StepFactor, o.StepFactor)
	}
	if hasRoot(o.Op) && (o.Root < -1 || o.Root >= nranks) {
		return usagef("%s: -r %d outside ranks 0..%d (or -1 for every root)", b, o.Root, nranks-1)
	}
	ws := 1
	for _, d := range o.DataTypes {
		ws = lcm(ws, d.Size)
	}
	g := granule(o.Op, ws, nranks)
	for _, x := range []struct {
		flag string
		v    int64
	}{{"-b", o.MinBytes}, {"-e", o.MaxBytes}} {
		if x.v%g != 0 {
			return usagef("%s: %s %d is not a multiple of %d (%s); nccl-tests would silently round it down to %d",
				b, x.flag, x.v, g, granuleWhy(o, ws, nranks), x.v/g*g)
		}
	}
	rows := len(o.Sizes()) * o.RunCycles * len(o.DataTypes)
	if hasRedOp(o.Op) {
		rows *= len(o.RedOps)
	}
	if hasRoot(o.Op) && o.Root == -1 {
		rows *= nranks
	}
	if rows > maxRows {
		return usagef("%s: the sweep has %d rows (limit %d): raise -f or -i", b, rows, maxRows)
	}
	return nil
}

func granuleWhy(o *Options, ws, nranks int) string {
	elem := fmt.Sprintf("%d-byte elements", ws)
	if len(o.DataTypes) == 1 {
		elem = fmt.Sprintf("%d-byte %s", ws, o.DataTypes[0].Name)
	}
	switch o.Op {
	case collective.AllGather, collective.ReduceScatter:
		return fmt.Sprintf("%s x %d ranks x 4-element alignment for %s", elem, nranks, o.Binary)
	case collective.AllToAll:
		return fmt.Sprintf("%s x %d ranks for %s", elem, nranks, o.Binary)
	}
	return elem
}

func lcm(a, b int) int {
	x, y := a, b
	for y != 0 {
		x, y = y, x%y
	}
	return a / x * b
}

// Sizes is the sweep nccl-tests runs: from MinBytes to MaxBytes, multiplying by StepFactor
// when it is above 1, else adding StepBytes.
func (o *Options) Sizes() []int64 {
	var out []int64
	if o.StepFactor <= 1 && o.StepBytes <= 0 || o.StepFactor > 1 && o.MinBytes == 0 {
		return []int64{o.MinBytes}
	}
	for s := o.MinBytes; s <= o.MaxBytes && len(out) <= maxRows; {
		out = append(out, s)
		var next int64
		if o.StepFactor > 1 {
			if s > math.MaxInt64/o.StepFactor {
				break
			}
			next = s * o.StepFactor
		} else {
			if s > math.MaxInt64-o.StepBytes {
				break
			}
			next = s + o.StepBytes
		}
		s = next
	}
	return out
}

// counts is what nccl-tests prints for a sweep size: the size column max(sendBytes,
// recvBytes) and the count column (elements per rank passed to NCCL), per each test's
// GetCollByteCount.
func counts(op collective.Op, size int64, wordSize, nranks int) (bytes, count int64) {
	c := size / int64(wordSize)
	n := int64(nranks)
	ws := int64(wordSize)
	switch op {
	case collective.AllGather, collective.ReduceScatter:
		base := c / (4 * n) * 4
		return base * n * ws, base
	case collective.AllToAll:
		p := c / n
		return p * n * ws, p
	}
	return c * ws, c
}
