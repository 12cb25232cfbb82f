package torchrt

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gatepipe/gatepipe/nodes"
)

// probeScript prints what the torch runtime needs to know of an
// interpreter: torch's version and whether CUDA is available to it.
const probeScript = `import json
try:
    import torch
except Exception as e:
    print(json.dumps({"error": "%s: %s" % (type(e).__name__, e)}))
else:
    cuda = bool(torch.cuda.is_available())
    print(json.dumps({"torch": torch.__version__, "cuda": cuda, "cuda_version": torch.version.cuda, "devices": torch.cuda.device_count() if cuda else 0}))
`

// probeTimeout bounds the probe: importing torch cold from a network
// file system takes seconds, a hung interpreter must not hang plan.
const probeTimeout = 90 * time.Second

// Probe is what an interpreter said about its torch.
type Probe struct {
	Torch       string `json:"torch"`
	CUDA        bool   `json:"cuda"`
	CUDAVersion string `json:"cuda_version"`
	Devices     int    `json:"devices"`
	Error       string `json:"error"`
}

// Machine answers runtime = "auto" for one apply: the scheduler's GPUs
// and CPUs, and each interpreter's torch, probed once (only where there
// are GPUs: on a machine without, auto is the Go runtime and no Python
// starts).
type Machine struct {
	GPUs, CPUs int
	// Share is how many nodes run on one GPU at once (gpu_share; 0 or
	// 1: one): a node's CPUs are the machine's over GPUs x Share.
	Share int
	// Note is what device discovery said (nvidia-smi missing, ...).
	Note string
	// ProbeFunc runs the probe (nil: the interpreter itself); tests
	// replace it.
	ProbeFunc func(ctx context.Context, python string) (Probe, error)

	mu     sync.Mutex
	probes map[string]*probeOnce
	// checks are the researcher's encoders checked (CheckEncoder).
	checks userChecks
}

type probeOnce struct {
	once sync.Once
	p    Probe
	err  error
}

// Accelerate implements nodes.Machine.
func (m *Machine) Accelerate(python string) nodes.Acceleration {
	acc := nodes.Acceleration{GPUs: m.GPUs, CPUsPerGPU: 1}
	if m.GPUs > 0 {
		acc.CPUsPerGPU = max(1, m.CPUs/(m.GPUs*max(m.Share, 1)))
	}
	if m.GPUs == 0 {
		why := "no GPU found"
		if m.Note != "" {
			why += " (" + m.Note + ")"
		}
		acc.Why = why + ": the Go runtime on the CPUs"
		return acc
	}
	if python == "" {
		python = Python()
	}
	p, err := m.probe(python)
	gpus := plural(m.GPUs, "GPU")
	switch {
	case err != nil:
		acc.Why = fmt.Sprintf("%s found, but %s could not be asked about torch (%v): the Go runtime on the CPUs (set python, or runtime = \"torch\" to see the error)", gpus, python, err)
	case p.Error != "":
		acc.Why = fmt.Sprintf("%s found, but %s cannot import torch (%s): the Go runtime on the CPUs (install PyTorch with CUDA, or point python or %s at an interpreter that has it)", gpus, python, p.Error, PythonEnv)
	case !p.CUDA:
		acc.Why = fmt.Sprintf("%s found, but torch %s in %s has no CUDA: the Go runtime on the CPUs (install a CUDA build of PyTorch)", gpus, p.Torch, python)
	default:
		acc.Torch = true
		cuda := ""
		if p.CUDAVersion != "" {
			cuda = " " + p.CUDAVersion
		}
		acc.Why = fmt.Sprintf("%s and torch %s with CUDA%s found (%s): the torch runtime, 1 GPU and %s per node", gpus, p.Torch, cuda, python, plural(acc.CPUsPerGPU, "CPU"))
	}
	return acc
}

// TorchProblem implements TorchChecker: "" when python imports torch,
// else what went wrong. The probe runs once per interpreter and apply
// (its answer travels to the children with the Machine).
func (m *Machine) TorchProblem(python string) string {
	p, err := m.probe(python)
	switch {
	case err != nil:
		return fmt.Sprintf("%s could not be asked about torch (%v)", python, err)
	case p.Error != "":
		return fmt.Sprintf("%s cannot import torch (%s)", python, p.Error)
	}
	return ""
}

func (m *Machine) probe(python string) (Probe, error) {
	m.mu.Lock()
	if m.probes == nil {
		m.probes = map[string]*probeOnce{}
	}
	po := m.probes[python]
	if po == nil {
		po = &probeOnce{}
		m.probes[python] = po
	}
	m.mu.Unlock()
	po.once.Do(func() {
		f := m.ProbeFunc
		if f == nil {
			f = RunProbe
		}
		ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
		defer cancel()
		po.p, po.err = f(ctx, python)
	})
	return po.p, po.err
}

// RunProbe asks python about its torch.
func RunProbe(ctx context.Context, python string) (Probe, error) {
	if _, err := exec.LookPath(python); err != nil {
		return Probe{}, fmt.Errorf("no Python interpreter %q", python)
	}
	out, err := exec.CommandContext(ctx, python, "-c", probeScript).Output()
	if err != nil {
		return Probe{}, err
	}
	var p Probe
	line := strings.TrimSpace(string(out))
	if i := strings.LastIndexByte(line, '\n'); i >= 0 {
		line = line[i+1:] // a sitecustomize may print first
	}
	if err := json.Unmarshal([]byte(line), &p); err != nil {
		return Probe{}, fmt.Errorf("unreadable answer %q", line)
	}
	return p, nil
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}

