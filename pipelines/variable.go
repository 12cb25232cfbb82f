package pipelines

import (
	"fmt"

	"github.com/gatepipe/gatepipe/pipelines/funcs"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

var variableBlockSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "type"},
		{Name: "default"},
		{Name: "description"},
	},
	Blocks: []hcl.BlockHeaderSchema{{Type: "validation"}},
}

var validationBlockSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "condition", Required: true},
		{Name: "error_message", Required: true},
	},
}

// decodeValidation reads a variable's `validation { condition,
// error_message }` block, as Terraform has it.
func decodeValidation(block *hcl.Block) (*Validation, hcl.Diagnostics) {
	content, diags := block.Body.Content(validationBlockSchema)
	if diags.HasErrors() {
		return nil, diags
	}
	return &Validation{Condition: content.Attributes["condition"].Expr,
		ErrorMessage: content.Attributes["error_message"].Expr, DeclRange: block.DefRange}, diags
}

func decodeVariableBlock(block *hcl.Block) (*Variable, hcl.Diagnostics) {
	v := &Variable{Name: block.Labels[0], Type: cty.DynamicPseudoType, DeclRange: block.DefRange}
	var diags hcl.Diagnostics
	if !hclsyntax.ValidIdentifier(v.Name) {
		diags = append(diags, invalidNameDiag("variable", v.Name, block.LabelRanges[0]))
	}
	content, moreDiags := block.Body.Content(variableBlockSchema)
	diags = append(diags, moreDiags...)
	for _, b := range content.Blocks {
		val, vDiags := decodeValidation(b)
		diags = append(diags, vDiags...)
		if val != nil {
			v.Validations = append(v.Validations, val)
		}
	}

	if attr, ok := content.Attributes["description"]; ok {
		diags = append(diags, literalString(attr, &v.Description)...)
	}
	if attr, ok := content.Attributes["type"]; ok {
		ty, tyDiags := typeexpr.TypeConstraint(attr.Expr)
		diags = append(diags, tyDiags...)
		if !tyDiags.HasErrors() {
			v.Type = ty
		}
	}
	if attr, ok := content.Attributes["default"]; ok {
		val, valDiags := literalValue(attr.Expr)
		diags = append(diags, valDiags...)
		if !valDiags.HasErrors() {
			conv, err := funcs.Convert(val, v.Type)
			if err != nil {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Invalid default value for variable",
					Detail:   fmt.Sprintf("The default value of variable %q does not match its type %s: %s.", v.Name, typeexpr.TypeString(v.Type), err),
					Subject:  attr.Expr.Range().Ptr(),
				})
			} else {
				v.Default = conv
			}
		}
	}
	return v, diags
}

func decodeLocalsBlock(block *hcl.Block) ([]*Local, hcl.Diagnostics) {
	attrs, diags := block.Body.JustAttributes()
	locals := make([]*Local, 0, len(attrs))
	for _, name := range sortedKeys(attrs) {
		attr := attrs[name]
		if !hclsyntax.ValidIdentifier(name) {
			diags = append(diags, invalidNameDiag("local value", name, attr.NameRange))
			continue
		}
		locals = append(locals, &Local{Name: name, Expr: attr.Expr, DeclRange: attr.Range})
	}
	return locals, diags
}

var outputBlockSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "value", Required: true},
		{Name: "description"},
	},
}

func decodeOutputBlock(block *hcl.Block) (*Output, hcl.Diagnostics) {
	o := &Output{Name: block.Labels[0], DeclRange: block.DefRange}
	var diags hcl.Diagnostics
	if !hclsyntax.ValidIdentifier(o.Name) {
		diags = append(diags, invalidNameDiag("output", o.Name, block.LabelRanges[0]))
	}
	content, moreDiags := block.Body.Content(outputBlockSchema)
	diags = append(diags, moreDiags...)
	if attr, ok := content.Attributes["value"]; ok {
		o.Expr = attr.Expr
	}
	if attr, ok := content.Attributes["description"]; ok {
		diags = append(diags, literalString(attr, &o.Description)...)
	}
	return o, diags
}

func invalidNameDiag(what, name string, rng hcl.Range) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Invalid name",
		Detail:   fmt.Sprintf("%q is not a valid %s name. A name must start with a letter or underscore and may contain only letters, digits, underscores, and dashes.", name, what),
		Subject:  rng.Ptr(),
	}
}

// literalString decodes an attribute that must be a constant string.
func literalString(attr *hcl.Attribute, into *string) hcl.Diagnostics {
	val, diags := literalValue(attr.Expr)
	if diags.HasErrors() {
		return diags
	}
	if val.IsNull() || val.Type() != cty.String {
		return hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Invalid value",
			Detail:   fmt.Sprintf("The %q argument must be a literal string.", attr.Name),
			Subject:  attr.Expr.Range().Ptr(),
		}}
	}
	*into = val.AsString()
	return nil
}
