package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gatepipe exec runs one instance on the devices its parent handed it,
// which hold no GPU when that instance needs none: the other nodes' GPU
// counts are the parent's to check. (Every CPU node beside a torch node
// with gpus = 1 failed so on the first GPU check.)
func TestExecIgnoresOtherNodesGPUs(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), `
command "cpu" {
  run = ["true"]
}
command "gpu" {
  run = ["true"]
  resources {
    gpus = 1
  }
}
`)
	env := append(os.Environ(), "GATEPIPE_CACHE_DIR="+t.TempDir(), "CUDA_VISIBLE_DEVICES=")
	if r := gpWith(t, env, "exec", "-devices", "cpu:1", dir, "command.cpu"); r.code != exitOK {
		t.Fatalf("exec command.cpu beside a GPU node: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := gpWith(t, env, "plan", dir); r.code != exitConfigError || !strings.Contains(r.stderr, "More GPUs than this machine has") {
		t.Fatalf("plan on a machine without GPUs: exit %d, want the GPU refusal\n%s", r.code, r.stderr)
	}
}

// The torch runtime's attributes on a block that names the Go runtime are
// refused at their line (when the block decodes, after its dependencies:
// apply). With runtime "auto", the default, they are the torch runtime's
// settings where auto picks it.
func TestTorchAttributesOnTheGoRuntime(t *testing.T) {
	for _, attr := range []string{`precision = "fp32"`, `python = "python3"`, `deterministic = true`} {
		name, _, _ := strings.Cut(attr, " ")
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "main.hcl"), strings.Replace(resumePipeline, "  benchmark = benchmark.gen\n}", "  benchmark = benchmark.gen\n  runtime = \"go\"\n  "+attr+"\n}", 1))
			r := gp(t, t.TempDir(), "apply", dir)
			said := strings.Join(strings.Fields(r.stderr), " ")
			if r.code == exitOK || !strings.Contains(said, "main.hcl:") || !strings.Contains(said, "Unused "+name) || !strings.Contains(said, name+` applies to runtime = "torch"`) {
				t.Fatalf("apply: exit %d, want Unused %s\n%s", r.code, name, r.stderr)
			}
		})
	}
}

// Mistakes that used to surface only at apply are refused by validate or
// plan, at the line that makes them: GPUs the machine does not have, a
// tier's gpus outside 0 and 1, and a local dataset source that is not
// there (with what installs it when it is a Debian dataset package's
// path).
func TestMistakesCaughtBeforeApply(t *testing.T) {
	noGPU := t.TempDir() // a PATH without nvidia-smi
	for _, name := range []string{"sh", "true"} {
		if p, err := exec.LookPath(name); err == nil {
			os.Symlink(p, filepath.Join(noGPU, name))
		}
	}
	tests := []struct {
		name, command, src string
		want               []string
	}{
		{"gpus beyond the machine", "validate", `
command "c" {
  run = ["true"]
  resources {
    gpus = 2
  }
}
`, []string{"More GPUs than this machine has", "main.hcl:5", "asks for 2 GPU(s), but gatepipe sees 0"}},
		{"a tier's gpus outside 0 and 1", "validate", `
module "gate" {
  source = "stdlib/tiers/small"
  gpus   = 2
}
`, []string{"gpus is the GPUs of each train node: 0 (CPU) or 1"}},
		{"a dataset directory that is not there", "plan", `
module "fm" {
  source = "stdlib/datasets/fashion_mnist"
  dir    = "/nonexistent/fmnist"
}
`, []string{"/nonexistent/fmnist/train-images-idx3-ubyte.gz does not exist", "check the path (a module's dir variable"}},
		{"a Debian dataset package not installed", "plan", `
module "fm" {
  source = "stdlib/datasets/fashion_mnist"
  dir    = "/usr/share/datasets/no-such-set"
}
`, []string{"does not exist", "apt-get install dataset-no-such-set", "fashion_mnist/main.hcl:"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "main.hcl"), tc.src)
			env := append(os.Environ(), "GATEPIPE_CACHE_DIR="+t.TempDir(), "PATH="+noGPU, "CUDA_VISIBLE_DEVICES=")
			r := gpWith(t, env, tc.command, dir)
			if r.code != exitConfigError {
				t.Fatalf("%s: exit %d, want %d\n%s%s", tc.command, r.code, exitConfigError, r.stdout, r.stderr)
			}
			said := strings.Join(strings.Fields(r.stderr), " ") // unwrapped
			for _, w := range tc.want {
				if !strings.Contains(said, w) {
					t.Errorf("%s says\n%s\nwant %q in it", tc.command, r.stderr, w)
				}
			}
		})
	}
}

