package pipelines

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// literalValue evaluates expr with no variables or functions in scope. An
// expression that is incomplete (the parser recovers from a syntax error
// with an unknown stand-in value) or otherwise not wholly known is an error here, so
// that no caller ever reads an unknown value.
func literalValue(expr hcl.Expression) (cty.Value, hcl.Diagnostics) {
	val, diags := expr.Value(nil)
	if diags.HasErrors() {
		return cty.NilVal, diags
	}
	if !val.IsWhollyKnown() {
		return cty.NilVal, append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid value",
			Detail:   "This value must be a literal: it is incomplete or refers to something not yet known.",
			Subject:  expr.Range().Ptr(),
		})
	}
	return val, diags
}
