// Package specs implements the configuration blocks that describe an
// experiment — encoder, adapter, recipe, benchmark — whose values a train
// block combines. Each validates its attributes, applies the defaults and
// returns them as its value; they run instantly and are cached like any
// node. (They share one package because each is a schema and a check.)
package specs

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/pipelines/addrs"
	"github.com/gatepipe/gatepipe/sources"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// kind is a configuration block: spec, defaults and a check.
type kind struct {
	name     string
	attrs    map[string]attr
	validate func(v map[string]cty.Value, decl nodes.Decl) hcl.Diagnostics
}

type attr struct {
	ty  cty.Type
	def cty.Value // cty.NilVal: required
}

func (k kind) Name() string    { return k.name }
func (k kind) Version() string { return "3" }

func (k kind) Spec() hcldec.Spec {
	s := hcldec.ObjectSpec{}
	for n, a := range k.attrs {
		s[n] = &hcldec.AttrSpec{Name: n, Type: a.ty, Required: a.def == cty.NilVal}
	}
	return s
}

func (k kind) OutputType() cty.Type {
	t := map[string]cty.Type{"name": cty.String}
	for n, a := range k.attrs {
		t[n] = a.ty
	}
	return cty.Object(t)
}

type node struct{ value cty.Value }

// InstanceName is a block instance's name as results and reports show it:
// the block's name, with its for_each or count key when it has one
// (pretrained[cnn], layer[2]), so that the instances of one block are
// told apart.
func InstanceName(decl nodes.Decl) string {
	name := decl.Addr.Instance.Block.Name
	switch k := decl.Addr.Instance.Key.(type) {
	case addrs.StringKey:
		return name + "[" + string(k) + "]"
	case addrs.IntKey:
		return fmt.Sprintf("%s[%d]", name, int(k))
	}
	return name
}

func (k kind) Decode(v cty.Value, decl nodes.Decl) (nodes.Node, hcl.Diagnostics) {
	vals := map[string]cty.Value{"name": cty.StringVal(InstanceName(decl))}
	for n, a := range k.attrs {
		val := v.GetAttr(n)
		if val.IsNull() {
			val = a.def
		}
		conv, err := convert.Convert(val, a.ty)
		if err != nil {
			return nil, hcl.Diagnostics{decl.Errorf(n, "Invalid value", "%s: %s.", n, err)}
		}
		vals[n] = conv
	}
	if diags := checkWhole(vals, decl, wholeAttrs[k.name]); diags.HasErrors() {
		return nil, diags
	}
	if diags := k.validate(vals, decl); diags.HasErrors() {
		return nil, diags
	}
	return node{cty.ObjectVal(vals)}, nil
}

// PlannedValue is the block's value before it runs: the decoded value
// when its configuration is wholly known (what Run returns), else its
// attributes as far as they are known, defaults filled in.
func (k kind) PlannedValue(v cty.Value, n nodes.Node, decl nodes.Decl) cty.Value {
	if nd, ok := n.(node); ok {
		return nd.value
	}
	if v.IsNull() || !v.IsKnown() {
		return cty.NilVal
	}
	vals := map[string]cty.Value{"name": cty.StringVal(InstanceName(decl))}
	for name, a := range k.attrs {
		val := v.GetAttr(name)
		if val.IsKnown() && val.IsNull() && a.def != cty.NilVal {
			val = a.def
		}
		conv, err := convert.Convert(val, a.ty)
		if err != nil {
			conv = cty.UnknownVal(a.ty)
		}
		vals[name] = conv
	}
	return cty.ObjectVal(vals)
}

// Fingerprint hashes what the configuration does not show: the code of a
// researcher's own encoder (its file and inputs, code_sha256, taken when
// the block was decoded), so that an edited file re-runs the encoder block
// and, through its value, every block that uses it.
func (n node) Fingerprint(_ context.Context, w io.Writer) error {
	if !n.value.Type().HasAttribute("code_sha256") {
		return nil
	}
	if c := n.value.GetAttr("code_sha256"); c.IsKnown() && !c.IsNull() && c.AsString() != "" {
		_, err := fmt.Fprintf(w, "code %s\n", c.AsString())
		return err
	}
	return nil
}

// Downloads is the Hub model or torchvision file an encoder's weights
// name: the encoder block declares it as a dataset declares its sources,
// so that plan, fetch, mirror, lock and the -offline check see it while
// the blocks that load the weights still wait on their data.
func (n node) Downloads() []sources.Ref {
	if !n.value.Type().HasAttribute("weights") {
		return nil
	}
	w := n.value.GetAttr("weights")
	if !w.IsKnown() || w.IsNull() || w.Type() != cty.String {
		return nil
	}
	return Weights(w.AsString()).Downloads()
}

func (n node) Run(context.Context, *nodes.Env) (cty.Value, error) { return n.value, nil }

func num(v float64) cty.Value { return cty.NumberFloatVal(v) }
func list(xs ...int) cty.Value {
	if len(xs) == 0 {
		return cty.ListValEmpty(cty.Number)
	}
	out := make([]cty.Value, len(xs))
	for i, x := range xs {
		out[i] = cty.NumberIntVal(int64(x))
	}
	return cty.ListVal(out)
}

