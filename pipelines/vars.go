package pipelines

import (
	"fmt"
	"github.com/gatepipe/gatepipe/internal/safefile"
	"strings"

	"github.com/gatepipe/gatepipe/pipelines/funcs"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// VarValue is a root variable value given on the command line or in a
// variable file, not yet converted to the variable's type.
type VarValue struct {
	// Raw holds a -var value; Expr is used instead when it is non-nil.
	Raw   string
	Expr  hcl.Expression
	Range hcl.Range
	// From says where the value came from, for messages.
	From string
}

// ParseVarFlag splits a -var "name=value" argument.
func ParseVarFlag(arg string) (string, VarValue, error) {
	name, val, ok := strings.Cut(arg, "=")
	if !ok || strings.TrimSpace(name) == "" {
		return "", VarValue{}, fmt.Errorf("invalid -var %q: want NAME=VALUE", arg)
	}
	return strings.TrimSpace(name), VarValue{Raw: val, From: "-var"}, nil
}

// LoadVarFile reads a .hclvars file of name = value attributes.
func (l *Loader) LoadVarFile(filename string) (map[string]VarValue, hcl.Diagnostics) {
	l.reads.Add(filename)
	src, err := safefile.ReadFile(filename, safefile.MaxConfigBytes)
	if err != nil {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Cannot read variable file", Detail: err.Error()}}
	}
	if d := prescan(src, filename); d.HasErrors() {
		return nil, d
	}
	f, diags := l.parser.ParseHCL(src, filename)
	if diags.HasErrors() {
		return nil, diags
	}
	attrs, aDiags := f.Body.JustAttributes()
	diags = append(diags, aDiags...)
	out := make(map[string]VarValue, len(attrs))
	for name, a := range attrs {
		out[name] = VarValue{Expr: a.Expr, Range: a.Range, From: filename}
	}
	return out, diags
}

// RootVariableValues converts given values to the root module's declared
// variables, reporting unknown names and missing required variables.
func RootVariableValues(p *Pipeline, given map[string]VarValue) (map[string]cty.Value, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	declared := sortedKeys(p.Variables)
	for _, name := range sortedKeys(given) {
		if _, ok := p.Variables[name]; !ok {
			g := given[name]
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Value for undeclared variable",
				Detail:   fmt.Sprintf("A value was given (%s) for variable %q, but the pipeline declares no such variable.%s Declare it with a variable block, or remove the value.", g.From, name, DidYouMean(name, declared)),
				Subject:  subjectOrNil(g.Range),
			})
		}
	}
	vals := make(map[string]cty.Value, len(p.Variables))
	for _, name := range declared {
		v := p.Variables[name]
		g, ok := given[name]
		if !ok {
			if v.Required() {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "No value for required variable",
					Detail:   fmt.Sprintf("Variable %q has no default, so a value is required. Set it with -var %s=VALUE or in a -var-file.", name, name),
					Subject:  v.DeclRange.Ptr(),
				})
				continue
			}
			vals[name] = v.Default
			continue
		}
		val, d := convertVarValue(v, g)
		diags = append(diags, d...)
		if !d.HasErrors() {
			vals[name] = val
		}
	}
	return vals, diags
}

func convertVarValue(v *Variable, g VarValue) (cty.Value, hcl.Diagnostics) {
	var raw cty.Value
	if g.Expr != nil {
		val, diags := literalValue(g.Expr)
		if diags.HasErrors() {
			return cty.NilVal, diags
		}
		raw = val
	} else if v.Type == cty.String || v.Type == cty.DynamicPseudoType || v.Type.IsPrimitiveType() {
		raw = cty.StringVal(g.Raw)
	} else {
		if d := prescan([]byte(g.Raw), "-var "+v.Name); d.HasErrors() {
			return cty.NilVal, d
		}
		expr, diags := hclsyntax.ParseExpression([]byte(g.Raw), "-var "+v.Name, hcl.InitialPos)
		if diags.HasErrors() {
			return cty.NilVal, diags
		}
		val, diags := literalValue(expr)
		if diags.HasErrors() {
			return cty.NilVal, diags
		}
		raw = val
	}
	conv, err := funcs.Convert(raw, v.Type)
	if err != nil {
		return cty.NilVal, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Invalid value for variable",
			Detail:   fmt.Sprintf("The value given (%s) for variable %q does not match its type %s: %s.", g.From, v.Name, typeexpr.TypeString(v.Type), err),
			Subject:  subjectOrNil(g.Range),
		}}
	}
	return conv, nil
}

func subjectOrNil(r hcl.Range) *hcl.Range {
	if r.Filename == "" {
		return nil
	}
	return r.Ptr()
}
