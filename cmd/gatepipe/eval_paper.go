package main

import (
	"encoding/csv"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/gatepipe/gatepipe/stdlib"
	"github.com/gatepipe/gatepipe/train"
)

// paperEncodersPath is the table of the paper's 21 encoders: how GATE's
// code built each and how gatepipe builds it (SPEC §5.9).
const paperEncodersPath = "data/gate_paper_encoders.csv"

// paperEncoder is one row of that table. Weights are what GATE's code
// loaded for Table 3; GATEWeights, where set, the weights the paper names
// that an untagged timm name did not choose (defect D6), which protocol
// "gate" takes.
type paperEncoder struct {
	ID, Model, Preset, Arch, Weights, GATEWeights, Family, Runnable, Note string
}

// paperEncoderColumns is the table's number of columns.
const paperEncoderColumns = 9

// paperEncoders reads the table.
func paperEncoders() ([]paperEncoder, error) {
	f, err := stdlib.FS().Open(paperEncodersPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", paperEncodersPath, err)
	}
	var out []paperEncoder
	for i, r := range rows {
		if i == 0 {
			continue
		}
		if len(r) != paperEncoderColumns {
			return nil, fmt.Errorf("%s:%d: %d columns, want %d", paperEncodersPath, i+1, len(r), paperEncoderColumns)
		}
		out = append(out, paperEncoder{r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8]})
	}
	return out, nil
}

// paperEncoderFor is the paper's encoder -encoder names: gate:ID, or a
// bare Table 3 id that is not also an architecture or preset ("vit" is
// gatepipe's architecture; the paper's is gate:vit).
func paperEncoderFor(name string) (*paperEncoder, bool, error) {
	id, prefixed := strings.CutPrefix(name, "gate:")
	if !prefixed {
		if slices.Contains(train.Archs, name) {
			return nil, false, nil
		}
		if _, err := train.Preset(name); err == nil {
			return nil, false, nil
		}
	}
	all, err := paperEncoders()
	if err != nil {
		return nil, false, err
	}
	var ids []string
	for i := range all {
		if all[i].ID == id {
			return &all[i], true, nil
		}
		ids = append(ids, all[i].ID)
	}
	if prefixed {
		return nil, false, fmt.Errorf("-encoder %s: the paper's Table 3 has no encoder %q (it has %s)", name, id, strings.Join(ids, ", "))
	}
	return nil, false, nil
}

// block writes the paper encoder's encoder block lines, or says why
// gatepipe cannot build it, and returns the weights to load: weights when
// given, else the table's for the protocol (adapters "gate" mends D6).
func (p *paperEncoder) block(b *strings.Builder, weights, adapters string) (string, error) {
	switch p.Runnable {
	case "no":
		return "", fmt.Errorf("-encoder %s (%s): %s", p.ID, p.Model, p.Note)
	case "convert":
		if weights == "" {
			return "", fmt.Errorf("-encoder %s (%s) needs -weights: %s", p.ID, p.Model, p.Note)
		}
	}
	fmt.Fprintf(b, "  # The paper's %s (Table 3 id %s)", p.Model, p.ID)
	if p.Note != "" {
		fmt.Fprintf(b, ": %s", p.Note)
	}
	b.WriteString("\n")
	if p.Preset != "" {
		fmt.Fprintf(b, "  preset = %q\n", p.Preset)
	} else {
		fmt.Fprintf(b, "  arch = %q\n", p.Arch)
	}
	fmt.Fprintf(b, "  family = %q\n", p.Family)
	switch {
	case weights != "":
	case adapters == "gate" && p.GATEWeights != "":
		fmt.Fprintf(b, "  # -adapters gate mends D6: the weights the paper names, not those GATE's untagged timm name chose (%s)\n", p.Weights)
		weights = p.GATEWeights
	default:
		weights = p.Weights
	}
	return weights, nil
}

// checkPaperEncoders is what a test holds: the table names each of the
// matrix's 21 encoders once, with known presets and families (a patch
// root on one of train.PatchRootModels, with its Hub weights).
func checkPaperEncoders(fsys fs.FS) error {
	all, err := paperEncoders()
	if err != nil {
		return err
	}
	b, err := fs.ReadFile(fsys, "data/gate_encoders.csv")
	if err != nil {
		return err
	}
	rows, err := csv.NewReader(strings.NewReader(string(b))).ReadAll()
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, p := range all {
		if seen[p.ID] {
			return fmt.Errorf("%s: %s twice", paperEncodersPath, p.ID)
		}
		seen[p.ID] = true
		if p.Preset != "" {
			if _, err := train.Preset(p.Preset); err != nil {
				return fmt.Errorf("%s: %s: %w", paperEncodersPath, p.ID, err)
			}
		}
		if !slices.Contains([]string{"transformer", "convnext_resnext", "conv"}, p.Family) {
			return fmt.Errorf("%s: %s: family %q", paperEncodersPath, p.ID, p.Family)
		}
		if name, ok := strings.CutPrefix(p.Arch, train.PatchRootPrefix); ok {
			if !slices.Contains(train.PatchRootModels, name) || p.Weights != "hf:"+name || p.Family != "transformer" {
				return fmt.Errorf("%s: %s: a patch root on %q takes weights hf:%s and family transformer", paperEncodersPath, p.ID, name, name)
			}
		}
	}
	for _, r := range rows[1:] {
		if !seen[r[0]] {
			return fmt.Errorf("%s lacks the matrix's encoder %s", paperEncodersPath, r[0])
		}
	}
	if len(all) != len(rows)-1 {
		return fmt.Errorf("%s has %d encoders, the matrix %d", paperEncodersPath, len(all), len(rows)-1)
	}
	return nil
}
