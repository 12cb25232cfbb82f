package engine

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"syscall"
	"time"

	"github.com/gatepipe/gatepipe/engine/cache"
)

// RunRecord is what one apply did, saved as JSON under the cache's runs/.
type RunRecord struct {
	ID       string         `json:"id"`
	Started  time.Time      `json:"started"`
	Finished time.Time      `json:"finished"`
	Counts   map[string]int `json:"counts"`
	Nodes    []NodeRecord   `json:"nodes"`
	Errors   []string       `json:"errors,omitempty"`
	// Submitted counts the batch jobs submitted (Slurm executor).
	Submitted int `json:"submitted,omitempty"`
	// Pipeline is the applied pipeline's path; Outcome how the apply
	// ended (OutcomeRunning while it runs, so that one killed stays so);
	// PID the process that applied.
	Pipeline string `json:"pipeline,omitempty"`
	Outcome  string `json:"outcome,omitempty"`
	PID      int    `json:"pid,omitempty"`
}

// Run outcomes (RunRecord.Outcome).
const (
	OutcomeRunning     = "running"
	OutcomeOK          = "ok"
	OutcomeFailed      = "failed"
	OutcomeInterrupted = "interrupted"
)

// DisplayOutcome is the outcome to show: a record still "running" whose
// process is gone was interrupted (killed, or its machine stopped); a
// record from before outcomes were kept is judged by its counts.
func (r *RunRecord) DisplayOutcome() string {
	switch {
	case r.Outcome == OutcomeRunning && !processAlive(r.PID):
		return OutcomeInterrupted
	case r.Outcome != "":
		return r.Outcome
	case r.Failed():
		return OutcomeFailed
	}
	return OutcomeOK
}

// processAlive reports whether pid runs on this machine (0: unknown, taken
// as gone): signal 0 checks that it exists without sending anything.
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// NodeRecord is one instance in a run record.
type NodeRecord struct {
	Addr       string    `json:"addr"`
	Kind       string    `json:"kind"`
	Status     RunStatus `json:"status"`
	ActionID   string    `json:"action_id,omitempty"`
	OutputID   string    `json:"output_id,omitempty"`
	CacheHit   bool      `json:"cache_hit"`
	Start      time.Time `json:"start,omitempty"`
	DurationMS float64   `json:"duration_ms"`
	Device     string    `json:"device,omitempty"`
	Error      string    `json:"error,omitempty"`
}

// NewRunRecord starts the record of a run now, with a fresh ID.
func NewRunRecord() *RunRecord {
	var b [3]byte
	_, _ = rand.Read(b[:])
	now := time.Now().UTC()
	return &RunRecord{ID: now.Format("20060102T150405.000Z") + "-" + hex.EncodeToString(b[:]), Started: now, Counts: map[string]int{}}
}

func (r *RunRecord) finish(e *Engine) {
	r.Finished = time.Now().UTC()
	defer func() {
		r.Outcome = OutcomeOK
		if r.Failed() {
			r.Outcome = OutcomeFailed
		}
	}()
	for _, v := range e.orderedVertices() {
		for _, in := range v.instances {
			n := NodeRecord{Addr: in.key(), Kind: v.nodeKind.Name(), Status: in.run, CacheHit: in.run == RunCached,
				Start: in.start, DurationMS: float64(in.duration.Microseconds()) / 1000}
			if !in.action.IsZero() {
				n.ActionID = in.action.String()
			}
			if !in.output.IsZero() {
				n.OutputID = in.output.String()
			}
			if in.err != nil {
				n.Error = in.err.Error()
			}
			if in.run == RunRan {
				n.Device = describeAssignment(in.device.CPUs, in.device.GPUs)
			}
			r.Counts[string(in.run)]++
			r.Nodes = append(r.Nodes, n)
		}
	}
}

// Failed reports whether any node failed or was skipped.
func (r *RunRecord) Failed() bool {
	return r.Counts[string(RunFailed)] > 0 || r.Counts[string(RunSkipped)] > 0 || r.Counts[string(RunNotRun)] > 0 || len(r.Errors) > 0
}

// DefaultKeepRuns is how many run records a cache keeps by default.
const DefaultKeepRuns = 100

// Save writes the record under the cache's runs/ and prunes the oldest
// records beyond keep (0: DefaultKeepRuns).
func (r *RunRecord) Save(c *cache.Cache, keep int) error {
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := c.WriteRun(r.ID, data); err != nil {
		return err
	}
	if keep <= 0 {
		keep = DefaultKeepRuns
	}
	_, err = c.PruneRuns(keep)
	return err
}

func describeAssignment(cpus int, gpus []string) string {
	s := "cpu×" + strconv.Itoa(cpus)
	for _, g := range gpus {
		s += " gpu:" + g
	}
	return s
}