// floatList is a list of numbers (an empty list when there are none).
func floatList(xs []float32) cty.Value {
	if len(xs) == 0 {
		return cty.ListValEmpty(cty.Number)
	}
	out := make([]cty.Value, len(xs))
	for i, x := range xs {
		out[i] = cty.NumberFloatVal(float64(x))
	}
	return cty.ListVal(out)
}

func oneOf(decl nodes.Decl, attrName, v string, allowed ...string) hcl.Diagnostics {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return hcl.Diagnostics{decl.Errorf(attrName, "Unsupported value", "%s %q is not supported; use %s.", attrName, v, strings.Join(allowed, " or "))}
}

// wholeAttrs are the attributes, by block kind, that count something and
// so must be whole numbers: 2.5 iterations is a mistake, not 2.
var wholeAttrs = map[string][]string{
	"encoder": {"depth", "dim", "heads", "mlp_ratio", "patch", "blocks", "channels", "hidden", "input_shape", "groups", "width_per_group", "version"},
	"adapter": {"dim", "heads", "layers", "queries", "shots", "ways", "blocks", "width", "projection"},
	"recipe":  {"batch_size", "iterations", "plateau_patience", "top_k", "validate_every", "seed", "seeds", "checkpoint_every"},
}

// checkWhole refuses fractional values (or list elements) of names.
func checkWhole(vals map[string]cty.Value, decl nodes.Decl, names []string) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, n := range names {
		v, ok := vals[n]
		if !ok || v.IsNull() || !v.IsKnown() {
			continue
		}
		elems := []cty.Value{v}
		if v.Type().IsListType() {
			elems = v.AsValueSlice()
		}
		for _, e := range elems {
			if e.IsNull() || !e.IsKnown() || e.Type() != cty.Number {
				continue
			}
			if !e.AsBigFloat().IsInt() {
				f, _ := e.AsBigFloat().Float64()
				diags = append(diags, decl.Errorf(n, "Invalid value", "%s must be a whole number, not %g.", n, f))
				break
			}
		}
	}
	return diags
}

func positive(decl nodes.Decl, vals map[string]cty.Value, names ...string) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, n := range names {
		if vals[n].IsNull() {
			continue // a default chosen later
		}
		f, _ := vals[n].AsBigFloat().Float64()
		if f <= 0 {
			diags = append(diags, decl.Errorf(n, "Invalid value", "%s must be positive, not %g.", n, f))
		}
	}
	return diags
}

// Adapter is the adapter block: the task head put on the encoder.
func Adapter() nodes.Kind {
	return kind{name: "adapter", attrs: map[string]attr{
		"task": {ty: cty.String, def: cty.StringVal("classification")},
		// The transformer of the video head (temporal; the paper's has 4
		// layers) and of the relational head.
		"layers": {ty: cty.Number, def: num(4)},
		"dim":    {ty: cty.Number, def: num(64)},
		// heads: 4 for the compact heads; GATE's adapters take the table's.
		"heads": {ty: cty.Number, def: cty.NullVal(cty.Number)},
		// Few-shot episodes (training; evaluation adds 1-shot episodes).
		"ways":    {ty: cty.Number, def: num(5)},
		"shots":   {ty: cty.Number, def: num(5)},
		"queries": {ty: cty.Number, def: num(5)},
		// protocol = "table3" (GATE's code, its defects included) or
		// "gate" (its design, mended): GATE's own task adapter for the
		// task and its recipe (stdlib/data/gate_protocol.json, SPEC §5.9)
		// at scale's sizes, on the torch runtime; null: gatepipe's compact
		// heads above.
		"protocol": {ty: cty.String, def: cty.NullVal(cty.String)},
		"scale":    {ty: cty.String, def: cty.StringVal("full")},
		// GATE's adapter's sizes where they differ from the table's.
		"blocks":     {ty: cty.Number, def: cty.NullVal(cty.Number)},
		"width":      {ty: cty.Number, def: cty.NullVal(cty.Number)},
		"projection": {ty: cty.Number, def: cty.NullVal(cty.Number)},
	}, validate: func(v map[string]cty.Value, decl nodes.Decl) hcl.Diagnostics {
		diags := oneOf(decl, "task", v["task"].AsString(), "classification", "multilabel", "regression", "segmentation", "video", "video_regression", "relational", "retrieval", "fewshot")
		diags = append(diags, positive(decl, v, "layers", "dim", "heads", "ways", "shots", "queries", "blocks", "width", "projection")...)
		if p := v["protocol"]; !p.IsNull() {
			diags = append(diags, oneOf(decl, "protocol", p.AsString(), "table3", "gate")...)
			if t := v["task"].AsString(); t == "regression" {
				diags = append(diags, decl.Errorf("protocol", "Unsupported value", "GATE has no adapter for task %q (its regression benchmark, iWildCam, is task video_regression); leave protocol unset for gatepipe's head.", t))
			}
		}
		diags = append(diags, oneOf(decl, "scale", v["scale"].AsString(), "full", "cpu", "test", "smoke")...)
		d, _ := v["dim"].AsBigFloat().Int64()
		h := int64(4)
		if !v["heads"].IsNull() {
			h, _ = v["heads"].AsBigFloat().Int64()
		}
		if h > 0 && d%h != 0 {
			diags = append(diags, decl.Errorf("heads", "Invalid value", "dim (%d) must be a multiple of heads (%d).", d, h))
		}
		return diags
	}}
}

