package pipelines

import (
	"github.com/gatepipe/gatepipe/pipelines/addrs"
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// Pipeline is the decoded content of one module: a directory of .hcl files,
// a single file, or an embedded stdlib module.
type Pipeline struct {
	// Dir is the directory that relative paths in the module resolve
	// against. For stdlib modules it starts with "stdlib/".
	Dir string
	// Settings is the top-level gatepipe block; only the root module may
	// have one.
	Settings    *Settings
	Variables   map[string]*Variable
	Locals      map[string]*Local
	Outputs     map[string]*Output
	ModuleCalls map[string]*ModuleCall
	Blocks      map[addrs.Block]*NodeBlock
}

func newPipeline(dir string) *Pipeline {
	return &Pipeline{
		Dir:         dir,
		Variables:   map[string]*Variable{},
		Locals:      map[string]*Local{},
		Outputs:     map[string]*Output{},
		ModuleCalls: map[string]*ModuleCall{},
		Blocks:      map[addrs.Block]*NodeBlock{},
	}
}

// Variable is a `variable "name" {}` block.
type Variable struct {
	Name        string
	Description string
	// Type is the declared type constraint, cty.DynamicPseudoType when
	// none was given.
	Type cty.Type
	// Default is cty.NilVal when the variable is required.
	Default cty.Value
	// Validations are checked on every value the variable takes.
	Validations []*Validation
	DeclRange   hcl.Range
}

// Validation is a variable's `validation` block: condition, an expression
// of var.NAME (and functions) that must be true, and error_message, the
// text that says why it is not.
type Validation struct {
	Condition, ErrorMessage hcl.Expression
	DeclRange               hcl.Range
}

// Required reports whether the variable has no default.
func (v *Variable) Required() bool { return v.Default == cty.NilVal }

// Local is one attribute of a `locals {}` block.
type Local struct {
	Name      string
	Expr      hcl.Expression
	DeclRange hcl.Range
}

// Output is an `output "name" { value = ... }` block.
type Output struct {
	Name        string
	Description string
	Expr        hcl.Expression
	DeclRange   hcl.Range
}

// ModuleCall is a `module "name" { source = ... }` block. Attributes other
// than source set the child module's variables.
type ModuleCall struct {
	Name        string
	Source      string
	SourceRange hcl.Range
	// Inputs maps child variable names to expressions evaluated in the
	// calling module.
	Inputs    map[string]*hcl.Attribute
	DependsOn []hcl.Traversal
	DeclRange hcl.Range
}

// NodeBlock is a block of a registered node kind, e.g. dataset "fashion".
type NodeBlock struct {
	Addr addrs.Block
	// Body holds the attributes and blocks the kind decodes itself; the
	// meta-arguments below are removed from it.
	Body      hcl.Body
	ForEach   hcl.Expression
	Count     hcl.Expression
	DependsOn []hcl.Traversal
	Resources *Resources
	DeclRange hcl.Range
	TypeRange hcl.Range
}

// Resources is a node's `resources {}` block. Expressions are evaluated
// with the node's other arguments.
type Resources struct {
	CPUs      hcl.Expression
	GPUs      hcl.Expression
	Memory    hcl.Expression
	DeclRange hcl.Range
}

// Settings is the top-level `gatepipe {}` block. Its values must be
// literals: they are needed before any expression is evaluated.
type Settings struct {
	CacheDir    string
	Parallelism int
	// KeepRuns is how many run records the cache keeps (0: the default).
	KeepRuns int
	// Mirror maps remote source URLs to a directory or HTTP server
	// (sources.ParseMirror); MirrorRange is where it is set.
	Mirror      string
	MirrorRange hcl.Range
	Devices     []string
	// DevicesRange is where devices is set, for diagnostics about a spec.
	DevicesRange hcl.Range
	// GPUShare is how many nodes may share one GPU at once (0: one).
	GPUShare int
	// Runtime and Python are the defaults of encoder-backed blocks'
	// runtime ("auto", "go" or "torch"; empty: "auto") and of the torch
	// runtime's interpreter.
	Runtime, Python string
	DeclRange       hcl.Range
}

// Module is one module instance in the loaded tree.
type Module struct {
	Path     addrs.ModulePath
	Pipeline *Pipeline
	// Call is the block that instantiated this module; nil for the root.
	Call     *ModuleCall
	Children map[string]*Module
}

// Walk calls fn for m and every module below it, parents first, children
// in name order.
func (m *Module) Walk(fn func(*Module)) {
	fn(m)
	for _, name := range sortedKeys(m.Children) {
		m.Children[name].Walk(fn)
	}
}
