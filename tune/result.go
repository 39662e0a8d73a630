package tune

import (
	"encoding/json"
	"io"
	"math"

	"github.com/fabricsim/fabricsim/backend"
)

// Result is everything a tune produced; tune.json is its JSON (docs/tune.md describes every
// field) and report.html is rendered from it. It holds no host times, so the same scenario,
// seed and budget give the same tune.json.
type Result struct {
	Tool string `json:"tool"`
	// Scenario is the scenario file as given, Name its name.
	Scenario string `json:"scenario"`
	Name     string `json:"name"`
	Kind     Kind   `json:"kind"`
	// Variant is the compare variant tuned ("" for a run scenario); compare's from_tune
	// applies Best.Fabric over it.
	Variant   string       `json:"variant,omitempty"`
	Objective Objective    `json:"objective"`
	Metric    string       `json:"objective_metric"`
	Unit      string       `json:"objective_unit"`
	Backend   backend.Name `json:"backend"`
	// Seed is the search's seed (the optimizer's samples); ScenarioSeed the simulations'.
	Seed         uint64       `json:"seed"`
	ScenarioSeed uint64       `json:"scenario_seed"`
	Budget       int          `json:"budget"`
	Method       string       `json:"method"`
	Population   int          `json:"population"`
	Space        []SpaceEntry `json:"space"`
	// Best is the winner: the best valid candidate of the search; nil when none was valid.
	Best *Best `json:"best"`
	// Checks are the winner beside the references on the search's seeds, on unseen seeds and
	// on the second traffic mix.
	Checks      []Check       `json:"checks"`
	Sensitivity []Sensitivity `json:"sensitivity"`
	// Violations tallies the constraint violations of the evaluations by kind.
	Violations  map[string]int `json:"violations"`
	Evaluations []Evaluation   `json:"evaluations"`
	// References are the evaluations outside the search (InfiniBand, the checks).
	References []Evaluation `json:"references"`
	// Arms are the combinations of the categorical choices (tune.choices) and how each fared;
	// empty when the scenario lists none.
	Arms []ArmResult `json:"arms,omitempty"`
	// Converged says CMA-ES stopped before the budget (its distribution collapsed).
	Converged bool `json:"converged"`
	// Interrupted says the tune was stopped before it finished; the rest is what finished.
	Interrupted bool `json:"interrupted"`

	// Ran counts the evaluations this process simulated (the others were committed before);
	// WallSeconds is its host time. Neither is in tune.json.
	Ran         int     `json:"-"`
	WallSeconds float64 `json:"-"`
	outDir      string  // where WriteFiles wrote, for the report's from_tune example
}

// SpaceEntry is one searched setting.
type SpaceEntry struct {
	Key    string `json:"key"`
	Min    string `json:"min"`
	Max    string `json:"max"`
	Scale  Scale  `json:"scale"`
	Source string `json:"source"`
	// Start is its value in the configured fabric.
	Start string `json:"start"`
}

// Best is the winner.
type Best struct {
	// Evaluation is its number in Evaluations (from 1).
	Evaluation int     `json:"evaluation"`
	Objective  float64 `json:"objective"`
	// Fabric is the winner's setting of every searched key (and of any key it sets besides),
	// by its scenario key under fabric: ("dcqcn_rate_ai": "20Mbps"), as compare's from_tune
	// and config export read them; EffectiveFabric is every key of the fabric's kind.
	Fabric          map[string]string `json:"fabric"`
	EffectiveFabric map[string]string `json:"effective_fabric"`
}

// Evaluation is one candidate evaluated.
type Evaluation struct {
	// N numbers the search's evaluations from 1 in the order the search proposed them.
	N  int    `json:"n,omitempty"`
	ID string `json:"id"`
	// Generation is 0 for the start points, then CMA-ES's generation.
	Generation int `json:"generation"`
	// Role is configured (the variant as configured), production (the published values),
	// search, or, for references, infiniband or winner.
	Role string `json:"role"`
	// Arm is the combination of categorical choices it belongs to (tune.choices).
	Arm string `json:"arm,omitempty"`
	// Check names the condition of a reference evaluation (search seeds, unseen seeds,
	// second mix).
	Check string `json:"check,omitempty"`
	Seed  uint64 `json:"seed"`
	// Fabric are the settings written over the variant.
	Fabric map[string]string `json:"fabric,omitempty"`
	// Objective is nil when the candidate never ran (rejected before) or its run failed.
	Objective  *float64           `json:"objective"`
	Feasible   bool               `json:"feasible"`
	Violations []string           `json:"violations,omitempty"`
	Metrics    map[string]float64 `json:"metrics,omitempty"`

	unit []float64 // where it sits in the space (Param.Unit of its effective values)
}

// Check is the winner and the references under one condition.
type Check struct {
	Name string `json:"name"`
	// What describes the condition ("seed 1", "seeds not used in the search: ...").
	What string     `json:"what"`
	Rows []CheckRow `json:"rows"`
	// GapClosed is the share of the configured-to-InfiniBand gap the winner closes
	// ((configured - winner) / (configured - infiniband)); ProductionGapClosed the production
	// values'. Both nil without an InfiniBand reference or a gap.
	GapClosed           *float64 `json:"gap_closed,omitempty"`
	ProductionGapClosed *float64 `json:"production_gap_closed,omitempty"`
	// Gain is the winner's improvement over the configured fabric, (configured - winner) /
	// configured.
	Gain *float64 `json:"gain,omitempty"`
	// Holds says the winner's gain holds here (Verdict says why or why not).
	Holds   bool   `json:"holds"`
	Verdict string `json:"verdict"`
}

// CheckRow is one fabric under a check's condition.
type CheckRow struct {
	Role       string   `json:"role"`
	Label      string   `json:"label"`
	ID         string   `json:"id"`
	Objective  *float64 `json:"objective"`
	Feasible   bool     `json:"feasible"`
	Violations []string `json:"violations,omitempty"`
}

// Sensitivity is one setting's effect, from the evaluated points.
type Sensitivity struct {
	Key string `json:"key"`
	// Spearman is the rank correlation between the setting (its position in the range) and the
	// objective over the valid evaluations: near +1 larger values were worse, near -1 better,
	// near 0 no monotone effect was seen.
	Spearman float64 `json:"spearman"`
	// Points is how many valid evaluations it is computed from.
	Points int `json:"points"`
	// Best is the winner's value, Start the configured one.
	Best  string `json:"best"`
	Start string `json:"start"`
}

// WriteJSON writes tune.json.
func (r *Result) WriteJSON(w io.Writer) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(r)
}

func ptr(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

// finite drops metrics JSON cannot hold.
func finite(m map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, x := range m {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			out[k] = x
		}
	}
	return out
}
