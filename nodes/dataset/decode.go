package dataset

import (
	"fmt"
	"strings"

	"github.com/gatepipe/gatepipe/nodes"
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/gocty"
)

// Decode validates the configuration.
func (Kind) Decode(v cty.Value, decl nodes.Decl) (nodes.Node, hcl.Diagnostics) {
	var cfg config
	if err := gocty.FromCtyValue(v, &cfg); err != nil {
		return nil, hcl.Diagnostics{decl.Errorf("format", "Invalid dataset block", "%s", err)}
	}
	n := &Node{cfg: cfg, normalize: "standard", task: "classification", batchBytes: defaultBatchBytes}
	var diags hcl.Diagnostics
	if !contains(Formats, cfg.Format) {
		diags = append(diags, decl.Errorf("format", "Unsupported dataset format",
			"format %q is not supported. Use one of: %s.", cfg.Format, strings.Join(Formats, ", ")))
	}
	diags = append(diags, n.decodeSourceBlocks(decl)...)
	diags = append(diags, n.decodeFractions(decl)...)
	diags = append(diags, n.decodeColumns(decl)...)
	diags = append(diags, n.decodeLimits(decl)...)
	diags = append(diags, n.decodeLabels(decl)...)
	diags = append(diags, n.decodeImageShape(decl)...)
	diags = append(diags, n.decodeMedia(decl)...)
	diags = append(diags, n.decodeStorage(decl)...)
	n.resolver = decl.Sources
	if cfg.Format == "parquet" && cfg.Task == nil {
		n.task = "" // follows from the label column's type
	}
	if (cfg.Format == "csv" || cfg.Format == "tsv") && cfg.LabelColumn == nil {
		diags = append(diags, decl.Errorf("label_column", "Missing label column", "Format %q needs label_column, the name of the column holding the label.", cfg.Format))
	}
	return n, diags
}

// decodeSourceBlocks decodes the source blocks (or the generator) and
// checks that the format has the training files it needs.
func (n *Node) decodeSourceBlocks(decl nodes.Decl) hcl.Diagnostics {
	cfg := &n.cfg
	var diags hcl.Diagnostics
	for i, sc := range cfg.Source {
		ss, err := decodeSources(sc, decl.Dir)
		if err != nil {
			attr := "url"
			if se, ok := err.(*sourceError); ok {
				attr = se.attr
			}
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid dataset source",
				Detail:   fmt.Sprintf("source %d: %s", i+1, err),
				Subject:  decl.NestedAttrRange("source", i, attr),
				Context:  decl.DeclRange.Ptr(),
			})
			continue
		}
		n.sources = append(n.sources, ss...)
	}
	if cfg.Format == "generated" {
		diags = append(diags, n.decodeGenerator(decl)...)
	} else if len(cfg.Source) == 0 {
		diags = append(diags, decl.Errorf("format", "Missing source", "A %q dataset needs at least one source block (format = \"generated\" uses a generator block instead).", cfg.Format))
	} else if cfg.Generator != nil {
		diags = append(diags, decl.Errorf("format", "Generator without format", "A generator block needs format = \"generated\"."))
	}
	if annotated(cfg.Format) {
		diags = append(diags, n.decodeAnnotated(decl)...)
	} else if cfg.Format != "raw" && cfg.Format != "generated" && len(cfg.Train) == 0 {
		diags = append(diags, decl.Errorf("train", "Missing training files",
			"Format %q needs train = [...]: the files (or, for image_folder, the directory) inside the fetched sources that hold the training data.", cfg.Format))
	}
	return diags
}

// decodeFractions decodes val_fraction and test_fraction.
func (n *Node) decodeFractions(decl nodes.Decl) hcl.Diagnostics {
	cfg := &n.cfg
	var diags hcl.Diagnostics
	frac := func(p *float64, attr string) float64 {
		if p == nil {
			return 0
		}
		if *p < 0 || *p >= 1 {
			diags = append(diags, decl.Errorf(attr, "Invalid fraction", "%s must be at least 0 and below 1, not %g.", attr, *p))
		}
		return *p
	}
	n.valFraction = frac(cfg.ValFraction, "val_fraction")
	n.testFraction = frac(cfg.TestFraction, "test_fraction")
	if n.valFraction < 1 && n.testFraction < 1 && n.valFraction+n.testFraction >= 1 {
		diags = append(diags, decl.Errorf("val_fraction", "Invalid fractions", "val_fraction + test_fraction must be below 1."))
	}
	if len(cfg.Val) > 0 && cfg.ValFraction != nil {
		diags = append(diags, decl.Errorf("val_fraction", "Conflicting validation split", "Use either val files or val_fraction, not both."))
	}
	return diags
}

