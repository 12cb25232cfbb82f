package specs

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/gatepipe/gatepipe/internal/imageops"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/train"
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/gocty"
)

// encoderOptions are the architecture options beside the sizes, with
// their defaults. With a preset, only a value other than the default
// overrides the preset's.
var encoderOptions = map[string]cty.Value{
	"stem":            cty.StringVal("cifar"),
	"block":           cty.StringVal("basic"),
	"groups":          num(1),
	"width_per_group": num(64),
	"version":         num(1),
	"act":             cty.StringVal(train.GELUErf),
	"ln_eps":          num(1e-6),
	"norm_pre":        cty.False,
	"patch_bias":      cty.True,
	"layer_scale":     cty.False,
	"no_embed_class":  cty.False,
	"class_token":     cty.True,
	"pool":            cty.StringVal("token"),
	"weights_format":  cty.StringVal(""),
}

// preprocessType is the preprocess attribute once its defaults are in.
var preprocessType = cty.Object(map[string]cty.Type{
	"size": cty.List(cty.Number), "resize_to": cty.Number, "crop_pct": cty.Number, "interpolation": cty.String,
	"mean": cty.List(cty.Number), "std": cty.List(cty.Number), "channels": cty.Number,
})

// preprocessPartial is what a user writes: size one number or [H, W],
// the rest optional.
var preprocessPartial = func() cty.Type {
	attrs := preprocessType.AttributeTypes()
	attrs["size"] = cty.DynamicPseudoType
	return cty.ObjectWithOptionalAttrs(attrs, []string{"resize_to", "crop_pct", "interpolation", "mean", "std", "channels"})
}()

// Encoder is the encoder block: a built-in architecture (or a preset of
// one), its sizes and options, optionally its weights (a safetensors
// file) and the preprocessing its weights expect.
func Encoder() nodes.Kind {
	attrs := map[string]attr{
		"arch":     {ty: cty.String, def: cty.StringVal("")},
		"preset":   {ty: cty.String, def: cty.StringVal("")},
		"channels": {ty: cty.List(cty.Number), def: list(32, 64)},
		// hidden defaults to [128] for mlp and convnet, [] otherwise.
		"hidden":    {ty: cty.List(cty.Number), def: cty.NullVal(cty.List(cty.Number))},
		"blocks":    {ty: cty.List(cty.Number), def: list(2, 2)},
		"patch":     {ty: cty.Number, def: num(4)},
		"dim":       {ty: cty.Number, def: num(64)},
		"depth":     {ty: cty.Number, def: num(4)},
		"heads":     {ty: cty.Number, def: num(4)},
		"mlp_ratio": {ty: cty.Number, def: num(4)},
		"weights":   {ty: cty.String, def: cty.StringVal("")},
		// The example shape the weights expect; data of another shape
		// goes through the adapter's stem (a modality shift).
		"input_shape": {ty: cty.List(cty.Number), def: list()},
		// The evaluation transform the weights expect (resize, crop,
		// normalise); read from config.json beside the weights when absent.
		"preprocess": {ty: cty.DynamicPseudoType, def: cty.NullVal(cty.DynamicPseudoType)},
		// A researcher's own encoder (arch = "python:PATH:CALLABLE"): the
		// callable's keyword arguments (JSON once decoded), the files and
		// package folders it imports, and the hash gatepipe takes of them.
		"args":        {ty: cty.DynamicPseudoType, def: cty.NullVal(cty.DynamicPseudoType)},
		"inputs":      {ty: cty.List(cty.String), def: cty.ListValEmpty(cty.String)},
		"code_sha256": {ty: cty.String, def: cty.StringVal("")},
		// family: the encoder family GATE's learning rates follow
		// (transformer, convnext_resnext or conv; SPEC §5.9); null: inferred
		// from the architecture or library name (a researcher's own module:
		// conv, with a warning in the card).
		"family": {ty: cty.String, def: cty.NullVal(cty.String)},
	}
	for n, def := range encoderOptions {
		attrs[n] = attr{ty: def.Type(), def: def}
	}
	return kind{name: "encoder", attrs: attrs, validate: validateEncoder}
}

