package featureset

import (
	"encoding/json"
	"math/big"
	"os"

	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/pipelines/addrs"
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// Attrs reads optional attributes of an evaluated block configuration,
// collecting a diagnostic per invalid value.
type Attrs struct {
	V     cty.Value
	Decl  nodes.Decl
	Diags hcl.Diagnostics
}

func (a *Attrs) get(name string) (cty.Value, bool) {
	if !a.V.Type().IsObjectType() || !a.V.Type().HasAttribute(name) {
		return cty.NilVal, false
	}
	v := a.V.GetAttr(name)
	return v, !v.IsNull() && v.IsKnown()
}

func (a *Attrs) whole(name string, v cty.Value, lo int) (int, bool) {
	bf := v.AsBigFloat()
	if !bf.IsInt() || bf.Cmp(big.NewFloat(float64(lo))) < 0 || bf.Cmp(big.NewFloat(1e9)) > 0 {
		a.Diags = append(a.Diags, a.Decl.Errorf(name, "Invalid "+name, "%s must be whole numbers of at least %d.", name, lo))
		return 0, false
	}
	i, _ := bf.Int64()
	return int(i), true
}

// Int returns a whole-number attribute of at least lo, or def.
func (a *Attrs) Int(name string, def, lo int) int {
	v, ok := a.get(name)
	if !ok {
		return def
	}
	if i, ok := a.whole(name, v, lo); ok {
		return i
	}
	return def
}

// Ints returns a list of whole numbers of at least lo, or def.
func (a *Attrs) Ints(name string, def []int, lo int) []int {
	v, ok := a.get(name)
	if !ok {
		return def
	}
	var out []int
	for _, e := range v.AsValueSlice() {
		if i, ok := a.whole(name, e, lo); ok {
			out = append(out, i)
		}
	}
	if len(out) == 0 {
		a.Diags = append(a.Diags, a.Decl.Errorf(name, "Invalid "+name, "%s must list at least one value.", name))
		return def
	}
	return out
}

// Float returns a number attribute, or def.
func (a *Attrs) Float(name string, def float64) float64 {
	v, ok := a.get(name)
	if !ok {
		return def
	}
	f, _ := v.AsBigFloat().Float64()
	return f
}

// Floats returns a list of positive numbers, or def.
func (a *Attrs) Floats(name string, def []float64) []float64 {
	v, ok := a.get(name)
	if !ok {
		return def
	}
	var out []float64
	for _, e := range v.AsValueSlice() {
		f, _ := e.AsBigFloat().Float64()
		if f <= 0 {
			a.Diags = append(a.Diags, a.Decl.Errorf(name, "Invalid "+name, "%s must be positive numbers.", name))
			return def
		}
		out = append(out, f)
	}
	if len(out) == 0 {
		a.Diags = append(a.Diags, a.Decl.Errorf(name, "Invalid "+name, "%s must list at least one value.", name))
		return def
	}
	return out
}

// Str returns a string attribute, or def; when one of is given the value
// must be one of them.
func (a *Attrs) Str(name, def string, oneOf ...string) string {
	v, ok := a.get(name)
	if !ok {
		return def
	}
	s := v.AsString()
	if len(oneOf) > 0 {
		for _, o := range oneOf {
			if s == o {
				return s
			}
		}
		a.Diags = append(a.Diags, a.Decl.Errorf(name, "Invalid "+name, "%s must be one of %q, not %q.", name, oneOf, s))
		return def
	}
	return s
}

// Strs returns a list of strings, each one of oneOf when given, or def.
func (a *Attrs) Strs(name string, def []string, oneOf ...string) []string {
	v, ok := a.get(name)
	if !ok {
		return def
	}
	var out []string
	for _, e := range v.AsValueSlice() {
		s := e.AsString()
		valid := len(oneOf) == 0
		for _, o := range oneOf {
			valid = valid || s == o
		}
		if !valid {
			a.Diags = append(a.Diags, a.Decl.Errorf(name, "Invalid "+name, "%s must be among %q, not %q.", name, oneOf, s))
			continue
		}
		out = append(out, s)
	}
	return out
}

// Bool returns a bool attribute, or def.
func (a *Attrs) Bool(name string, def bool) bool {
	v, ok := a.get(name)
	if !ok {
		return def
	}
	return v.True()
}

// ModelName is the default label of an evaluated model: the instance's
// for_each key when it has a string one, else the block's name.
func ModelName(decl nodes.Decl) string {
	if k, ok := decl.Addr.Instance.Key.(addrs.StringKey); ok {
		return string(k)
	}
	return decl.Addr.Instance.Block.Name
}

// WriteJSON writes v as indented JSON.
func WriteJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}
