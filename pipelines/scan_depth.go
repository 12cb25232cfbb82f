package pipelines

import (
	"bytes"
	"fmt"

	"github.com/hashicorp/hcl/v2"
)

// MaxNesting bounds how deeply the expressions of a configuration file
// nest. Each bracket, brace and parenthesis, template interpolation
// ("${", "%{") and template directive ("%{ if }", "%{ for }") adds a
// level while it is open; each unary operator ("-", "!") adds one until
// its operand ends, and each conditional ("?") one until its
// expression ends. HCL's parser recurses once per level, so a file of a
// million nested parentheses, or of "- - - … 1", would otherwise exhaust
// the stack.
const MaxNesting = 256

// MaxOperators bounds the operators one expression chains: binary
// operators, indexes ("x[i]") and attribute accesses ("x.a"), counted
// together with the levels MaxNesting counts and with the operators of
// the expressions it is nested in. HCL parses a chain such as
// "1 + 1 + … + 1" into a tree as deep as the chain is long, and
// evaluates and walks that tree recursively, so a chain of a million
// operators takes gigabytes. A comma, an "=" or "=>", or a new line
// that ends an argument or an object's item starts a new count.
const MaxOperators = 4096

type frameKind uint8

const (
	frameTop     frameKind = iota // the file's body
	frameParen                    // "(" or "["
	frameBrace                    // "{": a block body or an object
	frameInterp                   // "${" or "%{" in a template
	frameQuote                    // a "…" template
	frameHeredoc                  // a <<EOT template
)

// frame is one open bracket or template, with what the expression
// being read at its level has counted so far.
type frame struct {
	kind frameKind
	open hcl.Pos
	// unary counts the unary operators before the current operand;
	// levels the conditionals (and, in a template, the open directives)
	// of the current expression, unary included; chain its other
	// operators.
	unary, levels, chain int
	marker               []byte // a heredoc's closing marker
	width                int    // the length of a heredoc's "<<EOT"
	lineStart            bool   // a heredoc is at the start of a line
}

// depthScanner reads HCL source byte by byte, the way hclsyntax's
// scanner splits it into code and templates, and keeps the nesting
// (MaxNesting) and operator (MaxOperators) counts of the expression it
// is in. It allocates one frame per open level, so it stays small on
// files that the parser would not survive.
type depthScanner struct {
	src      []byte
	filename string
	i        int
	pos      hcl.Pos
	stack    []frame
	// nest and ops are the counts summed over the stack.
	nest, ops int
	// operand is whether the last token ended an operand, so that a
	// following "-" is binary and a "[" or "." indexes it.
	operand bool
}

// scanDepth reports nesting deeper than MaxNesting, an expression of
// more than MaxOperators operators, or a heredoc that is never closed.
func scanDepth(src []byte, filename string) *hcl.Diagnostic {
	s := &depthScanner{src: src, filename: filename, pos: hcl.Pos{Line: 1, Column: 1}}
	s.stack = append(s.stack, frame{kind: frameTop})
	for s.i < len(s.src) {
		var d *hcl.Diagnostic
		if k := s.top().kind; k == frameQuote || k == frameHeredoc {
			d = s.template()
		} else {
			d = s.code()
		}
		if d != nil {
			return d
		}
	}
	for _, f := range s.stack {
		if f.kind == frameHeredoc {
			end := f.open
			end.Byte += f.width
			end.Column += f.width
			return &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Unterminated heredoc",
				Detail:   fmt.Sprintf("The heredoc opened here is never closed: no line holds only %q.", f.marker),
				Subject:  &hcl.Range{Filename: filename, Start: f.open, End: end},
			}
		}
	}
	return nil
}

func (s *depthScanner) top() *frame { return &s.stack[len(s.stack)-1] }

// peek returns the byte k after the current one, or 0 past the end.
func (s *depthScanner) peek(k int) byte {
	if s.i+k < len(s.src) {
		return s.src[s.i+k]
	}
	return 0
}

