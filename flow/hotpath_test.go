package flow

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"testing"
)

// TestHotPathUnchanged holds the congested step's speed work (the entry layout of fifo, the hand-off)
// to the results of the plain version: every message's start and finish, every counter and port
// record of three runs, as the SHA-256 of their result JSON (WallSeconds zeroed), against the
// hashes the plain version (the engine before the windows moved into the queue entries, commit
// 246185b) gave. A change that is meant to alter results re-records them: run with -v, where each
// run logs its hash (the two DCQCN runs' were re-recorded when CNPs came to be sent as the marked
// bytes are delivered: flow/dcqcn.go, deliveredMarks; the two pipeline runs' when the path
// latency became the first packet's, engine.latency: roce-default's end -1.8 %, every FCT moved,
// roce-pfc-only's FCTs by at most 1.1 ns; the two DCQCN runs' when marks came to be on frames'
// first bytes and paced flows to wait for their NIC's round robin: flow/dcqcn.go, markAt and
// rrWait).
func TestHotPathUnchanged(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the 2,048-GPU pipeline class twice")
	}
	runs := []struct {
		name, want string
		run        func(t *testing.T) any
	}{
		{"pipeline-2048/roce-default", "ab371574c283e6069aeeaa09765bc935dbe7c9ecf0f112691737438c59e725d0", func(t *testing.T) any { return hotClass(t, false) }},
		{"pipeline-2048/roce-pfc-only", "0a8100cbc96c2c493fd7f588a433efd0310c6dd54db9c4fc465c093562ed0f25", func(t *testing.T) any { return hotClass(t, true) }},
		{"permutation-dcqcn", "45eef64616a46cbd8ce818b59231829825216b3ad19df1bc760fb54f87bf0897", func(t *testing.T) any {
			g, r, cfg, mg := permutationDCQCN(t)
			res, err := Run(g, r, cfg, mg, Options{})
			if err != nil {
				t.Fatal(err)
			}
			res.WallSeconds = 0
			return res
		}},
	}
	for _, c := range runs {
		t.Run(c.name, func(t *testing.T) {
			b, err := json.Marshal(c.run(t))
			if err != nil {
				t.Fatal(err)
			}
			got := fmt.Sprintf("%x", sha256.Sum256(b))
			t.Logf("%s: %s (%d bytes)", c.name, got, len(b))
			if got != c.want {
				t.Errorf("result hash %s, the plain version's %s", got, c.want)
			}
		})
	}
}

// hotClass runs BenchmarkPipelineClass's 2,048-GPU class (adaptive step), with DCQCN or with PFC
// alone.
func hotClass(t *testing.T, pfcOnly bool) any {
	res := runClass2048(t, pfcOnly, Options{})
	res.WallSeconds = 0
	return res
}

// TestServeWinMatchesPlain holds fifo.serveWin's kept edge places (a partly sent segment's
// windows sorted once, each entry's edges found once, by a scan where short) to the plain version
// (Options.plainWin: slices.Sort, and slices.BinarySearch every time A is read): the 2,048-GPU
// pipeline class, which sends 325,306 segments in part (DCQCN), gives the same result JSON both
// ways, with DCQCN and with PFC alone.
func TestServeWinMatchesPlain(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the 2,048-GPU pipeline class four times")
	}
	for _, pfcOnly := range []bool{false, true} {
		var out [2][]byte
		for i, plain := range []bool{false, true} {
			res := runClass2048(t, pfcOnly, Options{plainWin: plain})
			res.WallSeconds = 0
			b, err := json.Marshal(res)
			if err != nil {
				t.Fatal(err)
			}
			out[i] = b
		}
		if string(out[0]) != string(out[1]) {
			t.Errorf("pfcOnly %v: the result differs from the plain serveWin's (%d against %d bytes)", pfcOnly, len(out[0]), len(out[1]))
		}
	}
}
