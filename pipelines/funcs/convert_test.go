package funcs

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// TestToCollectionAsCty: toset, tolist and tomap give what cty's own
// conversions give, errors included.
func TestToCollectionAsCty(t *testing.T) {
	s, n, b := cty.StringVal, cty.NumberIntVal, cty.BoolVal
	tup := cty.TupleVal
	objOf := func(vals ...cty.Value) cty.Value {
		m := map[string]cty.Value{}
		for i, v := range vals {
			m[fmt.Sprintf("k%d", i)] = v
		}
		return cty.ObjectVal(m)
	}
	var mixed []cty.Value // more than MaxElementTypes types, a small collection
	for i := range MaxElementTypes + 2 {
		mixed = append(mixed, tup(repeat(n(1), i)))
	}
	args := map[string]cty.Value{
		"strings":             tup([]cty.Value{s("b"), s("a"), s("b")}),
		"numbers and strings": tup([]cty.Value{n(1), s("a")}),
		"numbers and bools":   tup([]cty.Value{n(1), b(true)}),
		"empty":               cty.EmptyTupleVal,
		"unknown element":     tup([]cty.Value{cty.DynamicVal, s("a")}),
		"unknown elements":    tup([]cty.Value{cty.DynamicVal, cty.DynamicVal}),
		"nulls":               tup([]cty.Value{cty.NullVal(cty.DynamicPseudoType), cty.NullVal(cty.DynamicPseudoType)}),
		"unknown tuple":       cty.UnknownVal(cty.Tuple([]cty.Type{cty.String, cty.Number})),
		"null tuple":          cty.NullVal(cty.Tuple([]cty.Type{cty.String})),
		"nested":              tup([]cty.Value{tup([]cty.Value{n(1)}), tup([]cty.Value{n(2), n(3)})}),
		"objects":             tup([]cty.Value{objOf(s("a")), objOf(s("b"))}),
		"many types":          tup(mixed),
		"list":                cty.ListVal([]cty.Value{s("a")}),
		"object":              objOf(s("a"), n(1)),
		"object of objects":   objOf(objOf(s("a")), objOf(n(1), s("b"))),
		"string":              s("a"),
	}
	for _, want := range []cty.Type{cty.Set(cty.DynamicPseudoType), cty.List(cty.DynamicPseudoType), cty.Map(cty.DynamicPseudoType)} {
		ours, theirs := toCollectionFunc(want), stdlib.MakeToFunc(want)
		for name, arg := range args {
			t.Run(want.FriendlyNameForConstraint()+"/"+name, func(t *testing.T) {
				got, err := ours.Call([]cty.Value{arg})
				exp, expErr := theirs.Call([]cty.Value{arg})
				if (err != nil) != (expErr != nil) {
					t.Fatalf("error %v, cty's %v", err, expErr)
				}
				// A set with unknown elements is unknown as a whole here
				// (see setVal).
				unknownSet := want.IsSetType() && !got.IsKnown() && !exp.IsWhollyKnown() && exp.Type().TestConformance(got.Type()) == nil
				if err == nil && !got.RawEquals(exp) && !unknownSet {
					t.Fatalf("got %#v, cty's %#v", got, exp)
				}
				gotTy, err := ours.ReturnTypeForValues([]cty.Value{arg})
				expTy, expErr := theirs.ReturnTypeForValues([]cty.Value{arg})
				if (err != nil) != (expErr != nil) || err == nil && !gotTy.Equals(expTy) {
					t.Fatalf("type %#v (%v), cty's %#v (%v)", gotTy, err, expTy, expErr)
				}
			})
		}
	}
}

