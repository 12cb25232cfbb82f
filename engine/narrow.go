package engine

import (
	"sort"

	"github.com/gatepipe/gatepipe/pipelines/addrs"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// Per-instance dependencies. An instance of a for_each block that reaches
// an upstream block or local only through X[each.key] sees X's element for
// its own key and nothing else: `benchmark.b[each.key]`, or
// `local.data[each.key]` where local.data is an object constructor
// ({ acdc = module.acdc.dataset, ... }). Such an instance depends on that
// element alone: it waits for it, its action ID hashes it, and a failure
// elsewhere in X does not skip it. So the benchmarks of a tier run, fail
// and stay cached independently.

// keyedDeps finds the dependencies of a for_each block vertex used only
// as X[each.key].
func (b *graphBuilder) keyedDeps(v *vertex) map[string]bool {
	if v.kind != vBlock || v.block.ForEach == nil {
		return nil
	}
	total, indexed := map[string]int{}, map[string]int{}
	target := func(t hcl.Traversal) string {
		ref, diags := addrs.ParseRef(t)
		if diags.HasErrors() {
			return ""
		}
		key, diags := b.resolveRef(v, ref)
		if diags.HasErrors() {
			return ""
		}
		return key
	}
	visit := func(n hclsyntax.Node) hcl.Diagnostics {
		switch e := n.(type) {
		case *hclsyntax.ScopeTraversalExpr:
			if k := target(e.Traversal); k != "" {
				total[k]++
			}
		case *hclsyntax.IndexExpr:
			coll, ok1 := e.Collection.(*hclsyntax.ScopeTraversalExpr)
			key, ok2 := e.Key.(*hclsyntax.ScopeTraversalExpr)
			if ok1 && ok2 && isEachKey(key.Traversal) {
				if k := target(coll.Traversal); k != "" {
					indexed[k]++
				}
			}
		}
		return nil
	}
	body, ok := v.block.Body.(*hclsyntax.Body)
	if !ok {
		return nil // another syntax: no narrowing
	}
	hclsyntax.VisitAll(body, visit)
	for _, e := range []hcl.Expression{v.block.ForEach, v.block.Count} {
		if se, ok := e.(hclsyntax.Expression); ok {
			hclsyntax.VisitAll(se, visit)
		}
	}
	if r := v.block.Resources; r != nil {
		for _, e := range []hcl.Expression{r.CPUs, r.GPUs, r.Memory} {
			if se, ok := e.(hclsyntax.Expression); ok {
				hclsyntax.VisitAll(se, visit)
			}
		}
	}
	var out map[string]bool
	for k, n := range indexed {
		dv := b.vertices[k]
		if n != total[k] || dv == nil || !(dv.kind == vBlock && dv.block.ForEach != nil || dv.kind == vLocal && dv.items != nil) {
			continue
		}
		if out == nil {
			out = map[string]bool{}
		}
		out[k] = true
	}
	return out
}

func isEachKey(t hcl.Traversal) bool {
	if len(t) != 2 || t.RootName() != "each" {
		return false
	}
	a, ok := t[1].(hcl.TraverseAttr)
	return ok && a.Name == "key"
}

// localItems reads a local that is an object constructor with static
// keys: each key's references and the vertices they resolve to.
func (b *graphBuilder) localItems(v *vertex) map[string]*localItem {
	oc, ok := v.local.Expr.(*hclsyntax.ObjectConsExpr)
	if !ok {
		return nil
	}
	items := map[string]*localItem{}
	for _, it := range oc.Items {
		kv, diags := it.KeyExpr.Value(nil)
		if diags.HasErrors() || !kv.IsKnown() || kv.IsNull() || kv.Type() != cty.String {
			return nil
		}
		item := &localItem{expr: it.ValueExpr}
		for _, t := range it.ValueExpr.Variables() {
			ref, diags := addrs.ParseRef(t)
			if diags.HasErrors() {
				return nil
			}
			key, diags := b.resolveRef(v, ref)
			if diags.HasErrors() {
				return nil
			}
			item.refs = append(item.refs, ref)
			if key != "" {
				item.deps = append(item.deps, key)
			}
		}
		items[kv.AsString()] = item
	}
	return items
}

// localItem is one element of an object-constructor local.
type localItem struct {
	expr hcl.Expression
	refs []addrs.Reference
	deps []string
}

// addNarrowing records the object-constructor locals' items, then each
// for_each block's keyed dependencies.
func (b *graphBuilder) addNarrowing() hcl.Diagnostics {
	for _, v := range b.order {
		if v.kind == vLocal {
			v.items = b.localItems(v)
		}
	}
	for _, v := range b.order {
		v.keyed = b.keyedDeps(v)
	}
	return nil
}

// keyedItem returns what an instance with for_each key k reaches through
// the keyed dependency d: instance k of a block, or the dependencies of
// item k of a local. ok is false when d is not keyed for this instance
// (then all of d counts).
func (e *Engine) keyedItem(v *vertex, d string, in *instance) (block *instance, deps []string, ok bool) {
	if !v.keyed[d] || in == nil || in.eachKey == cty.NilVal || !in.eachKey.IsKnown() || in.eachKey.Type() != cty.String {
		return nil, nil, false
	}
	k := in.eachKey.AsString()
	dv := e.graph.vertices[d]
	switch dv.kind {
	case vBlock:
		// expand sorts a for_each block's instances by key.
		i := sort.Search(len(dv.instances), func(i int) bool {
			sk, _ := dv.instances[i].addr.Instance.Key.(addrs.StringKey)
			return string(sk) >= k
		})
		if i < len(dv.instances) {
			if sk, isStr := dv.instances[i].addr.Instance.Key.(addrs.StringKey); isStr && string(sk) == k {
				return dv.instances[i], nil, true
			}
		}
	case vLocal:
		if it, found := dv.items[k]; found {
			return nil, it.deps, true
		}
	}
	return nil, nil, false
}
