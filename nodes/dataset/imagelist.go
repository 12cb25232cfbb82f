package dataset

import (
	"fmt"
	"strings"

	"github.com/gatepipe/gatepipe/formats/imagecsv"
	"github.com/gatepipe/gatepipe/formats/vqajson"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/hashicorp/hcl/v2"
)

// decodeImageList checks an image_list or vqa_json dataset: label lists
// ("IMAGE LABEL" lines, torchvision's Places365 file lists) or question
// files (CLEVR's JSON) named by train and optionally val and test, images
// found as image_csv finds them.
func (n *Node) decodeImageList(decl nodes.Decl) hcl.Diagnostics {
	cfg := n.cfg
	var diags hcl.Diagnostics
	what := map[string]string{"image_list": "the files of \"IMAGE LABEL\" lines (places365_train_standard.txt)", "vqa_json": "the question files (CLEVR_train_questions.json)"}[cfg.Format]
	if len(cfg.Train) == 0 {
		diags = append(diags, decl.Errorf("train", "Missing training list", "Format %q needs train = [...]: %s for the training split.", cfg.Format, what))
	}
	for _, a := range []struct {
		name string
		set  bool
	}{
		{"annotations", len(cfg.Annotations) > 0}, {"image_column", cfg.ImageColumn != nil}, {"label_column", cfg.LabelColumn != nil},
		{"split_column", cfg.SplitColumn != nil}, {"caption_column", cfg.CaptionColumn != nil}, {"label_separator", cfg.LabelSeparator != nil},
	} {
		if a.set {
			diags = append(diags, decl.Errorf(a.name, "Invalid "+a.name, "%s belongs to image_csv tables; a %s dataset reads %s and their like from train, val and test.", a.name, cfg.Format, what))
		}
	}
	if cfg.Format == "image_list" && cfg.Task != nil && *cfg.Task != "classification" {
		diags = append(diags, decl.Errorf("task", "Invalid task", "An image_list dataset is a classification task (one label per image), not %q.", *cfg.Task))
	}
	if cfg.Format == "vqa_json" && cfg.Task != nil {
		diags = append(diags, decl.Errorf("task", "Invalid task", "A vqa_json dataset is a relational task (image and question, the answer a class); remove task."))
	}
	return diags
}

// readImageLists reads the train, val and test label lists into one
// table (image, label), each row in its list's split. A leading "/" on an
// image path is dropped: Places365 writes paths from the image
// directory's root (/a/airfield/00000001.jpg under data_256/).
func (n *Node) readImageLists(tree *rawTree) (*annotatedRows, error) {
	rawDir := tree.dir
	t := &imagecsv.Table{Name: "label lists", Header: []string{"image", "label"}}
	rows := &annotatedRows{table: t, image: 0, value: 1, splits: map[string][]int{}}
	seen := map[string]string{}
	err := n.eachSplitFile(rawDir, "list", func(split, p string) error {
		list, err := imagecsv.ReadLabelList(p)
		if err != nil {
			return err
		}
		for _, l := range list {
			img := strings.TrimLeft(l.Image, "/")
			if other, ok := seen[img]; ok && other != split {
				return fmt.Errorf("image %q is listed for both %s and %s", l.Image, other, split)
			}
			seen[img] = split
			rows.splits[split] = append(rows.splits[split], len(t.Rows))
			t.Rows = append(t.Rows, []string{img, l.Label})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	rows.index, rows.fsys, err = n.imageIndexIn(tree)
	return rows, err
}

// readQuestions reads CLEVR question files, train, val and test, into one
// table (image, answer, question), each row in its file's split.
func (n *Node) readQuestions(tree *rawTree) (*annotatedRows, error) {
	rawDir := tree.dir
	t := &imagecsv.Table{Name: "questions", Header: []string{"image", "answer", "question"}}
	rows := &annotatedRows{table: t, image: 0, value: 1, question: 2, splits: map[string][]int{}}
	err := n.eachSplitFile(rawDir, "questions", func(split, p string) error {
		qs, err := vqajson.ReadFile(p)
		if err != nil {
			return err
		}
		for _, q := range qs {
			rows.splits[split] = append(rows.splits[split], len(t.Rows))
			t.Rows = append(t.Rows, []string{q.Image, q.Answer, q.Question})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	rows.index, rows.fsys, err = n.imageIndexIn(tree)
	return rows, err
}

// eachSplitFile calls fn with each file the train, val and test
// attributes name (patterns resolved in rawDir), with its split; what
// says what the files are, for errors.
func (n *Node) eachSplitFile(rawDir, what string, fn func(split, path string) error) error {
	for _, split := range []struct {
		name  string
		files []string
	}{{"train", n.cfg.Train}, {"val", n.cfg.Val}, {"test", n.cfg.Test}} {
		paths, err := resolveFiles(rawDir, split.files)
		if err != nil {
			return fmt.Errorf("%s %s: %w", split.name, what, err)
		}
		for _, p := range paths {
			if err := fn(split.name, p); err != nil {
				return err
			}
		}
	}
	return nil
}
