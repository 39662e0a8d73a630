package compare

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/report"
	"github.com/fabricsim/fabricsim/sim"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/training"
	"github.com/fabricsim/fabricsim/units"
)

// Job is one training job of a shared cluster (the scenario's `jobs:` list, docs/jobs.md): its
// own workload on whole servers, placed by a policy or on the servers listed, its network
// traffic in a traffic class of its own choosing.
type Job struct {
	Name     string           `yaml:"name" json:"name"`
	Workload *training.Config `yaml:"workload" json:"workload"`
	// Servers is how many servers the job takes (its workload's GPUs are Servers x
	// gpus_per_server); ServerIDs places it on exactly these servers instead.
	Servers   int   `yaml:"servers" json:"servers"`
	ServerIDs []int `yaml:"server_ids" json:"server_ids,omitempty"`
	// Placement is packed (the lowest free servers: leaf by leaf, scalable unit by scalable
	// unit, as the servers are numbered), scattered (round robin over the leaves of rail 0) or
	// random (a permutation of the free servers drawn from the scenario's seed).
	Placement string `yaml:"placement" json:"placement"`
	// Class is the traffic class of the job's messages: the RoCE priority (0: the fabric's
	// data_priority) or the InfiniBand SL (mapped to a VL by sl2vl).
	Class int `yaml:"class" json:"class"`
	// Background makes the job traffic instead of a training workload: checkpoint writes
	// from another job's GPUs to this job's servers (storage targets).
	Background *Background `yaml:"background" json:"background,omitempty"`
	// Placed is where the job runs, server by server (rank r is GPU r % gpus_per_server of
	// server Placed[r / gpus_per_server]).
	Placed []int `yaml:"-" json:"placed"`
}

// Background is a job of background traffic: every GPU of job From writes Bytes to this job's
// GPUs at the start of the step (a checkpoint: GPU i of the writers to target GPU i mod the
// targets, so same-rail writers share a target when there are fewer targets).
type Background struct {
	From  string     `yaml:"from" json:"from"`
	Bytes units.Size `yaml:"bytes" json:"bytes"`
	// writers are the writing job's GPUs, resolved when the jobs are placed.
	writers []int
}

// JobResult is one job's step time on one variant, alone on its servers and with every other
// job running at the same time.
type JobResult struct {
	Name  string  `json:"name"`
	GPUs  int     `json:"gpus"`
	Class int     `json:"class"`
	Alone float64 `json:"alone_step_s"`
	// AloneExposed is the job's exposed communication alone: the most sharing can add to its
	// step while it keeps at least half of every link (docs/jobs.md).
	AloneExposed float64 `json:"alone_exposed_s"`
	Shared       float64 `json:"shared_step_s"`
	Slowdown     float64 `json:"slowdown"` // shared / alone - 1
}

// jobsDefaults fills each job's workload from the cluster (as the single workload's).
func (s *Scenario) jobsDefaults() {
	for _, j := range s.Jobs {
		if j.Placement == "" && len(j.ServerIDs) == 0 {
			j.Placement = "packed"
		}
		if len(j.ServerIDs) > 0 && j.Servers == 0 {
			j.Servers = len(j.ServerIDs)
		}
		if w := j.Workload; w != nil {
			if w.GPUsPerServer == 0 {
				w.GPUsPerServer = s.Cluster.GPUsPerServer
			}
			if w.GPUs == 0 {
				w.GPUs = j.Servers * s.Cluster.GPUsPerServer
			}
		}
	}
}

