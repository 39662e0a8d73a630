package flow_test

import (
	"testing"

	"github.com/fabricsim/fabricsim/flow"
)

// TestTailDropCompletes: incast-32 (32 senders of 2 MB into one 100 Gb/s port, tail drop and
// go-back-N) completes every message on seeds 1-8 of validation row 7, and the receiver gets
// each message's bytes once: delivered equals offered; every run NAKs, and some time out. Before the loss model kept the discarded
// stream of a rewind apart from the bytes ahead of a gap, bytes lost further on in the step a gap
// formed were never sent again on seeds 2, 6 and 8: those flows stalled with nothing in flight and
// the run ended with 4 to 7 messages unfinished (Finish 0) and no error.
func TestTailDropCompletes(t *testing.T) {
	var timeouts int64
	for seed := uint64(1); seed <= 8; seed++ {
		g, cfg, mg := loadExample(t, "incast-32.yaml")
		cfg.Seed = seed
		r, err := flow.Run(g, nil, cfg, mg, flow.Options{Check: true})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		var offered int64
		for i, m := range r.Messages {
			if !m.Done() || m.Finish <= m.Start {
				t.Errorf("seed %d: message %d unfinished (start %v, finish %v)", seed, i, m.Start, m.Finish)
			}
			offered += m.Bytes
		}
		if r.BytesDelivered != offered {
			t.Errorf("seed %d: %d bytes delivered, %d offered", seed, r.BytesDelivered, offered)
		}
		if r.Drops == 0 || r.NAKs == 0 {
			t.Errorf("seed %d: drops %d, NAKs %d: the incast should lose bytes and NAK gaps", seed, r.Drops, r.NAKs)
		}
		timeouts += r.Timeouts
	}
	if timeouts == 0 {
		t.Errorf("no timeout over the seeds: flows that lose the rest of their burst recover only by the timer")
	}
}
