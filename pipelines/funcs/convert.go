package funcs

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// MaxElementTypes bounds how many different element types a tuple or
// object of more than SmallCollection elements may have when it is
// converted to a list, set or map of any single type (toset, tolist,
// tomap, a variable of type list(any)). cty finds the common type by
// comparing every element's type with every other's, which took 485 s
// for toset of 100,000 strings; gatepipe compares the different types
// only, and refuses a large collection of many different types rather
// than hang on it.
const MaxElementTypes = 64

// SmallCollection is the length up to which a collection of more than
// MaxElementTypes element types is still converted, the slow way.
const SmallCollection = 4096

// Convert is convert.Convert, in time linear in the length of v where
// v is a tuple or an object and want a list, set or map. cty finds the
// common type of the elements by comparing each element's type with
// every other's, and for a list does so even when want names the type;
// Convert finds the common type among v's different element types and
// converts the elements one by one.
func Convert(v cty.Value, want cty.Type) (cty.Value, error) {
	if _, ok := elementTypes(v.Type(), want); !ok || v.IsMarked() {
		return convert.Convert(v, want)
	}
	target := want
	if want.ElementType() == cty.DynamicPseudoType {
		t, err := targetType(v.Type(), want)
		if err != nil {
			return cty.NilVal, err
		}
		target = t
	}
	switch ety := target.ElementType(); {
	case ety == cty.DynamicPseudoType:
		return sameType(v, want), nil
	case ety.HasDynamicTypes() || v.IsNull() || !v.IsKnown():
		// Linear: cty unifies a list's elements only when it has them.
		return convert.Convert(v, target)
	}
	return convertElements(v, target)
}

// convertElements converts each element of v, a known tuple or object,
// to the element type of target, a list, set or map of a type with no
// "any" in it.
func convertElements(v cty.Value, target cty.Type) (cty.Value, error) {
	ety := target.ElementType()
	if target.IsMapType() {
		m := make(map[string]cty.Value, v.LengthInt())
		for it := v.ElementIterator(); it.Next(); {
			k, e := it.Element()
			c, err := convert.Convert(e, ety)
			if err != nil {
				return cty.NilVal, cty.Path{cty.GetAttrStep{Name: k.AsString()}}.NewError(err)
			}
			m[k.AsString()] = c
		}
		if !cty.CanMapVal(m) {
			return convert.Convert(v, target)
		}
		return cty.MapVal(m), nil
	}
	elems := make([]cty.Value, 0, v.LengthInt())
	for it := v.ElementIterator(); it.Next(); {
		i, e := it.Element()
		c, err := convert.Convert(e, ety)
		if err != nil {
			return cty.NilVal, cty.Path{cty.IndexStep{Key: i}}.NewError(err)
		}
		elems = append(elems, c)
	}
	switch {
	case target.IsSetType() && cty.CanSetVal(elems):
		return setVal(elems, target), nil
	case target.IsListType() && cty.CanListVal(elems):
		return cty.ListVal(elems), nil
	}
	return convert.Convert(v, target)
}

// targetType returns the collection type a tuple or object of type got
// converts to when want is a list, set or map of any single type, by
// converting an unknown value of each of got's different element types
// once.
func targetType(got, want cty.Type) (cty.Type, error) {
	etys, _ := elementTypes(got, want)
	distinct := distinctTypes(etys)
	if len(distinct) > MaxElementTypes {
		if len(etys) <= SmallCollection {
			r, err := convert.Convert(cty.UnknownVal(got), want)
			return r.Type(), err
		}
		return cty.NilType, fmt.Errorf("its %d elements have more than %d different types; gatepipe converts a collection of more than %d elements to %s only when its elements have at most %d types", len(etys), MaxElementTypes, SmallCollection, want.FriendlyNameForConstraint(), MaxElementTypes)
	}
	var rep cty.Type
	if got.IsTupleType() {
		rep = cty.Tuple(distinct)
	} else {
		attrs := make(map[string]cty.Type, len(distinct))
		for i, ty := range distinct {
			attrs[strconv.Itoa(i)] = ty
		}
		rep = cty.Object(attrs)
	}
	r, err := convert.Convert(cty.UnknownVal(rep), want)
	if err != nil {
		return cty.NilType, err
	}
	return r.Type(), nil
}

