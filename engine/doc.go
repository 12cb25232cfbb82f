// Package engine plans and applies gatepipe pipelines.
//
// Given a loaded module tree (package pipelines) and a node registry
// (package nodes), it builds the dependency graph from references in named
// steps, evaluates expressions as values become known, expands for_each and
// count, computes each instance's action ID, marks instances cached, will
// run or blocked (plan), walks the graph in parallel under the parallelism
// and device-slot limits, stores outputs in the content-addressed cache
// (package engine/cache) and writes a run record (apply).
//
// Entry points: New, then (*Engine).Plan and (*Engine).Apply.
package engine