// advance moves n bytes on, keeping the line and column.
func (s *depthScanner) advance(n int) {
	for k := 0; k < n && s.i < len(s.src); k++ {
		if s.src[s.i] == '\n' {
			s.pos.Line++
			s.pos.Column = 1
		} else if s.src[s.i]&0xC0 != 0x80 {
			s.pos.Column++
		}
		s.i++
		s.pos.Byte = s.i
	}
}

// push opens a level at the current byte.
func (s *depthScanner) push(kind frameKind) *hcl.Diagnostic {
	s.stack = append(s.stack, frame{kind: kind, open: s.pos})
	s.nest++
	s.ops++
	return s.check()
}

// pop closes the innermost level.
func (s *depthScanner) pop() {
	f := s.top()
	s.nest -= 1 + f.levels
	s.ops -= 1 + f.levels + f.chain
	s.stack = s.stack[:len(s.stack)-1]
}

// level counts a unary operator or a conditional (or a template
// directive) at the current level.
func (s *depthScanner) level(unary bool) *hcl.Diagnostic {
	f := s.top()
	f.levels++
	if unary {
		f.unary++
	}
	s.nest++
	s.ops++
	return s.check()
}

// op counts a binary operator, an index or an attribute access. It ends
// the operand before it, and with it the unary operators it had.
func (s *depthScanner) op() *hcl.Diagnostic {
	f := s.top()
	f.levels -= f.unary
	s.nest -= f.unary
	s.ops -= f.unary
	f.unary = 0
	f.chain++
	s.ops++
	return s.check()
}

// endOperand ends the current operand without an operator (at ":").
func (s *depthScanner) endOperand() {
	f := s.top()
	f.levels -= f.unary
	s.nest -= f.unary
	s.ops -= f.unary
	f.unary = 0
}

// endExpr ends the expression at the current level: the next one counts
// afresh.
func (s *depthScanner) endExpr() {
	f := s.top()
	s.nest -= f.levels
	s.ops -= f.levels + f.chain
	f.unary, f.levels, f.chain = 0, 0, 0
}

func (s *depthScanner) check() *hcl.Diagnostic {
	var summary, detail string
	switch {
	case s.nest > MaxNesting:
		summary = "Nesting too deep"
		detail = fmt.Sprintf("Brackets, braces, parentheses, template interpolations and directives, unary operators (-, !) and conditionals (?:) nest more than %d levels deep here; gatepipe does not parse deeper nesting.", MaxNesting)
	case s.ops > MaxOperators:
		summary = "Expression too long"
		detail = fmt.Sprintf("This expression chains more than %d operators here (counting those of the expressions around it); gatepipe does not evaluate longer chains. Split it into locals, or use a function such as sum.", MaxOperators)
	default:
		return nil
	}
	end := s.pos
	end.Byte++
	end.Column++
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  summary,
		Detail:   detail,
		Subject:  &hcl.Range{Filename: s.filename, Start: s.pos, End: end},
	}
}

// template reads one piece of a quoted or heredoc template: text, an
// escape, the start of an interpolation or directive, or the end.
func (s *depthScanner) template() *hcl.Diagnostic {
	f := s.top()
	c := s.src[s.i]
	if f.kind == frameHeredoc && f.lineStart {
		f.lineStart = false
		line := s.src[s.i:]
		if nl := bytes.IndexByte(line, '\n'); nl >= 0 {
			line = line[:nl]
		}
		if bytes.Equal(bytes.TrimSpace(line), f.marker) {
			s.advance(len(line))
			s.pop()
			s.operand = true
			return nil
		}
	}
	switch {
	case c == '\n':
		f.lineStart = f.kind == frameHeredoc
		s.advance(1)
	case c == '"' && f.kind == frameQuote:
		s.advance(1)
		s.pop()
		s.operand = true
	case c == '\\' && f.kind == frameQuote && s.peek(1) != '\n':
		s.advance(2)
	case (c == '$' || c == '%') && s.peek(1) == c && s.peek(2) == '{':
		s.advance(3) // "$${" and "%%{" are literal text
	case (c == '$' || c == '%') && s.peek(1) == '{':
		if c == '%' {
			if d := s.directive(); d != nil {
				return d
			}
		}
		if d := s.push(frameInterp); d != nil {
			return d
		}
		s.advance(2)
		s.operand = false
	default:
		s.advance(1)
	}
	return nil
}

