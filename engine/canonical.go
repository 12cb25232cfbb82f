package engine

import (
	"io"
	"strconv"
	"strings"

	"github.com/zclconf/go-cty/cty"
)

// writeCanonical writes an unambiguous encoding of v, including its type,
// for hashing. Object attributes and map keys come out sorted and set
// elements in cty's canonical order, so equal values encode identically.
// rewrite, when non-nil, transforms every string (to relocate cache paths).
// It is the hashed form of a configuration; it is never parsed back.
func writeCanonical(w io.Writer, v cty.Value, rewrite func(string) string) {
	sw, ok := w.(io.StringWriter)
	if !ok {
		sw = stringWriter{w}
	}
	canonical(sw, v, rewrite)
}

type stringWriter struct{ w io.Writer }

func (s stringWriter) WriteString(str string) (int, error) { return s.w.Write([]byte(str)) }

func canonical(w io.StringWriter, v cty.Value, rewrite func(string) string) {
	ty := v.Type()
	if !v.IsKnown() {
		w.WriteString("?")
		return
	}
	if v.IsNull() {
		w.WriteString("null:")
		w.WriteString(ty.GoString())
		w.WriteString(";")
		return
	}
	v, _ = v.Unmark()
	switch {
	case ty == cty.String:
		s := v.AsString()
		if rewrite != nil {
			s = rewrite(s)
		}
		w.WriteString("s")
		w.WriteString(strconv.Itoa(len(s)))
		w.WriteString(":")
		w.WriteString(s)
	case ty == cty.Number:
		w.WriteString("n")
		w.WriteString(v.AsBigFloat().Text('g', -1))
		w.WriteString(";")
	case ty == cty.Bool:
		if v.True() {
			w.WriteString("t")
		} else {
			w.WriteString("f")
		}
	case ty.IsObjectType() || ty.IsMapType():
		if ty.IsObjectType() {
			w.WriteString("O{")
		} else {
			w.WriteString("M{")
		}
		for it := v.ElementIterator(); it.Next(); {
			k, ev := it.Element()
			key := k.AsString()
			w.WriteString(strconv.Itoa(len(key)))
			w.WriteString(":")
			w.WriteString(key)
			canonical(w, ev, rewrite)
		}
		w.WriteString("}")
	case ty.IsListType() || ty.IsTupleType() || ty.IsSetType():
		switch {
		case ty.IsListType():
			w.WriteString("L[")
		case ty.IsTupleType():
			w.WriteString("T[")
		default:
			w.WriteString("S[")
		}
		for it := v.ElementIterator(); it.Next(); {
			_, ev := it.Element()
			canonical(w, ev, rewrite)
			w.WriteString(",")
		}
		w.WriteString("]")
	case ty.IsCapsuleType():
		w.WriteString("capsule:")
		w.WriteString(ty.FriendlyName())
	default:
		w.WriteString("?type:")
		w.WriteString(strings.ReplaceAll(ty.GoString(), "\n", " "))
	}
}
