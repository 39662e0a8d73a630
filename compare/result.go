package compare

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"

	"github.com/fabricsim/fabricsim/backend"
	"github.com/fabricsim/fabricsim/cost"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/training"
)

// Result is everything a compare run produced: the terminal table, compare.json and
// report.html are all rendered from it. Times are in seconds, money in US dollars.
type Result struct {
	Scenario *Scenario        `json:"scenario"`
	Backend  backend.Name     `json:"backend"`
	Plan     PlanSummary      `json:"plan"`
	Fidelity Fidelity         `json:"fidelity"`
	Variants []*VariantResult `json:"variants"`
	// WallSeconds is the host time of the whole compare: in timing.json (WriteTimingJSON), not
	// in compare.json, which holds only what the scenario determines.
	WallSeconds float64 `json:"-"`
	// Interrupted says the run was stopped (Ctrl-C, SIGTERM) before every simulation finished:
	// the variants marked unfinished hold only their finished steps, or none.
	Interrupted bool `json:"interrupted"`
	// classPlan is auto's class plan (nil where every class ran on the compare's backend): a
	// job's alone run follows it (jobResults).
	classPlan *classPlan
}

// PlanSummary describes the training step that was simulated.
type PlanSummary struct {
	Model          string  `json:"model"`
	Params         int64   `json:"params"`
	GPU            string  `json:"gpu"`
	GPUs           int     `json:"gpus"`
	Servers        int     `json:"servers"`
	TP             int     `json:"tp"`
	PP             int     `json:"pp"`
	DP             int     `json:"dp"`
	EP             int     `json:"ep"`
	ZeRO           int     `json:"zero"`
	MicroBatches   int     `json:"micro_batches"`
	TokensPerStep  int64   `json:"tokens_per_step"`
	StepFLOPs      float64 `json:"step_flops"`
	ComputeSeconds float64 `json:"busiest_gpu_compute_s"`
	MemoryGB       float64 `json:"memory_per_gpu_gb"`
	Ops            string  `json:"ops"`
	DataPath       string  `json:"data_path"`
	LinkRate       string  `json:"link_rate"`
	Topology       string  `json:"topology"`
	// Trace is the Chakra traces' path prefix when the step was replayed from them (the model,
	// parallelism and memory fields are then empty).
	Trace string `json:"trace,omitempty"`
}

// Fidelity says what ran at which level of detail.
type Fidelity struct {
	Backend backend.Name `json:"backend"`
	// Mode is "full" (every step run whole) or "classes" (class by class).
	Mode FidelityMode `json:"mode"`
	// StepPackets is the step's network traffic in 4 KiB packets (what auto decides on).
	StepPackets float64     `json:"step_packets"`
	Classes     []ClassInfo `json:"network_classes"`
	Notes       []string    `json:"notes"`
}

// ClassInfo is one class of network collectives simulated at packet (or fluid) level.
type ClassInfo struct {
	Key            string `json:"key"`
	Groups         int    `json:"groups"`
	RanksPerGroup  int    `json:"ranks_per_group"`
	Bytes          int64  `json:"bytes"`
	InstancesTotal int    `json:"collectives_per_step"`
	// Backend is the backend that ran the class in every variant where --backend auto ran the
	// compare on the flow backend in class fidelity (auto.go, classPlan); PacketEvents and
	// PacketSeconds are the packet backend's estimate of one run of the class it decided on
	// (backend.EstimateJob, the largest over the variants). Empty otherwise.
	Backend       backend.Name `json:"backend,omitempty"`
	PacketEvents  float64      `json:"packet_events_estimate,omitempty"`
	PacketSeconds float64      `json:"packet_s_estimate,omitempty"`
}

// StepResult is one simulated step.
type StepResult struct {
	StepTime    float64            `json:"step_time_s"`
	Compute     float64            `json:"compute_s"`
	ExposedComm float64            `json:"exposed_comm_s"`
	Exposed     map[string]float64 `json:"exposed_by_dim_s"`
	// JobStepTimes is each job's step time on a shared cluster (jobs.go).
	JobStepTimes []float64 `json:"job_step_s,omitempty"`
}

