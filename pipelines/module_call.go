package pipelines

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

var moduleReserved = map[string]bool{"source": true, "depends_on": true, "for_each": true, "count": true}

func decodeModuleBlock(block *hcl.Block) (*ModuleCall, hcl.Diagnostics) {
	mc := &ModuleCall{Name: block.Labels[0], DeclRange: block.DefRange, Inputs: map[string]*hcl.Attribute{}}
	var diags hcl.Diagnostics
	if !hclsyntax.ValidIdentifier(mc.Name) {
		diags = append(diags, invalidNameDiag("module", mc.Name, block.LabelRanges[0]))
	}
	attrs, moreDiags := block.Body.JustAttributes()
	diags = append(diags, moreDiags...)
	for name, attr := range attrs {
		switch name {
		case "source":
			mc.SourceRange = attr.Expr.Range()
			diags = append(diags, literalString(attr, &mc.Source)...)
		case "depends_on":
			deps, depDiags := decodeDependsOn(attr)
			diags = append(diags, depDiags...)
			mc.DependsOn = deps
		case "for_each", "count":
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Unsupported argument",
				Detail:   fmt.Sprintf("Module calls do not support %q yet. Use for_each on the blocks inside the module, or declare one module block per instance.", name),
				Subject:  attr.NameRange.Ptr(),
			})
		default:
			mc.Inputs[name] = attr
		}
	}
	if _, ok := attrs["source"]; !ok {
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Missing required argument",
			Detail:   fmt.Sprintf("Module %q needs a \"source\": a stdlib module such as \"stdlib/tiers/small\" or a directory such as \"./modules/x\".", mc.Name),
			Subject:  block.DefRange.Ptr(),
		})
	}
	return mc, diags
}

func decodeDependsOn(attr *hcl.Attribute) ([]hcl.Traversal, hcl.Diagnostics) {
	exprs, diags := hcl.ExprList(attr.Expr)
	var deps []hcl.Traversal
	for _, e := range exprs {
		t, tDiags := hcl.AbsTraversalForExpr(e)
		if tDiags.HasErrors() {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid depends_on reference",
				Detail:   "Each element of depends_on must be a reference to a block, such as dataset.fashion or module.tier.OUTPUT, not a string or expression.",
				Subject:  e.Range().Ptr(),
			})
			continue
		}
		deps = append(deps, t)
	}
	return deps, diags
}
