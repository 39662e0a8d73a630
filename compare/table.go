package compare

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/fabricsim/fabricsim/backend"
)

// Columns of the terminal table, in order, with what each means (the README and
// docs/compare.md print this list).
var Columns = [][2]string{
	{"variant", "the fabric variant's name (labels and parameters are in compare.json and report.html)"},
	{"step", "simulated training step time, mean over the simulated steps"},
	{"compute", "compute time on the step's critical path"},
	{"exposed", "communication on the critical path not hidden behind compute (step = compute + exposed)"},
	{"coll p50/p99", "median and 99th-percentile completion time of the step's network collectives"},
	{"var", "step-to-step variation: (slowest - fastest) / mean over the simulated steps"},
	{"drops", "packets dropped per step (a lossless fabric should show 0)"},
	{"pauses", "PFC pause frames sent per step (RoCEv2)"},
	{"credit stall", "time InfiniBand ports waited for credits per step, summed over ports"},
	{"network $", "network capital cost: switches, NICs, optics and cables from the bill of materials"},
	{"$/GPU", "network cost per GPU"},
	{"train", "days to train the scenario's tokens at this step time"},
	{"net $ to train", "network capital cost amortized over the training time (cost.amortization_years)"},
	{"backend", "the backend that simulated the variant (packet, flow or analytic); why is printed below the table"},
}

// WriteTable prints the comparison: a header naming the workload and cluster, one row per
// variant, then one verdict line per variant and the variants without a cost.
func (r *Result) WriteTable(w io.Writer) error {
	p := r.Plan
	fmt.Fprintf(w, "%s: %s, %d tokens/step; %s, %s, %s; backend %s, %d step(s)\n\n",
		r.Scenario.Name, p.header(), p.TokensPerStep, p.Topology, p.LinkRate, p.DataPath, r.Backend, r.Scenario.Steps)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	var head []string
	for _, c := range Columns {
		head = append(head, c[0])
	}
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, v := range r.Variants {
		if v.StepsFinished == 0 {
			// Interrupted before any step finished: only the cost is known.
			fmt.Fprintf(tw, "%s\tunfinished\t-\t-\t-\t-\t-\t-\t-\t%s\t%s\t-\t-\t%s\t\n",
				v.Variant.Name, v.money(v.NetworkUSD), v.money(v.PerGPUUSD), v.Backend)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s / %s\t%.1f%%\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n",
			v.Variant.Name, seconds(v.StepTime), seconds(v.Compute), seconds(v.ExposedComm),
			seconds(v.CollP50), seconds(v.CollP99), v.Variation*100,
			count(v.Drops), count(v.Pauses), seconds(v.CreditStall),
			v.money(v.NetworkUSD), v.money(v.PerGPUUSD), v.trainDays(), v.trainMoney(), v.Backend)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	for _, v := range r.Variants {
		fmt.Fprintf(w, "  %-14s %s\n", v.Variant.Name+":", v.Verdict)
	}
	r.writeBackendReasons(w)
	r.writeClassBackends(w)
	if err := r.writeJitter(w); err != nil { // jitter.go
		return err
	}
	if err := r.writeJobs(w); err != nil { // jobs.go
		return err
	}
	r.writeFaults(w) // faults.go
	if r.Interrupted {
		fmt.Fprintf(w, "\n  interrupted: figures are over the finished steps only;")
		sep := " unfinished:"
		for _, v := range r.Variants {
			if v.Unfinished {
				fmt.Fprintf(w, "%s %s (%d of %d steps)", sep, v.Variant.Name, v.StepsFinished, r.Scenario.Steps)
				sep = ","
			}
		}
		if sep == " unfinished:" && len(r.Scenario.Jobs) > 1 { // jobs.go: cut in an alone run
			fmt.Fprint(w, " every shared step finished, the jobs' alone runs did not: no alone or slowdown figures")
		}
		fmt.Fprintln(w)
	}
	noted := false
	for _, v := range r.Variants {
		if len(v.Omitted) > 0 {
			if !noted {
				fmt.Fprintln(w)
			}
			noted = true
			fmt.Fprintf(w, "  ! %s: the %s backend leaves out %s; its step time does not show them (--backend packet or flow does)\n",
				v.Variant.Name, r.Backend, strings.Join(v.Omitted, ", "))
		}
	}
	for _, v := range r.Variants {
		if v.CostError != "" {
			if !noted {
				fmt.Fprintln(w)
			}
			noted = true
			fmt.Fprintf(w, "  %s: no cost: %s\n", v.Variant.Name, v.CostError)
		}
	}
	return nil
}

func count(x float64) string {
	switch {
	case x >= 1e6:
		return fmt.Sprintf("%.1fM", x/1e6)
	case x >= 1e4:
		return fmt.Sprintf("%.0fk", x/1e3)
	}
	return fmt.Sprintf("%.0f", x)
}

// money is the variant's cost figure, or n/a when it could not be priced.
func (v *VariantResult) money(x float64) string {
	if v.CostError != "" {
		return "n/a"
	}
	return money(x)
}

func money(x float64) string {
	switch {
	case x >= 1e6:
		return fmt.Sprintf("$%.2fM", x/1e6)
	case x >= 1e4:
		return fmt.Sprintf("$%.0fk", x/1e3)
	}
	return fmt.Sprintf("$%.0f", x)
}

// writeBackendReasons prints which backend ran the variants and why: one line when every
// variant ran on the same backend for the same reason (a compare chooses once), else one per
// variant.
func (r *Result) writeBackendReasons(w io.Writer) {
	same := true
	for _, v := range r.Variants {
		same = same && v.BackendReason == r.Variants[0].BackendReason
	}
	if len(r.Variants) == 0 || r.Variants[0].BackendReason == "" && same {
		return
	}
	fmt.Fprintln(w)
	if same {
		fmt.Fprintf(w, "  backend (all variants) %s\n", r.Variants[0].BackendReason)
		return
	}
	for _, v := range r.Variants {
		fmt.Fprintf(w, "  backend of %-14s %s\n", v.Variant.Name+":", v.BackendReason)
	}
}

// writeClassBackends prints, where backend auto ran the flow backend in class fidelity and some
// class on the packet backend, how many classes ran on each backend and why (classPlan): one
// line when every variant's is the same (a compare decides each class once), else one per
// variant. Where every class ran on the flow backend the line under the table says it all, and
// compare.json has the counts and the estimates.
func (r *Result) writeClassBackends(w io.Writer) {
	same, any := true, false
	for _, v := range r.Variants {
		same = same && v.ClassBackendReason == r.Variants[0].ClassBackendReason
		any = any || v.ClassBackends[backend.Packet] > 0
	}
	if !any {
		return
	}
	if same {
		fmt.Fprintf(w, "  classes (all variants) %s\n", r.Variants[0].ClassBackendReason)
		return
	}
	for _, v := range r.Variants {
		if v.ClassBackends[backend.Packet] > 0 {
			fmt.Fprintf(w, "  classes of %-14s %s\n", v.Variant.Name+":", v.ClassBackendReason)
		}
	}
}
