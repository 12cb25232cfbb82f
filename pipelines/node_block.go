package pipelines

import (
	"fmt"
	"strings"

	"github.com/gatepipe/gatepipe/pipelines/addrs"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// MetaArguments are the arguments every node block accepts in addition to
// its kind's own schema.
var MetaArguments = []string{"for_each", "count", "depends_on"}

var nodeMetaSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "for_each"},
		{Name: "count"},
		{Name: "depends_on"},
	},
	Blocks: []hcl.BlockHeaderSchema{{Type: "resources"}},
}

var resourcesSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "cpus"}, {Name: "gpus"}, {Name: "memory"}},
}

func decodeNodeBlock(block *hcl.Block) (*NodeBlock, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	if len(block.Labels) != 1 {
		return nil, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Wrong number of block labels",
			Detail:   fmt.Sprintf("%s %s block takes exactly one label, its name, as in %s \"NAME\" { ... }.", capitalArticle(block.Type), block.Type, block.Type),
			Subject:  block.DefRange.Ptr(),
		}}
	}
	n := &NodeBlock{
		Addr:      addrs.Block{Kind: block.Type, Name: block.Labels[0]},
		DeclRange: block.DefRange,
		TypeRange: block.TypeRange,
	}
	if !hclsyntax.ValidIdentifier(n.Addr.Name) {
		diags = append(diags, invalidNameDiag(block.Type, n.Addr.Name, block.LabelRanges[0]))
	}
	content, remain, moreDiags := block.Body.PartialContent(nodeMetaSchema)
	diags = append(diags, moreDiags...)
	n.Body = remain
	if attr, ok := content.Attributes["for_each"]; ok {
		n.ForEach = attr.Expr
	}
	if attr, ok := content.Attributes["count"]; ok {
		n.Count = attr.Expr
		if n.ForEach != nil {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Conflicting for_each and count",
				Detail:   "A block may use for_each or count, not both. Remove one of them.",
				Subject:  attr.NameRange.Ptr(),
			})
		}
	}
	if attr, ok := content.Attributes["depends_on"]; ok {
		deps, depDiags := decodeDependsOn(attr)
		diags = append(diags, depDiags...)
		n.DependsOn = deps
	}
	for _, rb := range content.Blocks {
		if n.Resources != nil {
			diags = append(diags, duplicateDiag("resources", "", n.Resources.DeclRange, rb.DefRange))
			continue
		}
		rc, rDiags := rb.Body.Content(resourcesSchema)
		diags = append(diags, rDiags...)
		r := &Resources{DeclRange: rb.DefRange}
		if a, ok := rc.Attributes["cpus"]; ok {
			r.CPUs = a.Expr
		}
		if a, ok := rc.Attributes["gpus"]; ok {
			r.GPUs = a.Expr
		}
		if a, ok := rc.Attributes["memory"]; ok {
			r.Memory = a.Expr
		}
		n.Resources = r
	}
	return n, diags
}

func duplicateDiag(what, name string, prev, this hcl.Range) *hcl.Diagnostic {
	label := what
	if name != "" {
		label = fmt.Sprintf("%s %q", what, name)
	}
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  fmt.Sprintf("Duplicate %s block", what),
		Detail:   fmt.Sprintf("%s %s is already defined at %s. Each name must be unique within a module; rename or remove one.", capitalArticle(what), label, prev),
		Subject:  this.Ptr(),
	}
}

// capitalArticle is "An" before a word that starts with a vowel
// ("An encoder block"), "A" otherwise.
func capitalArticle(word string) string {
	if word != "" && strings.ContainsRune("aeiouAEIOU", rune(word[0])) {
		return "An"
	}
	return "A"
}
