package engine

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/gatepipe/gatepipe/engine/cache"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/pipelines/funcs"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// evalVertex computes the value of a variable, local or output vertex.
func (e *Engine) evalVertex(v *vertex) hcl.Diagnostics {
	var val cty.Value
	var diags hcl.Diagnostics
	switch v.kind {
	case vVariable:
		val, diags = e.evalVariable(v)
	case vLocal:
		val, diags = v.local.Expr.Value(e.evalContext(v, nil))
	case vOutput:
		val, diags = v.output.Expr.Value(e.evalContext(v, nil))
	}
	if !diags.HasErrors() && v.kind != vVariable {
		var rng hcl.Range
		if v.kind == vLocal {
			rng = v.local.Expr.Range()
		} else {
			rng = v.output.Expr.Range()
		}
		diags = append(diags, infinities(val, func(cty.Path) hcl.Range { return rng })...)
	}
	if diags.HasErrors() {
		val = cty.DynamicVal
	}
	e.state.set(v.key, val)
	return e.suggestAttributes(diags)
}

// infinities reports an infinite number in val (10 / 0 evaluates to +Inf
// in HCL) at the range where gives for its path.
func infinities(val cty.Value, where func(cty.Path) hcl.Range) hcl.Diagnostics {
	var diags hcl.Diagnostics
	_ = cty.Walk(val, func(p cty.Path, v cty.Value) (bool, error) {
		if len(diags) > 0 || !v.IsKnown() || v.IsNull() || v.Type() != cty.Number || !v.AsBigFloat().IsInf() {
			return len(diags) == 0, nil
		}
		r := where(p)
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Infinite number",
			Detail:   "This value is infinite (a division by zero?); gatepipe accepts only finite numbers.",
			Subject:  r.Ptr(),
		})
		return false, nil
	})
	return diags
}

// attributeRange returns the range of the attribute a path into a
// block's configuration starts with, or the block's own.
func attributeRange(body hcl.Body, decl hcl.Range, p cty.Path) hcl.Range {
	if len(p) > 0 {
		if step, ok := p[0].(cty.GetAttrStep); ok {
			content, _, _ := body.PartialContent(&hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: step.Name}}})
			if a, ok := content.Attributes[step.Name]; ok {
				return a.Expr.Range()
			}
		}
	}
	return decl
}

func (e *Engine) evalVariable(v *vertex) (cty.Value, hcl.Diagnostics) {
	val, diags := e.variableValue(v)
	if diags.HasErrors() {
		return val, diags
	}
	subject := v.variable.DeclRange
	if v.input != nil {
		subject = v.input.Expr.Range() // the caller's line
	}
	return val, append(diags, e.validate(v, val, subject)...)
}

// validate checks a variable's value against its validation blocks; a
// failed condition is an error at subject (where the value was given)
// with the block's error_message.
func (e *Engine) validate(v *vertex, val cty.Value, subject hcl.Range) hcl.Diagnostics {
	decl := v.variable
	if len(decl.Validations) == 0 || !val.IsWhollyKnown() {
		return nil
	}
	ctx := &hcl.EvalContext{
		Variables: map[string]cty.Value{"var": cty.ObjectVal(map[string]cty.Value{decl.Name: val})},
		Functions: e.evalContext(v, nil).Functions,
	}
	var diags hcl.Diagnostics
	for _, rule := range decl.Validations {
		ok, cDiags := rule.Condition.Value(ctx)
		if cDiags.HasErrors() {
			diags = append(diags, cDiags...)
			continue
		}
		if ok, err := convert.Convert(ok, cty.Bool); err != nil || ok.IsNull() {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid validation condition",
				Detail: "The condition must be true or false.", Subject: rule.Condition.Range().Ptr()})
			continue
		} else if !ok.IsKnown() || ok.True() {
			continue
		}
		msg := "The value does not pass the variable's validation."
		if m, mDiags := rule.ErrorMessage.Value(ctx); !mDiags.HasErrors() && m.Type() == cty.String && m.IsKnown() && !m.IsNull() {
			msg = m.AsString()
		}
		where := "variable " + decl.Name
		if v.mod.Call != nil {
			where = fmt.Sprintf("variable %q of module %q (%s)", decl.Name, v.mod.Call.Name, rule.DeclRange)
		}
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid value for variable",
			Detail: fmt.Sprintf("%s\n\nThis was checked by the validation of %s.", msg, where), Subject: subject.Ptr()})
	}
	return diags
}

