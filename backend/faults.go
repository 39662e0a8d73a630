package backend

import (
	"fmt"

	"github.com/fabricsim/fabricsim/fabric"
)

// FaultsError refuses a job with faults (fabric.Config.Faults) on a backend that does not model
// them: the analytic backend models none, the flow backend all but a PFC storm and a slow
// receiver on a lossy fabric (flow.FaultsUnsupported; docs/faults.md).
type FaultsError struct {
	Backend Name
	Faults  int
	// Why names the fault the backend cannot run ("": it runs none).
	Why string
}

func (e *FaultsError) Error() string {
	if e.Why != "" {
		return e.Why
	}
	return fmt.Sprintf("the %s backend does not model faults (the job has %d); run it on the packet or flow backend", e.Backend, e.Faults)
}

// refuseFaults returns a *FaultsError when cfg has faults.
func refuseFaults(b Name, cfg *fabric.Config) error {
	if n := len(cfg.Faults.Faults); n > 0 {
		return &FaultsError{Backend: b, Faults: n}
	}
	return nil
}
