package torchrt

import (
	"fmt"
	"io"

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
		def = Go
	}
	o := Options{Runtime: a.Str("runtime", def, Runtimes...), Precision: a.Str("precision", precisions[0], precisions...),
		Python: a.Str("python", a.Decl.Defaults.Python), Deterministic: a.Bool("deterministic", false)}
	if o.Runtime != Torch {
		for _, name := range []string{"precision", "python", "deterministic"} {
			if v := a.V.GetAttr(name); v.IsKnown() && !v.IsNull() {
				a.Diags = append(a.Diags, a.Decl.Errorf(name, "Unused "+name, "%s applies to runtime = \"torch\"; this block runs on the %q runtime.", name, o.Runtime))
			}
		}
	}
	return o
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