// directive counts the template directive that starts at "%{": "if" and
// "for" open a level of the template until "endif" or "endfor".
func (s *depthScanner) directive() *hcl.Diagnostic {
	j := s.i + 2
	for j < len(s.src) && (s.src[j] == '~' || s.src[j] == ' ' || s.src[j] == '\t') {
		j++
	}
	k := j
	for k < len(s.src) && isIdentByte(s.src[k]) {
		k++
	}
	f := s.top()
	switch string(s.src[j:k]) {
	case "if", "for":
		return s.level(false)
	case "endif", "endfor":
		if f.levels > 0 {
			f.levels--
			s.nest--
			s.ops--
		}
	}
	return nil
}

// code reads one token of a body or an expression.
func (s *depthScanner) code() *hcl.Diagnostic {
	c := s.src[s.i]
	switch {
	case c == ' ' || c == '\t' || c == '\r':
		s.advance(1)
	case c == '\n':
		if k := s.top().kind; k == frameTop || k == frameBrace {
			s.endExpr() // a new line ends an argument or an object's item
			s.operand = false
		}
		s.advance(1)
	case c == '#' || c == '/' && s.peek(1) == '/':
		n := bytes.IndexByte(s.src[s.i:], '\n')
		if n < 0 {
			n = len(s.src) - s.i
		}
		s.advance(n)
	case c == '/' && s.peek(1) == '*' && bytes.Index(s.src[s.i+2:], []byte("*/")) >= 0:
		s.advance(bytes.Index(s.src[s.i+2:], []byte("*/")) + 4)
	case c == '"':
		d := s.push(frameQuote)
		s.advance(1)
		return d
	case c == '<' && s.peek(1) == '<' && s.heredocFollows():
		return s.heredoc()
	case c == '(' || c == '[' || c == '{':
		return s.open(c)
	case c == ')' || c == ']':
		if s.top().kind == frameParen {
			s.pop()
		}
		s.advance(1)
		s.operand = true
	case c == '}':
		s.closeBrace()
	case c >= '0' && c <= '9':
		s.number()
	case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80:
		for s.i < len(s.src) && (isIdentByte(s.src[s.i]) || s.src[s.i] >= 0x80) {
			s.advance(1)
		}
		s.operand = true
	default:
		return s.operator()
	}
	return nil
}

// operator reads an operator or other punctuation.
func (s *depthScanner) operator() *hcl.Diagnostic {
	c, n := s.src[s.i], s.peek(1)
	var d *hcl.Diagnostic
	width := 1
	switch {
	case c == '=' && n == '>':
		width = 2
		s.endExpr()
	case c == '=' && n == '=', c == '!' && n == '=', c == '<' && n == '=', c == '>' && n == '=',
		c == '&' && n == '&', c == '|' && n == '|':
		width = 2
		d = s.op()
	case c == '=' || c == ',':
		s.endExpr()
	case c == '.' && n == '.' && s.peek(2) == '.':
		width = 3
	case c == ':' && n == ':':
		width = 2
	case c == ':':
		s.endOperand()
	case c == '?':
		s.endOperand()
		d = s.level(false)
	case c == '!' || c == '-' && !s.operand:
		d = s.level(true)
	case c == '.':
		if s.operand {
			d = s.chainOp() // an attribute access or a splat
		}
	case c == '+' || c == '-' || c == '*' || c == '/' || c == '%' || c == '<' || c == '>':
		d = s.op()
	}
	s.advance(width)
	s.operand = false
	return d
}