// VariantResult is one fabric variant's outcome.
type VariantResult struct {
	Variant *Variant `json:"variant"`
	// Backend ran the variant's simulations; BackendReason says why ("flow: estimated 310 M
	// packet events, about 31 s on the packet backend, above the 30s budget" under --backend
	// auto, "packet: --backend" when named).
	Backend       backend.Name `json:"backend"`
	BackendReason string       `json:"backend_reason"`
	// ClassBackends counts the network classes each backend ran where --backend auto ran the
	// compare on the flow backend in class fidelity: a class whose packet estimate for one run is
	// within Options.ClassBudget runs on the packet backend (auto.go, classPlan);
	// ClassBackendReason says so with the budget and the estimates. Empty otherwise. Events then
	// adds the packet runs' events to the flow runs' steps.
	ClassBackends      map[backend.Name]int `json:"class_backends,omitempty"`
	ClassBackendReason string               `json:"class_backend_reason,omitempty"`
	Steps              []StepResult         `json:"steps"`
	// StepsFinished is the number of simulated steps in Steps; Unfinished says it is below
	// the scenario's steps because the run was interrupted (then every figure below is over
	// the finished steps only, and all zero when none finished).
	StepsFinished int  `json:"steps_finished"`
	Unfinished    bool `json:"unfinished"`
	// Means over the simulated steps.
	StepTime    float64            `json:"step_time_s"`
	Compute     float64            `json:"compute_s"`
	ExposedComm float64            `json:"exposed_comm_s"`
	Exposed     map[string]float64 `json:"exposed_by_dim_s"`
	// Variation is (slowest - fastest) / mean step time over the steps; StepStdev the
	// standard deviation.
	Variation float64 `json:"step_variation"`
	StepStdev float64 `json:"step_stdev_s"`
	// The step-time distribution (jitter.go, docs/jitter.md): nearest-rank median and 99th
	// percentile over the simulated steps, jitter = (p99 - p50) / p50, cv = stdev / mean.
	StepP50    float64 `json:"step_p50_s"`
	StepP99    float64 `json:"step_p99_s"`
	StepJitter float64 `json:"step_jitter"`
	StepCV     float64 `json:"step_cv"`
	// ExposedP50 and ExposedP99: the same percentiles of each step's exposed communication, the
	// network's (and NVLink's) part of the step beyond its compute.
	ExposedP50 float64 `json:"exposed_p50_s"`
	ExposedP99 float64 `json:"exposed_p99_s"`
	// SlowGPUSteps counts the steps in which at least one GPU was slow (noise.slow).
	SlowGPUSteps int `json:"slow_gpu_steps,omitempty"`
	// Network collective completion times (one per collective of every step).
	CollP50 float64   `json:"coll_p50_s"`
	CollP99 float64   `json:"coll_p99_s"`
	CollCDF []float64 `json:"coll_cdf_s"` // sorted, at most 200 points
	// Messages: the completion times of every point-to-point network message of the step's
	// collectives, and their slowdowns (fct.go); nil when no step finished.
	Messages *MessageStats `json:"messages"`
	// Per step (mean over steps): drops, PFC pause frames, credit-stall time, ECN marks, and every
	// counter of the fabric.
	Drops       float64            `json:"drops_per_step"`
	Pauses      float64            `json:"pfc_pauses_per_step"`
	CreditStall float64            `json:"credit_stall_s_per_step"` // summed over ports
	ECNMarks    float64            `json:"ecn_marks_per_step"`
	Counters    map[string]float64 `json:"counters_per_step"` // counters declared result.Max (high-water marks): the maximum
	Timeline    *Timeline          `json:"timeline"`
	// Cost.
	Bill            *cost.Bill `json:"bill"`
	NetworkUSD      float64    `json:"network_usd"`
	PerGPUUSD       float64    `json:"network_per_gpu_usd"`
	ServersUSD      float64    `json:"servers_usd"`
	TrainSteps      float64    `json:"train_steps"`
	TrainDays       float64    `json:"train_days"`
	NetworkTrainUSD float64    `json:"network_cost_to_train_usd"`
	ClusterTrainUSD float64    `json:"cluster_cost_to_train_usd"`
	Verdict         string     `json:"verdict"`
	// CostError says why the network could not be priced (a part missing from the catalogue).
	CostError string  `json:"cost_error,omitempty"`
	Events    uint64  `json:"events"`
	SimWall   float64 `json:"-"` // host seconds simulating this variant (timing.json)
	// Omitted names what of the variant's fabric the backend left out (the analytic backend:
	// PFC, congestion control, credits ...; result.Run.Omitted): the step time does not show
	// their effect.
	Omitted []string `json:"backend_omits,omitempty"`
	// Jobs is each job's step time alone and shared, on a shared cluster (jobs.go).
	Jobs []JobResult `json:"jobs,omitempty"`
	// Faults is the time lost to each of the scenario's faults (faults.go).
	Faults []FaultLoss `json:"faults,omitempty"`

	collDurations []float64
}

