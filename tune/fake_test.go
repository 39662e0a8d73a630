package tune

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fabricsim/fabricsim/sweep"
	"github.com/fabricsim/fabricsim/units"
)

// fakeEngine stands in for the simulator in the search's tests: it reads the evaluation the
// sweep machinery hands it, exactly as Engine does, and computes a cheap objective of the
// candidate's settings instead of simulating. Its minimum is known: dcqcn_rate_ai 20 Mb/s,
// dcqcn_min_dec_factor 0.9, dcqcn_increase_timer 50 us (objective 1 there, 1 + 0.25 per unit
// of squared log10 distance elsewhere; settings it does not read add nothing). It breaks
// constraints on request, so that violations go through the same path as real ones:
// qps_per_conn >= 7 drops packets on the lossless class, dcqcn_g > 0.03 deadlocks (the run
// fails as the packet backend's watchdog makes it fail), ecn_pmax < 0.02 makes the PFC watchdog
// fire. sleep, when set, makes each evaluation take that long times (1 + its hash mod 4), so
// that evaluations of one batch finish out of order.
type fakeEngine struct {
	sleep time.Duration
	// log, when set, gets one line per evaluation started.
	log string
}

func (fakeEngine) Validate(b []byte, name, dir string) error {
	_, err := parseEvalDoc(b)
	return err
}

// fakeObjective is the fake engine's objective of a set of settings (values as text). Of the
// categorical choices: without DCQCN it is 1.2 whatever the other settings, and static PFC
// thresholds take 0.1 off; the minimum is then 0.9 (static, DCQCN on, the three settings above).
func fakeObjective(fab map[string]string) float64 {
	f := 1.0
	if fab["pfc_threshold"] == "static" {
		f -= 0.1
	}
	if fab["dcqcn"] == "false" {
		return f + 0.2
	}
	logDist := func(x, at float64) float64 { d := math.Log10(x / at); return d * d }
	if s, ok := fab["dcqcn_rate_ai"]; ok {
		r, _ := units.ParseRate(s)
		f += 0.25 * logDist(float64(r), 20e6)
	} else {
		f += 0.25 * logDist(5e6, 20e6) // the ConnectX default, 5 Mb/s
	}
	if s, ok := fab["dcqcn_min_dec_factor"]; ok {
		x, _ := strconv.ParseFloat(s, 64)
		f += 2 * (x - 0.9) * (x - 0.9)
	} else {
		f += 2 * 0.4 * 0.4
	}
	if s, ok := fab["dcqcn_increase_timer"]; ok {
		t, _ := units.ParseTime(s)
		f += 0.25 * logDist(float64(t), float64(50*units.Microsecond))
	} else {
		f += 0.25 * logDist(300, 50)
	}
	return f
}

func (e fakeEngine) Run(ctx context.Context, b []byte, name, dir string) (map[string]float64, error) {
	d, err := parseEvalDoc(b)
	if err != nil {
		return nil, err
	}
	if e.log != "" {
		f, err := os.OpenFile(e.log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintf(f, "start %s\n", name)
			f.Close()
		}
	}
	if e.sleep > 0 {
		h := 0
		for _, c := range b {
			h = (h*31 + int(c)) % 1000003
		}
		select {
		case <-time.After(e.sleep * time.Duration(1+h%4)):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if g, ok := d.Fabric["dcqcn_g"]; ok {
		if x, _ := strconv.ParseFloat(g, 64); x > 0.03 {
			return nil, fmt.Errorf("variant tune-candidate, step 1, the whole step: PFC deadlock: no byte delivered for 100ms at 1.2ms, 412 packets held (3 of 96 messages complete)")
		}
	}
	m := map[string]float64{"step_s": fakeObjective(d.Fabric) * 1e-3, "coll_p99_s": 1e-4, "drops": 0, "pfc_watchdog_triggers": 0}
	if d.Variant == "ib-ndr" {
		m["step_s"] = 0.9e-3
	}
	if d.Mix != "" {
		m["step_s"] *= 1.5
	}
	if d.Seed != 1 {
		m["step_s"] *= 1.01
	}
	if q, ok := d.Fabric["qps_per_conn"]; ok {
		if n, _ := strconv.Atoi(q); n >= 7 {
			m["drops"] = 12
		}
	}
	if p, ok := d.Fabric["ecn_pmax"]; ok {
		if x, _ := strconv.ParseFloat(p, 64); x < 0.02 {
			m["pfc_watchdog_triggers"] = 2
		}
	}
	return m, nil
}

// fakeOptions runs a tune into out on the fake engine.
func fakeOptions(out string, jobs int, sleep time.Duration, log string) Options {
	return Options{Out: out, Jobs: jobs, NewEngine: func() sweep.Engine { return fakeEngine{sleep: sleep, log: log} }}
}

// helperEnv makes the test binary run a tune on the fake engine (arguments in helperArgs as
// JSON: scenario, out, jobs, sleep in ms) and write its files, so that a test can kill it.
const (
	helperEnv  = "TUNE_TEST_HELPER"
	helperArgs = "TUNE_TEST_ARGS"
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(helperMain())
	}
	os.Exit(m.Run())
}

func helperMain() int {
	if len(os.Args) > 2 && os.Args[1] == "tune" && os.Args[2] == "eval" {
		return helperEval(os.Args[3:])
	}
	var a struct {
		Scenario, Out string
		Jobs, SleepMS int
		Real          bool
	}
	if err := json.Unmarshal([]byte(os.Getenv(helperArgs)), &a); err != nil {
		fmt.Fprintln(os.Stderr, "bad", helperArgs, err)
		return 2
	}
	p, err := Load(a.Scenario, LoadOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	o := fakeOptions(a.Out, a.Jobs, time.Duration(a.SleepMS)*time.Millisecond, "")
	if a.Real {
		o.NewEngine = nil
	}
	o.Resume = true
	if _, err := os.Stat(a.Out); err != nil {
		o.Resume = false
	}
	r, err := Run(context.Background(), p, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := r.WriteFiles(a.Out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// writeScenario writes tiny.yaml with the given tune: section (YAML text indented under it).
func writeScenario(t *testing.T, dir, tuneSection string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/tiny.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if tuneSection != "" {
		s += "tune:\n  " + strings.ReplaceAll(strings.TrimSpace(tuneSection), "\n", "\n  ") + "\n"
	}
	path := dir + "/tiny.yaml"
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// helperEval is `fabricsim tune eval BATCH --out DIR --shard i/N --jobs N --sweep-digest D` on
// the fake engine, as a Slurm array task of a tune runs it.
func helperEval(args []string) int {
	batch := args[0]
	var out, shard, digest string
	jobs := 1
	for i := 1; i+1 < len(args); i += 2 {
		switch args[i] {
		case "--out":
			out = args[i+1]
		case "--shard":
			shard = args[i+1]
		case "--sweep-digest":
			digest = args[i+1]
		case "--jobs":
			jobs, _ = strconv.Atoi(args[i+1])
		}
	}
	sh, err := sweep.ParseShard(shard)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if _, err := EvalBatch(context.Background(), batch, out, sh, jobs, digest, 0, func() sweep.Engine { return fakeEngine{} }); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
