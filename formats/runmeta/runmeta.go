// Package runmeta reads and writes run.json, the metadata gatepipe keeps
// beside an experiment's metrics.json: which gatepipe, node, inputs, seed,
// device, how long and how much energy.
package runmeta

import (
	"encoding/json"
	"os"
	"path/filepath"
	"time"
)

// File is the file name in an experiment's output directory.
const File = "run.json"

// Info is run.json.
type Info struct {
	Gatepipe string `json:"gatepipe"`
	Node     string `json:"node"`
	// ActionID is the cache key of the run's inputs.
	ActionID string  `json:"action_id"`
	Seed     *uint64 `json:"seed,omitempty"`
	// Seeds lists the seeds of a run repeated once per seed (whose own
	// run.json files are in its seed-N directories).
	Seeds   []uint64  `json:"seeds,omitempty"`
	Started time.Time `json:"started"`
	Seconds float64   `json:"seconds"`
	// Device is "cpu x4" or "gpu 0,1 + cpu x4".
	Device       string   `json:"device"`
	Iterations   int      `json:"iterations,omitempty"`
	ImagesPerSec float64  `json:"images_per_sec,omitempty"`
	EnergyJ      *float64 `json:"energy_joules,omitempty"`
	// PeakRSSBytes is the peak resident memory of the process that ran
	// the node (its own when isolated, the default for training).
	PeakRSSBytes int64 `json:"peak_rss_bytes,omitempty"`
	// BLAS is the matrix-product library training used.
	BLAS string `json:"blas,omitempty"`
	// Runtime is the runtime that trained ("go", "torch"; empty: go).
	Runtime string `json:"runtime,omitempty"`
}

// Write writes info to dir's File.
func Write(dir string, info Info) error {
	data, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, File), data, 0o644)
}

// Read reads dir's File; ok is false when there is none.
func Read(dir string) (info Info, ok bool, err error) {
	data, err := os.ReadFile(filepath.Join(dir, File))
	if os.IsNotExist(err) {
		return info, false, nil
	}
	if err != nil {
		return info, false, err
	}
	if err := json.Unmarshal(data, &info); err != nil {
		return info, false, err
	}
	return info, true, nil
}