// jobsValidate checks the jobs and places them: explicit servers first, then the others in
// list order by their policy. Two jobs on one server is an error naming both.
func (s *Scenario) jobsValidate() error {
	if len(s.Jobs) == 0 {
		return nil
	}
	if s.Fidelity == FidelityClasses {
		return s.d.At("fidelity", "classes cannot show jobs interfering (each class of collectives runs alone); jobs run whole steps (fidelity auto or full)")
	}
	owner := make([]int, s.Cluster.Servers)
	for i := range owner {
		owner[i] = -1
	}
	names := map[string]int{}
	for i, j := range s.Jobs {
		at := fmt.Sprintf("jobs[%d]", i)
		if j.Name == "" {
			j.Name = fmt.Sprintf("job%d", i)
		}
		if k, ok := names[j.Name]; ok {
			return s.d.At(at+".name", "%q is also jobs[%d]'s name", j.Name, k)
		}
		names[j.Name] = i
		if j.Background != nil {
			if i == 0 {
				return s.d.At("jobs[0].background", "the first job is the one the table reports: list a training job first")
			}
			if err := s.backgroundValidate(i, j, owner); err != nil {
				return err
			}
			continue
		}
		switch {
		case j.Workload == nil:
			return s.d.At(at, "workload missing: want e.g. {kind: training, model: llama3-8b, gpu: h100, tp: 8, dp: 4}, or background: {from: JOB, bytes: 1GiB}")
		case j.Workload.Kind != "" && j.Workload.Kind != "training":
			return s.d.At(at+".workload.kind", "%q unknown (valid: training)", j.Workload.Kind)
		}
		if err := s.checkPlace(j, at); err != nil {
			return err
		}
		if w := j.Workload; w.GPUs != j.Servers*s.Cluster.GPUsPerServer {
			return s.d.At(at+".workload.gpus", "%d GPUs, but the job has %d servers x %d = %d", w.GPUs, j.Servers, s.Cluster.GPUsPerServer, j.Servers*s.Cluster.GPUsPerServer)
		}
		cfg := *j.Workload
		cfg.Defaults()
		if err := cfg.Validate(); err != nil {
			return err // placed at the job's workload key by the decoder
		}
		if err := s.claimServers(i, at, owner); err != nil {
			return err
		}
	}
	var leafOf []int // each server's rail-0 leaf, for scattered
	for i, j := range s.Jobs {
		if len(j.ServerIDs) > 0 {
			continue
		}
		var free []int
		for sv, o := range owner {
			if o < 0 {
				free = append(free, sv)
			}
		}
		if len(free) < j.Servers {
			return s.d.At(fmt.Sprintf("jobs[%d].servers", i), "%d: only %d of the cluster's %d servers are left", j.Servers, len(free), s.Cluster.Servers)
		}
		switch j.Placement {
		case "scattered":
			if leafOf == nil {
				g, err := s.Topology()
				if err != nil {
					return err
				}
				leafOf = serverLeaves(g, s.Cluster.Servers, s.Cluster.GPUsPerServer)
			}
			free = scatter(free, leafOf)
		case "random":
			rng := rand.New(rand.NewPCG(sim.Mix64(s.Seed^0x6a6f6273), sim.Mix64(uint64(i))))
			rng.Shuffle(len(free), func(a, b int) { free[a], free[b] = free[b], free[a] })
		}
		j.Placed = slices.Clone(free[:j.Servers])
		for _, sv := range j.Placed {
			owner[sv] = i
		}
	}
	gps := s.Cluster.GPUsPerServer
	for _, j := range s.Jobs {
		if b := j.Background; b != nil {
			w := s.Jobs[slices.IndexFunc(s.Jobs, func(x *Job) bool { return x.Name == b.From })]
			b.writers = nil
			for _, sv := range w.Placed {
				for g := 0; g < gps; g++ {
					b.writers = append(b.writers, sv*gps+g)
				}
			}
		}
	}
	return nil
}

// backgroundValidate checks job i's background section and its servers (as a training job's,
// without a workload).
func (s *Scenario) backgroundValidate(i int, j *Job, owner []int) error {
	at := fmt.Sprintf("jobs[%d]", i)
	b := j.Background
	k := slices.IndexFunc(s.Jobs, func(x *Job) bool { return x.Name == b.From })
	switch {
	case j.Workload != nil:
		return s.d.At(at+".background", "a job has a workload or a background, not both")
	case k < 0 || k == i:
		var names []string
		for _, x := range s.Jobs {
			if x != j && x.Background == nil {
				names = append(names, x.Name)
			}
		}
		return s.d.At(at+".background.from", "%q is not a training job of this scenario (valid: %s)", b.From, strings.Join(names, ", "))
	case s.Jobs[k].Background != nil:
		return s.d.At(at+".background.from", "%q is itself background traffic: want a training job", b.From)
	case b.Bytes <= 0:
		return s.d.At(at+".background.bytes", "want the bytes each GPU writes, e.g. 1GiB")
	}
	if err := s.checkPlace(j, at); err != nil {
		return err
	}
	return s.claimServers(i, at, owner)
}

