package main

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gatepipe/gatepipe/engine"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/rs/zerolog"
)

// syncBuffer is a bytes.Buffer safe for mpb's goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var csi = regexp.MustCompile(`^\x1b\[(\??)(\d*)([A-Za-z])`)

// screen replays terminal output (text, \r, \n, and the cursor-up and
// erase sequences progress displays use) and returns the visible lines.
func screen(out string) string {
	lines := []string{""}
	row, col := 0, 0
	put := func(r rune) {
		line := []rune(lines[row])
		for len(line) < col {
			line = append(line, ' ')
		}
		if col < len(line) {
			line[col] = r
		} else {
			line = append(line, r)
		}
		lines[row] = string(line)
		col++
	}
	for i := 0; i < len(out); {
		if m := csi.FindStringSubmatch(out[i:]); m != nil {
			n, _ := strconv.Atoi(m[2])
			switch m[3] {
			case "A":
				row = max(row-max(n, 1), 0)
			case "J":
				lines = lines[:row+1]
				lines[row] = string([]rune(lines[row])[:min(col, len([]rune(lines[row])))])
			case "K":
				lines[row] = string([]rune(lines[row])[:min(col, len([]rune(lines[row])))])
			case "G":
				col = max(n-1, 0)
			}
			i += len(m[0])
			continue
		}
		switch out[i] {
		case '\r':
			col = 0
			i++
			continue
		case '\n':
			row++
			col = 0
			if row == len(lines) {
				lines = append(lines, "")
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(out[i:])
		put(r)
		i += size
	}
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], " ")
	}
	return strings.TrimRight(strings.Join(lines, "\n"), "\n") + "\n"
}

// settle waits until out stops growing.
func settle(out *syncBuffer) {
	last, since := -1, time.Now()
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if n := len(out.String()); n != last {
			last, since = n, time.Now()
		} else if time.Since(since) > 80*time.Millisecond {
			return
		}
	}
}

// TestTTYDisplayGolden drives the terminal display through an apply with
// two training nodes and a download, on a fixed clock, and compares the
// screens with golden files: a bar per running node in its own unit with
// an ETA, speed for the download, log lines above, finished nodes gone.
func TestTTYDisplayGolden(t *testing.T) {
	out := &syncBuffer{}
	clock := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }
	refresh := make(chan any)
	view, logOut := newProgressViewWith(out, true, barOptions{width: 100, now: now, refresh: refresh})
	view.setLogger(zerolog.New(zerolog.ConsoleWriter{Out: logOut, NoColor: true, PartsExclude: []string{zerolog.TimestampFieldName}}))
	// draw renders three frames: mpb takes two to drop the bar of a
	// finished node, the third shows the screen without it.
	draw := func() {
		settle(out) // log lines written so far reach mpb first
		for range 3 {
			refresh <- struct{}{}
			settle(out)
		}
	}
	cpu := nodes.Assignment{CPUs: 1}
	view.Start(4)
	view.NodeFinished("dataset.prepared", engine.RunCached, 0, nil)
	view.NodeStarted(`train.fashion["convnet"]`, cpu)
	view.NodeStarted(`train.fashion["vit"]`, cpu)
	view.NodeStarted("dataset.cifar100", cpu)
	advance(20 * time.Second)
	view.NodeProgress(`train.fashion["convnet"]`, 400, 1200, "iterations")
	view.NodeProgress(`train.fashion["vit"]`, 100, 1200, "iterations")
	view.NodeProgress("dataset.cifar100", 60<<20, 161<<20, "B")
	draw()
	checkGolden(t, "tty_running.txt", screen(out.String()))

	advance(40 * time.Second)
	view.NodeProgress("dataset.cifar100", 161<<20, 161<<20, "B")
	view.NodeFinished("dataset.cifar100", engine.RunRan, time.Minute, nil)
	view.NodeProgress(`train.fashion["convnet"]`, 1200, 1200, "iterations")
	view.NodeFinished(`train.fashion["convnet"]`, engine.RunRan, time.Minute, nil)
	view.NodeProgress(`train.fashion["vit"]`, 300, 1200, "iterations")
	draw()
	checkGolden(t, "tty_later.txt", screen(out.String()))

	// The end, with the display refreshing on its own as it does live.
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case refresh <- struct{}{}:
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	advance(2 * time.Minute)
	view.NodeFinished(`train.fashion["vit"]`, engine.RunRan, 3*time.Minute, nil)
	time.Sleep(100 * time.Millisecond) // the log line reaches a frame
	view.finish()
	close(stop)
	<-done
	checkGolden(t, "tty_done.txt", screen(out.String()))
}

// TestFinishedNodeDoesNotWaitForAFrame: a finished node's bar leaves at
// the next frame (every 150 ms), but the node, and the scheduler behind
// it, must not wait for that frame: when it did, 1,000 quick commands
// took 150 s on a terminal (5.6 s now). 100 nodes must finish well within
// the 15 s that one frame each would take; this guards against the
// blocking, it is not a performance figure.
func TestFinishedNodeDoesNotWaitForAFrame(t *testing.T) {
	var out bytes.Buffer
	view, _ := newProgressViewWith(&out, true, barOptions{width: 80})
	view.Start(100)
	done := make(chan struct{})
	go func() {
		for i := range 100 {
			addr := fmt.Sprintf("command.n%d", i)
			view.NodeStarted(addr, nodes.Assignment{CPUs: 1})
			view.NodeFinished(addr, engine.RunRan, time.Millisecond, nil)
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("finishing nodes waits for display frames")
	}
	view.finish()
}

// TestDevNullIsNotATerminal: `apply > /dev/null 2>&1` is not a terminal
// (it is a character device), so it gets log lines, not bars.
func TestDevNullIsNotATerminal(t *testing.T) {
	f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if isTerminal(f) {
		t.Fatal("/dev/null is taken for a terminal")
	}
}

// TestOverallETAIsTheLongestRunningOne: with nodes still waiting to start
// the overall ETA is only a lower bound, said as such; once every node
// left is running it is the longest of theirs; unknown while a running
// node cannot tell its own.
func TestOverallETAIsTheLongestRunningOne(t *testing.T) {
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	node := func(done, total int64) *nodeState {
		return &nodeState{done: done, total: total, started: now.Add(-10 * time.Second)}
	}
	p := &progressView{running: map[string]*nodeState{"a": node(50, 100), "b": node(10, 100)}, total: 3}
	if got := p.overallETA(now); got != "ETA ≥ 1m30s" {
		t.Errorf("one node waiting: %q, want ETA ≥ 1m30s", got)
	}
	p.total = 2
	if got := p.overallETA(now); got != "ETA 1m30s" {
		t.Errorf("all running: %q, want ETA 1m30s", got)
	}
	p.running["c"] = node(0, 0)
	p.total = 3
	if got := p.overallETA(now); got != "" {
		t.Errorf("a node without a total: %q, want no ETA", got)
	}
}
