package specs

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/gatepipe/gatepipe/formats/safetensors"
	"github.com/gatepipe/gatepipe/formats/torchpt"
	"github.com/gatepipe/gatepipe/internal/imageops"
	"github.com/gatepipe/gatepipe/internal/readset"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/sources"
	"github.com/gatepipe/gatepipe/train"
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/gocty"
)

// Reader reads the attributes of the spec blocks (encoder, adapter,
// recipe, benchmark) a block references, as in encoder = encoder.cnn,
// collecting a diagnostic for each reference that is not such a block.
type Reader struct {
	V     cty.Value
	Decl  nodes.Decl
	Diags hcl.Diagnostics
}

// Get returns attribute attr of the block referenced by obj, or cty.NilVal
// (with a diagnostic) when obj is not a block with it.
func (r *Reader) Get(obj, attr string) cty.Value {
	o := r.V.GetAttr(obj)
	if !o.Type().IsObjectType() || !o.Type().HasAttribute(attr) {
		r.Diags = append(r.Diags, r.Decl.Errorf(obj, "Invalid reference", "%s must be a %s block (as in %s = %s.NAME); it has no %q.", obj, obj, obj, obj, attr))
		return cty.NilVal
	}
	return o.GetAttr(attr)
}

// CheckTypes checks, from types alone, that each reference names a block
// with the given attribute (encoder = recipe.x is caught at validate
// time, before the referenced blocks have values). refs maps an
// attribute of the checked block to an attribute its block must have.
func CheckTypes(v cty.Value, decl nodes.Decl, refs map[string]string) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, obj := range sortedKeys(refs) {
		attr := refs[obj]
		if !v.Type().IsObjectType() || !v.Type().HasAttribute(obj) {
			continue
		}
		t := v.GetAttr(obj).Type()
		if t == cty.DynamicPseudoType {
			continue
		}
		if !t.IsObjectType() || !t.HasAttribute(attr) {
			diags = append(diags, decl.Errorf(obj, "Invalid reference", "%s must be a %s block (as in %s = %s.NAME); it has no %q.", obj, obj, obj, obj, attr))
		}
	}
	return diags
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Str reads a string attribute ("" when null).
func (r *Reader) Str(obj, attr string) string {
	v := r.Get(obj, attr)
	if v == cty.NilVal || v.IsNull() {
		return ""
	}
	return v.AsString()
}

// Float reads a number attribute.
func (r *Reader) Float(obj, attr string) float64 {
	var x float64
	if v := r.Get(obj, attr); v != cty.NilVal && !v.IsNull() {
		_ = gocty.FromCtyValue(v, &x)
	}
	return x
}

// Int reads a whole-number attribute.
func (r *Reader) Int(obj, attr string) int { return int(r.Float(obj, attr)) }

// Ints reads a list of numbers.
func (r *Reader) Ints(obj, attr string) []int {
	var out []int
	if v := r.Get(obj, attr); v != cty.NilVal && !v.IsNull() {
		_ = gocty.FromCtyValue(v, &out)
	}
	return out
}

// Encoder reads the referenced encoder block: the architecture and sizes
// (a preset's, with the options set to other than their defaults
// applied over it), and the weights file ("" for none).
func (r *Reader) Encoder() (enc train.EncoderSpec, weights Weights) {
	if preset := r.Str("encoder", "preset"); preset != "" {
		p, err := train.Preset(preset)
		if err != nil {
			r.Diags = append(r.Diags, r.Decl.Errorf("encoder", "Unknown preset", "%s.", err))
		}
		enc = p
		enc.Hidden, enc.InputShape = r.Ints("encoder", "hidden"), r.Ints("encoder", "input_shape")
	} else {
		enc = train.EncoderSpec{Arch: r.Str("encoder", "arch"), Channels: r.Ints("encoder", "channels"), Hidden: r.Ints("encoder", "hidden"),
			InputShape: r.Ints("encoder", "input_shape")}
		switch enc.Arch {
		case "resnet", "convnext":
			enc.Blocks = r.Ints("encoder", "blocks")
		case "vit":
			enc.Patch, enc.Dim, enc.Depth = r.Int("encoder", "patch"), r.Int("encoder", "dim"), r.Int("encoder", "depth")
			enc.Heads, enc.MLPRatio = r.Int("encoder", "heads"), r.Int("encoder", "mlp_ratio")
		}
	}
	r.encoderOptions(&enc)
	if strings.HasPrefix(enc.Arch, train.UserArchPrefix) {
		if a := r.Get("encoder", "args"); a != cty.NilVal && a.IsKnown() && !a.IsNull() && a.Type() == cty.String && a.AsString() != "" {
			enc.Args = json.RawMessage(a.AsString())
		}
		enc.Code = r.Str("encoder", "code_sha256")
	}
	return enc, Weights(r.Str("encoder", "weights"))
}