// TestConvertAsCty: Convert to a list, set or map of a named type (a
// variable's type) gives what convert.Convert gives.
func TestConvertAsCty(t *testing.T) {
	s, n := cty.StringVal, cty.NumberIntVal
	obj := cty.ObjectVal(map[string]cty.Value{"a": n(1), "b": s("2")})
	args := map[string]cty.Value{
		"numbers and strings": cty.TupleVal([]cty.Value{n(1), s("2")}),
		"not numbers":         cty.TupleVal([]cty.Value{n(1), s("x")}),
		"unknown":             cty.UnknownVal(cty.Tuple([]cty.Type{cty.String})),
		"null":                cty.NullVal(cty.Tuple([]cty.Type{cty.String})),
		"unknown element":     cty.TupleVal([]cty.Value{cty.DynamicVal, s("2")}),
		"nested":              cty.TupleVal([]cty.Value{cty.TupleVal([]cty.Value{n(1)}), cty.EmptyTupleVal}),
		"object":              obj,
	}
	types := []cty.Type{cty.List(cty.String), cty.Set(cty.Number), cty.Map(cty.String), cty.List(cty.List(cty.Number)),
		cty.List(cty.List(cty.DynamicPseudoType)), cty.Map(cty.Number)}
	for _, want := range types {
		for name, arg := range args {
			t.Run(want.FriendlyName()+"/"+name, func(t *testing.T) {
				got, err := Convert(arg, want)
				exp, expErr := convert.Convert(arg, want)
				if (err != nil) != (expErr != nil) {
					t.Fatalf("error %v, cty's %v", err, expErr)
				}
				unknownSet := want.IsSetType() && !got.IsKnown() && !exp.IsWhollyKnown() && exp.Type().Equals(got.Type())
				if err == nil && !got.RawEquals(exp) && !unknownSet {
					t.Fatalf("got %#v, cty's %#v", got, exp)
				}
			})
		}
	}
}

func repeat(v cty.Value, n int) []cty.Value {
	out := make([]cty.Value, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// TestToCollectionIsLinear: toset, tolist and tomap of 50,000 strings
// take well under a second; cty's own conversions compare every
// element's type with every other's (30 s for toset, 485 s at 100,000).
func TestToCollectionIsLinear(t *testing.T) {
	const n = 50_000
	elems := make([]cty.Value, n)
	attrs := make(map[string]cty.Value, n)
	for i := range elems {
		elems[i] = cty.StringVal(fmt.Sprintf("k%d", i))
		attrs[fmt.Sprintf("k%d", i)] = elems[i]
	}
	tests := []struct {
		name string
		want cty.Type
		arg  cty.Value
	}{
		{"toset", cty.Set(cty.DynamicPseudoType), cty.TupleVal(elems)},
		{"tolist", cty.List(cty.DynamicPseudoType), cty.TupleVal(elems)},
		{"tomap", cty.Map(cty.DynamicPseudoType), cty.ObjectVal(attrs)},
		{"unknown elements", cty.Set(cty.DynamicPseudoType), cty.TupleVal(repeat(cty.DynamicVal, n))},
		{"unknown strings", cty.Set(cty.DynamicPseudoType), cty.TupleVal(append(repeat(cty.UnknownVal(cty.String), n-1), cty.StringVal("a")))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() {
				v, err := toCollectionFunc(tc.want).Call([]cty.Value{tc.arg})
				if err == nil && v.IsKnown() && v.LengthInt() != n {
					err = fmt.Errorf("%d elements", v.LengthInt())
				}
				done <- err
			}()
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("%s of %d strings took more than 5 s", tc.name, n)
			}
		})
	}
}

// TestConvertRefusesManyTypesAtLength: a large collection of more than
// MaxElementTypes element types is an error that says so, not minutes.
func TestConvertRefusesManyTypesAtLength(t *testing.T) {
	elems := make([]cty.Value, SmallCollection+1)
	for i := range elems {
		elems[i] = cty.TupleVal(repeat(cty.True, i%(MaxElementTypes+1)))
	}
	_, err := Convert(cty.TupleVal(elems), cty.List(cty.DynamicPseudoType))
	if err == nil || !strings.Contains(err.Error(), "different types") {
		t.Fatalf("err %v", err)
	}
}
