package engine

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gatepipe/gatepipe/engine/dag"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/pipelines"
	"github.com/gatepipe/gatepipe/pipelines/addrs"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hcldec"
)

type vertexKind int

const (
	vVariable vertexKind = iota + 1
	vLocal
	vOutput
	vBlock
)

// vertex is one referenceable thing in the block-level graph.
type vertex struct {
	key  string
	kind vertexKind
	// mod is the module the vertex belongs to; evalMod the module whose
	// scope evaluates its expression (the parent, for module variables).
	mod, evalMod *pipelines.Module

	variable *pipelines.Variable
	input    *hcl.Attribute // module-call argument setting a child variable
	local    *pipelines.Local
	output   *pipelines.Output
	block    *pipelines.NodeBlock
	nodeKind nodes.Kind

	// refs are the value references of the vertex's expressions.
	refs []addrs.Reference
	// deps are the vertex keys it depends on (refs plus depends_on).
	deps []string

	instances []*instance
	expanded  expansion

	// items are an object-constructor local's elements (narrow.go).
	items map[string]*localItem
	// keyed are the dependencies a for_each block reaches only as
	// X[each.key] (narrow.go).
	keyed map[string]bool
	// metaOnly are the dependencies a block reaches only through its
	// count or for_each: they decide which instances exist, and whatever
	// an instance takes from them (each.value) is in its evaluated
	// configuration, so their output IDs are not hashed into its action
	// ID. A dataset enabled by `count = var.encoder != null ? 1 : 0` is
	// not re-run because the encoder changed.
	metaOnly map[string]bool
}

type expansion int

const (
	expandSingle expansion = iota
	expandForEach
	expandCount
)

func (v *vertex) declRange() hcl.Range {
	switch v.kind {
	case vVariable:
		if v.variable != nil {
			return v.variable.DeclRange
		}
	case vLocal:
		return v.local.DeclRange
	case vOutput:
		return v.output.DeclRange
	case vBlock:
		return v.block.DeclRange
	}
	return hcl.Range{}
}

// graphBuilder turns a module tree into the block-level graph, step by step.
type graphBuilder struct {
	reg      *nodes.Registry
	root     *pipelines.Module
	vertices map[string]*vertex
	order    []*vertex
	g        *dag.Graph
}

// transform is one named step of graph building.
type transform struct {
	name string
	fn   func(*graphBuilder) hcl.Diagnostics
}

var graphSteps = []transform{
	{"vertices", (*graphBuilder).addVertices},
	{"references", (*graphBuilder).addReferences},
	{"narrowing", (*graphBuilder).addNarrowing},
	{"cycles", (*graphBuilder).checkCycles},
}

func buildGraph(reg *nodes.Registry, root *pipelines.Module) (*graphBuilder, hcl.Diagnostics) {
	b := &graphBuilder{reg: reg, root: root, vertices: map[string]*vertex{}, g: dag.New()}
	var diags hcl.Diagnostics
	for _, step := range graphSteps {
		diags = append(diags, step.fn(b)...)
		if diags.HasErrors() {
			return b, diags
		}
	}
	return b, diags
}

func (b *graphBuilder) add(v *vertex) {
	b.vertices[v.key] = v
	b.order = append(b.order, v)
	b.g.Add(v.key)
}

func (b *graphBuilder) addVertices() hcl.Diagnostics {
	var diags hcl.Diagnostics
	b.root.Walk(func(m *pipelines.Module) {
		p, prefix := m.Pipeline, m.Path.Prefix()
		var parent *pipelines.Module
		if m.Call != nil {
			parent = b.moduleAt(m.Path)
		}
		for _, name := range sortedKeys(p.Variables) {
			v := &vertex{key: prefix + "var." + name, kind: vVariable, mod: m, evalMod: m, variable: p.Variables[name]}
			if m.Call != nil {
				v.evalMod = parent
				v.input = m.Call.Inputs[name]
			}
			b.add(v)
		}
		if m.Call != nil {
			for _, name := range sortedKeys(m.Call.Inputs) {
				if _, ok := p.Variables[name]; !ok {
					a := m.Call.Inputs[name]
					diags = append(diags, &hcl.Diagnostic{
						Severity: hcl.DiagError,
						Summary:  "Unsupported argument",
						Detail:   fmt.Sprintf("Module %q (%s) declares no variable named %q.%s", m.Call.Name, m.Call.Source, name, pipelines.DidYouMean(name, sortedKeys(p.Variables))),
						Subject:  a.NameRange.Ptr(),
					})
				}
			}
		}
		for _, name := range sortedKeys(p.Locals) {
			b.add(&vertex{key: prefix + "local." + name, kind: vLocal, mod: m, evalMod: m, local: p.Locals[name]})
		}
		for _, nb := range p.SortedBlocks() {
			kind, ok := b.reg.Kind(nb.Addr.Kind)
			if !ok {
				continue // reported by the loader
			}
			b.add(&vertex{key: prefix + nb.Addr.String(), kind: vBlock, mod: m, evalMod: m, block: nb, nodeKind: kind})
		}
		for _, name := range sortedKeys(p.Outputs) {
			b.add(&vertex{key: prefix + "output." + name, kind: vOutput, mod: m, evalMod: m, output: p.Outputs[name]})
		}
	})
	return diags
}

