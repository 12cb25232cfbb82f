package engine

import (
	"time"

	"github.com/gatepipe/gatepipe/nodes"
)

// Reporter receives apply progress, for a live display.
type Reporter interface {
	// Start announces how many instances the apply covers.
	Start(total int)
	// NodeStarted is called when an instance begins to run on a device.
	NodeStarted(addr string, dev nodes.Assignment)
	// NodeProgress relays a running node's progress.
	NodeProgress(addr string, done, total int64, unit string)
	// NodeFinished is called once per instance with its outcome.
	NodeFinished(addr string, status RunStatus, d time.Duration, err error)
}

// NopReporter ignores every event.
type NopReporter struct{}

// Start does nothing.
func (NopReporter) Start(int) {}

// NodeStarted does nothing.
func (NopReporter) NodeStarted(string, nodes.Assignment) {}

// NodeProgress does nothing.
func (NopReporter) NodeProgress(string, int64, int64, string) {}

// NodeFinished does nothing.
func (NopReporter) NodeFinished(string, RunStatus, time.Duration, error) {}

type nodeProgress struct {
	r    Reporter
	addr string
}

func (p nodeProgress) Update(done, total int64, unit string) {
	p.r.NodeProgress(p.addr, done, total, unit)
}
