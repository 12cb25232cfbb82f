package dag

import (
	"container/heap"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/dominikbraun/graph"
	"github.com/dominikbraun/graph/draw"
)

// Graph is a directed graph of string keys in which an edge from a to b
// means a depends on b.
type Graph struct {
	g     graph.Graph[string, string]
	index map[string]int // insertion order, for stable output
	keys  []string
	deps  map[string][]string
	users map[string][]string
}

// New returns an empty graph.
func New() *Graph {
	return &Graph{
		g:     graph.New(graph.StringHash, graph.Directed()),
		index: map[string]int{},
		deps:  map[string][]string{},
		users: map[string][]string{},
	}
}

// Add adds a vertex; adding an existing key does nothing.
func (d *Graph) Add(key string) {
	if _, ok := d.index[key]; ok {
		return
	}
	if err := d.g.AddVertex(key); err != nil {
		panic(fmt.Sprintf("dag: %v", err)) // cannot happen: key is new
	}
	d.index[key] = len(d.keys)
	d.keys = append(d.keys, key)
}

// Has reports whether key is a vertex.
func (d *Graph) Has(key string) bool { _, ok := d.index[key]; return ok }

// Connect records that dependent depends on dependency. Both are added if
// missing; duplicate edges are ignored.
func (d *Graph) Connect(dependent, dependency string) {
	d.Add(dependent)
	d.Add(dependency)
	err := d.g.AddEdge(dependent, dependency)
	if errors.Is(err, graph.ErrEdgeAlreadyExists) {
		return
	}
	if err != nil {
		panic(fmt.Sprintf("dag: %v", err))
	}
	d.deps[dependent] = append(d.deps[dependent], dependency)
	d.users[dependency] = append(d.users[dependency], dependent)
}

// Len returns the number of vertices.
func (d *Graph) Len() int { return len(d.keys) }

// Keys returns the vertices in insertion order.
func (d *Graph) Keys() []string { return append([]string(nil), d.keys...) }

// DependenciesOf returns what key depends on directly.
func (d *Graph) DependenciesOf(key string) []string { return d.deps[key] }

// DependentsOf returns what depends on key directly.
func (d *Graph) DependentsOf(key string) []string { return d.users[key] }

// Cycles returns every dependency cycle, each rotated to start at its
// lexically smallest key, in sorted order; a self-dependency is a cycle of
// one.
func (d *Graph) Cycles() [][]string {
	sccs, err := graph.StronglyConnectedComponents(d.g)
	if err != nil {
		panic(fmt.Sprintf("dag: %v", err))
	}
	var cycles [][]string
	for _, scc := range sccs {
		if len(scc) == 1 {
			if !containsStr(d.deps[scc[0]], scc[0]) {
				continue
			}
		}
		cycles = append(cycles, d.orderCycle(scc))
	}
	sort.Slice(cycles, func(i, j int) bool { return strings.Join(cycles[i], " ") < strings.Join(cycles[j], " ") })
	return cycles
}

// orderCycle lists a strongly connected component along its dependency
// edges, starting from its smallest key, so the text reads as a path.
func (d *Graph) orderCycle(scc []string) []string {
	in := map[string]bool{}
	for _, k := range scc {
		in[k] = true
	}
	sort.Strings(scc)
	out := []string{scc[0]}
	seen := map[string]bool{scc[0]: true}
	cur := scc[0]
	for len(out) < len(scc) {
		next := ""
		for _, dep := range sortedCopy(d.deps[cur]) {
			if in[dep] && !seen[dep] {
				next = dep
				break
			}
		}
		if next == "" { // not a simple cycle: list the rest in order
			for _, k := range scc {
				if !seen[k] {
					out = append(out, k)
					seen[k] = true
				}
			}
			break
		}
		out = append(out, next)
		seen[next] = true
		cur = next
	}
	return out
}

// Order returns every vertex with dependencies before dependents; among
// vertices that are ready at the same time, the one added first comes first.
// It fails when the graph has a cycle.
func (d *Graph) Order() ([]string, error) {
	pending := make(map[string]int, len(d.keys))
	h := &indexHeap{}
	for _, k := range d.keys {
		pending[k] = len(d.deps[k])
		if pending[k] == 0 {
			heap.Push(h, d.index[k])
		}
	}
	order := make([]string, 0, len(d.keys))
	for h.Len() > 0 {
		k := d.keys[heap.Pop(h).(int)]
		order = append(order, k)
		for _, u := range d.users[k] {
			pending[u]--
			if pending[u] == 0 {
				heap.Push(h, d.index[u])
			}
		}
	}
	if len(order) != len(d.keys) {
		return nil, errors.New("dependency graph has a cycle")
	}
	return order, nil
}

// DOT writes the graph in Graphviz format, edges pointing from dependency
// to dependent (the direction work flows).
func (d *Graph) DOT(w io.Writer) error {
	flow := graph.New(graph.StringHash, graph.Directed())
	for _, k := range d.keys {
		if err := flow.AddVertex(k, graph.VertexAttribute("label", k)); err != nil {
			return err
		}
	}
	for _, k := range d.keys {
		for _, dep := range d.deps[k] {
			if err := flow.AddEdge(dep, k); err != nil {
				return err
			}
		}
	}
	return draw.DOT(flow, w, draw.GraphAttribute("rankdir", "LR"))
}

type indexHeap []int

func (h indexHeap) Len() int           { return len(h) }
func (h indexHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h indexHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *indexHeap) Push(x any)        { *h = append(*h, x.(int)) }
func (h *indexHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func sortedCopy(s []string) []string {
	c := append([]string(nil), s...)
	sort.Strings(c)
	return c
}
