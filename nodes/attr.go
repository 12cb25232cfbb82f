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

// NestedAttrRange returns the range of attribute attr inside the index-th
// nested block of type blockType, falling back to the block's header, then
// to the enclosing block.
func (d Decl) NestedAttrRange(blockType string, index int, attr string) *hcl.Range {
	if sb, ok := d.Body.(*hclsyntax.Body); ok {
		i := 0
		for _, b := range sb.Blocks {
			if b.Type != blockType {
				continue
			}
			if i == index {
				if a, ok := b.Body.Attributes[attr]; ok {
					r := a.Expr.Range()
					return &r
				}
				r := b.DefRange()
				return &r
			}
			i++
		}
	}
	return d.DeclRange.Ptr()
}
