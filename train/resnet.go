package train

import (
	"fmt"

	G "gorgonia.org/gorgonia"
)

// bottleneckExpansion is the ratio of a bottleneck block's output
// channels to its stage width (torchvision's Bottleneck.expansion).
const bottleneckExpansion = 4

func (e EncoderSpec) checkResNet() error {
	if len(e.Channels) == 0 || len(e.Blocks) != len(e.Channels) {
		return fmt.Errorf("resnet needs channels (stage widths) and blocks (blocks per stage) of the same length, got %v and %v", e.Channels, e.Blocks)
	}
	switch e.Stem {
	case "", "cifar", "imagenet":
	default:
		return fmt.Errorf("resnet stem %q is not cifar or imagenet", e.Stem)
	}
	switch e.Block {
	case "", "basic":
		if e.Groups > 1 || (e.WidthPerGroup != 0 && e.WidthPerGroup != 64) {
			return fmt.Errorf("resnet: groups and width_per_group need block = \"bottleneck\" (torchvision's BasicBlock has neither)")
		}
	case "bottleneck":
		for _, c := range e.Channels {
			if w := e.bottleneckWidth(c); w <= 0 || w%max(e.Groups, 1) != 0 {
				return fmt.Errorf("resnet: stage width %d gives a bottleneck width %d that %d groups do not divide", c, w, max(e.Groups, 1))
			}
		}
	default:
		return fmt.Errorf("resnet block %q is not basic or bottleneck", e.Block)
	}
	return nil
}

// bottleneckWidth is torchvision's width = planes * (base_width / 64) *
// groups.
func (e EncoderSpec) bottleneckWidth(planes int) int {
	wpg := e.WidthPerGroup
	if wpg == 0 {
		wpg = 64
	}
	return planes * wpg / 64 * max(e.Groups, 1)
}

// resnetTrunk is a ResNet with torchvision's (and timm's) names: the stem
// (conv1, bn1, ReLU, and with the ImageNet stem a 7x7 stride-2 conv and a
// 3x3 stride-2 max pool), then stages layer1..layerN of basic or
// bottleneck blocks. The first block of every stage after the first
// strides by 2 (in the bottleneck's 3x3, torchvision's "ResNet v1.5"),
// with a 1x1 conv + BN downsample when the shape changes. forward pools it
// globally.
func (e EncoderSpec) resnetTrunk(b *builder, x *G.Node, in int) (*G.Node, int) {
	c := e.Channels[0]
	var cur *G.Node
	if e.Stem == "imagenet" {
		cur = b.convBN(x, "encoder.conv1", "encoder.bn1", in, c, 7, 2, 3, 1, true)
		cur = b.maxPool(cur, 3, 2, 1)
	} else {
		cur = b.convBN(x, "encoder.conv1", "encoder.bn1", in, c, 3, 1, 1, 1, true)
	}
	for s, planes := range e.Channels {
		for j := 0; j < e.Blocks[s]; j++ {
			stride := 1
			if s > 0 && j == 0 {
				stride = 2
			}
			p := fmt.Sprintf("encoder.layer%d.%d", s+1, j)
			var out *G.Node
			var width int
			if e.Block == "bottleneck" {
				out, width = e.bottleneck(b, cur, p, c, planes, stride)
			} else {
				width = planes
				out = b.convBN(cur, p+".conv1", p+".bn1", c, width, 3, stride, 1, 1, true)
				out = b.convBN(out, p+".conv2", p+".bn2", width, width, 3, 1, 1, 1, false)
			}
			short := cur
			if stride != 1 || c != width {
				short = b.convBN(cur, p+".downsample.0", p+".downsample.1", c, width, 1, stride, 0, 1, false)
			}
			cur = b.addReLU(out, short)
			c = width
		}
	}
	return cur, c
}

// bottleneck is torchvision's Bottleneck without its residual: 1x1 conv to
// the group width, grouped 3x3 (with the stride), 1x1 to planes * 4. It
// returns the branch and its channels.
func (e EncoderSpec) bottleneck(b *builder, x *G.Node, p string, in, planes, stride int) (*G.Node, int) {
	width, out := e.bottleneckWidth(planes), planes*bottleneckExpansion
	h := b.convBN(x, p+".conv1", p+".bn1", in, width, 1, 1, 0, 1, true)
	h = b.convBN(h, p+".conv2", p+".bn2", width, width, 3, stride, 1, max(e.Groups, 1), true)
	return b.convBN(h, p+".conv3", p+".bn3", width, out, 1, 1, 0, 1, false), out
}
