package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/gatepipe/gatepipe/engine/cache"
	"github.com/gatepipe/gatepipe/internal/readset"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/sources"
	"github.com/zclconf/go-cty/cty"
)

// actionID hashes everything that determines an instance's output: the
// kind and its version, the evaluated configuration (cache paths replaced
// by a sentinel), the output IDs of upstream instances, and the node's own
// fingerprint (local file contents). ok is false when an upstream output
// is not known yet.
func (e *Engine) actionID(ctx context.Context, in *instance) (id cache.ActionID, ok bool, err error) {
	inputs := e.upstreamOutputs(in)
	if inputs == nil {
		return id, false, nil
	}
	h := cache.NewHasher("action", e.opts.DebugHash)
	fmt.Fprintf(h, "kind %s %s\n", in.v.nodeKind.Name(), in.v.nodeKind.Version())
	h.Write([]byte("config "))
	writeCanonical(h, in.config, e.relocate)
	h.Write([]byte("\n"))
	for _, line := range inputs {
		fmt.Fprintf(h, "input %s\n", line)
	}
	if err := in.node.Fingerprint(readset.With(ctx, e.opts.Reads), h); err != nil {
		return id, false, fmt.Errorf("%s: %w", in.key(), err)
	}
	if err := e.writePins(ctx, h, in); err != nil {
		return id, false, &pinError{fmt.Errorf("%s: %w", in.key(), err)}
	}
	return h.Sum(), true, nil
}

// pinError is a node's remote source that could not be pinned (no
// network, no credentials, a server's refusal): the node fails when it is
// run, alone, and the rest of the apply goes on.
type pinError struct{ err error }

func (e *pinError) Error() string { return e.err.Error() }
func (e *pinError) Unwrap() error { return e.err }

// writePins hashes the pins of a node's remote sources: each file's
// checksum, so that a refreshed lock entry re-runs the node. An unpinned
// source (plan without network) hashes as such; apply resolves it first,
// pinning it in the lock, so the ID it stores under is the one later
// applies compute.
func (e *Engine) writePins(ctx context.Context, h io.Writer, in *instance) error {
	d, ok := in.node.(nodes.Downloader)
	if !ok {
		return nil
	}
	for _, ref := range d.Downloads() {
		pin, err := e.resolver().Resolve(ctx, ref, nil)
		if errors.Is(err, sources.ErrNotPinned) {
			fmt.Fprintf(h, "source %s unpinned\n", ref.Key())
			continue
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "source %s commit %s\n", ref.Key(), pin.Commit)
		for _, f := range pin.Files {
			fmt.Fprintf(h, "file %s %s\n", f.Path, f.SHA256)
		}
	}
	return nil
}

// resolver is the configured sources resolver, or one that resolves
// from declared checksums only.
func (e *Engine) resolver() *sources.Resolver {
	if e.opts.Sources != nil {
		return e.opts.Sources
	}
	e.defaultResolverOnce.Do(func() {
		o := sources.Options{NoResolve: true}
		if e.cache != nil {
			o.Blobs = e.cache
		}
		e.defaultResolver = sources.New(o)
	})
	return e.defaultResolver
}

// upstreamOutputs lists "address outputid" for every instance the given one
// depends on (upstreamInstances). It returns nil when one of them has no
// output yet.
func (e *Engine) upstreamOutputs(in *instance) []string {
	lines := []string{}
	for _, ui := range e.upstreamOf(in, true) {
		ui.mu.Lock()
		out := ui.output
		ui.mu.Unlock()
		if out.IsZero() {
			return nil
		}
		lines = append(lines, ui.key()+" "+out.String())
	}
	sort.Strings(lines)
	return lines
}

// upstreamInstances are the block instances in depends on, directly or
// through locals, variables and module outputs; through a keyed
// dependency (narrow.go) only the element for its key.
func (e *Engine) upstreamInstances(in *instance) []*instance { return e.upstreamOf(in, false) }

// upstreamOf is upstreamInstances; hashed leaves out the dependencies
// reached only through count or for_each (vertex.metaOnly), whose output
// IDs an action ID does not hash.
func (e *Engine) upstreamOf(in *instance, hashed bool) []*instance {
	seen := map[string]bool{}
	var ups []*instance
	add := func(ui *instance) {
		if !seen[ui.key()] {
			seen[ui.key()] = true
			ups = append(ups, ui)
		}
	}
	addDep := func(d string) {
		dv := e.graph.vertices[d]
		blocks := []*vertex{dv}
		if dv.kind != vBlock {
			blocks = e.upstreamBlocks(dv)
		}
		for _, bv := range blocks {
			for _, ui := range bv.instances {
				add(ui)
			}
		}
	}
	for _, d := range in.v.deps {
		if hashed && in.v.metaOnly[d] {
			continue
		}
		if ui, deps, ok := e.keyedItem(in.v, d, in); ok {
			if ui != nil {
				add(ui)
			}
			for _, d2 := range deps {
				addDep(d2)
			}
			continue
		}
		addDep(d)
	}
	return ups
}

// upstreamBlocks returns the block vertices v depends on, looking through
// non-block vertices. Results are memoised.
func (e *Engine) upstreamBlocks(v *vertex) []*vertex {
	e.upMu.Lock()
	defer e.upMu.Unlock()
	return e.upstreamLocked(v)
}

func (e *Engine) upstreamLocked(v *vertex) []*vertex {
	if got, ok := e.upstream[v.key]; ok {
		return got
	}
	seen := map[string]bool{}
	var out []*vertex
	for _, d := range v.deps {
		dv := e.graph.vertices[d]
		if dv.kind == vBlock {
			if !seen[d] {
				seen[d] = true
				out = append(out, dv)
			}
			continue
		}
		for _, up := range e.upstreamLocked(dv) {
			if !seen[up.key] {
				seen[up.key] = true
				out = append(out, up)
			}
		}
	}
	e.upstream[v.key] = out
	return out
}

// relocate replaces the cache root in a configuration string by a
// sentinel before hashing, so a cache moved to another path keeps its hits.
func (e *Engine) relocate(s string) string {
	if e.cache == nil || !strings.Contains(s, e.cache.Dir()) {
		return s
	}
	return strings.ReplaceAll(s, e.cache.Dir(), cacheSentinel)
}

// replaceStrings applies fn to every known string inside v.
func replaceStrings(v cty.Value, fn func(string) string) cty.Value {
	out, _ := cty.Transform(v, func(_ cty.Path, v cty.Value) (cty.Value, error) {
		if v.Type() == cty.String && v.IsKnown() && !v.IsNull() {
			return cty.StringVal(fn(v.AsString())), nil
		}
		return v, nil
	})
	return out
}
