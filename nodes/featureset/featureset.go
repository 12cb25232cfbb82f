// Package featureset reads the example stores of `features` blocks as the
// evaluation blocks (probe, episodes, transferability) use them: one
// split's vectors in float64 with their class labels.
package featureset

import (
	"fmt"

	"github.com/gatepipe/gatepipe/formats/examplestore"
	"github.com/gatepipe/gatepipe/formats/safetensors"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/probe"
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// Path returns the store path of the features block referenced by
// attribute attr of v (as in features = features.resnet), with a
// diagnostic when attr is not such a reference.
func Path(v cty.Value, decl nodes.Decl, attr string) (string, hcl.Diagnostics) {
	o := v.GetAttr(attr)
	if o.IsNull() || !o.Type().IsObjectType() || !o.Type().HasAttribute("path") || !o.Type().HasAttribute("dim") {
		return "", hcl.Diagnostics{decl.Errorf(attr, "Invalid reference", "%s must be a features block (as in %s = features.NAME).", attr, attr)}
	}
	return o.GetAttr("path").AsString(), nil
}

// CheckPartial checks, from types alone, that each attribute refers to a
// features block.
func CheckPartial(v cty.Value, decl nodes.Decl, attrs ...string) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, a := range attrs {
		if !v.Type().IsObjectType() || !v.Type().HasAttribute(a) {
			continue
		}
		t := v.GetAttr(a).Type()
		if t == cty.DynamicPseudoType {
			continue
		}
		if !t.IsObjectType() || !t.HasAttribute("path") || !t.HasAttribute("dim") {
			diags = append(diags, decl.Errorf(a, "Invalid reference", "%s must be a features block (as in %s = features.NAME).", a, a))
		}
	}
	return diags
}

// Split is one split of a feature store.
type Split struct {
	probe.Set
	Classes    []string // may be empty
	NumClasses int
}

// Load reads split name of the feature store at path. The store must be a
// classification store of vectors.
func Load(path, name string) (*Split, error) {
	meta, err := examplestore.ReadMeta(path)
	if err != nil {
		return nil, err
	}
	if meta.Task != "classification" {
		return nil, fmt.Errorf("features %s: a %s store; these evaluations need classification", path, meta.Task)
	}
	if len(meta.Shape) != 1 {
		return nil, fmt.Errorf("features %s: examples of shape %v are not vectors (is it a features block's output?)", path, meta.Shape)
	}
	if _, ok := meta.Splits[name]; !ok {
		names := make([]string, 0, len(meta.Splits))
		for k := range meta.Splits {
			names = append(names, k)
		}
		return nil, fmt.Errorf("features %s: no split %q (there are %v)", path, name, names)
	}
	// The split is mapped and converted a chunk at a time: the float64
	// matrix the evaluations take is the one copy held (ImageNet-1k's
	// 1.28 M x 2,048 features: 21 GB).
	s, unmap, err := examplestore.MapSplit(path, name)
	if err != nil {
		return nil, err
	}
	defer unmap()
	d := meta.Shape[0]
	if s.X.NumElements() != s.Len()*d {
		return nil, fmt.Errorf("features %s split %s: %d values for %d examples of %d", path, name, s.X.NumElements(), s.Len(), d)
	}
	out := &Split{Set: probe.Set{X: make([]float64, s.Len()*d), N: s.Len(), D: d, Y: make([]int, s.Len())}, Classes: meta.Classes, NumClasses: max(meta.NumClasses, len(meta.Classes))}
	const chunk = 1 << 20
	esize := s.X.DType.Size()
	for first := 0; first < len(out.X); first += chunk {
		k := min(chunk, len(out.X)-first)
		part := safetensors.Tensor{DType: s.X.DType, Shape: []int{k}, Data: s.X.Data[first*esize : (first+k)*esize]}
		for i, v := range part.Float32s() {
			out.X[first+i] = float64(v)
		}
		safetensors.Release(part.Data)
	}
	for i, y := range s.Y.Int64s() {
		out.Y[i] = int(y)
	}
	if err := probe.CheckLabels(out.Y, out.NumClasses); err != nil {
		return nil, fmt.Errorf("features %s split %s: %w", path, name, err)
	}
	return out, nil
}

// Reader is the node of a block with a features reference: it reads its
// other attributes and keeps the features' path.
type Reader interface {
	nodes.Node
	// ReadAttrs reads every attribute but the features reference (known
	// ones only, so validate checks them before the features exist).
	ReadAttrs(a *Attrs)
	// SetFeatures keeps the features store's path.
	SetFeatures(path string)
}

// Block gives a block kind whose node is *T its CheckPartial and Decode:
// a kind embeds Block[Node, *Node] beside its Name, Version and Spec.
type Block[T any, P interface {
	*T
	Reader
}] struct{}

// CheckPartial checks the features reference before it has a value.
func (Block[T, P]) CheckPartial(v cty.Value, decl nodes.Decl) hcl.Diagnostics {
	_, diags := Decode(v, decl, true, P(new(T)).ReadAttrs)
	return diags
}

// Decode validates the configuration.
func (Block[T, P]) Decode(v cty.Value, decl nodes.Decl) (nodes.Node, hcl.Diagnostics) {
	n := P(new(T))
	path, diags := Decode(v, decl, false, n.ReadAttrs)
	n.SetFeatures(path)
	return n, diags
}

// Decode reads a block whose reference is `features` and whose other
// attributes read reads. With partial (validate and plan, before the
// features exist) it checks the reference's type only and returns no
// path.
func Decode(v cty.Value, decl nodes.Decl, partial bool, read func(*Attrs)) (string, hcl.Diagnostics) {
	a := &Attrs{V: v, Decl: decl}
	read(a)
	if partial {
		return "", append(CheckPartial(v, decl, "features"), a.Diags...)
	}
	path, diags := Path(v, decl, "features")
	return path, append(diags, a.Diags...)
}