// checkPlace checks what every job has, training or background: its server count, its
// server_ids or placement, and its traffic class.
func (s *Scenario) checkPlace(j *Job, at string) error {
	switch {
	case j.Servers < 1 || j.Servers > s.Cluster.Servers:
		return s.d.At(at+".servers", "%d: want 1..%d servers (cluster.servers)", j.Servers, s.Cluster.Servers)
	case len(j.ServerIDs) > 0 && len(j.ServerIDs) != j.Servers:
		return s.d.At(at+".server_ids", "%d servers listed, but servers is %d", len(j.ServerIDs), j.Servers)
	case len(j.ServerIDs) > 0 && j.Placement != "":
		return s.d.At(at+".placement", "%q with server_ids: give one or the other", j.Placement)
	case len(j.ServerIDs) == 0 && j.Placement != "packed" && j.Placement != "scattered" && j.Placement != "random":
		return s.d.At(at+".placement", "%q unknown (valid: packed, scattered, random)", j.Placement)
	case j.Class < 0 || j.Class > 15:
		return s.d.At(at+".class", "%d: want a RoCE priority 0..7 or an InfiniBand SL 0..15", j.Class)
	}
	return nil
}

// claimServers gives job i the servers its server_ids list (owner[server] = i; an empty list
// claims none, placement does that later), refusing a server outside the cluster or already
// another job's.
func (s *Scenario) claimServers(i int, at string, owner []int) error {
	j := s.Jobs[i]
	for _, sv := range j.ServerIDs {
		switch {
		case sv < 0 || sv >= s.Cluster.Servers:
			return s.d.At(at+".server_ids", "server %d: the cluster has servers 0..%d", sv, s.Cluster.Servers-1)
		case owner[sv] >= 0:
			return s.d.At(at+".server_ids", "server %d (GPUs %d..%d) is already %s's (jobs[%d]): jobs must not share GPUs",
				sv, sv*s.Cluster.GPUsPerServer, (sv+1)*s.Cluster.GPUsPerServer-1, s.Jobs[owner[sv]].Name, owner[sv])
		}
		owner[sv] = i
	}
	j.Placed = slices.Clone(j.ServerIDs)
	return nil
}

// backgroundPlan is a background job's ops: one write per writer GPU, none depending on
// anything, from GPU w to target GPU (index mod targets) of the job's servers.
func (s *Scenario) backgroundPlan(j *Job) *training.Plan {
	gps := s.Cluster.GPUsPerServer
	var targets []int
	for _, sv := range j.Placed {
		for g := 0; g < gps; g++ {
			targets = append(targets, sv*gps+g)
		}
	}
	p := &training.Plan{GPUs: s.Cluster.Servers * gps, GPUsPerServer: gps}
	for i, w := range j.Background.writers {
		p.Ops = append(p.Ops, training.Op{ID: i, Kind: training.SendRecv, Ranks: []int{w, targets[i%len(targets)]},
			Bytes: j.Background.Bytes, Phase: "checkpoint", Dim: "bg", Layer: -1, Microbatch: -1, Tag: "checkpoint write"})
	}
	return p
}

// serverLeaves is the leaf switch of each server's first NIC.
func serverLeaves(g *topo.Graph, servers, gps int) []int {
	out := make([]int, servers)
	for sv := range out {
		out[sv] = int(g.Nodes[g.Hosts[sv*gps]].Ports[0].Peer)
	}
	return out
}

// scatter orders the free servers round robin over their leaves: the first free server of
// every leaf, then the second, and so on.
func scatter(free, leafOf []int) []int {
	var leaves []int
	by := map[int][]int{}
	for _, sv := range free {
		l := leafOf[sv]
		if _, ok := by[l]; !ok {
			leaves = append(leaves, l)
		}
		by[l] = append(by[l], sv)
	}
	var out []int
	for k := 0; len(out) < len(free); k++ {
		for _, l := range leaves {
			if k < len(by[l]) {
				out = append(out, by[l][k])
			}
		}
	}
	return out
}

