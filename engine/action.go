package engine

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/gatepipe/gatepipe/engine/cache"
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
	if err := in.node.Fingerprint(ctx, h); err != nil {
		return id, false, fmt.Errorf("%s: %w", in.key(), err)
	}
	return h.Sum(), true, nil
}

// upstreamOutputs lists "address outputid" for every instance the given one
// depends on, directly or through locals, variables and module outputs.
// It returns nil when one of them has no output yet.
func (e *Engine) upstreamOutputs(in *instance) []string {
	lines := []string{}
	for _, up := range e.upstreamBlocks(in.v) {
		for _, ui := range up.instances {
			ui.mu.Lock()
			out := ui.output
			ui.mu.Unlock()
			if out.IsZero() {
				return nil
			}
			lines = append(lines, ui.key()+" "+out.String())
		}
	}
	sort.Strings(lines)
	return lines
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
