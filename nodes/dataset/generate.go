package dataset

import (
	"errors"

	"github.com/gatepipe/gatepipe/formats/procedural"
	"github.com/gatepipe/gatepipe/formats/safetensors"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/hashicorp/hcl/v2"
)

// decodeGenerator validates the generator block of a generated dataset.
func (n *Node) decodeGenerator(decl nodes.Decl) hcl.Diagnostics {
	g := n.cfg.Generator
	if g == nil {
		return hcl.Diagnostics{decl.Errorf("format", "Missing generator", "format = \"generated\" needs a generator block (task, train, test; size, max_objects, seed).")}
	}
	var diags hcl.Diagnostics
	if len(n.cfg.Source) > 0 {
		diags = append(diags, decl.Errorf("format", "Sources in a generated dataset", "A generated dataset has no source blocks; remove them or use another format."))
	}
	for i, c := range []procedural.Config{n.generatorConfig(0, g.Train), n.generatorConfig(1, g.Test)} {
		if err := c.Check(); err != nil {
			// Point at the attribute at fault (n is train or test).
			attr := "task"
			var ce *procedural.ConfigError
			if errors.As(err, &ce) {
				attr = ce.Field
				if attr == "n" {
					attr = []string{"train", "test"}[i]
				}
			}
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid generator", Detail: err.Error() + ".",
				Subject: decl.NestedAttrRange("generator", 0, attr), Context: decl.DeclRange.Ptr()})
			break
		}
	}
	if len(diags) == 0 {
		// The task is the generator's, known without rendering anything.
		set, _ := procedural.Generate(procedural.Config{Task: g.Task, N: 1, Size: 8})
		n.task = set.Task
	}
	return diags
}

// generatorConfig is the generator's config for one stream (0 train, 1 test).
func (n *Node) generatorConfig(stream uint64, count int) procedural.Config {
	g := n.cfg.Generator
	c := procedural.Config{Task: g.Task, N: count, Size: 32, Stream: stream}
	if g.Size != nil {
		c.Size = *g.Size
	}
	if g.MaxObjects != nil {
		c.MaxObjects = *g.MaxObjects
	}
	if g.Frames != nil {
		c.Frames = *g.Frames
	}
	if g.Seed != nil {
		c.Seed = *g.Seed
	}
	return c
}

// generate renders the training and test sets.
func (n *Node) generate() (train, test *examples, err error) {
	conv := func(stream uint64, count int) (*examples, error) {
		s, err := procedural.Generate(n.generatorConfig(stream, count))
		if err != nil {
			return nil, err
		}
		e := &examples{dtype: safetensors.U8, shape: s.Shape, u8: s.Pixels, classes: s.Classes}
		switch s.Task {
		case "classification", "video", "fewshot":
			e.y = s.Labels
		case "relational":
			e.y, e.q, e.qLen, e.vocab = s.Labels, s.Questions, procedural.QuestionLength, procedural.Vocab
		case "retrieval":
			e.y, e.q, e.qLen, e.vocab = s.Labels, s.Questions, procedural.CaptionLength, procedural.Vocab
		case "segmentation":
			e.y, e.yShape = s.Labels, s.Shape[1:]
		default:
			e.yf, e.targets = s.Targets, s.Width
		}
		return e, nil
	}
	if train, err = conv(0, n.cfg.Generator.Train); err != nil {
		return nil, nil, err
	}
	test, err = conv(1, n.cfg.Generator.Test)
	return train, test, err
}