// jobsPlan is every job's plan on the shared cluster: each job's ranks moved to its servers,
// its op IDs after the previous jobs'. s.opJob records each op's job. The plan's summary
// fields (model, parallelism, tokens) are the first job's: the table's step is the first job's.
func (s *Scenario) jobsPlan(ctx context.Context) (*training.Plan, error) {
	var out *training.Plan
	s.opJob = nil
	gps := s.Cluster.GPUsPerServer
	for ji, j := range s.Jobs {
		var p *training.Plan
		if j.Background != nil {
			p = s.backgroundPlan(j)
		} else {
			cfg := *j.Workload
			var err error
			if p, err = training.BuildContext(ctx, &cfg); err != nil {
				if ctx.Err() != nil {
					return nil, err
				}
				return nil, fmt.Errorf("jobs[%d] (%s): %w", ji, j.Name, err)
			}
		}
		if out == nil {
			c := *p
			c.Ops = nil
			out = &c
			out.GPUs = s.Cluster.Servers * gps
		}
		out.ComputeTime = max(out.ComputeTime, p.ComputeTime)
		off := len(out.Ops)
		for _, o := range p.Ops {
			o.ID += off
			o.Deps = slices.Clone(o.Deps)
			for k := range o.Deps {
				o.Deps[k] += off
			}
			o.Ranks = slices.Clone(o.Ranks)
			for k, r := range o.Ranks {
				if j.Background == nil { // a background plan is on the cluster's GPUs already
					o.Ranks[k] = j.Placed[r/gps]*gps + r%gps
				}
			}
			o.Tag = j.Name + " " + o.Tag
			out.Ops = append(out.Ops, o)
			s.opJob = append(s.opJob, ji)
		}
	}
	return out, nil
}

// setClass puts the messages [from, len) of g, compiled for op o, in o's job's traffic class.
func (s *Scenario) setClass(g *msggraph.Graph, from int, o *training.Op) {
	if s.opJob == nil || o.ID >= len(s.opJob) {
		return
	}
	c := uint8(s.Jobs[s.opJob[o.ID]].Class)
	for i := from; i < len(g.Msgs); i++ {
		g.Msgs[i].Prio = c
	}
}

// reportedJob says whether plan op i belongs to the job the summary reports: the first job on a
// shared cluster (its ops come first, and depend only on each other, so the critical path
// from its last op stays inside it), every op otherwise.
func (s *Scenario) reportedJob(i int) bool { return s.opJob == nil || s.opJob[i] == 0 }

// jobStepTimes is each job's step time in one replay: when its last op completes.
func (s *Scenario) jobStepTimes(fin []units.Time) []float64 {
	if len(s.Jobs) == 0 {
		return nil
	}
	out := make([]float64, len(s.Jobs))
	for i, f := range fin {
		j := s.opJob[i]
		out[j] = max(out[j], f.Seconds())
	}
	return out
}

// jobResults runs each job alone on its servers (same variants, steps and seeds) and sets every
// variant's per-job alone and shared step times and the slowdown.
func (s *Scenario) jobResults(ctx context.Context, res *Result, opt Options) error {
	if len(s.Jobs) == 0 || res.Interrupted {
		return nil // interrupted: the shared steps that finished are reported, no alone runs
	}
	alone := make([][]float64, len(s.Jobs)) // [job][variant]
	exposed := make([][]float64, len(s.Jobs))
	for ji := range s.Jobs {
		if len(s.Jobs) == 1 {
			break
		}
		c := s.alone(ji)
		o := opt
		o.Progress = nil
		o.sharedClasses = res.classPlan // the shared run's class backends (auto.go, follow)
		o.Variants = nil
		for _, v := range res.Variants {
			o.Variants = append(o.Variants, v.Variant.Name)
		}
		r, err := Run(ctx, c, o)
		if errors.Is(err, ErrInterrupted) {
			// The shared runs are reported as they finished; no job gets alone figures.
			res.Interrupted = true
			return fmt.Errorf("%w during job %s's alone run: the shared runs finished, the jobs' alone and slowdown figures are left out", ErrInterrupted, s.Jobs[ji].Name)
		}
		if err != nil {
			return fmt.Errorf("job %s alone: %w", s.Jobs[ji].Name, err)
		}
		if res.classPlan != nil { // compare.json's reason: how the alone run decided its classes
			why := fmt.Sprintf("; job %s alone: every class as here", s.Jobs[ji].Name)
			if r.classPlan == nil {
				why = fmt.Sprintf("; job %s alone: every class on %s (its own choice of backend)", s.Jobs[ji].Name, r.Backend)
			} else if u := r.classPlan.unmatched; len(u) > 0 {
				why = fmt.Sprintf("; job %s alone: as here but %s, decided on its own estimates (no class here holds its groups)", s.Jobs[ji].Name, strings.Join(u, ", "))
			}
			for _, v := range res.Variants {
				v.ClassBackendReason += why
			}
		}
		for _, v := range r.Variants {
			alone[ji] = append(alone[ji], v.jobMean(0))
			exposed[ji] = append(exposed[ji], v.ExposedComm)
		}
	}
	for vi, v := range res.Variants {
		for ji, j := range s.Jobs {
			jr := JobResult{Name: j.Name, GPUs: j.Servers * s.Cluster.GPUsPerServer, Class: j.Class, Shared: v.jobMean(ji)}
			jr.Alone, jr.AloneExposed = jr.Shared, v.ExposedComm
			if alone[ji] != nil {
				jr.Alone, jr.AloneExposed = alone[ji][vi], exposed[ji][vi]
			}
			if jr.Alone > 0 {
				jr.Slowdown = jr.Shared/jr.Alone - 1
			}
			v.Jobs = append(v.Jobs, jr)
		}
	}
	return nil
}

