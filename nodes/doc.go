// Package nodes is the contract between the engine and the block kinds.
//
// A Kind describes one block type (dataset, command, train, ...): its
// schema, the type of the value other blocks can reference, and how to turn
// an evaluated configuration into a Node. A Node fingerprints whatever
// besides its configuration determines its output, and runs, writing files
// into Env.OutDir and returning its output value.
//
// The engine — not this package — evaluates expressions, computes action
// IDs, stores outputs in the cache and schedules runs. Kinds never import
// the engine. A Registry holds the kinds of one program; there is no
// global registry.
package nodes
