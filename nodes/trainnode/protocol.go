package trainnode

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/nodes/featureset"
	"github.com/gatepipe/gatepipe/nodes/specs"
	"github.com/gatepipe/gatepipe/nodes/torchrt"
	"github.com/gatepipe/gatepipe/protocol"
	"github.com/gatepipe/gatepipe/stdlib"
	"github.com/gatepipe/gatepipe/train"
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// readProtocol reads the adapter's protocol: nil for gatepipe's compact
// heads, else GATE's card for the task and benchmark at the adapter's
// scale, with the sizes the adapter block sets over the table's.
func readProtocol(r *specs.Reader, task, benchmark string) *protocol.Card {
	name := optional(r, "adapter", "protocol")
	if name.IsNull() {
		return nil
	}
	tab, err := protocol.Load(stdlib.FS())
	if err != nil {
		r.Diags = append(r.Diags, r.Decl.Errorf("adapter", "Cannot read GATE's protocol", "%s", err))
		return nil
	}
	scale := "full"
	if s := optional(r, "adapter", "scale"); !s.IsNull() {
		scale = s.AsString()
	}
	c, err := tab.Card(name.AsString(), task, benchmark, scale)
	if err != nil {
		r.Diags = append(r.Diags, r.Decl.Errorf("adapter", "No GATE adapter", "adapter task %q with protocol = %q: %s.", task, name.AsString(), err))
		return nil
	}
	size := func(attr string) int {
		v := optional(r, "adapter", attr)
		if v.IsNull() {
			return 0
		}
		f, _ := v.AsBigFloat().Int64()
		return int(f)
	}
	c.Head.Override(size("blocks"), size("width"), size("heads"), size("projection"))
	family, assumed := encoderFamily(r)
	if err := tab.WithRecipe(&c, family); err != nil {
		r.Diags = append(r.Diags, r.Decl.Errorf("encoder", "No GATE recipe", "%s.", err))
	} else if assumed {
		c.NotYet = append(c.NotYet, "lr_family: conv assumed for a researcher's own module; set family on the encoder block (transformer, convnext_resnext or conv)")
	}
	if c.Head.Heads > 0 && c.Head.Width%c.Head.Heads != 0 {
		r.Diags = append(r.Diags, r.Decl.Errorf("adapter", "Invalid adapter size", "GATE's %s head: width %d is not a multiple of heads %d.", c.Head.Name, c.Head.Width, c.Head.Heads))
	}
	return &c
}

// gateMetrics marks the splits for the metrics GATE's code computed
// where the card reproduces a defect of them: D4, Winoground's
// accuracies from misplaced 2 x 2 blocks (train.Data.GATEBlocks, which
// only grouped retrieval splits read).
func (n *Node) gateMetrics(d *loaded) {
	if n.card == nil || !n.card.Has("D4") {
		return
	}
	for _, s := range d.splits {
		if s != nil {
			s.GATEBlocks = true
		}
	}
}

// transformerNames mark a library model as a transformer (GATE's 1e-5):
// ViTs, CLIP, SigLIP, DINO, DeiT, FlexiViT, EfficientFormer and kin.
var transformerNames = []string{"vit", "deit", "clip", "siglip", "flexivit", "efficientformer", "beit", "swin", "eva", "dino", "levit", "maxvit", "mvit", "cait", "xcit"}

// encoderFamily is the family GATE's learning rates follow for the
// referenced encoder (gate/tiers/core.py get_model_selection): the
// encoder's family attribute, else transformer for ViTs (gatepipe's and
// the libraries') and the patch-root encoders, convnext_resnext for ConvNeXt V2 and ResNeXt (GATE's
// 2 x the ViT rate), conv for other convolutional nets; assumed is true
// where a researcher's own module declares none (conv is taken).
func encoderFamily(r *specs.Reader) (family string, assumed bool) {
	if f := optional(r, "encoder", "family"); !f.IsNull() && f.Type() == cty.String {
		return f.AsString(), false
	}
	enc, _ := r.Encoder()
	return familyOf(enc)
}

func familyOf(enc train.EncoderSpec) (string, bool) {
	arch := strings.ToLower(enc.Arch)
	switch {
	case arch == "vit":
		return "transformer", false
	case arch == "convnext" && enc.Version == 2, arch == "resnet" && enc.Groups > 1:
		return "convnext_resnext", false
	case strings.HasPrefix(arch, train.UserArchPrefix):
		return "conv", true
	case train.IsPatchRoot(arch):
		// BERT, BART, MPNet, Whisper: GATE's tiers give them the
		// transformer rate.
		return "transformer", false
	case train.IsLibrary(arch):
		name := arch[strings.Index(arch, ":")+1:]
		if strings.Contains(name, "convnextv2") || strings.Contains(name, "resnext") {
			return "convnext_resnext", false
		}
		for _, t := range transformerNames {
			if strings.Contains(name, t) {
				return "transformer", false
			}
		}
	}
	return "conv", false
}

