package train

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestResNetDirectFeaturesMatchTheGraph: the direct ResNet feature pass
// gives the frozen graph's features (held to torchvision's by the parity
// tests) for basic and bottleneck blocks, both stems, grouped
// convolutions and non-square images, with one and two workers.
func TestResNetDirectFeaturesMatchTheGraph(t *testing.T) {
	cases := map[string]struct {
		enc   EncoderSpec
		shape []int
	}{
		"basic, small stem": {EncoderSpec{Arch: "resnet", Channels: []int{4, 8}, Blocks: []int{1, 2}}, []int{3, 12, 12}},
		// 1,600 columns a layer-1 image: each image alone in its products.
		"basic, large images":  {EncoderSpec{Arch: "resnet", Channels: []int{4, 8}, Blocks: []int{1, 1}}, []int{3, 40, 40}},
		"bottleneck, imagenet": {EncoderSpec{Arch: "resnet", Channels: []int{4, 8}, Blocks: []int{2, 1}, Block: "bottleneck", Stem: "imagenet"}, []int{3, 32, 24}},
		"resnext groups":       {EncoderSpec{Arch: "resnet", Channels: []int{16, 16}, Blocks: []int{1, 1}, Block: "bottleneck", Stem: "imagenet", Groups: 4, WidthPerGroup: 16}, []int{1, 20, 20}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			enc, shape := tc.enc, tc.shape
			if !canRunResNetDirect(enc, shape) {
				t.Fatal("the direct pass does not take this ResNet")
			}
			ps, err := newParams(enc, Classification, shape, 1, 0)
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(5, 5))
			w := Weights{}
			for _, p := range ps {
				v := make([]float32, len(p.init))
				for i := range v {
					v[i] = float32(r.NormFloat64() * 0.3)
					if len(p.name) > 12 && p.name[len(p.name)-12:] == "running_var" {
						v[i] = 0.5 + r.Float32()
					}
				}
				w[p.name] = v
			}
			directMatchesGraph(t, enc, ps, w, shape, r)
		})
	}
}

// TestMaxPoolPlanes holds the row-then-column max pool to the window
// maximum taken directly, for kernels, strides and paddings whose windows
// cross every edge.
func TestMaxPoolPlanes(t *testing.T) {
	cases := []struct{ h, w, k, stride, pad int }{
		{7, 9, 3, 2, 1}, {8, 8, 3, 2, 1}, {5, 6, 2, 2, 0}, {6, 5, 3, 1, 1}, {9, 4, 5, 3, 2}, {1, 1, 3, 2, 1},
	}
	r := rand.New(rand.NewPCG(6, 6))
	for _, tc := range cases {
		const planes = 3
		op := newConvOp(convForward, 1, planes, tc.h, tc.w, planes, tc.k, tc.stride, tc.pad, 1)
		in := make([]float32, planes*tc.h*tc.w)
		for i := range in {
			in[i] = float32(r.NormFloat64())
		}
		got := make([]float32, planes*op.outH*op.outW)
		if n := maxPoolPlanes(op, planes, in, got); n != len(got) {
			t.Fatalf("%+v: size %d, want %d", tc, n, len(got))
		}
		for c := range planes {
			for oy := range op.outH {
				for ox := range op.outW {
					want := float32(-1e30)
					for y := oy*tc.stride - tc.pad; y < oy*tc.stride-tc.pad+tc.k; y++ {
						for x := ox*tc.stride - tc.pad; x < ox*tc.stride-tc.pad+tc.k; x++ {
							if y >= 0 && y < tc.h && x >= 0 && x < tc.w {
								want = max(want, in[(c*tc.h+y)*tc.w+x])
							}
						}
					}
					if g := got[(c*op.outH+oy)*op.outW+ox]; g != want {
						t.Fatalf("%+v: plane %d (%d, %d): %v, want %v", tc, c, oy, ox, g, want)
					}
				}
			}
		}
	}
}

// TestDirectPassesNameAMissingParameter: a parameter the network needs
// but the declared ones lack is an error naming it, from the first layer
// on (a ResNet whose stem lacked one indexed a layer it had not planned).
func TestDirectPassesNameAMissingParameter(t *testing.T) {
	cases := map[string]struct {
		enc     EncoderSpec
		shape   []int
		missing string
	}{
		"resnet stem":     {EncoderSpec{Arch: "resnet", Channels: []int{4}, Blocks: []int{1}}, []int{3, 8, 8}, "encoder.bn1.weight"},
		"resnet imagenet": {EncoderSpec{Arch: "resnet", Channels: []int{4}, Blocks: []int{1}, Stem: "imagenet"}, []int{3, 16, 16}, "encoder.conv1.weight"},
		"resnet shortcut": {EncoderSpec{Arch: "resnet", Channels: []int{4, 8}, Blocks: []int{1, 1}}, []int{3, 8, 8}, "encoder.layer2.0.downsample.0.weight"},
		"vit block":       {EncoderSpec{Arch: "vit", Patch: 4, Dim: 8, Depth: 2, Heads: 2}, []int{3, 8, 8}, "encoder.blocks.1.mlp.fc1.bias"},
		"vit class token": {EncoderSpec{Arch: "vit", Patch: 4, Dim: 8, Depth: 1, Heads: 2}, []int{3, 8, 8}, "encoder.cls_token"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ps, err := newParams(tc.enc, Classification, tc.shape, 1, 0)
			if err != nil {
				t.Fatal(err)
			}
			ps = slices.DeleteFunc(ps, func(p *param) bool { return p.name == tc.missing })
			if tc.enc.Arch == "vit" {
				_, err = newViTForward(tc.enc, ps, Weights{}, tc.shape)
			} else {
				_, err = newResNetForward(tc.enc, ps, Weights{}, tc.shape)
			}
			if err == nil || !strings.Contains(err.Error(), tc.missing) {
				t.Fatalf("without %s: %v", tc.missing, err)
			}
		})
	}
}