// open opens a bracket, brace or parenthesis; a "[" after an operand
// also counts as an index.
func (s *depthScanner) open(c byte) *hcl.Diagnostic {
	if c == '[' && s.operand {
		if d := s.chainOp(); d != nil {
			return d
		}
	}
	kind := frameParen
	if c == '{' && !s.forFollows() {
		kind = frameBrace // new lines separate its items
	}
	d := s.push(kind)
	s.advance(1)
	s.operand = false
	return d
}

// closeBrace closes the innermost brace or interpolation, and any
// bracket left open in it, as hclsyntax's scanner does.
func (s *depthScanner) closeBrace() {
	for n := len(s.stack) - 1; n > 0; n-- {
		k := s.stack[n].kind
		if k == frameQuote || k == frameHeredoc {
			break
		}
		if k == frameBrace || k == frameInterp {
			for len(s.stack) > n {
				s.pop()
			}
			break
		}
	}
	s.advance(1)
	s.operand = true
}

// forFollows reports whether the "{" at the current byte opens a for
// expression, which, unlike an object, ignores new lines.
func (s *depthScanner) forFollows() bool {
	j := s.i + 1
	for j < len(s.src) {
		switch c := s.src[j]; {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			j++
		case c == '#' || c == '/' && j+1 < len(s.src) && s.src[j+1] == '/':
			n := bytes.IndexByte(s.src[j:], '\n')
			if n < 0 {
				return false
			}
			j += n
		default:
			rest := s.src[j:]
			return bytes.HasPrefix(rest, []byte("for")) && (len(rest) == 3 || !isIdentByte(rest[3]) && rest[3] < 0x80)
		}
	}
	return false
}

// number reads a number literal.
func (s *depthScanner) number() {
	isDigit := func(c byte) bool { return c >= '0' && c <= '9' }
	for s.i < len(s.src) {
		c, n := s.src[s.i], s.peek(1)
		switch {
		case isDigit(c), c == '.' && isDigit(n):
			s.advance(1)
		case (c == 'e' || c == 'E') && (isDigit(n) || (n == '+' || n == '-') && isDigit(s.peek(2))):
			s.advance(2)
		default:
			s.operand = true
			return
		}
	}
	s.operand = true
}

// heredocFollows reports whether the "<<" at the current byte opens a
// heredoc: "<<EOT" or "<<-EOT", then a new line.
func (s *depthScanner) heredocFollows() bool {
	_, end := s.heredocMarker()
	return end > 0
}

// heredocMarker returns the bounds of the marker of the heredoc that
// opens at the current byte, and the index of the new line after it,
// or end 0 when none opens here.
func (s *depthScanner) heredocMarker() (marker []byte, end int) {
	j := s.i + 2
	if s.peek(2) == '-' {
		j++
	}
	k := j
	if k < len(s.src) && (s.src[k] == '_' || s.src[k] >= 'a' && s.src[k] <= 'z' || s.src[k] >= 'A' && s.src[k] <= 'Z' || s.src[k] >= 0x80) {
		for k < len(s.src) && (isIdentByte(s.src[k]) || s.src[k] >= 0x80) {
			k++
		}
	}
	nl := k
	if nl < len(s.src) && s.src[nl] == '\r' {
		nl++
	}
	if k == j || nl >= len(s.src) || s.src[nl] != '\n' {
		return nil, 0
	}
	return s.src[j:k], nl
}

// heredoc opens the heredoc template at the current byte.
func (s *depthScanner) heredoc() *hcl.Diagnostic {
	marker, nl := s.heredocMarker()
	d := s.push(frameHeredoc)
	f := s.top()
	f.marker, f.width, f.lineStart = marker, 2+len(marker), true
	if s.peek(2) == '-' {
		f.width++
	}
	s.advance(nl + 1 - s.i)
	return d
}

// chainOp counts an index or an attribute access: unlike a binary
// operator, it leaves the operand's unary operators open.
func (s *depthScanner) chainOp() *hcl.Diagnostic {
	s.top().chain++
	s.ops++
	return s.check()
}
