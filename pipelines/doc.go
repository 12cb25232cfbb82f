// Package pipelines loads gatepipe configuration — a directory of *.hcl
// files or a single file — into an unevaluated, typed tree of modules.
//
// It decodes the language-level blocks (gatepipe, variable, locals, output,
// module) and the meta-arguments of node blocks (for_each, count,
// depends_on, resources), and keeps each node block's remaining body as an
// hcl.Body for its kind to decode with its own schema. It knows no node kind
// beyond the set of kind names it is given, and evaluates no expression
// except the literal settings block and module sources.
//
// Every problem is reported as hcl.Diagnostics with source ranges; the
// loader keeps going after errors and returns what it could decode.
//
// Entry point: NewLoader, then (*Loader).LoadConfig.
package pipelines