// variableValue is a variable's value: the root's given or default value,
// or a module call's argument converted to the declared type.
func (e *Engine) variableValue(v *vertex) (cty.Value, hcl.Diagnostics) {
	decl := v.variable
	if v.mod.Call == nil {
		val, ok := e.rootVals[decl.Name]
		if !ok {
			return cty.DynamicVal, nil // missing values are reported by RootVariableValues
		}
		return val, nil
	}
	if v.input == nil {
		if decl.Required() {
			return cty.DynamicVal, hcl.Diagnostics{{
				Severity: hcl.DiagError,
				Summary:  "Missing required argument",
				Detail:   fmt.Sprintf("Module %q needs a value for its variable %q, which has no default. Add %s = ... to the module block.", v.mod.Call.Name, decl.Name, decl.Name),
				Subject:  v.mod.Call.DeclRange.Ptr(),
			}}
		}
		return decl.Default, nil
	}
	val, diags := v.input.Expr.Value(e.evalContext(v, nil))
	if diags.HasErrors() {
		return cty.DynamicVal, diags
	}
	conv, err := funcs.Convert(val, decl.Type)
	if err != nil {
		return cty.DynamicVal, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Invalid value for module argument",
			Detail:   fmt.Sprintf("Variable %q of module %q must be %s: %s.", decl.Name, v.mod.Call.Name, typeexpr.TypeString(decl.Type), err),
			Subject:  v.input.Expr.Range().Ptr(),
		}}
	}
	return conv, nil
}

// decl is what in's kind is told about its block when it decodes it.
func (e *Engine) decl(in *instance) nodes.Decl {
	v := in.v
	return nodes.Decl{Addr: in.addr, Body: v.block.Body, DeclRange: v.block.DeclRange, Dir: v.mod.Pipeline.Dir, Reads: e.opts.Reads, Sources: e.resolver(), Defaults: e.opts.Defaults}
}

// evalInstance evaluates an instance's configuration and resources and,
// when the configuration is wholly known, decodes its node.
func (e *Engine) evalInstance(in *instance) hcl.Diagnostics {
	v := in.v
	ctx := e.evalContext(v, in)
	cfg, diags := hcldec.Decode(v.block.Body, v.nodeKind.Spec(), ctx)
	if !diags.HasErrors() {
		diags = append(diags, infinities(cfg, func(p cty.Path) hcl.Range {
			return attributeRange(v.block.Body, v.block.DeclRange, p)
		})...)
	}
	if diags.HasErrors() {
		return e.suggestAttributes(diags)
	}
	in.config, in.node = cfg, nil
	if pc, ok := v.nodeKind.(nodes.PartialChecker); ok && !cfg.IsWhollyKnown() {
		pDiags := pc.CheckPartial(cfg, e.decl(in))
		if diags = append(diags, pDiags...); pDiags.HasErrors() {
			return diags
		}
	}
	if cfg.IsWhollyKnown() {
		node, dDiags := v.nodeKind.Decode(cfg, e.decl(in))
		diags = append(diags, dDiags...)
		if dDiags.HasErrors() {
			return diags
		}
		in.node = node
	}
	// Resources come after decoding, so a kind's defaults apply.
	res, rDiags := e.evalResources(in, in.node, ctx)
	diags = append(diags, rDiags...)
	in.resources = res
	return diags
}

