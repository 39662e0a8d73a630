// Package progress reports a long command's progress on stderr: a bar on a terminal, a plain
// line every few seconds anywhere else (a CI log, nohup, a pipe), where a bar's carriage
// returns would pile up into one unreadable line, and nothing when the user asked for quiet.
package progress

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// DefaultEvery is the period of the plain lines: often enough that a CI log shows the command
// is alive, rarely enough that an hour's run leaves some hundred lines.
const DefaultEvery = 5 * time.Second

// Options configure a Meter.
type Options struct {
	// Label starts every line ("compare"); Unit names what is counted ("simulations").
	Label, Unit string
	// Quiet prints nothing (--quiet).
	Quiet bool
	// Every is the period of the plain lines; 0 prints a line at every change (for tests and
	// for commands whose steps are minutes apart). Negative means DefaultEvery.
	Every time.Duration
	// Now is the clock for elapsed times; nil means time.Now.
	Now func() time.Time
	// Terminal forces the bar (true) or the lines (false); nil asks whether the writer is a
	// terminal.
	Terminal *bool
}

// Meter tracks done out of total and reports it. Its methods are safe for concurrent use.
type Meter struct {
	o     Options
	w     io.Writer
	start time.Time

	mu          sync.Mutex
	done, total int
	note        string
	printed     bool // a plain line has been printed
	dirty       bool // the state changed since the last plain line
	tty         bool
	bar         *progressbar.ProgressBar
	stop        chan struct{}
	exited      chan struct{}
	stopped     bool
}

// Start begins reporting to w. Call Stop when the work ends.
func Start(w io.Writer, o Options) *Meter {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Every < 0 {
		o.Every = DefaultEvery
	}
	m := &Meter{o: o, w: w, start: o.Now()}
	if o.Quiet || w == nil {
		return m
	}
	tty := isTerminal(w)
	if o.Terminal != nil {
		tty = *o.Terminal
	}
	if tty {
		m.tty = true // the bar is drawn once the total is known
		return m
	}
	if o.Every > 0 {
		m.stop, m.exited = make(chan struct{}), make(chan struct{})
		go m.tick(time.NewTicker(o.Every))
	}
	return m
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Set records done out of total.
func (m *Meter) Set(done, total int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if done == m.done && total == m.total {
		return
	}
	m.done, m.total, m.dirty = done, total, true
	m.changed()
}

// Note sets a short text shown after the count ("t=1.2ms simulated").
func (m *Meter) Note(s string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s == m.note {
		return
	}
	m.note, m.dirty = s, true
	m.changed()
}

// changed updates the bar, or prints a line when lines follow every change. m.mu is held.
func (m *Meter) changed() {
	switch {
	case m.stopped || m.o.Quiet || m.w == nil:
	case m.tty:
		if m.total <= 0 {
			return
		}
		if m.bar == nil {
			m.bar = progressbar.NewOptions(m.total,
				progressbar.OptionSetWriter(m.w),
				progressbar.OptionShowCount(),
				progressbar.OptionSetPredictTime(true),
				progressbar.OptionSetElapsedTime(true),
				progressbar.OptionThrottle(100*time.Millisecond),
				progressbar.OptionShowDescriptionAtLineEnd(),
			)
		} else if m.bar.GetMax() != m.total {
			m.bar.ChangeMax(m.total)
		}
		desc := m.o.Label
		if m.note != "" {
			desc += " " + m.note
		}
		m.bar.Describe(desc)
		_ = m.bar.Set(m.done)
	case m.o.Every == 0:
		m.line()
	}
}

func (m *Meter) tick(t *time.Ticker) {
	defer close(m.exited)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
			m.mu.Lock()
			if m.total > 0 {
				m.line()
			}
			m.mu.Unlock()
		}
	}
}

// line prints "compare: 5/12 simulations, t=1.2ms, 1m20s elapsed, about 2m left". m.mu is held.
func (m *Meter) line() {
	elapsed := m.o.Now().Sub(m.start)
	s := fmt.Sprintf("%s: %d/%d %s", m.o.Label, m.done, m.total, m.o.Unit)
	if m.note != "" {
		s += ", " + m.note
	}
	s += ", " + round(elapsed) + " elapsed"
	if m.done > 0 && m.done < m.total {
		s += ", about " + round(elapsed/time.Duration(m.done)*time.Duration(m.total-m.done)) + " left"
	}
	fmt.Fprintln(m.w, s)
	m.printed, m.dirty = true, false
}

// round prints a duration to the second ("1m20s"), or to the millisecond below a second.
func round(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// Stop ends the report: it clears the bar, or, when plain lines were printed and the state
// moved on since the last one, prints the final state, so that a log ends with where the work
// stopped.
func (m *Meter) Stop() {
	m.mu.Lock()
	if m.stopped {
		m.mu.Unlock()
		return
	}
	m.stopped = true
	stop := m.stop
	m.mu.Unlock()
	if stop != nil {
		close(stop)
		<-m.exited
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.bar != nil {
		_ = m.bar.Exit() // keeps the state it reached (Finish would draw it full)
		fmt.Fprint(m.w, "\r\033[K")
		return
	}
	if m.printed && m.dirty && m.total > 0 {
		m.line()
	}
}