// moduleAt returns the parent module of the module at path.
func (b *graphBuilder) moduleAt(path addrs.ModulePath) *pipelines.Module {
	parentPath, _, _ := path.Parent()
	var found *pipelines.Module
	b.root.Walk(func(m *pipelines.Module) {
		if m.Path == parentPath {
			found = m
		}
	})
	return found
}

func (b *graphBuilder) addReferences() hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, v := range b.order {
		traversals, deps := b.expressionsOf(v)
		meta := metaTraversals(v)
		body := map[string]bool{}
		metaTargets := map[string]bool{}
		for i, t := range traversals {
			ref, rDiags := addrs.ParseRef(t)
			diags = append(diags, rDiags...)
			if rDiags.HasErrors() {
				continue
			}
			target, d := b.resolveRef(v, ref)
			diags = append(diags, d...)
			if d.HasErrors() {
				continue
			}
			v.refs = append(v.refs, ref)
			if target != "" {
				b.connect(v, target)
				if i >= len(traversals)-meta {
					metaTargets[target] = true
				} else {
					body[target] = true
				}
			}
		}
		for _, t := range deps {
			target, d := b.resolveDependsOn(v, t)
			diags = append(diags, d...)
			if target != "" {
				b.connect(v, target)
				body[target] = true
			}
		}
		for t := range metaTargets {
			if !body[t] {
				if v.metaOnly == nil {
					v.metaOnly = map[string]bool{}
				}
				v.metaOnly[t] = true
			}
		}
	}
	// A module call's depends_on applies to every block in the module.
	for _, v := range b.order {
		if v.kind != vBlock || v.mod.Call == nil {
			continue
		}
		for m := v.mod; m.Call != nil; m = b.moduleAt(m.Path) {
			for _, t := range m.Call.DependsOn {
				parent := b.moduleAt(m.Path)
				target, d := b.resolveDependsOn(&vertex{evalMod: parent, mod: parent}, t)
				diags = append(diags, d...)
				if target != "" {
					b.connect(v, target)
				}
			}
		}
	}
	return diags
}

func (b *graphBuilder) connect(v *vertex, target string) {
	if !containsString(v.deps, target) {
		v.deps = append(v.deps, target)
	}
	b.g.Connect(v.key, target)
}

// expressionsOf returns the traversals of a vertex's expressions and its
// explicit depends_on traversals.
func (b *graphBuilder) expressionsOf(v *vertex) (refs, dependsOn []hcl.Traversal) {
	switch v.kind {
	case vVariable:
		if v.input != nil {
			refs = v.input.Expr.Variables()
		}
	case vLocal:
		refs = v.local.Expr.Variables()
	case vOutput:
		if v.output.Expr != nil {
			refs = v.output.Expr.Variables()
		}
	case vBlock:
		nb := v.block
		refs = hcldec.Variables(nb.Body, v.nodeKind.Spec())
		if r := nb.Resources; r != nil {
			for _, e := range []hcl.Expression{r.CPUs, r.GPUs, r.Memory} {
				if e != nil {
					refs = append(refs, e.Variables()...)
				}
			}
		}
		// count and for_each last: metaTraversals counts them.
		for _, e := range []hcl.Expression{nb.ForEach, nb.Count} {
			if e != nil {
				refs = append(refs, e.Variables()...)
			}
		}
		dependsOn = nb.DependsOn
	}
	return refs, dependsOn
}

// metaTraversals is how many of expressionsOf's traversals, at its end,
// are a block's count and for_each.
func metaTraversals(v *vertex) int {
	if v.kind != vBlock {
		return 0
	}
	n := 0
	for _, e := range []hcl.Expression{v.block.ForEach, v.block.Count} {
		if e != nil {
			n += len(e.Variables())
		}
	}
	return n
}

