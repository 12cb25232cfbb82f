package torchrt

import (
	"fmt"
	"io"

	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/nodes/featureset"
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
		Python: a.Str("python", a.Decl.Defaults.Python), Deterministic: a.Bool("deterministic", false)}
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
	if o.Runtime != Torch {
		for _, name := range []string{"precision", "python", "deterministic"} {
			if v := a.V.GetAttr(name); v.IsKnown() && !v.IsNull() {
				a.Diags = append(a.Diags, a.Decl.Errorf(name, "Unused "+name, "%s applies to runtime = \"torch\"; this block runs on the %q runtime.", name, o.Runtime))
			}
		}
	}
	return o
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

// Job returns a job of this block's interpreter (config gains
// "deterministic" when the block asks for it).
func (o Options) Job(config map[string]any) Job {
	if o.Deterministic {
		config["deterministic"] = true
	}
	return Job{Python: o.Python, Config: config}
}