// Recipe is the recipe block: optimiser, schedule and checkpointing.
func Recipe() nodes.Kind {
	return kind{name: "recipe", attrs: map[string]attr{
		"optimizer": {ty: cty.String, def: cty.StringVal("adamw")},
		"mode":      {ty: cty.String, def: cty.StringVal("finetune")},
		// lr defaults per encoder family and task (train.DefaultLR).
		"lr": {ty: cty.Number, def: cty.NullVal(cty.Number)},
		// weight_decay: 0.01, or GATE's (0) under an adapter's protocol.
		"weight_decay":   {ty: cty.Number, def: cty.NullVal(cty.Number)},
		"batch_size":     {ty: cty.Number, def: num(128)},
		"iterations":     {ty: cty.Number, def: num(1000)},
		"validate_every": {ty: cty.Number, def: num(200)},
		"top_k":          {ty: cty.Number, def: num(3)},
		"seed":           {ty: cty.Number, def: num(0)},
		// seeds: train once per seed (each cached on its own) and report
		// mean ± std over them; replaces seed when not empty.
		"seeds":             {ty: cty.List(cty.Number), def: cty.ListValEmpty(cty.Number)},
		"plateau_factor":    {ty: cty.Number, def: num(0.5)},
		"plateau_patience":  {ty: cty.Number, def: num(3)},
		"plateau_threshold": {ty: cty.Number, def: num(1e-4)},
		// checkpoint_every: iterations between resumable checkpoints; null
		// (the default) checkpoints at validations at most once a minute,
		// 0 never. Like every recipe attribute it is part of the
		// configuration: changing it re-runs the training.
		"checkpoint_every": {ty: cty.Number, def: cty.NullVal(cty.Number)},
	}, validate: func(v map[string]cty.Value, decl nodes.Decl) hcl.Diagnostics {
		diags := oneOf(decl, "optimizer", v["optimizer"].AsString(), "adamw")
		diags = append(diags, checkSeeds(decl, v["seeds"])...)
		diags = append(diags, oneOf(decl, "mode", v["mode"].AsString(), "finetune", "linear_probe")...)
		if c := v["checkpoint_every"]; !c.IsNull() && c.LessThan(cty.Zero).True() {
			diags = append(diags, decl.Errorf("checkpoint_every", "Invalid value", "checkpoint_every must be 0 (never) or a number of iterations, not %s.", c.AsBigFloat().String()))
		}
		return append(diags, positive(decl, v, "lr", "batch_size", "iterations", "validate_every", "top_k")...)
	}}
}

// MaxSeeds bounds a recipe's seeds: each is a whole training.
const MaxSeeds = 100

// checkSeeds refuses negative, repeated or too many seeds.
func checkSeeds(decl nodes.Decl, seeds cty.Value) hcl.Diagnostics {
	if seeds.IsNull() {
		return nil
	}
	list := seeds.AsValueSlice()
	if len(list) > MaxSeeds {
		return hcl.Diagnostics{decl.Errorf("seeds", "Too many seeds", "seeds lists %d seeds; at most %d, each a whole training.", len(list), MaxSeeds)}
	}
	seen := map[string]bool{}
	for _, s := range list {
		if s.IsNull() {
			return hcl.Diagnostics{decl.Errorf("seeds", "Invalid value", "seeds must not contain null.")}
		}
		if s.LessThan(cty.Zero).True() {
			return hcl.Diagnostics{decl.Errorf("seeds", "Invalid value", "seeds must be whole numbers ≥ 0, not %s.", s.AsBigFloat().String())}
		}
		k := s.AsBigFloat().String()
		if seen[k] {
			return hcl.Diagnostics{decl.Errorf("seeds", "Repeated seed", "seed %s appears twice in seeds; a repeated seed trains the same run again.", k)}
		}
		seen[k] = true
	}
	return nil
}

// UserCategory is the report section of a benchmark that names none.
const UserCategory = "User benchmarks"

// Benchmark is the benchmark block: a dataset, a task and its metrics.
func Benchmark() nodes.Kind {
	return kind{name: "benchmark", attrs: map[string]attr{
		"dataset": {ty: cty.String},
		"task":    {ty: cty.String, def: cty.StringVal("classification")},
		// category: the report's section. A benchmark outside GATE's 31
		// keeps to its own unless the user files it under a GATE category,
		// where the report marks it a stand-in.
		"category": {ty: cty.String, def: cty.StringVal(UserCategory)},
		"id":       {ty: cty.String, def: cty.StringVal("")},
	}, validate: func(v map[string]cty.Value, decl nodes.Decl) hcl.Diagnostics {
		return oneOf(decl, "task", v["task"].AsString(), "classification", "multilabel", "regression", "segmentation")
	}}
}
