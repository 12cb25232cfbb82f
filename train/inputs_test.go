package train

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gatepipe/gatepipe/formats/examplestore"
	"github.com/gatepipe/gatepipe/formats/safetensors"
	"github.com/gatepipe/gatepipe/internal/imageops"
)

// TestOpenSplitForEqualsLoadSplitFor writes small stores (images, clips,
// tables; classification and segmentation) and wants the inputs that
// OpenSplitFor reads on demand, in any order, to equal those LoadSplitFor
// holds, with and without an encoder's transform, with the same targets
// and shape.
func TestOpenSplitForEqualsLoadSplitFor(t *testing.T) {
	pre := &imageops.Preprocess{Size: [2]int{8, 8}, ResizeTo: 9, Interpolation: imageops.Bicubic, Mean: []float32{0.485, 0.456, 0.406}, Std: []float32{0.229, 0.224, 0.225}, Channels: 3}
	cases := []struct {
		name  string
		shape []int
		dtype safetensors.DType
		task  Task
		p     *imageops.Preprocess
	}{
		{"images", []int{3, 10, 12}, safetensors.U8, Classification, nil},
		{"images, transformed", []int{3, 10, 12}, safetensors.U8, Classification, pre},
		{"grey images, transformed", []int{1, 10, 12}, safetensors.U8, Classification, pre},
		{"clips, transformed", []int{2, 3, 10, 12}, safetensors.U8, Video, pre},
		{"segmentation, transformed", []int{3, 10, 12}, safetensors.U8, Segmentation, pre},
		{"segmentation", []int{3, 10, 12}, safetensors.U8, Segmentation, nil},
		{"table", []int{5}, safetensors.F32, Classification, nil},
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			const n, classes = 7, 3
			size := 1
			for _, s := range c.shape {
				size *= s
			}
			x := safetensors.Tensor{DType: c.dtype, Shape: append([]int{n}, c.shape...), Data: make([]byte, n*size*c.dtype.Size())}
			for i := range x.Data {
				x.Data[i] = byte(rng.IntN(256))
				if c.dtype == safetensors.F32 && i%4 == 3 {
					x.Data[i] = 0x3f // finite floats near 1
				}
			}
			ys := make([]int64, n)
			yShape := []int{n}
			if c.task == Segmentation {
				ys = make([]int64, n*c.shape[1]*c.shape[2])
				yShape = []int{n, c.shape[1], c.shape[2]}
			}
			for i := range ys {
				ys[i] = int64(rng.IntN(classes))
			}
			channels, _ := examplestore.ChannelLayout(c.shape)
			norm := examplestore.Normalization{Scale: 1.0 / 255, Mean: make([]float64, channels), Std: make([]float64, channels)}
			for i := range norm.Mean {
				norm.Mean[i], norm.Std[i] = 0.3+0.01*float64(i), 0.2+0.02*float64(i)
			}
			meta := &examplestore.Meta{Task: string(c.task), NumClasses: classes, Shape: c.shape, DType: string(c.dtype), Normalize: norm}
			index := make([]int64, n)
			for i := range index {
				index[i] = int64(i)
			}
			y := safetensors.I64Tensor("y", yShape, ys)
			if c.task == Segmentation && c.p == nil {
				// Masks as the dataset node stores them.
				var err error
				if y.Data, err = safetensors.PutLabels(safetensors.U8, ys); err != nil {
					t.Fatal(err)
				}
				y.DType = safetensors.U8
			}
			split := &examplestore.Split{X: x, Y: y, Index: index}
			if err := examplestore.Write(dir, meta, map[string]*examplestore.Split{"train": split}); err != nil {
				t.Fatal(err)
			}
			want, wantOut, err := LoadSplitFor(dir, "train", meta, c.task, c.p)
			if err != nil {
				t.Fatal(err)
			}
			got, gotOut, err := OpenSplitFor(dir, "train", meta, c.task, c.p)
			if err != nil {
				t.Fatal(err)
			}
			defer got.Close()
			gotY, wantY := allLabels(t, got), allLabels(t, want)
			if got.Len() != want.Len() || gotOut != wantOut || !slices.Equal(got.Shape, want.Shape) || !slices.Equal(gotY, wantY) {
				t.Fatalf("opened: %d examples of %v, %d outputs, labels %v; loaded: %d of %v, %d, %v", got.Len(), got.Shape, gotOut, gotY[:min(len(gotY), 5)], want.Len(), want.Shape, wantOut, wantY[:min(len(wantY), 5)])
			}
			if c.task == Segmentation && got.masks == nil {
				t.Fatal("an opened split holds its masks")
			}
			esize := want.exampleSize()
			order := rng.Perm(n)
			buf := make([]float32, n*esize)
			if err := got.readInputs(buf, order); err != nil {
				t.Fatal(err)
			}
			for i, k := range order {
				if !slices.Equal(buf[i*esize:(i+1)*esize], want.X[k*esize:(k+1)*esize]) {
					t.Fatalf("example %d differs", k)
				}
			}
			if err := got.readRange(buf[:3*esize], 2, 3); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(buf[:3*esize], want.X[2*esize:5*esize]) {
				t.Fatal("examples [2, 5) differ")
			}
			if err := got.readInputs(buf[:esize], []int{n}); err == nil {
				t.Fatal("an example past the end was read")
			}
		})
	}
}

// allLabels is every label of d: its class indices, or every mask in turn.
func allLabels(t *testing.T, d *Data) []int64 {
	t.Helper()
	if d.task() != Segmentation {
		return d.Y
	}
	var all, buf []int64
	for k := range d.Len() {
		m, err := d.mask(k, buf)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, m...)
		buf = m[:0:cap(m)]
		if d.masks == nil {
			buf = nil
		}
	}
	return all
}
