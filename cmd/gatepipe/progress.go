package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/gatepipe/gatepipe/engine"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/rs/zerolog"
	"github.com/vbauerster/mpb/v8"
)

// progressView is the live display of an apply: a log line per node that
// ran, failed or was skipped and, on a terminal, a bar per running node
// (barView). Off a terminal it logs progress at most every few seconds
// per node instead.
type progressView struct {
	mu       sync.Mutex
	out      io.Writer
	log      zerolog.Logger
	total    int
	finished int
	running  map[string]*nodeState
	every    time.Duration
	bars     *barView // nil off a terminal
}

type nodeState struct {
	mu          sync.Mutex
	done, total int64
	unit        string
	started     time.Time
	lastLog     time.Time
	dev         nodes.Assignment
	bar         *mpb.Bar
}

var _ engine.Reporter = (*progressView)(nil)

// newProgressView returns the view and the writer the logger must use:
// on a terminal, log lines go above the bars.
func newProgressView(out io.Writer, tty bool) (*progressView, io.Writer) {
	return newProgressViewWith(out, tty, barOptions{width: terminalWidth(out)})
}

func newProgressViewWith(out io.Writer, tty bool, o barOptions) (*progressView, io.Writer) {
	p := &progressView{out: out, running: map[string]*nodeState{}, every: 5 * time.Second}
	if !tty {
		return p, out
	}
	p.bars = newBarView(out, o)
	p.bars.eta = p.overallETA
	return p, logRouter{p}
}

func (p *progressView) setLogger(l zerolog.Logger) { p.log = l }

// logRouter sends log lines above the bars while they are shown, then
// straight to the output.
type logRouter struct{ p *progressView }

func (w logRouter) Write(b []byte) (int, error) {
	v := w.p.bars
	v.mu.Lock()
	active := v.active
	v.mu.Unlock()
	if active {
		if n, err := v.Write(b); err == nil {
			return n, nil
		}
	}
	return w.p.out.Write(b)
}

func (p *progressView) Start(total int) {
	p.mu.Lock()
	p.total = total
	p.mu.Unlock()
	if p.bars != nil {
		p.bars.begin(total)
	}
}

func (p *progressView) NodeStarted(addr string, dev nodes.Assignment) {
	now := time.Now()
	st := &nodeState{dev: dev, lastLog: now, started: now}
	if p.bars != nil {
		st.started = p.bars.now()
		st.bar = p.bars.addNode(addr, st)
	}
	p.mu.Lock()
	p.running[addr] = st
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
	p.mu.Unlock()
	if st == nil {
		return
	}
	st.mu.Lock()
	st.done, st.total, st.unit = done, total, unit
	logNow := p.bars == nil && time.Since(st.lastLog) >= p.every
	if logNow {
		st.lastLog = time.Now()
	}
	st.mu.Unlock()
	if st.bar != nil {
		if total > 0 {
			st.bar.SetTotal(total, false)
		}
		st.bar.SetCurrent(min(done, max(total, done)))
	}
	if logNow {
		p.log.Info().Str("node", addr).Str("progress", describeProgress(done, total, unit)).Msg("working")
	}
}

func (p *progressView) NodeFinished(addr string, status engine.RunStatus, d time.Duration, err error) {
	p.mu.Lock()
	st := p.running[addr]
	delete(p.running, addr)
	p.finished++
	n, total := p.finished, p.total
	p.mu.Unlock()
	if p.bars != nil {
		var bar *mpb.Bar
		if st != nil {
			bar = st.bar
		}
		p.bars.nodeDone(bar)
	}
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

// finish draws the last frame and hands the terminal back.
func (p *progressView) finish() {
	if p.bars == nil {
		return
	}
	p.mu.Lock()
	var left []*mpb.Bar
	for _, st := range p.running {
		if st.bar != nil {
			left = append(left, st.bar)
		}
	}
	p.mu.Unlock()
	for _, b := range left {
		b.Abort(true)
	}
	p.bars.stop()
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

// overallETA is the apply's ETA as far as it can be told: the longest ETA
// of the running nodes, which is when the apply ends once no node waits to
// start, and a lower bound ("ETA ≥") while some still wait; "" while a
// running node cannot tell its own.
func (p *progressView) overallETA(now time.Time) string {
	p.mu.Lock()
	waiting := p.total - p.finished - len(p.running)
	states := make([]*nodeState, 0, len(p.running))
	for _, st := range p.running {
		states = append(states, st)
	}
	p.mu.Unlock()
	if len(states) == 0 {
		return ""
	}
	var longest time.Duration
	for _, st := range states {
		eta, ok := st.eta(now)
		if !ok {
			return ""
		}
		longest = max(longest, eta)
	}
	if waiting > 0 {
		return "ETA ≥ " + shortDuration(longest)
	}
	return "ETA " + shortDuration(longest)
}
