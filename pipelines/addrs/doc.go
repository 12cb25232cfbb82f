// Package addrs defines the immutable addresses that name things in a
// gatepipe pipeline: node blocks (dataset.fashion), their instances
// (train.x["cnn"]), variables (var.lr), locals, outputs and module calls,
// each optionally inside a module path (module.tier.benchmark.x).
//
// Every address has a String form in HCL traversal syntax that round-trips
// through ParseInstance, and is a comparable value usable as a map key.
// All types in this package must be treated as immutable.
//
// Entry points: ParseRef turns an hcl.Traversal found in an expression into a
// Reference; ParseInstance parses a user-supplied address such as the one
// given to `apply -replace`.
package addrs
