package dataset

import (
	"fmt"
	"math"
	"runtime"
	"slices"

	"github.com/gatepipe/gatepipe/formats/safetensors"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/hashicorp/hcl/v2"
)

// decodeExamples checks the examples attribute: published counts of the
// train, val and test data.
func (n *Node) decodeExamples(decl nodes.Decl) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for split, count := range n.cfg.Examples {
		if !slices.Contains([]string{"train", "val", "test"}, split) {
			diags = append(diags, decl.Errorf("examples", "Invalid examples", "examples counts the train, val and test data; %q is none of them.", split))
		}
		if count < 0 {
			diags = append(diags, decl.Errorf("examples", "Invalid examples", "examples[%q] is %d; a count cannot be negative.", split, count))
		}
	}
	return diags
}

// Memory the node needs besides its batches: the Go runtime and the
// parsed labels' tables (measured: about 40 MB for a small store).
const baseMemory = 64 << 20

// EstimateStore says how large the store will be: the examples its splits
// keep (from the published counts in examples, the fractions and the
// caps) times one example's bytes, and the memory the node needs at its
// peak, which depends on the batch, the cores and the number of examples
// (their labels and file names are held), not on their pixels.
func (n *Node) EstimateStore() nodes.StoreEstimate {
	est := nodes.StoreEstimate{DType: "U8", Shape: n.exampleShape(), Basis: "unknown until the source is read (set examples = { train = N } to count them)"}
	if n.cfg.Format == "raw" {
		return nodes.StoreEstimate{Basis: "raw files: no store"}
	}
	est.SplitCaps = map[string]int64{}
	for name, limit := range map[string]int{"train": n.maxTrain, "val": n.maxVal, "test": n.maxTest} {
		if limit > 0 {
			est.SplitCaps[name] = int64(limit)
		}
	}
	if t, ok := n.cfg.Examples["train"]; ok {
		nVal := int64(math.Floor(n.valFraction * float64(t)))
		nTest := int64(math.Floor(n.testFraction * float64(t)))
		est.Splits = map[string]int64{"train": capped(t-nVal-nTest, n.maxTrain), "val": capped(nVal, n.maxVal), "test": capped(nTest, n.maxTest)}
		if v, ok := n.cfg.Examples["val"]; ok {
			est.Splits["val"] += capped(v, n.maxVal)
		}
		if v, ok := n.cfg.Examples["test"]; ok {
			est.Splits["test"] += capped(v, n.maxTest)
		}
		est.Examples = est.Splits["train"] + est.Splits["val"] + est.Splits["test"]
		est.Known, est.Basis = true, "the source's published counts (examples)"
	}
	size := int64(1)
	for _, d := range est.Shape {
		size *= int64(d)
	}
	if n.jpegQuality > 0 {
		// JPEGs: their size depends on the content; photographs at
		// quality 90 take about a sixth of their raw bytes.
		est.DType = fmt.Sprintf("U8 as JPEG (quality %d)", n.jpegQuality)
		est.JPEGQuality = n.jpegQuality
		size = size/jpegShare + 16 // and its offset and length
	}
	// Per example: its index and label (for segmentation, a label a
	// pixel, in the smallest type that holds the classes) in the store; in
	// memory, its label, index and file name (masks are read a batch at a
	// time, not held).
	labels := int64(8)
	if n.segmentation() && len(est.Shape) == 3 {
		classes := len(n.cfg.ClassNames)
		if classes == 0 {
			classes = 256 // unnamed mask values: U8 unless they pass 255
		}
		labels = int64(safetensors.LabelType(classes).Size()) * int64(est.Shape[1]) * int64(est.Shape[2])
	}
	perExample := int64(8) + labels
	held := 3*int64(n.batchBytes) + int64(runtime.GOMAXPROCS(0))*8<<20 + baseMemory
	if est.Known {
		if len(est.Shape) > 0 {
			est.Bytes = est.Examples * (size + perExample)
		}
		est.PeakMemory = held + est.Examples*(8+96)
	}
	return est
}

// jpegShare is how many times smaller than raw plan takes a JPEG store
// to be: measured on ImageNet-like photographs at quality 90
// (BenchmarkJPEGStore).
const jpegShare = 6

// capped is count kept under limit (0: no limit).
func capped(count int64, limit int) int64 {
	if limit > 0 && count > int64(limit) {
		return int64(limit)
	}
	return count
}

// segmentation reports whether the labels are masks: the task says so,
// the format only holds masks, or a Parquet label column has a mask's
// name (ADE20K's "annotation").
func (n *Node) segmentation() bool {
	if n.task == "segmentation" || n.cfg.Format == "voc_mat" || n.cfg.Format == "hdf5" {
		return true
	}
	return n.cfg.Format == "parquet" && n.cfg.LabelColumn != nil && slices.Contains([]string{"annotation", "mask"}, *n.cfg.LabelColumn)
}

// exampleShape is one stored example's shape as far as the configuration
// tells it (nil when only the data does).
func (n *Node) exampleShape() []int {
	if len(n.cfg.ImageSize) != 2 {
		switch n.cfg.Format {
		case "cifar10", "cifar100":
			return []int{3, 32, 32}
		}
		return nil
	}
	switch n.cfg.Format {
	case "gulp", "video_list":
		f, c, h, w := n.clipGeometry(defaultClipFrames)
		return []int{f, c, h, w}
	case "camera_traps":
		f, c, h, w := n.clipGeometry(defaultFrames)
		return []int{f, c, h, w}
	case "csv", "tsv", "generated":
		return nil
	}
	_, c, h, w := n.clipGeometry(0)
	if n.cfg.Format == "idx" {
		c = 1
	}
	return []int{c, h, w}
}