func validateEncoder(v map[string]cty.Value, decl nodes.Decl) hcl.Diagnostics {
	var diags hcl.Diagnostics
	cfgPath, fromTable, wDiags := weightsConfig(v, decl)
	if diags = append(diags, wDiags...); wDiags.HasErrors() {
		return diags
	}
	fromConfig, stop, cfgDiags := readWeightsConfig(v, decl, cfgPath, fromTable)
	if diags = append(diags, cfgDiags...); stop {
		return diags
	}
	if IsHubWeights(v["weights"].AsString()) && cfgPath == "" && v["preset"].AsString() == "" && v["arch"].AsString() == "" {
		return append(diags, decl.Errorf("weights", "Architecture unknown until the weights are pinned",
			"%s is not pinned yet, so its config.json, which names the architecture, cannot be read: run `gatepipe fetch` (or apply), or set preset.", v["weights"].AsString()))
	}
	preset, arch, archDiags := encoderArch(v, decl)
	if diags = append(diags, archDiags...); arch == "" {
		return diags
	}
	diags = append(diags, checkEncoderSizes(v, decl, preset, arch)...)
	if f := v["family"]; !f.IsNull() && f.IsKnown() {
		diags = append(diags, oneOf(decl, "family", f.AsString(), "transformer", "convnext_resnext", "conv")...)
	}
	isUser := strings.HasPrefix(arch, train.UserArchPrefix)
	if !isUser && (!v["args"].IsNull() || v["inputs"].LengthInt() > 0) {
		diags = append(diags, decl.Errorf("args", "Unused args", "args and inputs belong to a researcher's own encoder, arch = \"python:PATH:CALLABLE\"."))
	}
	if v["hidden"].IsNull() {
		v["hidden"] = list()
		if arch == "mlp" || arch == "convnet" {
			v["hidden"] = list(128)
		}
	}
	pp, ppDiags := preprocessValue(v["preprocess"], fromConfig, decl)
	v["preprocess"] = pp
	if diags = append(diags, ppDiags...); isUser && !diags.HasErrors() {
		diags = append(diags, resolveUserEncoder(v, decl)...)
	}
	if v["args"].IsNull() {
		v["args"] = cty.StringVal("")
	}
	return diags
}

// readWeightsConfig reads the weights' config.json at cfgPath (where
// preprocess is not set): its transform, returned (else fromTable), and
// the architecture it names, which becomes the preset where neither
// preset nor arch is set. stop: that architecture has no preset, and no
// check after this one can run.
func readWeightsConfig(v map[string]cty.Value, decl nodes.Decl, cfgPath string, fromTable *imageops.Preprocess) (pre *imageops.Preprocess, stop bool, diags hcl.Diagnostics) {
	if cfgPath == "" || !v["preprocess"].IsNull() {
		return fromTable, false, nil
	}
	if train.IsPatchRoot(v["arch"].AsString()) {
		// A Hugging Face text or audio model's config.json has no image
		// transform: GATE's patch root takes the image as it comes
		// (ToTensor alone), and its architecture is the arch's.
		return fromTable, false, nil
	}
	decl.Reads.Add(cfgPath)
	if _, err := os.Stat(cfgPath); err != nil {
		return fromTable, false, nil
	}
	p, arch, err := imageops.TimmConfig(cfgPath)
	if err != nil {
		msg := err.Error()
		if w := v["weights"].AsString(); IsHubWeights(w) {
			msg = strings.ReplaceAll(msg, cfgPath, "the config.json of "+w)
		}
		return fromTable, false, hcl.Diagnostics{decl.Errorf("weights", "Invalid model config", "%s.", msg)}
	}
	if v["preset"].AsString() == "" && v["arch"].AsString() == "" && arch != "" {
		if _, ok := train.Presets[arch]; !ok {
			return &p, true, hcl.Diagnostics{decl.Errorf("weights", "Unknown architecture",
				"%s names the architecture %q, which gatepipe has no preset for (the closest: %s). Set preset to one whose sizes the weights have, or arch and its sizes; SPEC.md lists the presets.",
				cfgPath, arch, strings.Join(train.ClosestPresets(arch, 6), ", "))}
		}
		v["preset"] = cty.StringVal(arch)
	}
	return &p, false, nil
}

