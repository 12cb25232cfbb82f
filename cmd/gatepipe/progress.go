package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gatepipe/gatepipe/engine"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/rs/zerolog"
)

// progressView is the live display of an apply: a log line per node that
// ran, failed or was skipped, plus, on a terminal, a status line with the
// count of finished nodes and each running node's progress. Off a terminal
// it logs progress at most every few seconds per node instead.
type progressView struct {
	mu       sync.Mutex
	out      io.Writer
	tty      bool
	log      zerolog.Logger
	total    int
	finished int
	running  map[string]*nodeState
	shown    bool // a status line is on screen
	lastDraw time.Time
	every    time.Duration
}

type nodeState struct {
	done, total int64
	unit        string
	lastLog     time.Time
	dev         nodes.Assignment
}

var _ engine.Reporter = (*progressView)(nil)

// newProgressView returns the view and the writer the logger must use so
// log lines and the status line do not garble each other.
func newProgressView(out io.Writer, tty bool) (*progressView, io.Writer) {
	p := &progressView{out: out, tty: tty, running: map[string]*nodeState{}, every: 5 * time.Second}
	return p, statusSafeWriter{p}
}

func (p *progressView) setLogger(l zerolog.Logger) { p.log = l }

type statusSafeWriter struct{ p *progressView }

func (w statusSafeWriter) Write(b []byte) (int, error) {
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	w.p.clearLocked()
	n, err := w.p.out.Write(b)
	w.p.drawLocked()
	return n, err
}

func (p *progressView) Start(total int) {
	p.mu.Lock()
	p.total = total
	p.mu.Unlock()
}

func (p *progressView) NodeStarted(addr string, dev nodes.Assignment) {
	p.mu.Lock()
	p.running[addr] = &nodeState{dev: dev, lastLog: time.Now()}
	p.mu.Unlock()
	ev := p.log.Info().Str("node", addr).Int("cpus", dev.CPUs)
	if len(dev.GPUs) > 0 {
		ev = ev.Strs("gpus", dev.GPUs)
	}
	ev.Msg("started")
}

func (p *progressView) NodeProgress(addr string, done, total int64, unit string) {
	p.mu.Lock()
	st := p.running[addr]
	if st == nil {
		p.mu.Unlock()
		return
	}
	st.done, st.total, st.unit = done, total, unit
	logNow := !p.tty && time.Since(st.lastLog) >= p.every
	if logNow {
		st.lastLog = time.Now()
	}
	if p.tty && time.Since(p.lastDraw) > 100*time.Millisecond {
		p.clearLocked()
		p.drawLocked()
	}
	p.mu.Unlock()
	if logNow {
		p.log.Info().Str("node", addr).Str("progress", describeProgress(done, total, unit)).Msg("working")
	}
}

func (p *progressView) NodeFinished(addr string, status engine.RunStatus, d time.Duration, err error) {
	p.mu.Lock()
	delete(p.running, addr)
	p.finished++
	n, total := p.finished, p.total
	p.mu.Unlock()
	counter := fmt.Sprintf("%d/%d", n, total)
	switch status {
	case engine.RunRan:
		p.log.Info().Str("node", addr).Str("took", formatDuration(d)).Str("done", counter).Msg("finished")
	case engine.RunFailed:
		p.log.Error().Str("node", addr).Str("done", counter).Msg("failed: " + firstLine(err))
	case engine.RunSkipped:
		p.log.Warn().Str("node", addr).Str("done", counter).Msg(firstLine(err))
	case engine.RunNotRun:
		if err != nil {
			p.log.Warn().Str("node", addr).Str("done", counter).Msg(firstLine(err))
		}
	case engine.RunCached:
		p.log.Debug().Str("node", addr).Str("done", counter).Msg("cached")
	}
}

func (p *progressView) clearLocked() {
	if p.tty && p.shown {
		fmt.Fprint(p.out, "\r\033[K")
		p.shown = false
	}
}

func (p *progressView) drawLocked() {
	if !p.tty || len(p.running) == 0 {
		return
	}
	names := make([]string, 0, len(p.running))
	for k := range p.running {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, k := range names {
		st := p.running[k]
		if st.unit != "" {
			parts = append(parts, fmt.Sprintf("%s %s", k, describeProgress(st.done, st.total, st.unit)))
		} else {
			parts = append(parts, k)
		}
	}
	line := fmt.Sprintf("[%d/%d] running: %s", p.finished, p.total, strings.Join(parts, " | "))
	if len(line) > 160 {
		line = line[:157] + "..."
	}
	fmt.Fprint(p.out, line)
	p.shown = true
	p.lastDraw = time.Now()
}

// finish removes the status line.
func (p *progressView) finish() {
	p.mu.Lock()
	p.clearLocked()
	p.mu.Unlock()
}

func describeProgress(done, total int64, unit string) string {
	if unit == "B" {
		if total > 0 {
			return fmt.Sprintf("%.0f%% (%s/%s)", 100*float64(done)/float64(total), humanBytes(done), humanBytes(total))
		}
		return humanBytes(done)
	}
	if total > 0 {
		return fmt.Sprintf("%d/%d %s", done, total, unit)
	}
	if done > 0 {
		return fmt.Sprintf("%d %s", done, unit)
	}
	return unit
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

func firstLine(err error) string {
	if err == nil {
		return ""
	}
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " (see the run record for the full error)"
	}
	return s
}
