// Package dag is gatepipe's dependency graph: a keyed directed graph with
// cycle diagnostics, a stable topological order, a parallel walk that skips
// the dependents of failed vertices, and DOT output.
//
// It is the only package that imports dominikbraun/graph, which stores the
// vertices and edges and finds strongly connected components. The library's
// StableTopologicalSort is quadratic in the number of vertices, so the order
// here is Kahn's algorithm over a heap, linear-logarithmic, which keeps plan
// time for 10,000-node pipelines in milliseconds.
package dag