// NeedTorch adds an error when the encoder is a timm or torchvision model
// (train.IsLibrary) and the block does not run on the torch runtime: only
// PyTorch builds those.
func (r *Reader) NeedTorch(enc train.EncoderSpec, torch bool) {
	if strings.HasPrefix(enc.Arch, train.UserArchPrefix) && !torch {
		r.Diags = append(r.Diags, r.Decl.Errorf("encoder", "Encoder needs the torch runtime",
			"the encoder is %s, your own PyTorch module; gatepipe's Go runtime cannot run it. Set runtime = \"torch\" on this block (or in the gatepipe block; runtime = \"auto\" picks it wherever the interpreter imports torch).", enc.Arch))
		return
	}
	if train.IsPatchRoot(enc.Arch) && !torch {
		r.Diags = append(r.Diags, r.Decl.Errorf("encoder", "Encoder needs the torch runtime",
			"the encoder is %s, GATE's patch root on a Hugging Face encoder, which only the torch worker builds; gatepipe's Go runtime has no such model. Set runtime = \"torch\" on this block (or in the gatepipe block; runtime = \"auto\" picks it wherever the interpreter imports torch).", enc.Arch))
		return
	}
	if train.IsLibrary(enc.Arch) && !torch {
		r.Diags = append(r.Diags, r.Decl.Errorf("encoder", "Encoder needs the torch runtime",
			"the encoder is %s, a model its library builds in PyTorch; gatepipe's Go runtime has no such model. Set runtime = \"torch\" on this block (or in the gatepipe block), or use a built-in arch or preset.", enc.Arch))
	}
}

// encoderOptions applies the options set to other than their defaults.
func (r *Reader) encoderOptions(enc *train.EncoderSpec) {
	obj := r.V.GetAttr("encoder")
	if !obj.Type().IsObjectType() {
		return
	}
	set := func(name string) (cty.Value, bool) {
		if !obj.Type().HasAttribute(name) {
			return cty.NilVal, false
		}
		v := obj.GetAttr(name)
		return v, optionSet(v, name)
	}
	str := func(name string, into *string) {
		if v, ok := set(name); ok {
			*into = v.AsString()
		}
	}
	integer := func(name string, into *int) {
		if v, ok := set(name); ok {
			_ = gocty.FromCtyValue(v, into)
		}
	}
	flag := func(name string, into *bool, negate bool) {
		if v, ok := set(name); ok {
			*into = v.True() != negate
		}
	}
	str("stem", &enc.Stem)
	str("block", &enc.Block)
	integer("groups", &enc.Groups)
	integer("width_per_group", &enc.WidthPerGroup)
	integer("version", &enc.Version)
	str("act", &enc.Act)
	if v, ok := set("ln_eps"); ok {
		_ = gocty.FromCtyValue(v, &enc.LNEps)
	}
	flag("norm_pre", &enc.NormPre, false)
	flag("patch_bias", &enc.NoPatchBias, true)
	flag("layer_scale", &enc.LayerScale, false)
	flag("no_embed_class", &enc.NoEmbedClass, false)
	flag("class_token", &enc.NoClassToken, true)
	str("pool", &enc.Pool)
	str("weights_format", &enc.WeightsFormat)
}

// Preprocess reads the encoder's evaluation transform (nil when it has
// none).
func (r *Reader) Preprocess() *imageops.Preprocess {
	obj := r.V.GetAttr("encoder")
	if !obj.Type().IsObjectType() || !obj.Type().HasAttribute("preprocess") {
		return nil
	}
	v := obj.GetAttr("preprocess")
	if v.IsNull() || !v.Type().IsObjectType() {
		return nil
	}
	p, err := decodePreprocess(v)
	if err != nil {
		r.Diags = append(r.Diags, r.Decl.Errorf("encoder", "Invalid preprocess", "%s.", err))
		return nil
	}
	return &p
}

// Weights is an encoder's weights file as a referencing block sees it.
type Weights string

