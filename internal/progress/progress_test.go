package progress

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// clock is a fake clock the test moves by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// syncBuffer is a bytes.Buffer safe for the ticker goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// TestLinesEveryChange: with Every 0 a writer that is not a terminal gets one plain line per
// change, with the elapsed time of the injected clock and the time left at the rate so far
// (4 of 12 in 20 s: 40 s for the other 8).
func TestLinesEveryChange(t *testing.T) {
	var out bytes.Buffer
	c := &clock{t: time.Unix(0, 0)}
	m := Start(&out, Options{Label: "compare", Unit: "simulations", Every: 0, Now: c.now})
	c.add(20 * time.Second)
	m.Set(4, 12)
	c.add(60 * time.Second)
	m.Note("t=1.5ms simulated")
	m.Set(12, 12)
	m.Stop()
	want := "compare: 4/12 simulations, 20s elapsed, about 40s left\n" +
		"compare: 4/12 simulations, t=1.5ms simulated, 1m20s elapsed, about 2m40s left\n" +
		"compare: 12/12 simulations, t=1.5ms simulated, 1m20s elapsed\n"
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}
}

// TestLinesPeriodic: with a period, lines come from the ticker while the work goes on (here
// every millisecond of real time: the test waits for three), and Stop prints the final state.
func TestLinesPeriodic(t *testing.T) {
	var out syncBuffer
	m := Start(&out, Options{Label: "run", Unit: "messages", Every: time.Millisecond})
	m.Set(1, 8)
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(out.String(), "\n") < 3 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	m.Set(8, 8)
	m.Stop()
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) < 4 {
		t.Fatalf("%d lines, want at least 3 periodic ones and the final one:\n%s", len(lines), out.String())
	}
	for _, l := range lines[:len(lines)-1] {
		if !strings.HasPrefix(l, "run: 1/8 messages, ") {
			t.Errorf("periodic line %q", l)
		}
	}
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "run: 8/8 messages, ") {
		t.Errorf("final line %q, want the final state", last)
	}
}

// TestQuiet: --quiet prints nothing, whatever happens.
func TestQuiet(t *testing.T) {
	var out bytes.Buffer
	m := Start(&out, Options{Label: "compare", Unit: "simulations", Quiet: true, Every: 0})
	m.Set(1, 2)
	m.Note("x")
	m.Set(2, 2)
	m.Stop()
	if out.Len() != 0 {
		t.Errorf("quiet meter printed %q", out.String())
	}
}

// TestBarOnTerminal: on a terminal the bar is drawn (carriage returns), never plain lines,
// and Stop clears it.
func TestBarOnTerminal(t *testing.T) {
	var out syncBuffer
	yes := true
	m := Start(&out, Options{Label: "compare", Unit: "simulations", Every: 0, Terminal: &yes})
	m.Set(1, 2)
	m.Stop()
	s := out.String()
	if strings.Contains(s, "compare: 1/2") || !strings.Contains(s, "\r") || !strings.HasSuffix(s, "\r\033[K") {
		t.Errorf("terminal output %q: want a bar, cleared at the end", s)
	}
}
