package backend

import (
	"fmt"

	"github.com/fabricsim/fabricsim/fabric"
)

// FaultsError refuses a job with faults (fabric.Config.Faults) on a backend that does not model
// them: only the packet backend takes links down and reroutes (docs/faults.md).
type FaultsError struct {
	Backend Name
	Faults  int
}

func (e *FaultsError) Error() string {
	return fmt.Sprintf("the %s backend does not model faults (the job has %d); run it on the packet backend", e.Backend, e.Faults)
}

// refuseFaults returns a *FaultsError when cfg has faults.
func refuseFaults(b Name, cfg *fabric.Config) error {
	if n := len(cfg.Faults.Faults); n > 0 {
		return &FaultsError{Backend: b, Faults: n}
	}
	return nil
}