// Fingerprint hashes the file's content (nothing when there is none), so
// replacing the weights re-runs the block. A Hub model's name is hashed;
// its pinned files enter the action ID through Downloads.
func (p Weights) Fingerprint(ctx context.Context, w io.Writer) error {
	if p == "" {
		return nil
	}
	if IsHubWeights(string(p)) || IsTorchvisionWeights(string(p)) {
		_, err := fmt.Fprintf(w, "weights %s\n", p)
		return err
	}
	readset.Add(ctx, string(p))
	f, err := os.Open(string(p))
	if err != nil {
		return fmt.Errorf("encoder weights: %w", err)
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}

// Load reads the file's tensors for a model of enc with the task's head
// (nil when there is no file) and logs what it loaded and ignored.
func (p Weights) Load(env *nodes.Env, enc train.EncoderSpec, task train.Task, shape []int, outputs int) (train.Weights, error) {
	if p == "" {
		return nil, nil
	}
	path, err := p.local(env)
	if err != nil {
		return nil, err
	}
	f, err := readWeightsFile(path)
	if err != nil {
		return nil, fmt.Errorf("encoder weights: %w", err)
	}
	w, ignored, err := train.MatchWeights(enc, task, shape, outputs, f)
	if err != nil {
		return nil, fmt.Errorf("encoder weights %s: %w", p, err)
	}
	env.Log.Info().Str("weights", string(p)).Int("tensors", len(w)).Strs("ignored", ignored).Msg("loaded encoder weights")
	return w, nil
}

// LoadFor is Load for enc, except that a timm or torchvision encoder
// (train.IsLibrary), which the torch runtime loads in its own names, gets
// the weights file itself ("" for none; fetched where it names a Hub
// model or torchvision file) as own instead.
func (p Weights) LoadFor(env *nodes.Env, enc train.EncoderSpec, task train.Task, shape []int, outputs int) (w train.Weights, own string, err error) {
	if !train.IsLibrary(enc.Arch) {
		w, err = p.Load(env, enc, task, shape, outputs)
		return w, "", err
	}
	if p == "" {
		return nil, "", nil
	}
	own, err = p.local(env)
	return nil, own, err
}

// Downloads is the Hub model or torchvision file the weights name, if
// any: a block that loads them declares it, so that its pin enters the block's action ID and plan,
// fetch, mirror and -offline see it.
func (p Weights) Downloads() []sources.Ref {
	if IsTorchvisionWeights(string(p)) {
		tv, err := LookupTorchvision(string(p))
		if err != nil {
			return nil
		}
		return []sources.Ref{tv.Ref()}
	}
	if !IsHubWeights(string(p)) {
		return nil
	}
	ref, err := HubWeightsRef(string(p))
	if err != nil {
		return nil
	}
	return []sources.Ref{ref}
}

// local is the weights file to read: the file itself, a Hub model's
// model.safetensors or torchvision's .pth, fetched (or found in the blob
// store or the Hugging Face cache).
func (p Weights) local(env *nodes.Env) (string, error) {
	refs := p.Downloads()
	if len(refs) == 0 {
		return string(p), nil
	}
	ref := refs[0]
	if env.Sources == nil {
		return "", fmt.Errorf("encoder weights %s: no source resolver (internal error)", p)
	}
	ctx := context.Background()
	pin, err := env.Sources.Resolve(ctx, ref, env.Progress)
	if err != nil {
		return "", fmt.Errorf("encoder weights %s: %w", p, err)
	}
	for _, f := range pin.Files {
		if f.Path == "model.safetensors" || ref.HF == "" {
			return env.Sources.Fetch(ctx, ref, f, env.Progress)
		}
	}
	return "", fmt.Errorf("encoder weights %s: the repository has no model.safetensors (gatepipe reads safetensors, not pytorch_model.bin)", p)
}

// readWeightsFile reads a safetensors file or a torch.save checkpoint
// (told apart by their first bytes: a zip archive is a checkpoint).
func readWeightsFile(p string) (*safetensors.File, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	head := make([]byte, torchpt.LegacyHeadSize)
	n, _ := io.ReadFull(f, head)
	f.Close()
	if torchpt.IsCheckpoint(head[:n]) {
		return torchpt.ReadFile(p)
	}
	if torchpt.IsLegacy(head[:n]) {
		return nil, fmt.Errorf("%s: %w", p, torchpt.ErrLegacy)
	}
	return safetensors.ReadFile(p)
}