func (v *VariantResult) finish() {
	n := float64(len(v.Steps))
	v.Exposed = map[string]float64{}
	if n == 0 {
		return // interrupted before any step finished
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, st := range v.Steps {
		v.StepTime += st.StepTime / n
		v.Compute += st.Compute / n
		v.ExposedComm += st.ExposedComm / n
		for k, x := range st.Exposed {
			v.Exposed[k] += x / n
		}
		lo, hi = math.Min(lo, st.StepTime), math.Max(hi, st.StepTime)
	}
	for _, st := range v.Steps {
		v.StepStdev += (st.StepTime - v.StepTime) * (st.StepTime - v.StepTime) / n
	}
	v.StepStdev = math.Sqrt(v.StepStdev)
	if v.StepTime > 0 {
		v.Variation = (hi - lo) / v.StepTime
	}
	v.stepDistribution()
	v.CollP50, v.CollP99 = quantiles(v.collDurations)
	xs := append([]float64(nil), v.collDurations...)
	sort.Float64s(xs)
	if len(xs) > 200 {
		out := make([]float64, 200)
		for i := range out {
			out[i] = xs[(i*(len(xs)-1))/199]
		}
		xs = out
	}
	v.CollCDF = xs
	v.Drops = v.Counters["drops"]
	v.Pauses = pickPauses(v.Counters)
	v.CreditStall = pickStalls(v.Counters)
	v.ECNMarks = pickMarks(v.Counters)
}

func summarizePlan(p *training.Plan, s *Scenario) PlanSummary {
	sum := PlanSummary{
		Model: p.Model.Name, Params: p.Model.ParamCount().Total, GPU: p.GPU.Name, GPUs: p.GPUs, Servers: s.Cluster.Servers,
		TP: p.TP, PP: p.PP, DP: p.DP, EP: p.EP, ZeRO: p.ZeRO, MicroBatches: p.MicroBatches,
		TokensPerStep: p.TokensPerStep, StepFLOPs: p.StepFLOPs, ComputeSeconds: p.ComputeTime.Seconds(),
		MemoryGB: float64(p.Memory.Total) / 1e9, Ops: p.Summary(), DataPath: s.Cluster.DataPath,
		LinkRate: s.Cluster.LinkRate.String(),
		Topology: fmt.Sprintf("rail-optimized, %d servers x %d GPUs, radix %d, %g:1", s.Cluster.Servers, s.Cluster.GPUsPerServer, s.Cluster.Radix, s.Cluster.Oversubscription),
	}
	if s.Trace != nil {
		sum.Model, sum.Params, sum.GPU, sum.MemoryGB, sum.Trace = "", 0, "", 0, s.Trace.Chakra
		sum.TP, sum.PP, sum.DP, sum.EP, sum.MicroBatches = 0, 0, 0, 0, 0
	}
	return sum
}

// header is the workload part of the table's and report's first line.
func (p PlanSummary) header() string {
	if p.Trace != "" {
		return fmt.Sprintf("Chakra trace %s (%d ranks, %s)", p.Trace, p.GPUs, p.Ops)
	}
	return fmt.Sprintf("%s (%.2fB params) on %d x %s, TP %d PP %d DP %d ZeRO-%d", p.Model, float64(p.Params)/1e9, p.GPUs, p.GPU, p.TP, p.PP, p.DP, p.ZeRO)
}

// trainDays prints the time to train, "-" when unknown (a trace without tokens_per_step).
func (v *VariantResult) trainDays() string {
	if v.TrainSteps == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f d", v.TrainDays)
}

// trainMoney prints the network cost to train, "-" when the time to train is unknown.
func (v *VariantResult) trainMoney() string {
	if v.TrainSteps == 0 {
		return "-"
	}
	return v.money(v.NetworkTrainUSD)
}

func (s *Scenario) fidelity(name backend.Name, p *training.Plan, cls []*class, variants []*Variant, full bool, packets float64) Fidelity {
	f := Fidelity{Backend: name, Mode: FidelityClasses, StepPackets: packets}
	if full {
		f.Mode = FidelityFull
	}
	for _, c := range cls {
		total := 0
		for _, x := range c.Instances {
			total += x
		}
		f.Classes = append(f.Classes, ClassInfo{Key: c.Key, Groups: len(c.Groups), RanksPerGroup: len(c.Groups[0]), Bytes: int64(c.Bytes), InstancesTotal: total})
	}
	level := "every packet (fabric.Network)"
	switch name {
	case backend.Analytic:
		level = "a max-min fluid model (analytic.Run; no queues, no link contention)"
	case backend.Flow:
		level = "flows (flow.Run: the fabric's routing, queues, PFC, credits and congestion control in the fluid limit; docs/flow.md)"
	}
	if full {
		f.Notes = []string{
			fmt.Sprintf("Every simulated step runs whole, as one message graph (%.3g packets of network traffic, within the %d of fidelity auto), with %s on the whole cluster topology: every compute op a delay node, every collective compiled, NVLink hops as delay nodes; each step with its own seed.", packets, FullStepPackets, level),
			"Op durations are read back from the run (done minus ready), so the replay of the dependency graph reproduces the run's step time; step time = compute + exposed communication on the longest path, exactly.",
			"Counters (drops, pauses, stalls, marks) are the run's; the timelines show them as the run measured them per time bin.",
		}
	} else {
		f.Notes = []string{
			fmt.Sprintf("The step's network traffic (%.3g packets) is above the %d that fidelity auto runs whole, so network collectives (ranks on more than one server) are simulated class by class with %s on the whole cluster topology: each class (same kind, size, dimension, stage) runs one collective of every group at once, as they run together in the step, once per simulated step with its own seed. Overlap between different classes is not simulated (docs/compare.md).", packets, FullStepPackets, level),
			"The step is the longest path through the plan's dependency graph with these durations; step time = compute + exposed communication on that path, exactly.",
			"Counters (drops, pauses, stalls) are a class run's totals scaled by the class's collectives per step.",
		}
	}
	durations := "the step model's durations"
	if s.Trace != nil {
		durations = "the trace's durations (duration_micros; 0 as 1 ns)"
	}
	f.Notes = append(f.Notes, "Compute ops take "+durations+"; collectives inside one server take NCCL's ring time over NVLink ("+s.Cluster.NVLink.String()+" per GPU and direction, "+s.Cluster.NVLinkLatency.String()+" per step).")
	dp := s.dataPath()
	for _, v := range variants {
		if r := s.simRate(v.Fabric); r < s.Cluster.LinkRate {
			f.Notes = append(f.Notes, fmt.Sprintf("%s: data path %s (server %s) carries %v of payload per GPU and direction, less than the NIC: NIC links simulated at %v, the bill of materials keeps %v.",
				v.Name, dp.Name, s.Cluster.Server, dp.Bandwidth, r, s.Cluster.LinkRate))
		}
	}
	if dp.Latency > 0 {
		f.Notes = append(f.Notes, fmt.Sprintf("Data path %s adds %v to every network message.", dp.Name, dp.Latency))
	}
	return f
}

// costs prices each variant's network and its cost to train the scenario's tokens.
func (s *Scenario) costs(res *Result, g *topo.Graph, p *training.Plan) error {
	cat, err := cost.LoadCatalogue(s.Path(s.Cost.Catalogue))
	if err != nil {
		return s.d.At("cost.catalogue", "%v", err)
	}
	if it, ok := cat.Items[s.Cost.Server]; !ok || it.Kind != cost.KindServer {
		return s.d.At("cost.server", "%q is not a server in the price catalogue", s.Cost.Server)
	} else if s.Cost.ServerPrice > 0 {
		it.PriceUSD, it.LowUSD, it.HighUSD = s.Cost.ServerPrice, s.Cost.ServerPrice, s.Cost.ServerPrice
	}
	bills := map[string]*cost.Bill{}
	errs := map[string]error{}
	for _, v := range res.Variants {
		b, ok := bills[v.Variant.CostFabric]
		if !ok && errs[v.Variant.CostFabric] == nil {
			b, err = cost.BOM(g, v.Variant.CostFabric, cat, cost.Options{GPUs: p.GPUs, Server: s.Cost.Server, RailOptimized: true, TwinPortOptics: s.Cost.TwinPortOptics})
			if err != nil {
				errs[v.Variant.CostFabric] = err
			}
			bills[v.Variant.CostFabric] = b
		}
		if err := errs[v.Variant.CostFabric]; err != nil {
			// A catalogue without a part this cluster needs leaves the cost out, not the run.
			v.CostError = err.Error() + " (add the part with cost.catalogue)"
			if p.TokensPerStep > 0 {
				v.TrainSteps = math.Ceil(s.TokensCount / float64(p.TokensPerStep))
			}
			v.TrainDays = v.TrainSteps * v.StepTime / 86400
			continue
		}
		v.Bill = b
		v.NetworkUSD = b.Totals.NetworkUSD
		v.PerGPUUSD = b.Totals.PerGPUUSD
		v.ServersUSD = b.Totals.ServersUSD
		if s.Cost.GPUPrice > 0 {
			v.ServersUSD = s.Cost.GPUPrice * float64(p.GPUs)
		}
		if p.TokensPerStep > 0 {
			v.TrainSteps = math.Ceil(s.TokensCount / float64(p.TokensPerStep))
		}
		secs := v.TrainSteps * v.StepTime
		v.TrainDays = secs / 86400
		life := s.Cost.AmortizationYears * 365 * 86400
		v.NetworkTrainUSD = v.NetworkUSD * secs / life
		v.ClusterTrainUSD = (v.NetworkUSD + v.ServersUSD) * secs / life
	}
	return nil
}

// verdicts writes one line per variant against the first one (the baseline); the baseline's
// line compares it with the fastest and the cheapest of the others.
func (r *Result) verdicts() {
	if len(r.Variants) == 0 {
		return
	}
	base := r.Variants[0]
	rel := func(a, b float64) float64 {
		if b == 0 {
			return 0
		}
		return (b - a) / b * 100
	}
	speed := func(v, o *VariantResult) string {
		d := rel(v.StepTime, o.StepTime)
		switch {
		case math.Abs(d) < 0.05:
			return "as fast as " + o.Variant.Name
		case d > 0:
			return fmt.Sprintf("%.1f %% faster than %s", d, o.Variant.Name)
		}
		return fmt.Sprintf("%.1f %% slower than %s", -d, o.Variant.Name)
	}
	price := func(v, o *VariantResult) string {
		if v.CostError != "" || o.CostError != "" {
			return "network cost unknown"
		}
		d := rel(v.NetworkUSD, o.NetworkUSD)
		switch {
		case math.Abs(d) < 0.05:
			return "same network cost"
		case d > 0:
			return fmt.Sprintf("%.1f %% cheaper network", d)
		}
		return fmt.Sprintf("%.1f %% dearer network", -d)
	}
	train := func(v, o *VariantResult) string {
		if v.ClusterTrainUSD == 0 || o.ClusterTrainUSD == 0 {
			return ""
		}
		d := rel(v.ClusterTrainUSD, o.ClusterTrainUSD)
		if math.Abs(d) < 0.05 {
			return "; same cluster cost to train"
		}
		word := "lower"
		if d < 0 {
			word, d = "higher", -d
		}
		return fmt.Sprintf("; %.1f %% %s cluster cost to train", d, word)
	}
	// An interrupted variant with no finished step has no step time to compare: its line says
	// so and gives the cost comparison alone.
	speedOrNot := func(v, o *VariantResult) string {
		if v.StepsFinished == 0 {
			return fmt.Sprintf("unfinished (0 of %d steps)", r.Scenario.Steps)
		}
		if o.StepsFinished == 0 {
			return "speed unknown (" + o.Variant.Name + " unfinished)"
		}
		return speed(v, o)
	}
	for _, v := range r.Variants[1:] {
		v.Verdict = speedOrNot(v, base) + ", " + price(v, base) + train(v, base)
	}
	if len(r.Variants) == 1 {
		base.Verdict = "only variant"
		if base.StepsFinished == 0 {
			base.Verdict = speedOrNot(base, base)
		}
		return
	}
	var fast *VariantResult
	for _, v := range r.Variants[1:] {
		if v.StepsFinished > 0 && (fast == nil || v.StepTime < fast.StepTime) {
			fast = v
		}
	}
	if fast == nil {
		fast = r.Variants[1]
	}
	base.Verdict = "baseline; " + speedOrNot(base, fast) + ", " + price(base, fast) + train(base, fast)
}

// WriteJSON writes compare.json.
func (r *Result) WriteJSON(w io.Writer) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(r)
}