// decodeColumns checks the attributes that only some formats read:
// frames, Parquet's and the annotation tables' columns, tokens.
func (n *Node) decodeColumns(decl nodes.Decl) hcl.Diagnostics {
	cfg := &n.cfg
	var diags hcl.Diagnostics
	if cfg.Frames != nil && cfg.Format != "camera_traps" && cfg.Format != "gulp" && cfg.Format != "video_list" {
		diags = append(diags, decl.Errorf("frames", "Invalid frames", "frames sets the clip length of camera_traps, gulp and video_list datasets; this dataset's format is %q.", cfg.Format))
	}
	diags = append(diags, n.decodeParquetCaptions(decl)...)
	diags = append(diags, n.decodeExamples(decl)...)
	if cfg.QuestionColumn != nil && cfg.Format != "parquet" {
		diags = append(diags, decl.Errorf("question_column", "Invalid question_column", "question_column names a Parquet string column (a VQA question); this dataset's format is %q.", cfg.Format))
	}
	if cfg.Format == "parquet" && cfg.QuestionColumn == nil && len(n.pairs) == 0 && (cfg.MaxTokens != nil || cfg.MaxVocabulary != nil) {
		diags = append(diags, decl.Errorf("max_tokens", "Tokens without text", "max_tokens and max_vocabulary shape question or caption tokens; set question_column or caption_column."))
	}
	if cfg.ImageColumn != nil && cfg.Format != "parquet" && !annotated(cfg.Format) {
		diags = append(diags, decl.Errorf("image_column", "Invalid image_column", "image_column names a Parquet or annotation-table column; this dataset's format is %q.", cfg.Format))
	}
	return diags
}

// decodeLimits decodes the split seed and the splits' size limits.
func (n *Node) decodeLimits(decl nodes.Decl) hcl.Diagnostics {
	cfg := &n.cfg
	var diags hcl.Diagnostics
	if len(cfg.Test) > 0 && cfg.TestFraction != nil {
		diags = append(diags, decl.Errorf("test_fraction", "Conflicting test split", "Use either test files or test_fraction, not both."))
	}
	if cfg.SplitSeed != nil {
		n.splitSeed = *cfg.SplitSeed
	}
	if cfg.MaxTrain != nil {
		if *cfg.MaxTrain < 1 {
			diags = append(diags, decl.Errorf("max_train", "Invalid max_train", "max_train must be at least 1."))
		}
		n.maxTrain = *cfg.MaxTrain
	}
	for _, c := range []struct {
		name string
		v    *int
		into *int
	}{{"max_val", cfg.MaxVal, &n.maxVal}, {"max_test", cfg.MaxTest, &n.maxTest}} {
		if c.v == nil {
			continue
		}
		if *c.v < 1 {
			diags = append(diags, decl.Errorf(c.name, "Invalid "+c.name, "%s must be at least 1.", c.name))
		}
		*c.into = *c.v
	}
	return diags
}

// decodeLabels decodes keep_classes, normalize and task.
func (n *Node) decodeLabels(decl nodes.Decl) hcl.Diagnostics {
	cfg := &n.cfg
	var diags hcl.Diagnostics
	if len(cfg.KeepClasses) > 0 && n.task != "" && n.task != "classification" && n.task != "multilabel" {
		diags = append(diags, decl.Errorf("keep_classes", "Invalid keep_classes", "keep_classes selects classes of a classification or multi-label dataset, not of a %s one.", n.task))
	}
	seen := map[string]bool{}
	for _, c := range cfg.KeepClasses {
		if seen[c] {
			diags = append(diags, decl.Errorf("keep_classes", "Invalid keep_classes", "Class %q is listed twice.", c))
		}
		seen[c] = true
	}
	if cfg.Normalize != nil {
		n.normalize = *cfg.Normalize
		if !contains([]string{"standard", "unit", "none"}, n.normalize) {
			diags = append(diags, decl.Errorf("normalize", "Invalid normalize", "normalize must be \"standard\", \"unit\" or \"none\", not %q.", n.normalize))
		}
	}
	if cfg.Task != nil {
		n.task = *cfg.Task
		tasks := []string{"classification", "regression"}
		switch cfg.Format {
		case "parquet":
			tasks = append(tasks, "multilabel", "segmentation")
		case "image_csv":
			tasks = []string{"classification", "multilabel"}
		case "image_list":
			tasks = []string{"classification"}
		case "captions_csv":
			tasks = []string{"retrieval"}
		}
		if !contains(tasks, n.task) {
			diags = append(diags, decl.Errorf("task", "Invalid task", "task must be one of %s for format %q, not %q.", strings.Join(tasks, ", "), cfg.Format, n.task))
		}
		if cfg.Format == "generated" {
			diags = append(diags, decl.Errorf("task", "Task of a generated dataset", "A generated dataset's task follows from its generator's task; remove task."))
		}
	}
	return diags
}

// decodeImageShape checks image_size and channels.
func (n *Node) decodeImageShape(decl nodes.Decl) hcl.Diagnostics {
	cfg := &n.cfg
	var diags hcl.Diagnostics
	if (cfg.Format == "image_folder" || annotated(cfg.Format)) && len(cfg.ImageSize) != 2 {
		diags = append(diags, decl.Errorf("image_size", "Missing image size", "%s needs image_size = [HEIGHT, WIDTH]; images are resized to it.", cfg.Format))
	}
	if len(cfg.ImageSize) != 0 && (len(cfg.ImageSize) != 2 || cfg.ImageSize[0] < 1 || cfg.ImageSize[1] < 1) {
		diags = append(diags, decl.Errorf("image_size", "Invalid image size", "image_size must be [HEIGHT, WIDTH] with positive sizes."))
	}
	if cfg.Channels != nil && *cfg.Channels != 1 && *cfg.Channels != 3 {
		diags = append(diags, decl.Errorf("channels", "Invalid channels", "channels must be 1 or 3."))
	}
	return diags
}
