package engine

import (
	"fmt"
	"sort"

	"github.com/gatepipe/gatepipe/pipelines/addrs"
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/gocty"
)

// maxCount bounds count so that a typo such as 100000000 is an error at
// plan time rather than an exhausted machine; 100,000 instances of one
// block is far beyond any evaluation grid.
const maxCount = 100_000

// expand evaluates a block's for_each or count and creates its instances.
func (e *Engine) expand(v *vertex) hcl.Diagnostics {
	nb := v.block
	abs := func(k addrs.InstanceKey) addrs.AbsInstance {
		return addrs.AbsInstance{Module: v.mod.Path, Instance: nb.Addr.Instance(k)}
	}
	switch {
	case nb.ForEach != nil:
		v.expanded = expandForEach
		val, diags := nb.ForEach.Value(e.evalContext(v, nil))
		if diags.HasErrors() {
			return diags
		}
		bad := func(detail string) hcl.Diagnostics {
			return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid for_each argument", Detail: detail, Subject: nb.ForEach.Range().Ptr()}}
		}
		if !val.IsWhollyKnown() {
			return bad("The for_each value depends on results known only after apply. Use values known at plan time: variables, locals and literals.")
		}
		if val.IsNull() {
			return bad("The for_each value must not be null.")
		}
		ty := val.Type()
		switch {
		case ty.IsMapType() || ty.IsObjectType():
			for it := val.ElementIterator(); it.Next(); {
				k, ev := it.Element()
				v.instances = append(v.instances, &instance{v: v, addr: abs(addrs.StringKey(k.AsString())), eachKey: k, eachValue: ev})
			}
		case ty.IsSetType():
			if !ty.ElementType().Equals(cty.String) {
				conv, err := convert.Convert(val, cty.Set(cty.String))
				if err != nil {
					return bad(fmt.Sprintf("A set used in for_each must contain strings, not %s. Convert each element with format() or use a map.", ty.ElementType().FriendlyName()))
				}
				val = conv
			}
			for it := val.ElementIterator(); it.Next(); {
				_, ev := it.Element()
				if ev.IsNull() {
					return bad("A set used in for_each must not contain null.")
				}
				v.instances = append(v.instances, &instance{v: v, addr: abs(addrs.StringKey(ev.AsString())), eachKey: ev, eachValue: ev})
			}
		default:
			return bad(fmt.Sprintf("for_each needs a map, an object or a set of strings, not %s. Use toset() for a list of strings.", ty.FriendlyName()))
		}
		sort.Slice(v.instances, func(i, j int) bool {
			return v.instances[i].addr.Instance.Key.(addrs.StringKey) < v.instances[j].addr.Instance.Key.(addrs.StringKey)
		})
	case nb.Count != nil:
		v.expanded = expandCount
		val, diags := nb.Count.Value(e.evalContext(v, nil))
		if diags.HasErrors() {
			return diags
		}
		var n int
		if val.IsKnown() && !val.IsNull() {
			if conv, err := convert.Convert(val, cty.Number); err == nil {
				val = conv // "3" from an untyped -var counts as 3
			}
		}
		if !val.IsKnown() || val.IsNull() || val.Type() != cty.Number || gocty.FromCtyValue(val, &n) != nil || n < 0 {
			return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid count argument",
				Detail:  "count must be a whole number of at least 0, known at plan time.",
				Subject: nb.Count.Range().Ptr()}}
		}
		if n > maxCount {
			return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid count argument",
				Detail:  fmt.Sprintf("count is %d; at most %d instances of one block are allowed.", n, maxCount),
				Subject: nb.Count.Range().Ptr()}}
		}
		for i := 0; i < n; i++ {
			v.instances = append(v.instances, &instance{v: v, addr: abs(addrs.IntKey(i)), eachKey: cty.NumberIntVal(int64(i))})
		}
	default:
		v.expanded = expandSingle
		v.instances = []*instance{{v: v, addr: abs(addrs.NoKey)}}
	}
	return nil
}
