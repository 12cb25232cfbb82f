package main

import "fmt"

// trainPipeline is what the readers' tests apply: a stdlib dataset module
// (module "name", source stdlib/datasets/<source>, its arguments), a
// benchmark of it, encoder "e", adapter "a", recipe "r" (top_k 1) and
// train "t", then extra (outputs, other modules). Bodies and arguments
// are HCL lines, each ending in a newline.
type trainPipeline struct {
	name, source, args  string
	id, category        string
	encoder, adapter    string
	batch, iters, every int
	extra               string
}

// String is the pipeline's HCL.
func (p trainPipeline) String() string {
	return fmt.Sprintf(`
module %[1]q {
  source = "stdlib/datasets/%[2]s"
%[3]s}
benchmark %[1]q {
  dataset  = module.%[1]s.dataset.path
  id       = %[4]q
  category = %[5]q
}
encoder "e" {
%[6]s}
adapter "a" {
%[7]s}
recipe "r" {
  batch_size     = %[8]d
  iterations     = %[9]d
  validate_every = %[10]d
  top_k          = 1
}
train "t" {
  encoder   = encoder.e
  adapter   = adapter.a
  recipe    = recipe.r
  benchmark = benchmark.%[1]s
}
%[11]s`, p.name, p.source, p.args, p.id, p.category, p.encoder, p.adapter, p.batch, p.iters, p.every, p.extra)
}
