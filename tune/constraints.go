package tune

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/yamlstrict"
)

// Constraints every candidate must meet, checked before it runs (static) and on what it did:
//
//   - the fabric configuration is valid (fabric.Config.Validate: XON above XOFF, Kmin above Kmax
//     where a pair was not reordered, headroom larger than the buffer ...);
//   - a PFC headroom given explicitly is at least what the longest cable needs
//     (requiredHeadroom), and the run did not find a port's headroom below it
//     (pfc_headroom_misconfigured);
//   - with PFC on, nothing is dropped (the lossless class stays lossless: no buffer, headroom
//     or watchdog drop);
//   - the PFC watchdog never fired (pfc_watchdog_triggers: a queue paused so long that the
//     switch flushed it);
//   - the run did not stop for a PFC deadlock or a standstill (no progress).
//
// A candidate that breaks one is recorded with its violations, ranked below every valid one by
// the optimizer, and never chosen.

// applyText sets the fabric key to the value written as text (as a scenario would write it).
func applyText(c *fabric.Config, key, text string) error {
	for _, k := range fabric.Keys() {
		if k.Name == key {
			v := reflect.ValueOf(c).Elem().FieldByIndex(k.Index)
			return yamlstrict.NewDecoder("").Decode(scalarNode(text), v, key)
		}
	}
	return fmt.Errorf("%s is not a fabric key", key)
}

// staticViolations checks a candidate's configuration before running it.
func (p *Problem) staticViolations(c fabric.Config) []string {
	var out []string
	if err := c.Validate(); err != nil {
		out = append(out, "invalid configuration: "+err.Error())
	}
	r := &c.RoCE
	if c.Kind == fabric.KindRoCE && r.PFC && r.Headroom > 0 && r.Headroom < p.NeedHeadroom {
		out = append(out, fmt.Sprintf("headroom: pfc_headroom %v is below the %v the longest cable needs (mlx5 and IEEE 802.1Qbb formulas)", r.Headroom, p.NeedHeadroom))
	}
	return out
}

// runViolations checks what an evaluation did. c is the candidate's configuration.
func (p *Problem) runViolations(c fabric.Config, o outcome) []string {
	if o.Err != "" {
		msg, _, _ := strings.Cut(o.Err, "\n")
		if strings.Contains(msg, "no progress") || strings.Contains(msg, "no byte delivered") || strings.Contains(strings.ToLower(msg), "deadlock") {
			return []string{"deadlock: the run stopped with packets held and nothing delivered: " + msg}
		}
		return []string{"run failed: " + msg}
	}
	m := o.Metrics
	var out []string
	if c.Kind == fabric.KindRoCE && c.RoCE.PFC {
		drops := m["drops"]
		per := " per step"
		if p.Kind == KindRun {
			// A run's drops by cause: injected loss (random_loss, corrupt) is the scenario's
			// own, not a lossless class overflowing.
			drops = m["drops.buffer"] + m["drops.headroom"] + m["drops.pfc_watchdog"] + m["drops.no_route"]
			per = ""
		}
		if drops > 0 {
			out = append(out, fmt.Sprintf("drops: %.4g packets dropped%s with PFC on (the lossless class must not drop)", drops, per))
		}
	}
	if x := m["pfc_watchdog_triggers"]; x > 0 {
		out = append(out, fmt.Sprintf("watchdog: the PFC watchdog flushed %.4g queues (pauses that long are a storm or a deadlock)", x))
	}
	if m["pfc_headroom_misconfigured"] > 0 {
		out = append(out, "headroom: a port's headroom is below what its cable needs")
	}
	return out
}

// violationKind is the first word of a violation ("drops", "watchdog", "headroom", "deadlock",
// "invalid configuration", "run failed"), for the report's tally.
func violationKind(v string) string {
	k, _, _ := strings.Cut(v, ":")
	return k
}
