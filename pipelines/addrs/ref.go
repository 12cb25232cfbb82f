package addrs

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
)

// RefKind tells what a Reference points at.
type RefKind int

// The things an expression can refer to.
const (
	RefVariable     RefKind = iota + 1 // var.NAME
	RefLocal                           // local.NAME
	RefModuleOutput                    // module.CALL.OUTPUT
	RefBlock                           // KIND.NAME (a node block)
	RefEach                            // each.key / each.value
	RefCount                           // count.index
	RefPath                            // path.module / path.root / path.cwd
	RefSelf                            // self.ATTR
)

// Reference is one parsed reference found in an expression.
type Reference struct {
	Kind RefKind
	// Name is the variable, local, module call, or block name.
	Name string
	// Attr is the output name for module outputs, the block kind for
	// blocks, or the attribute for each/count/path/self.
	Attr string
	// Range covers the part of the traversal that names the referent.
	Range hcl.Range
	// Remaining is what follows the referent in the traversal.
	Remaining hcl.Traversal
}

// Block returns the referenced block for RefBlock references.
func (r Reference) Block() Block { return Block{Kind: r.Attr, Name: r.Name} }

// String returns the referent in traversal syntax.
func (r Reference) String() string {
	switch r.Kind {
	case RefVariable:
		return "var." + r.Name
	case RefLocal:
		return "local." + r.Name
	case RefModuleOutput:
		return "module." + r.Name + "." + r.Attr
	case RefBlock:
		return r.Attr + "." + r.Name
	case RefEach:
		return "each." + r.Attr
	case RefCount:
		return "count." + r.Attr
	case RefPath:
		return "path." + r.Attr
	case RefSelf:
		return "self." + r.Attr
	}
	return "<invalid reference>"
}

// ParseRef interprets a traversal found in an expression. The root name
// decides the kind; any root that is not a language keyword is taken as a
// node block kind, and it is the caller's job to check that the kind exists.
func ParseRef(t hcl.Traversal) (Reference, hcl.Diagnostics) {
	if len(t) == 0 {
		return Reference{}, nil
	}
	root := t.RootName()
	name, nameRange, rest, diags := secondStep(t)
	if diags.HasErrors() {
		return Reference{}, diags
	}
	full := hcl.RangeBetween(t[0].SourceRange(), nameRange)
	ref := Reference{Name: name, Range: full, Remaining: rest}
	switch root {
	case "var":
		ref.Kind = RefVariable
	case "local":
		ref.Kind = RefLocal
	case "each", "count", "path", "self":
		ref.Kind = map[string]RefKind{"each": RefEach, "count": RefCount, "path": RefPath, "self": RefSelf}[root]
		ref.Attr, ref.Name = name, ""
	case "module":
		if len(rest) == 0 {
			return Reference{}, hcl.Diagnostics{{
				Severity: hcl.DiagError,
				Summary:  "Invalid module reference",
				Detail:   fmt.Sprintf("A reference to module %q must name one of its outputs, as in module.%s.OUTPUT.", name, name),
				Subject:  full.Ptr(),
			}}
		}
		out, ok := rest[0].(hcl.TraverseAttr)
		if !ok {
			return Reference{}, hcl.Diagnostics{{
				Severity: hcl.DiagError,
				Summary:  "Invalid module reference",
				Detail:   "A module output is named with a dot, as in module.NAME.OUTPUT.",
				Subject:  rest[0].SourceRange().Ptr(),
			}}
		}
		ref.Kind, ref.Attr = RefModuleOutput, out.Name
		ref.Range = hcl.RangeBetween(full, out.SrcRange)
		ref.Remaining = rest[1:]
	default:
		ref.Kind, ref.Attr = RefBlock, root
	}
	return ref, nil
}

func secondStep(t hcl.Traversal) (string, hcl.Range, hcl.Traversal, hcl.Diagnostics) {
	root := t.RootName()
	if len(t) < 2 {
		return "", hcl.Range{}, nil, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Invalid reference",
			Detail:   fmt.Sprintf("%q alone is not a value; name an attribute, as in %s.NAME.", root, root),
			Subject:  t.SourceRange().Ptr(),
		}}
	}
	step, ok := t[1].(hcl.TraverseAttr)
	if !ok {
		return "", hcl.Range{}, nil, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Invalid reference",
			Detail:   fmt.Sprintf("After %q, name an attribute with a dot, as in %s.NAME.", root, root),
			Subject:  t[1].SourceRange().Ptr(),
		}}
	}
	return step.Name, step.SrcRange, t[2:], nil
}
