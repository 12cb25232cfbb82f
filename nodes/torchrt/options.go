package torchrt

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/nodes/featureset"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"
)

// Options are a block's runtime attributes: runtime ("go" or "torch";
// unset: the pipeline's default, else "go"), precision (the torch
// runtime's arithmetic), python (its interpreter; unset: the pipeline's,
// else $GATEPIPE_PYTHON, else python3) and deterministic (kernels that
// give the same bits on every run, on a GPU too, at some speed).
type Options struct {
	Runtime, Precision, Python string
	Deterministic              bool
	// Auto is the machine's answer when the runtime was "auto" (nil
	// when the block or the pipeline named one).
	Auto *nodes.Acceleration
	// machine, when it can (TorchChecker), says at plan whether the
	// interpreter imports torch.
	machine nodes.Machine
}

// TorchChecker is a Machine that can say whether an interpreter imports
// torch (the probe, once per interpreter): "" when it does, else why not.
type TorchChecker interface {
	TorchProblem(python string) string
}

// AddSpec adds the runtime attributes to a block's schema.
func AddSpec(spec hcldec.ObjectSpec) hcldec.ObjectSpec {
	spec["runtime"] = &hcldec.AttrSpec{Name: "runtime", Type: cty.String}
	spec["precision"] = &hcldec.AttrSpec{Name: "precision", Type: cty.String}
	spec["python"] = &hcldec.AttrSpec{Name: "python", Type: cty.String}
	spec["deterministic"] = &hcldec.AttrSpec{Name: "deterministic", Type: cty.Bool}
	return spec
}

// ReadOptions reads the runtime attributes, precision one of precisions
// (the first by default); precision and python on the Go runtime are
// errors.
func ReadOptions(a *featureset.Attrs, precisions ...string) Options {
	def := a.Decl.Defaults.Runtime
	if def == "" {
		def = Auto
	}
	o := Options{Runtime: a.Str("runtime", def, Runtimes...), Precision: a.Str("precision", precisions[0], precisions...),
		Python: a.Str("python", a.Decl.Defaults.Python), Deterministic: a.Bool("deterministic", false), machine: a.Decl.Defaults.Machine}
	if o.Runtime == Auto {
		acc := Choose(a.Decl.Defaults.Machine, o.Python)
		o.Auto = &acc
		o.Runtime = Go
		if acc.UseGPUs() {
			o.Runtime = Torch
		}
		// precision, python and deterministic apply when auto picks torch.
		return o
	}
	o.checkTorch(a)
	if o.Runtime != Torch {
		for _, name := range []string{"precision", "python", "deterministic"} {
			if v := a.V.GetAttr(name); v.IsKnown() && !v.IsNull() {
				a.Diags = append(a.Diags, a.Decl.Errorf(name, "Unused "+name, "%s applies to runtime = \"torch\"; this block runs on the %q runtime.", name, o.Runtime))
			}
		}
	}
	return o
}

// PreferTorchFor makes runtime = "auto" pick the torch runtime, for the
// reason why, for a block the Go runtime cannot run at all (an encoder
// only PyTorch builds: timm, torchvision, a researcher's own module; GATE's
// adapters) wherever the interpreter imports torch, on a machine without
// GPUs too. why "" changes nothing.
func (o *Options) PreferTorchFor(why string) {
	if why == "" || o.Auto == nil || o.Torch() {
		return
	}
	tc, ok := o.machine.(TorchChecker)
	if !ok {
		return
	}
	python := o.Python
	if python == "" {
		python = Python()
	}
	if tc.TorchProblem(python) != "" {
		return
	}
	acc := *o.Auto
	acc.Why = fmt.Sprintf("%s, and %s imports torch: the torch runtime (%s)", why, python, strings.TrimSuffix(acc.Why, ": the Go runtime on the CPUs"))
	o.Auto, o.Runtime = &acc, Torch
}