// WriteTimingJSON writes timing.json: the host time of the whole compare and of each variant's
// simulation. It differs from run to run, so it is kept out of compare.json.
func (r *Result) WriteTimingJSON(w io.Writer) error {
	type variant struct {
		Name     string  `json:"name"`
		SimWallS float64 `json:"sim_wall_s"`
		Events   uint64  `json:"events"`
	}
	t := struct {
		WallSeconds float64   `json:"wall_seconds"`
		Variants    []variant `json:"variants"`
	}{WallSeconds: r.WallSeconds}
	for _, v := range r.Variants {
		t.Variants = append(t.Variants, variant{v.Variant.Name, v.SimWall, v.Events})
	}
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(t)
}

// seconds formats a duration given in seconds with the largest unit that keeps it at or above
// 1, to 4 significant digits: "1.405s", "373.3ms", "469.3us".
// FormatSeconds prints a time in seconds with its unit and three significant digits, as the
// compare table does (also tune's report).
func FormatSeconds(x float64) string { return seconds(x) }

func seconds(x float64) string {
	if x == 0 {
		return "0"
	}
	for _, u := range []struct {
		name string
		mult float64
	}{{"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}} {
		if math.Abs(x) >= u.mult || u.name == "ns" {
			v := x / u.mult
			prec := 3
			switch {
			case math.Abs(v) >= 100:
				prec = 1
			case math.Abs(v) >= 10:
				prec = 2
			}
			return fmt.Sprintf("%.*f%s", prec, v, u.name)
		}
	}
	return ""
}