// TestGPUShareRunsNodesTogether: two nodes asking for one GPU each run
// one after the other on one GPU by default, and at once with -gpu-share
// 2 (or GATEPIPE_GPU_SHARE), both seeing CUDA_VISIBLE_DEVICES=0. Each
// node waits up to 10 s (a loaded CI machine) for the other to start and
// writes how many had.
func TestGPUShareRunsNodesTogether(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  string
		want string
	}{
		{"default", nil, "", "end 0 1\nend 0 2\n"},
		{"flag", []string{"-gpu-share", "2"}, "", "end 0 2\nend 0 2\n"},
		{"environment", nil, "GATEPIPE_GPU_SHARE=2", "end 0 2\nend 0 2\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			log := filepath.Join(dir, "log")
			node := `command "%[1]s" {
  run = ["sh", "-c", "echo start %[1]s >> ${local.log}; i=0; while [ $(grep -c start ${local.log}) -lt 2 ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; echo end $CUDA_VISIBLE_DEVICES $(grep -c start ${local.log}) >> ${local.log}"]
  resources {
    gpus = 1
  }
}
`
			writeFile(t, filepath.Join(dir, "main.hcl"), fmt.Sprintf("locals {\n  log = %q\n}\n", log)+fmt.Sprintf(node, "a")+fmt.Sprintf(node, "b")) // distinct commands: one action each
			env := append(os.Environ(), "GATEPIPE_CACHE_DIR="+t.TempDir())
			if tc.env != "" {
				env = append(env, tc.env)
			}
			args := append(append([]string{"apply", "-devices", "cpu:2,gpu:0"}, tc.args...), dir)
			if r := gpWith(t, env, args...); r.code != exitOK {
				t.Fatalf("apply: exit %d\n%s", r.code, r.stderr)
			}
			var ends strings.Builder
			for _, line := range strings.Split(readFile(log), "\n") {
				if strings.HasPrefix(line, "end") {
					ends.WriteString(line + "\n")
				}
			}
			if ends.String() != tc.want {
				t.Fatalf("log ends:\n%swant\n%s", ends.String(), tc.want)
			}
		})
	}
}

// TestTorchPlanWithoutTorchIsAnError: a torch-runtime plan whose
// interpreter lacks torch exited 0 with the problem buried in the time
// block, and every train node then failed at apply. Now plan exits 2 at
// the block, with the import error and what to do.
func TestTorchPlanWithoutTorchIsAnError(t *testing.T) {
	dir := t.TempDir()
	// The system's Python without its site-packages: a real interpreter
	// that has no torch.
	python := filepath.Join(dir, "python-without-torch")
	writeFile(t, python, "#!/bin/sh\nexec python3 -I -S \"$@\"\n")
	os.Chmod(python, 0o755)
	writeFile(t, filepath.Join(dir, "main.hcl"), strings.Replace(resumePipeline, "  benchmark = benchmark.gen\n}", "  benchmark = benchmark.gen\n  runtime = \"torch\"\n  python  = \""+python+"\"\n}", 1))
	r := gp(t, t.TempDir(), "plan", dir)
	said := strings.Join(strings.Fields(r.stderr), " ")
	for _, want := range []string{"main.hcl:", "cannot import torch", "ModuleNotFoundError", "Install PyTorch"} {
		if r.code != exitConfigError || !strings.Contains(said, want) {
			t.Fatalf("plan: exit %d, want 2 with %q\n%s%s", r.code, want, r.stdout, r.stderr)
		}
	}
}