// TorchHint says why this block's interpreter did not give it the torch
// runtime (it cannot import torch), and names Debian's /usr/bin/python3
// where that one imports torch (a pyenv or virtualenv python3 earlier on
// PATH hides it): "" when the machine cannot tell or torch imports.
func (o Options) TorchHint() string {
	tc, ok := o.machine.(TorchChecker)
	if !ok {
		return ""
	}
	python := o.Python
	if python == "" {
		python = Python()
	}
	why := tc.TorchProblem(python)
	if why == "" {
		return ""
	}
	const debian = "/usr/bin/python3"
	if resolved, err := exec.LookPath(python); python != debian && (err != nil || resolved != debian) {
		if _, err := os.Stat(debian); err == nil && tc.TorchProblem(debian) == "" {
			why += fmt.Sprintf("; %s imports torch: set python = %q on the block, or %s=%s", debian, debian, PythonEnv, debian)
		}
	}
	return why
}

// CheckOptions checks a block's runtime attributes (with precision one of
// precisions) before its references have values, as validate and plan
// see a block that waits on others: a torch runtime whose interpreter
// cannot import torch is an error there too.
func CheckOptions(v cty.Value, decl nodes.Decl, precisions ...string) hcl.Diagnostics {
	a := &featureset.Attrs{V: v, Decl: decl}
	ReadOptions(a, precisions...)
	return a.Diags
}

// Choose is what runtime = "auto" picks on machine m for python: its
// answer, or a machine without GPUs when m is nil.
func Choose(m nodes.Machine, python string) nodes.Acceleration {
	if m == nil {
		return nodes.Acceleration{Why: "no GPU found: the Go runtime on the CPUs"}
	}
	return m.Accelerate(python)
}

// Resources are the devices a block on these options asks for by
// default: one GPU and its share of the CPUs when "auto" picked the torch
// runtime on a GPU, else cpus.
func (o Options) Resources(cpus int) nodes.Resources {
	if o.Auto != nil && o.Auto.UseGPUs() {
		return nodes.Resources{CPUs: max(1, o.Auto.CPUsPerGPU), GPUs: 1}
	}
	return nodes.Resources{CPUs: cpus}
}

// Describe is the runtime and devices, as plan prints them: "torch, 1 GPU
// (auto)", "go (auto)", "torch".
func (o Options) Describe(r nodes.Resources) string {
	s := o.Runtime
	if r.GPUs > 0 {
		s += fmt.Sprintf(", %d GPU", r.GPUs)
		if r.GPUs > 1 {
			s += "s"
		}
	}
	if r.CPUs > 0 {
		s += fmt.Sprintf(", %d CPU", r.CPUs)
		if r.CPUs > 1 {
			s += "s"
		}
	}
	if o.Auto != nil {
		s += " (auto)"
	}
	return s
}

// Torch reports whether the block runs on the torch runtime.
func (o Options) Torch() bool { return o.Runtime == Torch }

// Fingerprint records the torch runtime in a node's action ID where the
// configuration may not (a pipeline default): its numbers differ from the
// Go runtime's in the last digits. The Go runtime writes nothing, so
// existing cache entries stay valid.
func (o Options) Fingerprint(w io.Writer) error {
	if !o.Torch() {
		return nil
	}
	_, err := fmt.Fprintf(w, "runtime torch\n")
	return err
}

// checkTorch makes a block that names the torch runtime an error, at its
// python (or runtime) attribute, when the machine can tell (TorchChecker)
// that its interpreter cannot import torch: plan says so, rather than
// every node failing at apply.
func (o Options) checkTorch(a *featureset.Attrs) {
	tc, ok := o.machine.(TorchChecker)
	if !ok || !o.Torch() {
		return
	}
	python := o.Python
	if python == "" {
		python = Python()
	}
	why := tc.TorchProblem(python)
	if why == "" {
		return
	}
	attr := "runtime"
	if v := a.V.GetAttr("python"); v.IsKnown() && !v.IsNull() {
		attr = "python"
	}
	a.Diags = append(a.Diags, a.Decl.Errorf(attr, "No torch for the torch runtime",
		"%s: runtime = \"torch\", but %s. Install PyTorch for that interpreter (pip install torch, or Debian's python3-torch), or set python = \"...\" (or %s) to one that has it.", a.Decl.Addr, why, PythonEnv))
}

// Job returns a job of this block's interpreter (config gains
// "deterministic" when the block asks for it).
func (o Options) Job(config map[string]any) Job {
	if o.Deterministic {
		config["deterministic"] = true
	}
	return Job{Python: o.Python, Config: config}
}
