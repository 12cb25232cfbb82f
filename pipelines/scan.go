package pipelines

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// MaxNesting bounds how deeply brackets, braces and parentheses may nest
// in a configuration file. HCL's parser recurses once per level, so a
// file of nested parentheses would otherwise exhaust the stack.
const MaxNesting = 256

// prescan looks over HCL source before it is parsed, for what the parser
// handles badly: nesting deeper than MaxNesting (a stack overflow) and a
// heredoc with no closing marker (reported at the end of the file rather
// than where it opens). Strings and comments are skipped roughly; the
// scan only needs to be right about well-formed files and about these
// two faults. A file that is not UTF-8 text (a binary file, or text in
// another encoding) gets one diagnostic at its first such byte instead of
// the parser's one per token.
func prescan(src []byte, filename string) hcl.Diagnostics {
	if d := notText(src, filename); d != nil {
		return hcl.Diagnostics{d}
	}
	pos := hcl.Pos{Line: 1, Column: 1}
	rng := func(start hcl.Pos, n int) *hcl.Range {
		end := start
		end.Byte += n
		end.Column += n
		return &hcl.Range{Filename: filename, Start: start, End: end}
	}
	depth := 0
	i := 0
	advance := func(n int) {
		for k := 0; k < n && i < len(src); k++ {
			if src[i] == '\n' {
				pos.Line++
				pos.Column = 1
			} else if src[i]&0xC0 != 0x80 {
				pos.Column++
			}
			i++
			pos.Byte = i
		}
	}
	for i < len(src) {
		c := src[i]
		switch {
		case c == '#' || (c == '/' && i+1 < len(src) && src[i+1] == '/'):
			for i < len(src) && src[i] != '\n' {
				advance(1)
			}
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			end := bytes.Index(src[i+2:], []byte("*/"))
			if end < 0 {
				return nil // the parser reports it
			}
			advance(end + 4)
		case c == '"':
			advance(1)
			for i < len(src) && src[i] != '"' && src[i] != '\n' {
				if src[i] == '\\' {
					advance(1)
				}
				advance(1)
			}
			advance(1)
		case c == '<' && i+1 < len(src) && src[i+1] == '<':
			start := pos
			if d, ok := skipHeredoc(src, i, filename, start, advance, func() int { return i }); !ok {
				return d
			}
		case c == '(' || c == '[' || c == '{':
			depth++
			if depth > MaxNesting {
				return hcl.Diagnostics{{
					Severity: hcl.DiagError,
					Summary:  "Nesting too deep",
					Detail:   fmt.Sprintf("Brackets, braces and parentheses nest more than %d levels deep here; gatepipe does not parse deeper nesting.", MaxNesting),
					Subject:  rng(pos, 1),
				}}
			}
			advance(1)
		case c == ')' || c == ']' || c == '}':
			depth = max(depth-1, 0)
			advance(1)
		default:
			advance(1)
		}
	}
	return nil
}

// skipHeredoc moves past a heredoc that starts at src[i] ("<<EOT" or
// "<<-EOT" then a newline). It reports an error at the opening when no
// line closes it; anything that is not a heredoc opening is stepped over.
func skipHeredoc(src []byte, i int, filename string, start hcl.Pos, advance func(int), at func() int) (hcl.Diagnostics, bool) {
	j := i + 2
	if j < len(src) && src[j] == '-' {
		j++
	}
	k := j
	if k < len(src) && (src[k] == '_' || src[k] >= 'a' && src[k] <= 'z' || src[k] >= 'A' && src[k] <= 'Z') {
		for k < len(src) && isIdentByte(src[k]) {
			k++
		}
	}
	if k == j || k >= len(src) || (src[k] != '\n' && src[k] != '\r') {
		advance(2)
		return nil, true
	}
	marker := string(src[j:k])
	rest := src[k:]
	for len(rest) > 0 {
		nl := bytes.IndexByte(rest, '\n')
		if nl < 0 {
			break
		}
		rest = rest[nl+1:]
		line := rest
		if e := bytes.IndexByte(line, '\n'); e >= 0 {
			line = line[:e]
		}
		if strings.TrimSpace(string(line)) == marker {
			advance(len(src) - len(rest) + len(line) - at())
			return nil, true
		}
	}
	end := start
	end.Byte += k - i
	end.Column += k - i
	return hcl.Diagnostics{{
		Severity: hcl.DiagError,
		Summary:  "Unterminated heredoc",
		Detail:   fmt.Sprintf("The heredoc opened here is never closed: no line holds only %q.", marker),
		Subject:  &hcl.Range{Filename: filename, Start: start, End: end},
	}}, false
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
