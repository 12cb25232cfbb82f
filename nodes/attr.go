package nodes

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// attrRangeSyntax finds an attribute in a native-syntax body even when the
// body also has nested blocks (where JustAttributes fails).
func attrRangeSyntax(body hcl.Body, name string) *hcl.Range {
	sb, ok := body.(*hclsyntax.Body)
	if !ok {
		return nil
	}
	if a, ok := sb.Attributes[name]; ok {
		r := a.Expr.Range()
		return &r
	}
	return nil
}
