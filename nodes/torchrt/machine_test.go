package torchrt

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gatepipe/gatepipe/nodes"
)

func TestAutoChoosesByTheMachine(t *testing.T) {
	cuda := func(context.Context, string) (Probe, error) {
		return Probe{Torch: "2.11.0", CUDA: true, CUDAVersion: "13.0", Devices: 8}, nil
	}
	for _, c := range []struct {
		name       string
		m          *Machine
		torch      bool
		cpusPerGPU int
		why        string
	}{
		{"no gpu", &Machine{CPUs: 16, Note: "nvidia-smi not found"}, false, 1, "no GPU found (nvidia-smi not found): the Go runtime"},
		{"gpus and cuda", &Machine{GPUs: 8, CPUs: 64, ProbeFunc: cuda}, true, 8, "8 GPUs and torch 2.11.0 with CUDA 13.0 found (py): the torch runtime, 1 GPU and 8 CPUs per node"},
		{"shared gpus", &Machine{GPUs: 2, CPUs: 16, Share: 4, ProbeFunc: cuda}, true, 2, "1 GPU and 2 CPUs per node"},
		{"cpu torch", &Machine{GPUs: 1, CPUs: 4, ProbeFunc: func(context.Context, string) (Probe, error) {
			return Probe{Torch: "2.11.0+cpu"}, nil
		}}, false, 4, "torch 2.11.0+cpu in py has no CUDA"},
		{"no torch", &Machine{GPUs: 1, CPUs: 4, ProbeFunc: func(context.Context, string) (Probe, error) {
			return Probe{Error: "ModuleNotFoundError: No module named 'torch'"}, nil
		}}, false, 4, "cannot import torch (ModuleNotFoundError"},
		{"no python", &Machine{GPUs: 1, CPUs: 4, ProbeFunc: func(context.Context, string) (Probe, error) {
			return Probe{}, errors.New(`no interpreter "py"`)
		}}, false, 4, "could not be asked about torch"},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := c.m.Accelerate("py")
			if a.UseGPUs() != c.torch || a.CPUsPerGPU != c.cpusPerGPU || !strings.Contains(a.Why, c.why) {
				t.Errorf("got torch %v, %d CPUs a GPU, %q; want %v, %d, containing %q", a.UseGPUs(), a.CPUsPerGPU, a.Why, c.torch, c.cpusPerGPU, c.why)
			}
		})
	}
}

// TestMachineTravelsToChildren: a child decodes the parent's machine and
// answers as it did without asking the interpreter again.
func TestMachineTravelsToChildren(t *testing.T) {
	asked := 0
	m := &Machine{GPUs: 2, CPUs: 8, ProbeFunc: func(context.Context, string) (Probe, error) {
		asked++
		return Probe{Torch: "2.11.0", CUDA: true}, nil
	}}
	want := m.Accelerate("py")
	child, err := DecodeMachine(m.Encode())
	if err != nil {
		t.Fatal(err)
	}
	child.ProbeFunc = func(context.Context, string) (Probe, error) {
		t.Error("the child asked the interpreter again")
		return Probe{}, nil
	}
	if got := child.Accelerate("py"); got != want {
		t.Errorf("child: %+v, parent: %+v", got, want)
	}
	if asked != 1 {
		t.Errorf("the parent asked %d times, want once", asked)
	}
	if _, err := DecodeMachine("{"); err == nil {
		t.Error("a broken GATEPIPE_MACHINE was read")
	}
}

func TestRunProbeReadsTheLastLine(t *testing.T) {
	dir := t.TempDir()
	py := dir + "/python"
	writeScript(t, py, "#!/bin/sh\necho 'site banner'\necho '{\"torch\": \"2.1\", \"cuda\": true, \"cuda_version\": \"12.1\", \"devices\": 2}'\n")
	p, err := RunProbe(context.Background(), py)
	if err != nil || !p.CUDA || p.Torch != "2.1" || p.Devices != 2 {
		t.Errorf("got %+v, %v", p, err)
	}
	writeScript(t, py, "#!/bin/sh\necho nonsense\n")
	if _, err := RunProbe(context.Background(), py); err == nil {
		t.Error("an unreadable answer was accepted")
	}
}

func writeScript(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestWithDecode: a JPEG store's decoding bounds a GPU's step through the
// reader threads (one a CPU) and adds to a CPU's.
func TestWithDecode(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		name                string
		train, eval, decode time.Duration
		dev                 nodes.Assignment
		wantTrain, wantEval time.Duration
	}{
		{"raw store", 2 * ms, ms, 0, nodes.Assignment{CPUs: 1}, 2 * ms, ms},
		{"cpu: the decoding adds", 2 * ms, ms, 3 * ms, nodes.Assignment{CPUs: 2}, 5 * ms, 4 * ms},
		{"gpu: the readers keep up", 2 * ms, ms, 8 * ms, nodes.Assignment{CPUs: 16, GPUs: []string{"0"}}, 2 * ms, ms},
		{"gpu: the readers bound the step", 2 * ms, ms, 8 * ms, nodes.Assignment{CPUs: 2, GPUs: []string{"0"}}, 4 * ms, 4 * ms},
	} {
		tr, ev := withDecode(c.train, c.eval, c.decode, c.dev)
		if tr != c.wantTrain || ev != c.wantEval {
			t.Errorf("%s: %v, %v; want %v, %v", c.name, tr, ev, c.wantTrain, c.wantEval)
		}
	}
	if cfg, key := DecodeTiming(nodes.StoreEstimate{Shape: []int{3, 224, 224}}); cfg != nil || key != "" {
		t.Errorf("a raw store: %v %q", cfg, key)
	}
	if cfg, key := DecodeTiming(nodes.StoreEstimate{Shape: []int{3, 224, 224}, JPEGQuality: 90}); cfg == nil || key != " jpeg 90 [3 224 224]" {
		t.Errorf("a JPEG store: %v %q", cfg, key)
	}
}

// torchProblems is a TorchChecker that knows which interpreters lack torch.
type torchProblems map[string]string

func (p torchProblems) Accelerate(string) nodes.Acceleration { return nodes.Acceleration{} }
func (p torchProblems) TorchProblem(python string) string    { return p[python] }

// TestTorchHintNamesDebiansPython: an interpreter without torch is named
// with its problem, and Debian's /usr/bin/python3 where it imports torch.
func TestTorchHintNamesDebiansPython(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	missing := "venv/bin/python3 cannot import torch (No module named 'torch')"
	for _, c := range []struct {
		name   string
		m      torchProblems
		python string
		want   []string
		not    string
	}{
		{"torch imports", torchProblems{}, "venv/bin/python3", nil, ""},
		{"debian's has it", torchProblems{"venv/bin/python3": missing}, "venv/bin/python3", []string{missing, `/usr/bin/python3 imports torch: set python = "/usr/bin/python3"`}, ""},
		{"neither has it", torchProblems{"venv/bin/python3": missing, "/usr/bin/python3": "no torch"}, "venv/bin/python3", []string{missing}, "/usr/bin/python3 imports"},
		{"debian's is the one", torchProblems{"/usr/bin/python3": "no torch"}, "/usr/bin/python3", []string{"no torch"}, "imports torch"},
	} {
		got := Options{Python: c.python, machine: c.m}.TorchHint()
		if c.want == nil && got != "" {
			t.Errorf("%s: %q, want none", c.name, got)
		}
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q lacks %q", c.name, got, w)
			}
		}
		if c.not != "" && strings.Contains(got, c.not) {
			t.Errorf("%s: %q has %q", c.name, got, c.not)
		}
	}
}