// alone is the scenario of job ji alone on its servers (placed as in s).
func (s *Scenario) alone(ji int) *Scenario {
	c := *s
	c.Jobs = []*Job{s.Jobs[ji]}
	c.opJob = nil
	return &c
}

// jobMean is job j's mean step time over the variant's steps.
func (v *VariantResult) jobMean(j int) float64 {
	var sum float64
	for _, st := range v.Steps {
		sum += st.JobStepTimes[j]
	}
	return sum / float64(max(1, len(v.Steps)))
}

// jobsSummary names the jobs and where they run.
func (s *Scenario) jobsSummary() string {
	var parts []string
	for _, j := range s.Jobs {
		how := j.Placement
		if how == "" {
			how = "listed"
		}
		parts = append(parts, fmt.Sprintf("%s on %d servers (%s: %s), class %d", j.Name, j.Servers, how, servers(j.Placed), j.Class))
	}
	return strings.Join(parts, "; ")
}

func servers(ids []int) string {
	var b strings.Builder
	for i, x := range ids {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprint(&b, x)
	}
	return b.String()
}

// writeJobs prints each variant's jobs: alone, shared, slowdown.
func (r *Result) writeJobs(w io.Writer) error {
	if len(r.Scenario.Jobs) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\n  shared cluster (the table's step is %s's): %s\n", r.Scenario.Jobs[0].Name, r.Scenario.jobsSummary())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "  variant\tjob\tGPUs\tclass\talone\tshared\tslowdown\t")
	for _, v := range r.Variants {
		for _, j := range v.Jobs {
			fmt.Fprintf(tw, "  %s\t%s\t%d\t%d\t%s\t%s\t%s\t\n", v.Variant.Name, j.Name, j.GPUs, j.Class, seconds(j.Alone), seconds(j.Shared), pct(j.Slowdown))
		}
	}
	return tw.Flush()
}

// jobsSection is report.html's shared-cluster section.
func (r *Result) jobsSection() report.Section {
	t := &report.Table{Head: []string{"variant", "job", "GPUs", "class", "alone", "shared", "slowdown"},
		RightAlign: []bool{false, false, true, true, true, true, true}}
	bars := &report.StackedBars{Title: "Slowdown from sharing the cluster", Series: []string{"slowdown"}, Values: [][]float64{nil},
		Format: func(x float64) string { return report.Plain(100*x) + "%" }, AxisLabel: "shared / alone - 1"}
	for _, v := range r.Variants {
		for _, j := range v.Jobs {
			bars.Categories = append(bars.Categories, v.Variant.Name+" "+j.Name)
			bars.Values[0] = append(bars.Values[0], max(0, j.Slowdown))
		}
	}
	for _, v := range r.Variants {
		for _, j := range v.Jobs {
			t.Rows = append(t.Rows, []string{v.Variant.Name, j.Name, fmt.Sprint(j.GPUs), fmt.Sprint(j.Class), seconds(j.Alone), seconds(j.Shared), pct(j.Slowdown)})
		}
	}
	return report.Section{Title: "Shared cluster", Tables: []*report.Table{t}, Charts: []report.Chart{bars},
		Text: []string{"Jobs: " + r.Scenario.jobsSummary() + ".",
			"Each job's step is when its last op completes, all jobs starting together; alone is the same job on the same servers with the others absent (same variants, steps and seeds); slowdown = shared / alone - 1 (docs/jobs.md). The summary table's step is the first job's."}}
}

// pct is a slowdown in percent, one decimal, without a minus sign on a rounded zero.
func pct(x float64) string {
	if x > -0.0005 && x < 0.0005 {
		x = 0
	}
	return fmt.Sprintf("%.1f%%", 100*x)
}
