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

	"github.com/gatepipe/gatepipe/internal/numfmt"
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
	// ResumeDir is a directory kept across failed and killed runs of
	// this node (removed once its output is stored): a trainer may keep
	// checkpoints there and go on from the last one, if it was written
	// for the same Action (the directory belongs to the block, so a
	// changed configuration finds the old run's files).
	ResumeDir string `json:"resume_dir,omitempty"`
	// Action is the node's action ID: what a checkpoint must match.
	Action string `json:"action"`
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
	// Seeds lists the seeds a result over several seeds averages.
	Seeds []uint64 `json:"seeds,omitempty"`
}

// Metric is one result. A result over several seeds has Value the mean,
// Std the sample standard deviation, N the number of seeds and Values
// each seed's value, in the order of the metrics file's seeds.
type Metric struct {
	Value          float64   `json:"value"`
	HigherIsBetter bool      `json:"higher_is_better"`
	Std            *float64  `json:"std,omitempty"`
	N              int       `json:"n,omitempty"`
	Values         []float64 `json:"values,omitempty"`
}

// LogLine is one line of log.jsonl; fields other than step and total are
// free (loss, accuracy, lr...).
//
// Two fields are read as messages for the user: "resumed": true says the
// trainer went on from a checkpoint at step (gatepipe logs "resumed at
// iteration STEP of TOTAL"), and "warning" is logged as a warning (a
// checkpoint that could not be used, say).
//
// A line with "val" (validation metrics) is logged as a validation, with
// its "loss" and "lr" and the headline metrics among them.
type LogLine struct {
	Step    int64              `json:"step"`
	Total   int64              `json:"total"`
	Resumed bool               `json:"resumed,omitempty"`
	Warning string             `json:"warning,omitempty"`
	Val     map[string]float64 `json:"val,omitempty"`
	Loss    float64            `json:"loss,omitempty"`
	LR      float64            `json:"lr,omitempty"`
	// ImagesPerSec is the training throughput since the last validation.
	ImagesPerSec float64 `json:"images_per_sec,omitempty"`
}

// headlines are the validation metrics a log line about a validation shows.
var headlines = []string{"acc1", "aps", "auc", "mae", "miou"}

// writeExperiment writes experiment.json for config into dir (the
// output directory of a command; a scratch directory of a runtime worker).
func writeExperiment(env *nodes.Env, dir string, config any) (string, error) {
	dev := Devices{CPUs: env.Devices.CPUs, GPUs: env.Devices.GPUs, Device: "cpu"}
	if len(dev.GPUs) > 0 {
		dev.Device = "cuda"
	}
	if dev.GPUs == nil {
		dev.GPUs = []string{}
	}
	exp := Experiment{Protocol: "gatepipe-trainer/1", Node: env.Addr.String(), Config: config, OutDir: dir, Devices: dev,
		ResumeDir: env.ResumeDir, Action: env.ActionID}
	data, err := json.MarshalIndent(exp, "", "  ")
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, ExperimentFile)
	return p, os.WriteFile(p, data, 0o644)
}

// Resumes: a trainer gets a resume directory for its checkpoints.
func (n *Node) Resumes() bool { return n.experiment != nil }

// followLog streams dir's log.jsonl as progress (and its messages as log
// lines) until ctx ends, reads what was written up to then, and closes
// done.
func followLog(ctx context.Context, env *nodes.Env, dir string, done chan<- struct{}) {
	defer close(done)
	p := filepath.Join(dir, TrainerLogFile)
	var offset int64
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for final := false; !final; {
		select {
		case <-ctx.Done():
			final = true
		case <-tick.C:
		}
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		f.Seek(offset, 0)
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		var last LogLine
		got := false
		for sc.Scan() {
			line := sc.Bytes()
			if len(line) == 0 || line[len(line)-1] != '}' {
				break // a line still being written: read it next time
			}
			offset += int64(len(line)) + 1
			var l LogLine
			if json.Unmarshal(line, &l) != nil {
				continue
			}
			last, got = l, true
			if l.Warning != "" {
				env.Log.Warn().Msg(l.Warning)
			}
			if l.Resumed {
				env.Log.Info().Msgf("resumed at iteration %d of %d", l.Step, l.Total)
			}
			if l.Val != nil {
				ev := env.Log.Info().Int64("iteration", l.Step).Float64("loss", numfmt.Digits4(l.Loss))
				for _, k := range headlines {
					if v, ok := l.Val[k]; ok {
						ev = ev.Float64("val_"+k, numfmt.Digits4(v))
					}
				}
				ev.Float64("lr", numfmt.Digits4(l.LR)).Float64("images_per_sec", math.Round(l.ImagesPerSec)).Msg("validation")
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
		if v.Std != nil && (math.IsNaN(*v.Std) || math.IsInf(*v.Std, 0) || *v.Std < 0) {
			return nil, fmt.Errorf("%s: metric %q has a std that is not a finite number ≥ 0", p, name)
		}
		if v.N < 0 {
			return nil, fmt.Errorf("%s: metric %q has n < 0", p, name)
		}
	}
	return &m, nil
}