// MachineEnv names the variable through which an apply hands its Machine
// to the `gatepipe exec` children that run its nodes, so that a child
// resolves "auto" as its parent did (its own devices are the node's share,
// and the choice enters action IDs).
const MachineEnv = "GATEPIPE_MACHINE"

// machineState is a Machine as MachineEnv carries it.
type machineState struct {
	GPUs   int              `json:"gpus"`
	CPUs   int              `json:"cpus"`
	Share  int              `json:"share,omitempty"`
	Note   string           `json:"note,omitempty"`
	Probes map[string]Probe `json:"probes,omitempty"`
	// Checks are the CheckEncoder answers, by check key.
	Checks map[string]nodes.EncoderResult `json:"checks,omitempty"`
}

// Encode returns the Machine, with the answers of the interpreters it has
// probed, for MachineEnv.
func (m *Machine) Encode() string {
	st := machineState{GPUs: m.GPUs, CPUs: m.CPUs, Share: m.Share, Note: m.Note, Probes: map[string]Probe{}}
	m.mu.Lock()
	pythons := make([]string, 0, len(m.probes))
	for py := range m.probes {
		pythons = append(pythons, py)
	}
	m.mu.Unlock()
	for _, py := range pythons {
		if p, err := m.probe(py); err == nil {
			st.Probes[py] = p
		}
	}
	m.checks.mu.Lock()
	if len(m.checks.done) > 0 {
		st.Checks = map[string]nodes.EncoderResult{}
		for k, r := range m.checks.done {
			st.Checks[k] = r
		}
	}
	m.checks.mu.Unlock()
	data, _ := json.Marshal(st)
	return string(data)
}

// DecodeMachine reads a Machine that Encode wrote; interpreters it
// carries no answer for are probed.
func DecodeMachine(s string) (*Machine, error) {
	var st machineState
	if err := json.Unmarshal([]byte(s), &st); err != nil {
		return nil, fmt.Errorf("%s: %w", MachineEnv, err)
	}
	m := &Machine{GPUs: st.GPUs, CPUs: st.CPUs, Share: st.Share, Note: st.Note, probes: map[string]*probeOnce{}}
	m.checks.done = st.Checks
	for py, p := range st.Probes {
		po := &probeOnce{p: p}
		po.once.Do(func() {})
		m.probes[py] = po
	}
	return m, nil
}

// Answers lists the distinct reasons Accelerate gave, for plan to print
// once.
func (m *Machine) Answers() []string {
	m.mu.Lock()
	pythons := make([]string, 0, len(m.probes))
	for py := range m.probes {
		pythons = append(pythons, py)
	}
	m.mu.Unlock()
	sort.Strings(pythons)
	if m.GPUs == 0 {
		return []string{m.Accelerate("").Why}
	}
	var out []string
	for _, py := range pythons {
		out = append(out, m.Accelerate(py).Why)
	}
	return out
}

// Time runs the worker's timing job for a model (config: encoder, shape,
// batch, eval_batch) on env's devices in a directory under env.OutDir:
// seconds per example through a training step and a forward pass, and
// the model's building and warm-up as the fixed cost.
func (o Options) Time(ctx context.Context, env *nodes.Env, config map[string]any) (nodes.Rate, error) {
	dir, err := os.MkdirTemp(env.OutDir, "timing-")
	if err != nil {
		return nodes.Rate{}, err
	}
	defer os.RemoveAll(dir)
	work := filepath.Join(dir, "out")
	if err := os.Mkdir(work, 0o755); err != nil {
		return nodes.Rate{}, err
	}
	config["job"], config["work"], config["precision"] = "timing", work, o.Precision
	start := time.Now()
	if err := Run(ctx, env, dir, o.Job(config)); err != nil {
		return nodes.Rate{}, err
	}
	wall := time.Since(start).Seconds()
	data, err := os.ReadFile(filepath.Join(work, "timing.json"))
	if err != nil {
		return nodes.Rate{}, fmt.Errorf("the worker wrote no timing (%w)", err)
	}
	var t struct{ Train, Eval, Fixed, Elapsed, Decode float64 }
	if err := json.Unmarshal(data, &t); err != nil {
		return nodes.Rate{}, fmt.Errorf("timing.json: %w", err)
	}
	sec := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	train, eval := withDecode(sec(t.Train), sec(t.Eval), sec(t.Decode), env.Devices)
	// A node pays the worker's start (the interpreter, torch's import)
	// too: the wall time the job did not see itself.
	return nodes.Rate{Train: train, Eval: eval, Fixed: sec(t.Fixed + max(0, wall-t.Elapsed))}, nil
}

// withDecode adds a JPEG store's decoding (decode: an image on one
// thread) to the per-example train and eval times: on a GPU the loader's
// reader threads, one a CPU, decode ahead of the steps, so an example
// takes the longer of the two; on the CPUs one reader decodes beside
// torch's threads on the same cores, so the decoding adds.
func withDecode(train, eval, decode time.Duration, dev nodes.Assignment) (time.Duration, time.Duration) {
	if decode <= 0 {
		return train, eval
	}
	if len(dev.GPUs) > 0 {
		per := decode / time.Duration(max(dev.CPUs, 1))
		return max(train, per), max(eval, per)
	}
	return train + decode, eval + decode
}

// DecodeTiming is what a timing job's config adds for data's images
// stored as JPEGs (nil when they are not) and the words its timing's key
// adds: the timing then decodes such a JPEG, a cost of every pass.
func DecodeTiming(data nodes.StoreEstimate) (map[string]any, string) {
	if data.JPEGQuality <= 0 || len(data.Shape) != 3 {
		return nil, ""
	}
	return map[string]any{"quality": data.JPEGQuality, "shape": data.Shape}, fmt.Sprintf(" jpeg %d %v", data.JPEGQuality, data.Shape)
}
