// Package torchrt is the PyTorch runtime of encoder-backed blocks
// (runtime = "torch"): one worker, the Python package gatepipe_worker, that builds
// gatepipe's encoders with gatepipe's tensor names in PyTorch and runs a
// job on the devices the scheduler assigned (CUDA_VISIBLE_DEVICES), spoken
// to through the external-trainer protocol gatepipe-trainer/1 (the job in
// experiment.json's config, progress in log.jsonl). Every block kind that
// offers the runtime starts the same worker; only the job differs.
package torchrt

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/nodes/command"
)

// The worker is the Python package py/gatepipe_worker: storage
// (safetensors, stores, inputs), models (gatepipe's architectures and
// heads), run (devices, precision, progress), one module per job, and
// __main__. Run writes it into the cache under its content hash and starts
// python -m gatepipe_worker with that directory first on PYTHONPATH, so a
// traceback names the real file and line.
//
//go:embed py/gatepipe_worker/*.py py/gatepipe_worker/adapters/*.py py/gatepipe_worker/augment/*.py
var workerFiles embed.FS

// WorkerPackage is the worker's Python package name (python -m
// WorkerPackage).
const WorkerPackage = "gatepipe_worker"

const workerDir = "py/" + WorkerPackage

// WorkerHash is the SHA-256 (hex) of the worker package: its files'
// paths (subpackages' included) and contents in path order.
func WorkerHash() string {
	h := sha256.New()
	for _, name := range workerNames() {
		data, _ := workerFiles.ReadFile(workerDir + "/" + name)
		fmt.Fprintf(h, "%s %d\n", name, len(data))
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// workerNames are the package's files, slash-separated paths relative to
// it, in path order.
func workerNames() []string {
	var names []string
	err := fs.WalkDir(workerFiles, workerDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		names = append(names, strings.TrimPrefix(p, workerDir+"/"))
		return nil
	})
	if err != nil {
		panic(err) // embedded: cannot fail
	}
	return names
}

// WriteWorker makes sure the worker package is under root, in a directory
// named by its content hash, and returns that directory (for PYTHONPATH).
// It is written into a temporary directory and renamed into place, so a
// concurrent or interrupted write never leaves a partial package behind.
func WriteWorker(root string) (string, error) {
	dir := filepath.Join(root, "torch-worker-"+WorkerHash()[:16])
	if _, err := os.Stat(filepath.Join(dir, WorkerPackage, "__main__.py")); err == nil {
		return dir, nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("torch worker: %w", err)
	}
	tmp, err := os.MkdirTemp(root, ".torch-worker-")
	if err != nil {
		return "", fmt.Errorf("torch worker: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := os.Mkdir(filepath.Join(tmp, WorkerPackage), 0o755); err != nil {
		return "", fmt.Errorf("torch worker: %w", err)
	}
	for _, name := range workerNames() {
		data, _ := workerFiles.ReadFile(workerDir + "/" + name)
		dst := filepath.Join(tmp, WorkerPackage, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return "", fmt.Errorf("torch worker: %w", err)
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			return "", fmt.Errorf("torch worker: %w", err)
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, statErr := os.Stat(filepath.Join(dir, WorkerPackage, "__main__.py")); statErr == nil {
			return dir, nil // another process wrote it first
		}
		return "", fmt.Errorf("torch worker: %w", err)
	}
	return dir, nil
}

// workerRoot is where Run writes the worker: the cache's programs
// directory when the node runs with a cache, else the job's own directory.
func workerRoot(env *nodes.Env, jobDir string) string {
	if c, ok := env.Blobs.(interface{ Dir() string }); ok && c.Dir() != "" {
		return filepath.Join(c.Dir(), "programs")
	}
	return jobDir
}

// Runtime names. Auto is the torch runtime on one GPU per node where the
// machine has GPUs and the interpreter's torch sees them, else the Go
// runtime, which needs no Python (on CPUs in a third to four fifths of
// PyTorch's memory; its ViT features faster than PyTorch's, its ResNets
// slower than PyTorch's channels-last convolutions: SPEC §5.6).
const (
	Go    = "go"
	Torch = "torch"
	Auto  = "auto"
)

// Runtimes lists the values of a block's runtime attribute.
var Runtimes = []string{Auto, Go, Torch}

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
	pkg, err := WriteWorker(workerRoot(env, dir))
	if err != nil {
		return err
	}
	env.Log.Debug().Str("python", python).Str("worker", pkg).Any("job", job.Config["job"]).Msg("torch runtime")
	path := pkg
	if p := os.Getenv("PYTHONPATH"); p != "" {
		path += string(os.PathListSeparator) + p
	}
	argv := []string{python, "-m", WorkerPackage}
	extra := append([]string{"PYTHONPATH=" + path}, WorkerEnv(env.Devices.CPUs)...)
	if err := command.RunWorker(ctx, env, dir, argv, job.Config, logFile, extra...); err != nil {
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

// WorkerEnv is what gatepipe adds to the user's environment for a worker
// on cpus CPUs (beside GATEPIPE_* and CUDA_VISIBLE_DEVICES): its thread
// count and, unless the user's environment sets them, glibc's malloc
// settings that keep freed memory for reuse. Under glibc's defaults every
// allocation over 32 MiB (a batch's activations: 822 MB for a convnet's
// first layer at 224 px and batch 256) is a fresh mmap whose pages fault
// in again every batch; PyTorch's CPU performance guides give the same
// settings.
func WorkerEnv(cpus int) []string {
	env := []string{fmt.Sprintf("OMP_NUM_THREADS=%d", max(cpus, 1)), fmt.Sprintf("GATEPIPE_CPUS=%d", max(cpus, 1))}
	for _, kv := range mallocDefaults {
		name, _, _ := strings.Cut(kv, "=")
		if _, set := os.LookupEnv(name); !set {
			env = append(env, kv)
		}
	}
	return env
}

// mallocDefaults are the malloc settings WorkerEnv adds.
var mallocDefaults = []string{"MALLOC_MMAP_THRESHOLD_=1000000000", "MALLOC_TRIM_THRESHOLD_=1000000000"}
