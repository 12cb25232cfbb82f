package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"sync"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"golang.org/x/sys/unix"
)

// barView is the terminal display of an apply, drawn by mpb: one bar per
// running node with its own unit (iterations, bytes and speed, candidates,
// steps...) and an ETA, and an overall bar of finished nodes at the
// bottom. Log lines (a node finished, failed, validated...) print above
// the bars and scroll away.
type barView struct {
	p       *mpb.Progress
	overall *mpb.Bar
	now     func() time.Time
	start   time.Time
	width   int

	mu     sync.Mutex
	active bool
	// dropping counts finished nodes' bars not yet gone from the frame.
	dropping sync.WaitGroup
	total    int
	done     int
	// eta, when set, gives the overall bar's ETA text ("" when unknown).
	eta func(now time.Time) string
}

// barOptions set what tests need fixed: the width, the clock and when the
// display refreshes (nil: every 150 ms).
type barOptions struct {
	width   int
	now     func() time.Time
	refresh <-chan any
}

func newBarView(out io.Writer, o barOptions) *barView {
	if o.width <= 0 {
		o.width = 100
	}
	if o.now == nil {
		o.now = time.Now
	}
	opts := []mpb.ContainerOption{mpb.WithOutput(out), mpb.WithWidth(o.width)}
	if o.refresh != nil {
		opts = append(opts, mpb.WithManualRefresh(o.refresh))
	} else {
		opts = append(opts, mpb.WithAutoRefresh(), mpb.WithRefreshRate(150*time.Millisecond))
	}
	return &barView{p: mpb.New(opts...), now: o.now, start: o.now(), width: o.width, active: true}
}

// Write prints log lines above the bars while they are shown.
func (v *barView) Write(b []byte) (int, error) {
	return v.p.Write(b)
}

// begin adds the overall bar once the number of instances is known.
func (v *barView) begin(total int) {
	v.mu.Lock()
	v.total = total
	v.mu.Unlock()
	v.overall = v.p.New(int64(max(total, 1)), mpb.BarStyle(),
		mpb.BarPriority(math.MaxInt),
		mpb.PrependDecorators(decor.Any(func(decor.Statistics) string {
			v.mu.Lock()
			defer v.mu.Unlock()
			return fmt.Sprintf("%-*s", v.nameWidth(), fmt.Sprintf("apply: %d of %d nodes", v.done, v.total))
		})),
		mpb.AppendDecorators(decor.Any(func(decor.Statistics) string {
			now := v.now()
			s := "elapsed " + shortDuration(now.Sub(v.start))
			if v.eta != nil {
				if eta := v.eta(now); eta != "" {
					s += "  " + eta
				}
			}
			return s
		})),
	)
}

func (v *barView) nameWidth() int { return min(44, v.width/2) }

// addNode adds a node's bar; its decorators read st.
func (v *barView) addNode(addr string, st *nodeState) *mpb.Bar {
	name := addr
	if w := v.nameWidth(); len(name) > w {
		name = "..." + name[len(name)-w+3:]
	}
	return v.p.New(0, mpb.BarStyle(),
		mpb.BarRemoveOnComplete(),
		mpb.PrependDecorators(decor.Name(fmt.Sprintf("%-*s", v.nameWidth(), name))),
		mpb.AppendDecorators(decor.Any(func(decor.Statistics) string { return st.describe(v.now()) })),
	)
}

// nodeDone counts a finished node and drops its bar.
func (v *barView) nodeDone(bar *mpb.Bar) {
	v.mu.Lock()
	if bar != nil {
		// Removed at the next frame. Waiting for that frame here would
		// hold each finished node for a refresh interval (150 ms): a
		// pipeline of 10,000 quick nodes took 25 minutes on a terminal.
		// stop waits for the ones still pending before the last frame.
		bar.Abort(true)
		v.dropping.Add(1)
		go func() {
			defer v.dropping.Done()
			bar.Wait()
		}()
	}
	v.done++
	done := v.done
	v.mu.Unlock()
	if v.overall != nil {
		v.overall.SetCurrent(int64(done))
	}
}

// stop leaves the overall bar on screen and waits for the last frame.
// Later writes go straight to the output.
func (v *barView) stop() {
	v.mu.Lock()
	if !v.active {
		v.mu.Unlock()
		return
	}
	v.active = false
	complete := v.done >= v.total
	v.mu.Unlock()
	v.dropping.Wait() // finished nodes' bars gone before the last frame
	if v.overall == nil {
		v.begin(0)
	}
	if complete {
		v.overall.SetTotal(-1, true)
	} else {
		v.overall.Abort(false)
	}
	v.p.Shutdown()
}

// describe is a node bar's text: progress in its unit, speed for bytes,
// and an ETA from the average rate so far.
func (st *nodeState) describe(now time.Time) string {
	st.mu.Lock()
	done, total, unit, started := st.done, st.total, st.unit, st.started
	st.mu.Unlock()
	elapsed := now.Sub(started)
	if unit == "" {
		return "running " + shortDuration(elapsed)
	}
	var s string
	switch {
	case unit == "B" && total > 0:
		s = fmt.Sprintf("%s / %s", humanBytes(done), humanBytes(total))
	case unit == "B":
		s = humanBytes(done)
	case total > 0:
		s = fmt.Sprintf("%d/%d %s", done, total, unit)
	default:
		s = fmt.Sprintf("%d %s", done, unit)
	}
	if unit == "B" && elapsed > 0 {
		s += fmt.Sprintf("  %s/s", humanBytes(int64(float64(done)/elapsed.Seconds())))
	}
	if eta, ok := st.eta(now); ok && done < total {
		s += "  ETA " + shortDuration(eta)
	}
	return s
}

// eta is the node's time left at its average rate so far; ok is false
// when it cannot be told (no total, nothing done yet).
func (st *nodeState) eta(now time.Time) (time.Duration, bool) {
	st.mu.Lock()
	done, total, started := st.done, st.total, st.started
	st.mu.Unlock()
	if total <= 0 || done <= 0 {
		return 0, false
	}
	return time.Duration(float64(now.Sub(started)) * float64(max(total-done, 0)) / float64(done)), true
}

// terminalWidth is the width of the terminal out writes to, or 100.
func terminalWidth(out io.Writer) int {
	if f, ok := out.(*os.File); ok {
		if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col >= 40 {
			return int(ws.Col)
		}
	}
	return 100
}

// shortDuration rounds to whole seconds: "0s", "42s", "3m20s", "1h2m0s".
func shortDuration(d time.Duration) string {
	d = d.Round(time.Second)
	if d < time.Minute {
		return fmt.Sprintf("%ds", int(d.Seconds()))
	}
	return d.String()
}