// encoderArch resolves the encoder's preset and architecture (setting
// arch from the preset); arch is "" when the checks after it cannot run.
func encoderArch(v map[string]cty.Value, decl nodes.Decl) (preset, arch string, diags hcl.Diagnostics) {
	preset, arch = v["preset"].AsString(), v["arch"].AsString()
	switch {
	case preset != "":
		p, err := train.Preset(preset)
		if err != nil {
			return preset, "", hcl.Diagnostics{decl.Errorf("preset", "Unknown preset", "%s.", err)}
		}
		if arch != "" && arch != p.Arch {
			diags = append(diags, decl.Errorf("arch", "Invalid value", "preset %q is a %s, not a %s.", preset, p.Arch, arch))
		}
		v["arch"] = cty.StringVal(p.Arch)
		arch = p.Arch
	case arch == "":
		return preset, "", hcl.Diagnostics{decl.Errorf("arch", "Missing architecture", "an encoder needs arch (%v, or timm:NAME, torchvision:NAME, patchroot:NAME or python:PATH:CALLABLE, your own module, on the torch runtime) or a preset (as in preset = \"resnet50\").", train.Archs)}
	case train.IsPatchRoot(arch):
		// GATE's patch root on a Hugging Face encoder: the torch worker
		// builds it for the paper's four.
		if name := strings.TrimPrefix(arch, train.PatchRootPrefix); !slices.Contains(train.PatchRootModels, name) {
			return preset, "", hcl.Diagnostics{decl.Errorf("arch", "Unknown patch-root encoder",
				"GATE's patch root is built for %s, not %q.", strings.Join(train.PatchRootModels, ", "), name)}
		}
	case train.IsLibrary(arch):
		// A timm or torchvision model by name: the torch runtime builds it.
	default:
		if slices.Contains(train.LibraryPrefixes, arch) {
			return preset, "", hcl.Diagnostics{decl.Errorf("arch", "Invalid value", "%q names no model: write timm:NAME, torchvision:NAME, patchroot:NAME or python:PATH:CALLABLE, as in timm:resnet50, patchroot:google-bert/bert-base-uncased or python:mymodel.py:MyNet.", arch)}
		}
		diags = append(diags, oneOf(decl, "arch", arch, train.Archs...)...)
	}
	return preset, arch, diags
}

// checkEncoderSizes checks the encoder's shape and size attributes and
// its named choices.
func checkEncoderSizes(v map[string]cty.Value, decl nodes.Decl, preset, arch string) hcl.Diagnostics {
	var diags hcl.Diagnostics
	if n := v["input_shape"].LengthInt(); n != 0 && n != 1 && n != 3 {
		diags = append(diags, decl.Errorf("input_shape", "Invalid value", "input_shape must be [C, H, W] or [F], not %d numbers.", n))
	}
	diags = append(diags, positive(decl, v, "patch", "dim", "depth", "heads", "mlp_ratio", "groups", "width_per_group", "ln_eps")...)
	diags = append(diags, oneOf(decl, "stem", v["stem"].AsString(), "cifar", "imagenet")...)
	diags = append(diags, oneOf(decl, "block", v["block"].AsString(), "basic", "bottleneck")...)
	diags = append(diags, oneOf(decl, "act", v["act"].AsString(), train.Activations...)...)
	diags = append(diags, oneOf(decl, "pool", v["pool"].AsString(), "token", "avg")...)
	if f := v["weights_format"].AsString(); f != "" {
		diags = append(diags, oneOf(decl, "weights_format", f, train.WeightFormats...)...)
	}
	if preset == "" && (arch == "resnet" || arch == "convnext") && v["blocks"].LengthInt() != v["channels"].LengthInt() {
		diags = append(diags, decl.Errorf("blocks", "Invalid value", "a %s needs one blocks entry per stage: channels has %d, blocks %d.",
			arch, v["channels"].LengthInt(), v["blocks"].LengthInt()))
	}
	if preset == "" && arch == "vit" {
		d, _ := v["dim"].AsBigFloat().Int64()
		h, _ := v["heads"].AsBigFloat().Int64()
		if h > 0 && d%h != 0 {
			diags = append(diags, decl.Errorf("heads", "Invalid value", "dim (%d) must be a multiple of heads (%d).", d, h))
		}
	}
	return diags
}

