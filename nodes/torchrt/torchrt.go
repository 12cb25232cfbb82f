// Package torchrt is the PyTorch runtime of encoder-backed blocks
// (runtime = "torch"): one worker script, worker.py, that builds
// gatepipe's encoders with gatepipe's tensor names in PyTorch and runs a
// job on the devices the scheduler assigned (CUDA_VISIBLE_DEVICES), spoken
// to through the external-trainer protocol gatepipe-trainer/1 (the job in
// experiment.json's config, progress in log.jsonl). Every block kind that
// offers the runtime starts the same worker; only the job differs.
package torchrt

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/nodes/command"
)

// The worker is the files of py/ joined in name order into one program
// (python -c): 00_io (safetensors, stores, inputs), 10_models (gatepipe's
// architectures and heads), 20_run (devices, precision, progress), one file
// per job, 99_main.
//
//go:embed py/*.py
var workerFiles embed.FS

// Worker returns the worker program.
func Worker() string {
	entries, err := workerFiles.ReadDir("py")
	if err != nil {
		panic(err) // embedded: cannot fail
	}
	var b strings.Builder
	for _, e := range entries { // ReadDir sorts by name
		data, err := workerFiles.ReadFile("py/" + e.Name())
		if err != nil {
			panic(err)
		}
		b.Write(data)
		b.WriteString("\n\n")
	}
	return b.String()
}

// Runtime names.
const (
	Go    = "go"
	Torch = "torch"
)

// Runtimes lists the values of a block's runtime attribute.
var Runtimes = []string{Go, Torch}

// Precisions lists the values of a torch block's precision attribute:
// "auto" is bf16 autocast on a GPU that supports it and fp32 elsewhere.
var Precisions = []string{"auto", "fp32", "tf32", "bf16"}

// PythonEnv names the variable that chooses the interpreter the torch
// runtime starts (default python3).
const PythonEnv = "GATEPIPE_PYTHON"

// Python returns the interpreter to start: $GATEPIPE_PYTHON, else python3.
func Python() string {
	if p := os.Getenv(PythonEnv); p != "" {
		return p
	}
	return "python3"
}

// Job is one run of the worker.
type Job struct {
	// Python is the interpreter (Python() when empty).
	Python string
	// Config is experiment.json's config; its "job" names the job.
	Config map[string]any
}

// WorkerLog is the worker's captured output in its scratch directory.
const WorkerLog = "worker.log"

// Run runs the job in dir (created; the caller removes it when done) and
// returns when the worker has exited. A missing interpreter, a Python
// without torch and a failing job are errors whose first line names the
// interpreter and what to do.
func Run(ctx context.Context, env *nodes.Env, dir string, job Job) error {
	python := job.Python
	if python == "" {
		python = Python()
	}
	if _, err := exec.LookPath(python); err != nil {
		return fmt.Errorf("runtime torch: no Python interpreter %q (%v): install Python with PyTorch, or point python (the block's, the gatepipe block's) or %s at one", python, unwrapExec(err), PythonEnv)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	logFile, err := os.Create(filepath.Join(dir, WorkerLog))
	if err != nil {
		return err
	}
	defer logFile.Close()
	env.Log.Debug().Str("python", python).Any("job", job.Config["job"]).Msg("torch runtime")
	if err := command.RunWorker(ctx, env, dir, []string{python, "-c", Worker()}, job.Config, logFile); err != nil {
		return fmt.Errorf("runtime torch (%s): %w", python, err)
	}
	return nil
}

func unwrapExec(err error) error {
	var e *exec.Error
	if errors.As(err, &e) {
		return e.Err
	}
	return err
}

// Valid reports whether runtime is one of Runtimes.
func Valid(runtime string) bool { return slices.Contains(Runtimes, runtime) }