// evalResources is what in asks the scheduler for: node's defaults (node
// may be nil), with the block's resources where it sets them.
func (e *Engine) evalResources(in *instance, node nodes.Node, ctx *hcl.EvalContext) (nodes.Resources, hcl.Diagnostics) {
	res := nodes.Resources{CPUs: 1}
	if node != nil {
		if d, ok := node.(nodes.ResourceDefaulter); ok {
			res = d.DefaultResources()
		}
	}
	r := in.v.block.Resources
	if r == nil {
		return res, nil
	}
	var diags hcl.Diagnostics
	num := func(expr hcl.Expression, name string, dst *int) {
		if expr == nil {
			return
		}
		val, d := expr.Value(ctx)
		diags = append(diags, d...)
		if d.HasErrors() || !val.IsKnown() || val.IsNull() {
			return // null: the node's default
		}
		var n int64 = -1
		if !val.IsNull() && val.Type() == cty.Number {
			i, acc := val.AsBigFloat().Int64()
			if acc == big.Exact {
				n = i
			}
		}
		if n < 0 {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid resources value",
				Detail: fmt.Sprintf("%s must be a whole number of at least 0.", name), Subject: expr.Range().Ptr()})
			return
		}
		*dst = int(n)
	}
	num(r.CPUs, "cpus", &res.CPUs)
	num(r.GPUs, "gpus", &res.GPUs)
	if have := len(e.opts.Devices.GPUs); r.GPUs != nil && res.GPUs > have && !e.opts.OneInstance {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "More GPUs than this machine has",
			Detail:  fmt.Sprintf("%s asks for %d GPU(s), but gatepipe sees %d here (gatepipe devices lists them: nvidia-smi's GPUs, restricted by CUDA_VISIBLE_DEVICES and the devices setting). A node cannot run on GPUs it does not have; use gpus = 0 to train on the CPU.", in.key(), res.GPUs, have),
			Subject: r.GPUs.Range().Ptr()})
	}
	if r.Memory != nil {
		val, d := r.Memory.Value(ctx)
		diags = append(diags, d...)
		if !d.HasErrors() && val.IsKnown() && !val.IsNull() {
			n, err := parseBytes(val)
			if err != nil {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid resources value",
					Detail: err.Error(), Subject: r.Memory.Range().Ptr()})
			}
			res.Memory = n
		}
	}
	return res, diags
}

// parseBytes reads a memory size: a number of bytes or a string such as
// "512MiB", "4GiB" or "2G".
func parseBytes(v cty.Value) (int64, error) {
	if v.Type() == cty.Number {
		f, _ := v.AsBigFloat().Int64()
		return f, nil
	}
	if v.Type() != cty.String {
		return 0, fmt.Errorf("memory must be a number of bytes or a string like \"4GiB\"")
	}
	s := strings.TrimSpace(v.AsString())
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}, {"B", 1}}
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			f, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), 64)
			if err != nil || f < 0 {
				break
			}
			return int64(f * float64(u.mult)), nil
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("memory %q is not a size: use bytes or a suffix such as MiB or GiB", s)
	}
	return n, nil
}

// lookupCache finds a cached output for the instance's action and loads its
// value. ok is false on a miss.
func (e *Engine) lookupCache(in *instance) (bool, error) {
	if e.cache == nil {
		return false, nil
	}
	entry, m, dir, err := e.cache.GetOutput(in.action)
	if err != nil {
		return false, nil
	}
	return true, e.setOutput(in, entry.Output, m, dir)
}

// loadOutput reads an output's stored value, pointing its paths at the
// output directory.
func (e *Engine) loadOutput(in *instance, out [32]byte) error {
	m, dir, err := e.cache.Output(out)
	if err != nil {
		return err
	}
	return e.setOutput(in, out, m, dir)
}

func (e *Engine) setOutput(in *instance, out [32]byte, m *cache.Manifest, dir string) error {
	in.mu.Lock()
	in.output = out
	in.value = cty.NilVal
	in.stored = &storedValue{json: m.Value, dir: dir, root: e.cache.Dir()}
	in.mu.Unlock()
	return nil
}
