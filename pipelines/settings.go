package pipelines

import (
	"fmt"
	"math/big"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

var settingsSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "cache_dir"},
		{Name: "parallelism"},
		{Name: "devices"},
		{Name: "gpu_share"},
		{Name: "keep_runs"},
		{Name: "mirror"},
		{Name: "runtime"},
		{Name: "python"},
	},
}

func decodeSettingsBlock(block *hcl.Block) (*Settings, hcl.Diagnostics) {
	s := &Settings{DeclRange: block.DefRange}
	content, diags := block.Body.Content(settingsSchema)
	if attr, ok := content.Attributes["cache_dir"]; ok {
		diags = append(diags, literalString(attr, &s.CacheDir)...)
	}
	if attr, ok := content.Attributes["mirror"]; ok {
		diags = append(diags, literalString(attr, &s.Mirror)...)
		s.MirrorRange = attr.Expr.Range()
	}
	if attr, ok := content.Attributes["python"]; ok {
		diags = append(diags, literalString(attr, &s.Python)...)
	}
	if attr, ok := content.Attributes["runtime"]; ok {
		diags = append(diags, literalString(attr, &s.Runtime)...)
		if s.Runtime != "auto" && s.Runtime != "go" && s.Runtime != "torch" && !diags.HasErrors() {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid runtime",
				Detail: fmt.Sprintf("runtime must be \"auto\", \"go\" or \"torch\", not %q.", s.Runtime), Subject: attr.Expr.Range().Ptr()})
		}
	}
	if attr, ok := content.Attributes["parallelism"]; ok {
		diags = append(diags, positiveInt(attr, "parallelism", &s.Parallelism)...)
	}
	if attr, ok := content.Attributes["gpu_share"]; ok {
		diags = append(diags, positiveInt(attr, "gpu_share", &s.GPUShare)...)
	}
	if attr, ok := content.Attributes["keep_runs"]; ok {
		diags = append(diags, positiveInt(attr, "keep_runs", &s.KeepRuns)...)
	}
	if attr, ok := content.Attributes["devices"]; ok {
		val, d := literalOf(attr, cty.List(cty.String))
		diags = append(diags, d...)
		if !d.HasErrors() {
			s.DevicesRange = attr.Expr.Range()
			for _, v := range val.AsValueSlice() {
				s.Devices = append(s.Devices, v.AsString())
			}
		}
	}
	return s, diags
}

// positiveInt reads a literal whole number of at least 1 into dst.
func positiveInt(attr *hcl.Attribute, name string, dst *int) hcl.Diagnostics {
	val, diags := literalOf(attr, cty.Number)
	if diags.HasErrors() {
		return diags
	}
	n, acc := val.AsBigFloat().Int64()
	if acc != big.Exact || n < 1 {
		return append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid " + name,
			Detail:   name + " must be a whole number of at least 1.",
			Subject:  attr.Expr.Range().Ptr(),
		})
	}
	*dst = int(n)
	return diags
}

func literalOf(attr *hcl.Attribute, ty cty.Type) (cty.Value, hcl.Diagnostics) {
	val, diags := literalValue(attr.Expr)
	if diags.HasErrors() {
		for _, d := range diags {
			d.Detail += " Settings in the gatepipe block must be literal values: they are read before any variable is known."
		}
		return cty.NilVal, diags
	}
	conv, err := convert.Convert(val, ty)
	if err != nil || conv.IsNull() {
		msg := "null"
		if err != nil {
			msg = err.Error()
		}
		return cty.NilVal, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Incorrect attribute value type",
			Detail:   fmt.Sprintf("Inappropriate value for %q: %s is required (%s).", attr.Name, ty.FriendlyName(), msg),
			Subject:  attr.Expr.Range().Ptr(),
		}}
	}
	return conv, nil
}