// elementTypes returns the element types of a tuple or object of type
// got that converts to want, a list, set or map.
func elementTypes(got, want cty.Type) ([]cty.Type, bool) {
	if !want.IsCollectionType() {
		return nil, false
	}
	switch {
	case (want.IsListType() || want.IsSetType()) && got.IsTupleType():
		etys := got.TupleElementTypes()
		return etys, len(etys) > 0
	case want.IsMapType() && got.IsObjectType():
		attrs := got.AttributeTypes()
		names := make([]string, 0, len(attrs))
		for name := range attrs {
			names = append(names, name)
		}
		sort.Strings(names)
		etys := make([]cty.Type, len(names))
		for i, name := range names {
			etys[i] = attrs[name]
		}
		return etys, len(etys) > 0
	}
	return nil, false
}

// distinctTypes returns the different types among tys, in order, or
// MaxElementTypes+1 of them when there are more.
func distinctTypes(tys []cty.Type) []cty.Type {
	var distinct []cty.Type
	last := -1
	for _, ty := range tys {
		if last >= 0 && distinct[last].Equals(ty) {
			continue
		}
		last = -1
		for i, d := range distinct {
			if d.Equals(ty) {
				last = i
				break
			}
		}
		if last < 0 {
			distinct = append(distinct, ty)
			if len(distinct) > MaxElementTypes {
				return distinct
			}
			last = len(distinct) - 1
		}
	}
	return distinct
}

// sameType converts v, whose elements' types are all unknown, to want
// as cty does: the elements stay as they are.
func sameType(v cty.Value, want cty.Type) cty.Value {
	switch {
	case v.IsNull():
		return cty.NullVal(want)
	case !v.IsKnown():
		return cty.UnknownVal(want)
	case want.IsMapType():
		return cty.MapVal(v.AsValueMap())
	case want.IsSetType():
		return setVal(v.AsValueSlice(), want)
	default:
		return cty.ListVal(v.AsValueSlice())
	}
}

// setVal is cty.SetVal(elems), or an unknown set of type ty when an
// element is unknown: cty compares an unknown element with every other
// one (unknown values never equal each other), so a set of many unknown
// elements takes quadratic time, and the elements a set of unknowns
// holds are unknown anyway, since unknown elements may turn out equal.
func setVal(elems []cty.Value, ty cty.Type) cty.Value {
	for _, e := range elems {
		if !e.IsKnown() {
			return cty.UnknownVal(ty)
		}
	}
	return cty.SetVal(elems)
}

// toCollectionFunc is stdlib.MakeToFunc(want) for a list, set or map of
// any single type (tolist, toset, tomap), converting a tuple or an
// object with Convert.
func toCollectionFunc(want cty.Type) function.Function {
	generic := stdlib.MakeToFunc(want)
	argErr := func(got cty.Type, err error) error {
		return function.NewArgErrorf(0, "cannot convert %s to %s: %s", got.FriendlyName(), want.FriendlyNameForConstraint(), err)
	}
	return function.New(&function.Spec{
		Description: generic.Description(),
		Params:      generic.Params(),
		Type: func(args []cty.Value) (cty.Type, error) {
			got := args[0].Type()
			if _, ok := elementTypes(got, want); !ok {
				return generic.ReturnTypeForValues(args)
			}
			if _, err := targetType(got, want); err != nil {
				return cty.NilType, argErr(got, err)
			}
			return want, nil
		},
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			if _, ok := elementTypes(args[0].Type(), want); !ok {
				return generic.Call(args)
			}
			v, err := Convert(args[0], want)
			if err != nil {
				return cty.NilVal, argErr(args[0].Type(), err)
			}
			return v, nil
		},
	})
}
