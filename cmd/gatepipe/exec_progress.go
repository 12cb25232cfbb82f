package main

import (
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/gatepipe/gatepipe/engine"
)

// progressKey marks a child's progress line on its stderr: apply turns it
// into the node's bar instead of a log line.
const progressKey = "gatepipe_progress"

type progressEvent struct {
	Done  int64  `json:"done"`
	Total int64  `json:"total"`
	Unit  string `json:"unit"`
}

// progressRelay is the reporter of a `gatepipe exec` child started by
// apply: it writes the node's progress as JSON lines for the parent, at
// most one per interval, and always when the unit changes or the total is
// reached.
type progressRelay struct {
	engine.NopReporter
	mu       sync.Mutex
	w        io.Writer
	every    time.Duration
	last     time.Time
	lastUnit string
}

func (r *progressRelay) NodeProgress(addr string, done, total int64, unit string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	if unit == r.lastUnit && now.Sub(r.last) < r.every && (total <= 0 || done < total) {
		return
	}
	r.last, r.lastUnit = now, unit
	b, _ := json.Marshal(map[string]progressEvent{progressKey: {Done: done, Total: total, Unit: unit}})
	r.w.Write(append(b, '\n'))
}

// parseProgress recognises a relayed progress line.
func parseProgress(fields map[string]json.RawMessage) (progressEvent, bool) {
	raw, ok := fields[progressKey]
	if !ok || len(fields) != 1 {
		return progressEvent{}, false
	}
	var ev progressEvent
	if json.Unmarshal(raw, &ev) != nil {
		return progressEvent{}, false
	}
	return ev, true
}
