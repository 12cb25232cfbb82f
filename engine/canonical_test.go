package engine

import (
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

func canon(v cty.Value) string {
	var sb strings.Builder
	writeCanonical(&sb, v, nil)
	return sb.String()
}

func TestCanonicalDistinguishesAndIsStable(t *testing.T) {
	vals := map[string]cty.Value{
		"string one":  cty.StringVal("1"),
		"number one":  cty.NumberIntVal(1),
		"true":        cty.True,
		"list":        cty.ListVal([]cty.Value{cty.StringVal("a"), cty.StringVal("b")}),
		"set":         cty.SetVal([]cty.Value{cty.StringVal("a"), cty.StringVal("b")}),
		"tuple":       cty.TupleVal([]cty.Value{cty.StringVal("a"), cty.StringVal("b")}),
		"map":         cty.MapVal(map[string]cty.Value{"a": cty.StringVal("b")}),
		"object":      cty.ObjectVal(map[string]cty.Value{"a": cty.StringVal("b")}),
		"null string": cty.NullVal(cty.String),
		"null number": cty.NullVal(cty.Number),
		"split key":   cty.MapVal(map[string]cty.Value{"ab": cty.StringVal("")}),
		"empty list":  cty.ListValEmpty(cty.String),
	}
	seen := map[string]string{}
	for name, v := range vals {
		c := canon(v)
		if prev, dup := seen[c]; dup {
			t.Errorf("%s and %s encode the same: %q", name, prev, c)
		}
		seen[c] = name
		if canon(v) != c {
			t.Errorf("%s encodes differently twice", name)
		}
	}
	a := cty.ObjectVal(map[string]cty.Value{"x": cty.NumberIntVal(1), "y": cty.StringVal("z")})
	b := cty.ObjectVal(map[string]cty.Value{"y": cty.StringVal("z"), "x": cty.NumberIntVal(1)})
	if canon(a) != canon(b) {
		t.Error("attribute order leaks into the encoding")
	}
	var sb strings.Builder
	writeCanonical(&sb, cty.StringVal("/cache/objects/x"), func(s string) string { return strings.ReplaceAll(s, "/cache", "@c@") })
	if !strings.Contains(sb.String(), "@c@/objects/x") {
		t.Errorf("rewrite not applied: %q", sb.String())
	}
}
