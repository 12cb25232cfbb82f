package pipelines

import (
	"fmt"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// prescan looks over HCL source before it is parsed, for what the parser
// handles badly: nesting deeper than MaxNesting (a stack overflow), an
// expression of more than MaxOperators operators (gigabytes of stack
// when evaluated) and a heredoc with no closing marker (reported at the
// end of the file rather than where it opens); see scanDepth. A file
// that is not UTF-8 text (a binary file, or text in another encoding)
// gets one diagnostic at its first such byte instead of the parser's one
// per token.
func prescan(src []byte, filename string) hcl.Diagnostics {
	if d := notText(src, filename); d != nil {
		return hcl.Diagnostics{d}
	}
	if d := scanDepth(src, filename); d != nil {
		return hcl.Diagnostics{d}
	}
	return nil
}

func isIdentByte(c byte) bool {
	return c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// duplicateKeys reports object constructors that name one key twice,
// such as for_each = { a = 1, a = 2 }: HCL keeps the last silently.
func duplicateKeys(body hcl.Body) hcl.Diagnostics {
	sb, ok := body.(*hclsyntax.Body)
	if !ok {
		return nil
	}
	var diags hcl.Diagnostics
	_ = hclsyntax.VisitAll(sb, func(n hclsyntax.Node) hcl.Diagnostics {
		obj, ok := n.(*hclsyntax.ObjectConsExpr)
		if !ok {
			return nil
		}
		seen := map[string]hcl.Range{}
		for _, item := range obj.Items {
			key := hcl.ExprAsKeyword(item.KeyExpr)
			if key == "" {
				v, d := item.KeyExpr.Value(nil)
				if d.HasErrors() || !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
					continue
				}
				key = v.AsString()
			}
			if first, dup := seen[key]; dup {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Duplicate key",
					Detail:   fmt.Sprintf("The key %q is already set at line %d; HCL would silently keep only the last value.", key, first.Start.Line),
					Subject:  item.KeyExpr.Range().Ptr(),
				})
				continue
			}
			seen[key] = item.KeyExpr.Range()
		}
		return nil
	})
	return diags
}

// notText describes the first byte of src that is not UTF-8 text (an
// invalid sequence, or a NUL or other control byte that no text has), or
// returns nil.
func notText(src []byte, filename string) *hcl.Diagnostic {
	pos := hcl.Pos{Line: 1, Column: 1}
	for i := 0; i < len(src); {
		r, n := utf8.DecodeRune(src[i:])
		bad := ""
		switch {
		case r == utf8.RuneError && n <= 1:
			bad = fmt.Sprintf("byte 0x%02x is not UTF-8", src[i])
		case r < 0x20 && r != '\n' && r != '\r' && r != '\t' && r != '\f':
			bad = fmt.Sprintf("control byte 0x%02x", r)
		}
		if bad != "" {
			end := pos
			end.Byte++
			end.Column++
			return &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Not a text file",
				Detail:   fmt.Sprintf("%s is not UTF-8 text: %s at line %d, column %d (byte %d). Configuration files are HCL written in UTF-8; is this a binary file, or text in another encoding?", filename, bad, pos.Line, pos.Column, i),
				Subject:  &hcl.Range{Filename: filename, Start: pos, End: end},
			}
		}
		if r == '\n' {
			pos.Line++
			pos.Column = 0
		}
		i += n
		pos.Byte = i
		pos.Column++
	}
	return nil
}
