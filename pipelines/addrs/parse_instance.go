package addrs

import (
	"fmt"
	"math/big"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// ParseInstance parses an absolute instance address such as
// module.tier.train.x["cnn"] or command.prep[2]. A block address without a
// key parses to an instance with NoKey.
func ParseInstance(s string) (AbsInstance, error) {
	t, diags := hclsyntax.ParseTraversalAbs([]byte(s), "address", hcl.InitialPos)
	if diags.HasErrors() {
		return AbsInstance{}, fmt.Errorf("invalid address %q: %s", s, diags.Error())
	}
	var mod ModulePath
	for len(t) >= 2 && t.RootName() == "module" {
		call, ok := t[1].(hcl.TraverseAttr)
		if !ok {
			return AbsInstance{}, fmt.Errorf("invalid address %q: module name must follow \"module.\"", s)
		}
		mod = mod.Child(call.Name)
		rest := t[2:]
		if len(rest) == 0 {
			return AbsInstance{}, fmt.Errorf("invalid address %q: a module is not a node; name a block inside it", s)
		}
		first, ok := rest[0].(hcl.TraverseAttr)
		if !ok {
			return AbsInstance{}, fmt.Errorf("invalid address %q", s)
		}
		t = append(hcl.Traversal{hcl.TraverseRoot{Name: first.Name}}, rest[1:]...)
	}
	if len(t) < 2 || len(t) > 3 {
		return AbsInstance{}, fmt.Errorf("invalid address %q: want KIND.NAME or KIND.NAME[KEY]", s)
	}
	name, ok := t[1].(hcl.TraverseAttr)
	if !ok {
		return AbsInstance{}, fmt.Errorf("invalid address %q: want KIND.NAME", s)
	}
	inst := Instance{Block: Block{Kind: t.RootName(), Name: name.Name}}
	if len(t) == 3 {
		idx, ok := t[2].(hcl.TraverseIndex)
		if !ok {
			return AbsInstance{}, fmt.Errorf("invalid address %q: want an index like [\"key\"] or [0]", s)
		}
		k, err := KeyFromValue(idx.Key)
		if err != nil {
			return AbsInstance{}, fmt.Errorf("invalid address %q: %w", s, err)
		}
		inst.Key = k
	}
	return AbsInstance{Module: mod, Instance: inst}, nil
}

// KeyFromValue converts a cty string or whole number into an InstanceKey.
func KeyFromValue(v cty.Value) (InstanceKey, error) {
	if v.IsNull() || !v.IsKnown() {
		return nil, fmt.Errorf("instance key must be a known string or number")
	}
	switch v.Type() {
	case cty.String:
		return StringKey(v.AsString()), nil
	case cty.Number:
		bf := v.AsBigFloat()
		i, acc := bf.Int64()
		if acc != big.Exact || i < 0 {
			return nil, fmt.Errorf("instance index must be a non-negative whole number")
		}
		return IntKey(int(i)), nil
	}
	return nil, fmt.Errorf("instance key must be a string or a number, not %s", v.Type().FriendlyName())
}