// resolveRef checks a reference and returns the key of the vertex it
// points at ("" for each/count/path/self).
func (b *graphBuilder) resolveRef(v *vertex, ref addrs.Reference) (string, hcl.Diagnostics) {
	m := v.evalMod
	p := m.Pipeline
	errAt := func(summary, detail string) hcl.Diagnostics {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: ref.Range.Ptr()}}
	}
	switch ref.Kind {
	case addrs.RefVariable:
		if _, ok := p.Variables[ref.Name]; !ok {
			return "", errAt("Reference to undeclared input variable",
				fmt.Sprintf("An input variable named %q is not declared in this module.%s Declare it with a variable block.", ref.Name, pipelines.DidYouMean(ref.Name, sortedKeys(p.Variables))))
		}
		return m.Path.Prefix() + "var." + ref.Name, nil
	case addrs.RefLocal:
		if _, ok := p.Locals[ref.Name]; !ok {
			return "", errAt("Reference to undeclared local value",
				fmt.Sprintf("A local value named %q is not declared in this module.%s", ref.Name, pipelines.DidYouMean(ref.Name, sortedKeys(p.Locals))))
		}
		return m.Path.Prefix() + "local." + ref.Name, nil
	case addrs.RefModuleOutput:
		child, ok := m.Children[ref.Name]
		if !ok {
			if _, declared := p.ModuleCalls[ref.Name]; declared {
				return "", nil // the call itself failed to load and was reported
			}
			return "", errAt("Reference to undeclared module",
				fmt.Sprintf("No module call named %q is declared in this module.%s", ref.Name, pipelines.DidYouMean(ref.Name, sortedKeys(m.Children))))
		}
		if _, ok := child.Pipeline.Outputs[ref.Attr]; !ok {
			return "", errAt("Reference to undeclared output value",
				fmt.Sprintf("Module %q has no output named %q.%s", ref.Name, ref.Attr, pipelines.DidYouMean(ref.Attr, sortedKeys(child.Pipeline.Outputs))))
		}
		return child.Path.Prefix() + "output." + ref.Attr, nil
	case addrs.RefBlock:
		if _, ok := b.reg.Kind(ref.Attr); !ok {
			roots := append([]string{"var", "local", "module", "each", "count", "path", "self"}, b.reg.Names()...)
			return "", errAt("Reference to unknown name",
				fmt.Sprintf("%q is neither a block kind nor a language keyword.%s References start with var., local., module., each., count., path., self., or a block kind (%s).", ref.Attr, pipelines.DidYouMean(ref.Attr, roots), strings.Join(b.reg.Names(), ", ")))
		}
		if p.Block(ref.Block()) == nil {
			return "", errAt("Reference to undeclared block",
				fmt.Sprintf("A %s block named %q is not declared in this module.%s", ref.Attr, ref.Name, pipelines.DidYouMean(ref.Name, p.BlockNames(ref.Attr))))
		}
		return m.Path.Prefix() + ref.Block().String(), nil
	case addrs.RefEach:
		if v.kind != vBlock || v.block.ForEach == nil {
			return "", errAt("Reference to \"each\" in context without for_each",
				"The \"each\" object can be used only in blocks that set for_each.")
		}
		if ref.Attr != "key" && ref.Attr != "value" {
			return "", errAt("Invalid \"each\" attribute", fmt.Sprintf("The \"each\" object has attributes \"key\" and \"value\", not %q.", ref.Attr))
		}
	case addrs.RefCount:
		if v.kind != vBlock || v.block.Count == nil {
			return "", errAt("Reference to \"count\" in non-counted context",
				"The \"count\" object can be used only in blocks that set count.")
		}
		if ref.Attr != "index" {
			return "", errAt("Invalid \"count\" attribute", fmt.Sprintf("The \"count\" object has one attribute, \"index\", not %q.", ref.Attr))
		}
	case addrs.RefPath:
		if ref.Attr != "module" && ref.Attr != "root" && ref.Attr != "cwd" {
			return "", errAt("Invalid \"path\" attribute", fmt.Sprintf("The \"path\" object has attributes \"module\", \"root\" and \"cwd\", not %q.%s", ref.Attr, pipelines.DidYouMean(ref.Attr, []string{"module", "root", "cwd"})))
		}
	case addrs.RefSelf:
		if v.kind != vBlock || ref.Attr != "out_dir" {
			return "", errAt("Invalid \"self\" reference", "Only self.out_dir, the node's output directory, can be used, and only inside a node block.")
		}
	}
	return "", nil
}

func (b *graphBuilder) resolveDependsOn(v *vertex, t hcl.Traversal) (string, hcl.Diagnostics) {
	ref, diags := addrs.ParseRef(t)
	if diags.HasErrors() {
		return "", diags
	}
	if ref.Kind != addrs.RefBlock && ref.Kind != addrs.RefModuleOutput && ref.Kind != addrs.RefLocal && ref.Kind != addrs.RefVariable {
		return "", hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Invalid depends_on reference",
			Detail:   "depends_on may name blocks, module outputs, locals or variables.",
			Subject:  t.SourceRange().Ptr(),
		}}
	}
	return b.resolveRef(v, ref)
}

func (b *graphBuilder) checkCycles() hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, cycle := range b.g.Cycles() {
		first := b.vertices[cycle[0]]
		path := append(append([]string(nil), cycle...), cycle[0])
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Dependency cycle",
			Detail:   fmt.Sprintf("These blocks depend on each other in a cycle: %s. Break the cycle by removing one of the references.", strings.Join(path, " -> ")),
			Subject:  first.declRange().Ptr(),
		})
	}
	return diags
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