// optional is obj's attribute attr, or null where the referenced block
// has no such attribute.
func optional(r *specs.Reader, obj, attr string) cty.Value {
	o := r.V.GetAttr(obj)
	if !o.Type().IsObjectType() || !o.Type().HasAttribute(attr) {
		return cty.NullVal(cty.DynamicPseudoType)
	}
	v := o.GetAttr(attr)
	if !v.IsKnown() {
		return cty.NullVal(cty.DynamicPseudoType)
	}
	return v
}

// needsTorch makes GATE's adapters an error on the Go runtime, at the
// adapter reference: the Go runtime trains gatepipe's compact heads only.
func (n *Node) needsTorch(r *specs.Reader) {
	if n.card == nil || n.rt.Torch() {
		return
	}
	hint := ""
	if h := n.rt.TorchHint(); h != "" {
		hint = " Here " + h + "."
	}
	r.Diags = append(r.Diags, r.Decl.Errorf("adapter", "GATE's adapters need the torch runtime",
		"the adapter has protocol = %q (GATE's %s adapter); gatepipe's Go runtime trains only its compact heads. Set runtime = \"torch\" on this block (runtime = \"auto\" picks it wherever the interpreter imports torch: install Debian's python3-torch or name python), or leave protocol unset on the adapter (the tiers: adapters = \"compact\").%s", n.card.Name, n.card.Adapter, hint))
}

// recipeDefaults fills what the recipe block leaves to its defaults: the
// learning rate (GATE's for the encoder's family under a card, else
// train.DefaultLR) and the weight decay (GATE's optimiser's under a card,
// else 0.01).
func (n *Node) recipeDefaults(r *specs.Reader) {
	wd := optional(r, "recipe", "weight_decay")
	if n.card != nil && n.card.Recipe != nil {
		if n.recipe.LR <= 0 {
			n.recipe.LR = n.card.Recipe.LR
		}
		if wd.IsNull() {
			n.recipe.WeightDecay = n.card.Recipe.Optimizer.WeightDecay
		}
		// The card says what runs: the recipe's values, GATE's beside
		// those that differ.
		batch := n.recipe.BatchSize
		if n.task == train.FewShot {
			batch = 0 // an episode a step
		}
		n.card.RunsWith(n.recipe.LR, n.recipe.WeightDecay, batch, n.recipe.Iterations, n.recipe.ValidateEvery, n.recipe.TopK)
		return
	}
	if n.recipe.LR <= 0 {
		n.recipe.LR = train.DefaultLR(n.enc.Arch, n.task)
	}
	if wd.IsNull() {
		n.recipe.WeightDecay = 0.01
	}
}

// checkProtocolRuntime makes GATE's adapters on the Go runtime an error
// before the block's other references have values (plan sees a train
// block that waits on its dataset so).
func checkProtocolRuntime(v cty.Value, decl nodes.Decl) hcl.Diagnostics {
	r := &specs.Reader{V: v, Decl: decl}
	p := optional(r, "adapter", "protocol")
	if p.IsNull() || p.Type() != cty.String {
		return nil
	}
	a := &featureset.Attrs{V: v, Decl: decl}
	n := &Node{rt: torchrt.ReadOptions(a, torchrt.Precisions...), card: &protocol.Card{Name: p.AsString()}}
	if t := optional(r, "adapter", "task"); !t.IsNull() && t.Type() == cty.String {
		n.card.Adapter = t.AsString()
	}
	if a.Diags.HasErrors() {
		return nil // CheckOptions reports them
	}
	if enc := optional(r, "encoder", "arch"); !enc.IsNull() && enc.Type() == cty.String && train.IsLibrary(enc.AsString()) {
		n.rt.PreferTorchFor("the encoder is one only PyTorch builds")
	}
	n.rt.PreferTorchFor("GATE's adapters run on PyTorch")
	n.needsTorch(r)
	return r.Diags
}

// Protocol is the node's protocol card (nil: gatepipe's compact heads),
// for export and plan.
func (n *Node) Protocol() any {
	if n.card == nil {
		return nil
	}
	return n.card
}

// ProtocolWords is the card in words, as plan prints it ("" for none).
func (n *Node) ProtocolWords() string {
	if n.card == nil {
		return ""
	}
	return n.card.Words()
}

// fingerprintProtocol records the card in the action ID: the table may
// change under an unchanged configuration.
func (n *Node) fingerprintProtocol(w io.Writer) error {
	if n.card == nil {
		return nil
	}
	b, err := json.Marshal(n.card)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "protocol %s\n", b)
	return err
}