// preprocessValue checks the preprocess attribute and fills its defaults
// (or takes the config.json's transform when the attribute is absent).
func preprocessValue(v cty.Value, fromConfig *imageops.Preprocess, decl nodes.Decl) (cty.Value, hcl.Diagnostics) {
	var p imageops.Preprocess
	switch {
	case !v.IsNull():
		conv, err := convert.Convert(v, preprocessPartial)
		if err != nil {
			return cty.NullVal(preprocessType), hcl.Diagnostics{decl.Errorf("preprocess", "Invalid value", "preprocess: %s (it takes size, resize_to, crop_pct, interpolation, mean, std, channels).", err)}
		}
		if p, err = decodePreprocess(conv); err != nil {
			return cty.NullVal(preprocessType), hcl.Diagnostics{decl.Errorf("preprocess", "Invalid value", "%s.", err)}
		}
		if p.Interpolation == "" {
			p.Interpolation = imageops.Bilinear
		}
	case fromConfig != nil:
		p = *fromConfig
	default:
		return cty.NullVal(preprocessType), nil
	}
	if err := p.Check(); err != nil {
		return cty.NullVal(preprocessType), hcl.Diagnostics{decl.Errorf("preprocess", "Invalid value", "%s.", err)}
	}
	return cty.ObjectVal(map[string]cty.Value{
		"size": list(p.Size[0], p.Size[1]), "resize_to": cty.NumberIntVal(int64(p.ResizeTo)), "crop_pct": num(p.CropPct),
		"interpolation": cty.StringVal(string(p.Interpolation)), "mean": floatList(p.Mean), "std": floatList(p.Std), "channels": cty.NumberIntVal(int64(p.Channels)),
	}), nil
}

// decodePreprocess reads a preprocess object, as written (size one number
// or [H, W], the rest possibly null) or as stored (every attribute set).
func decodePreprocess(v cty.Value) (imageops.Preprocess, error) {
	var p imageops.Preprocess
	get := func(name string, into any) {
		if a := v.GetAttr(name); !a.IsNull() {
			_ = gocty.FromCtyValue(a, into)
		}
	}
	var size []int
	if sv := v.GetAttr("size"); sv.Type() == cty.Number {
		var side int
		_ = gocty.FromCtyValue(sv, &side)
		size = []int{side, side}
	} else if err := gocty.FromCtyValue(sv, &size); err != nil {
		size = nil
	}
	if len(size) == 1 {
		size = append(size, size[0])
	}
	if len(size) != 2 {
		return p, fmt.Errorf("preprocess size must be one number or [H, W], not %d numbers", len(size))
	}
	p.Size = [2]int{size[0], size[1]}
	var interp string
	get("resize_to", &p.ResizeTo)
	get("crop_pct", &p.CropPct)
	get("interpolation", &interp)
	get("mean", &p.Mean)
	get("std", &p.Std)
	get("channels", &p.Channels)
	p.Interpolation = imageops.Interpolation(interp)
	return p, nil
}

// optionSet reports whether an option differs from its default.
func optionSet(v cty.Value, name string) bool {
	def, ok := encoderOptions[name]
	return ok && v != cty.NilVal && !v.IsNull() && v.IsKnown() && v.Equals(def).False()
}
