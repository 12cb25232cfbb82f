package command

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/gatepipe/gatepipe/nodes"
)

// The external-trainer protocol (version 1). When a command block sets
// `experiment`, gatepipe writes ExperimentFile into the output directory
// before starting the program and passes its path in GATEPIPE_EXPERIMENT;
// the program writes MetricsFile there before exiting 0, and may append
// progress lines to TrainerLogFile, which gatepipe streams as progress.
const (
	ExperimentFile = "experiment.json"
	MetricsFile    = "metrics.json"
	TrainerLogFile = "log.jsonl"
)

// Experiment is experiment.json.
type Experiment struct {
	Protocol string `json:"protocol"` // "gatepipe-trainer/1"
	Node     string `json:"node"`
	// Config is the block's experiment value: dataset paths, benchmark,
	// recipe, whatever the pipeline passes.
	Config  any     `json:"config"`
	OutDir  string  `json:"out_dir"`
	Devices Devices `json:"devices"`
}

// Devices is the assignment a trainer must use.
type Devices struct {
	CPUs int      `json:"cpus"`
	GPUs []string `json:"gpus"`
	// Device is "cuda" when GPUs were assigned (visible as cuda:0...),
	// else "cpu".
	Device string `json:"device"`
}

// Metrics is metrics.json: the results of one model on one benchmark.
type Metrics struct {
	Model     string            `json:"model"`
	Benchmark string            `json:"benchmark"`
	Category  string            `json:"category"`
	Metrics   map[string]Metric `json:"metrics"`
	// Primary names the headline metric (optional; reports otherwise
	// pick a known headline name or the first higher-is-better metric).
	Primary string `json:"primary,omitempty"`
}

// Metric is one result.
type Metric struct {
	Value          float64 `json:"value"`
	HigherIsBetter bool    `json:"higher_is_better"`
}

// LogLine is one line of log.jsonl; fields other than step and total are
// free (loss, accuracy, lr...).
type LogLine struct {
	Step  int64 `json:"step"`
	Total int64 `json:"total"`
}

func writeExperiment(env *nodes.Env, config any) (string, error) {
	dev := Devices{CPUs: env.Devices.CPUs, GPUs: env.Devices.GPUs, Device: "cpu"}
	if len(dev.GPUs) > 0 {
		dev.Device = "cuda"
	}
	if dev.GPUs == nil {
		dev.GPUs = []string{}
	}
	exp := Experiment{Protocol: "gatepipe-trainer/1", Node: env.Addr.String(), Config: config, OutDir: env.OutDir, Devices: dev}
	data, err := json.MarshalIndent(exp, "", "  ")
	if err != nil {
		return "", err
	}
	p := filepath.Join(env.OutDir, ExperimentFile)
	return p, os.WriteFile(p, data, 0o644)
}

// followLog streams log.jsonl as progress until ctx ends.
func followLog(ctx context.Context, env *nodes.Env) {
	p := filepath.Join(env.OutDir, TrainerLogFile)
	var offset int64
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		f.Seek(offset, 0)
		sc := bufio.NewScanner(f)
		var last LogLine
		got := false
		for sc.Scan() {
			offset += int64(len(sc.Bytes())) + 1
			var l LogLine
			if json.Unmarshal(sc.Bytes(), &l) == nil {
				last, got = l, true
			}
		}
		f.Close()
		if got {
			env.Progress.Update(last.Step, last.Total, "steps")
		}
	}
}

// ReadMetrics reads and checks a metrics.json.
func ReadMetrics(p string) (*Metrics, error) {
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	var m Metrics
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if m.Model == "" || m.Benchmark == "" || len(m.Metrics) == 0 {
		return nil, fmt.Errorf("%s: model, benchmark and at least one metric are required", p)
	}
	for name, v := range m.Metrics {
		if math.IsNaN(v.Value) || math.IsInf(v.Value, 0) {
			return nil, fmt.Errorf("%s: metric %q is not finite", p, name)
		}
	}
	return &m, nil
}
