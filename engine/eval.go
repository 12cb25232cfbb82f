package engine

import (
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/gatepipe/gatepipe/pipelines"
	"github.com/gatepipe/gatepipe/pipelines/addrs"
	"github.com/gatepipe/gatepipe/pipelines/funcs"
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
)

// OutDirSentinel stands for a node's output directory in configuration
// (self.out_dir) and in stored output values; it is replaced by the real
// directory when the node runs or its output is loaded.
const OutDirSentinel = "@gatepipe:out@"

// cacheSentinel replaces the cache root in configurations before hashing,
// so a cache moved to another path keeps its hits.
const cacheSentinel = "@gatepipe:cache@"

// state holds every value known so far, shared by plan and apply walks.
type state struct {
	mu     sync.Mutex
	values map[string]cty.Value // var/local/output vertex key -> value
	blocks map[string]cty.Value // assembled block values, once complete
	funcs  map[*pipelines.Module]map[string]function.Function
	stdlib interface{}
	root   *pipelines.Module
	cwd    string
}

func newState(root *pipelines.Module) *state {
	cwd, _ := os.Getwd()
	return &state{
		values: map[string]cty.Value{},
		blocks: map[string]cty.Value{},
		funcs:  map[*pipelines.Module]map[string]function.Function{},
		root:   root,
		cwd:    cwd,
	}
}

func (s *state) set(key string, v cty.Value) {
	s.mu.Lock()
	s.values[key] = v
	s.mu.Unlock()
}

func (s *state) get(key string) cty.Value {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.values[key]
}

// evalContext builds the evaluation context for one vertex (or one
// instance of a block vertex) holding exactly the values it references.
func (e *Engine) evalContext(v *vertex, inst *instance) *hcl.EvalContext {
	s := e.state
	vars := map[string]map[string]cty.Value{}
	put := func(root, name string, val cty.Value) {
		if vars[root] == nil {
			vars[root] = map[string]cty.Value{}
		}
		vars[root][name] = val
	}
	modules := map[string]map[string]cty.Value{}
	blocks := map[string]map[string]cty.Value{}
	prefix := v.evalMod.Path.Prefix()
	for _, ref := range v.refs {
		switch ref.Kind {
		case addrs.RefVariable:
			put("var", ref.Name, s.get(prefix+"var."+ref.Name))
		case addrs.RefLocal:
			key := prefix + "local." + ref.Name
			if _, _, ok := e.keyedItem(v, key, inst); ok {
				// Only this instance's element (narrow.go): the others
				// may not have finished, or may have failed.
				put("local", ref.Name, e.keyedLocal(e.graph.vertices[key], inst.eachKey.AsString()))
				continue
			}
			put("local", ref.Name, s.get(key))
		case addrs.RefModuleOutput:
			child := v.evalMod.Path.Child(ref.Name)
			if modules[ref.Name] == nil {
				modules[ref.Name] = map[string]cty.Value{}
			}
			modules[ref.Name][ref.Attr] = s.get(child.Prefix() + "output." + ref.Attr)
		case addrs.RefBlock:
			if blocks[ref.Attr] == nil {
				blocks[ref.Attr] = map[string]cty.Value{}
			}
			blocks[ref.Attr][ref.Name] = e.blockValue(e.graph.vertices[prefix+ref.Block().String()])
		case addrs.RefEach:
			if inst != nil {
				put("each", "key", inst.eachKey)
				put("each", "value", inst.eachValue)
			}
		case addrs.RefCount:
			if inst != nil {
				put("count", "index", inst.eachKey)
			}
		case addrs.RefPath:
			put("path", "module", cty.StringVal(modulePathValue(v.evalMod.Pipeline.Dir)))
			put("path", "root", cty.StringVal(modulePathValue(s.root.Pipeline.Dir)))
			put("path", "cwd", cty.StringVal(s.cwd))
		case addrs.RefSelf:
			put("self", "out_dir", cty.StringVal(OutDirSentinel))
		}
	}
	ctx := &hcl.EvalContext{Variables: map[string]cty.Value{}, Functions: e.functionsFor(v.evalMod)}
	for root, m := range vars {
		ctx.Variables[root] = cty.ObjectVal(m)
	}
	if len(modules) > 0 {
		mods := map[string]cty.Value{}
		for name, outs := range modules {
			mods[name] = cty.ObjectVal(outs)
		}
		ctx.Variables["module"] = cty.ObjectVal(mods)
	}
	for kind, m := range blocks {
		ctx.Variables[kind] = cty.ObjectVal(m)
	}
	return ctx
}

// keyedLocal is an object-constructor local holding only its element k,
// evaluated from that element's own references.
func (e *Engine) keyedLocal(lv *vertex, k string) cty.Value {
	it := lv.items[k]
	sub := &vertex{key: lv.key, kind: vLocal, mod: lv.mod, evalMod: lv.evalMod, local: lv.local, refs: it.refs}
	val, diags := it.expr.Value(e.evalContext(sub, nil))
	if diags.HasErrors() {
		val = cty.DynamicVal
	}
	return cty.ObjectVal(map[string]cty.Value{k: val})
}

func modulePathValue(dir string) string {
	if strings.HasPrefix(dir, pipelines.StdlibPrefix) {
		return dir
	}
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return dir
}

func (e *Engine) functionsFor(m *pipelines.Module) map[string]function.Function {
	s := e.state
	s.mu.Lock()
	defer s.mu.Unlock()
	if f, ok := s.funcs[m]; ok {
		return f
	}
	f := funcs.Table(m.Pipeline.Dir, e.stdlib, e.opts.Reads)
	s.funcs[m] = f
	return f
}

// blockValue returns the value other blocks see for a block vertex: the
// single instance's value, an object keyed by for_each key, or a tuple for
// count. Unfinished instances contribute unknown values.
func (e *Engine) blockValue(v *vertex) cty.Value {
	s := e.state
	s.mu.Lock()
	if val, ok := s.blocks[v.key]; ok {
		s.mu.Unlock()
		return val
	}
	s.mu.Unlock()
	complete := true
	instVal := func(in *instance) cty.Value {
		val := in.getValue()
		if val == cty.NilVal {
			complete = false
			return unknownOutput(v.nodeKind.OutputType())
		}
		if !val.IsWhollyKnown() || in.isPlanned() {
			// A planned value (nodes.Planner): its known parts let
			// the blocks that reference it be costed while they wait,
			// but the block's value is what the runs give (a run found
			// in the cache under the same action may carry another
			// instance's name).
			complete = false
		}
		return val
	}
	var val cty.Value
	switch v.expanded {
	case expandSingle:
		if len(v.instances) == 0 {
			return unknownOutput(v.nodeKind.OutputType())
		}
		val = instVal(v.instances[0])
	case expandForEach:
		m := make(map[string]cty.Value, len(v.instances))
		for _, in := range v.instances {
			m[string(in.addr.Instance.Key.(addrs.StringKey))] = instVal(in)
		}
		val = cty.ObjectVal(m)
	case expandCount:
		elems := make([]cty.Value, len(v.instances))
		for i, in := range v.instances {
			elems[i] = instVal(in)
		}
		val = cty.TupleVal(elems)
	}
	if complete {
		s.mu.Lock()
		s.blocks[v.key] = val
		s.mu.Unlock()
	}
	return val
}

// unknownOutput is a node's value before it has run: unknown, but refined
// as not null (a node always has a value), so that `x == null` on it is
// known at plan time and can decide a count or for_each.
func unknownOutput(ty cty.Type) cty.Value {
	return cty.UnknownVal(ty).RefineNotNull()
}
