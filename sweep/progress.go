package sweep

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress reports runs as they finish.
type progress interface {
	done(failed bool)
	finish()
}

// newProgress draws a bar with an ETA when w is a terminal, prints a line at most every
// interval otherwise, and prints nothing when w is nil.
func newProgress(w io.Writer, total, skipped int, interval time.Duration) progress {
	if w == nil || total == 0 {
		return nopProgress{}
	}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		bar := progressbar.NewOptions(total,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription("sweep"),
			progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionShowDescriptionAtLineEnd(),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }),
		)
		return &barProgress{bar: bar, w: w}
	}
	return &lineProgress{w: w, total: total, skipped: skipped, start: time.Now(), last: time.Now(), interval: interval}
}

type nopProgress struct{}

func (nopProgress) done(bool) {}
func (nopProgress) finish()   {}

type barProgress struct {
	mu     sync.Mutex
	bar    *progressbar.ProgressBar
	w      io.Writer
	failed int
}

func (p *barProgress) done(failed bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if failed {
		p.failed++
		p.bar.Describe(fmt.Sprintf("sweep (%d failed)", p.failed))
	}
	p.bar.Add(1)
}

func (p *barProgress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.bar.IsFinished() {
		fmt.Fprintln(p.w)
	}
}

type lineProgress struct {
	mu             sync.Mutex
	w              io.Writer
	total, skipped int
	n, failed      int
	start, last    time.Time
	interval       time.Duration
	dirty          bool
}

func (p *lineProgress) done(failed bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	if failed {
		p.failed++
	}
	p.dirty = true
	if now := time.Now(); now.Sub(p.last) >= p.interval {
		p.last = now
		p.print()
	}
}

func (p *lineProgress) print() {
	p.dirty = false
	elapsed := time.Since(p.start)
	eta := "?"
	if p.n > 0 {
		eta = (elapsed / time.Duration(p.n) * time.Duration(p.total-p.n)).Round(time.Second).String()
	}
	fmt.Fprintf(p.w, "sweep: %d/%d runs done (%d failed), elapsed %s, eta %s\n", p.n, p.total, p.failed, elapsed.Round(time.Second), eta)
}

func (p *lineProgress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dirty {
		p.print()
	}
}
