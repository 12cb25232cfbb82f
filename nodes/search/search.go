// Package search implements the `search` block: EEVEE's subset search on a
// performance matrix (the stdlib paper matrix, a CSV, or a results
// block's output), writing the best combinations, population statistics,
// single-benchmark predictiveness, member importance and, for each k, a
// generated tier module.
package search

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gatepipe/gatepipe/eevee"
	"github.com/gatepipe/gatepipe/internal/readset"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/gocty"
)

// Kind is the search block kind. Stdlib resolves "stdlib/..." matrices.
type Kind struct {
	Stdlib fs.FS
}

// Name returns "search".
func (Kind) Name() string { return "search" }

// Version is bumped when results for an unchanged config would change.
func (Kind) Version() string { return "2" }

var spec = WithScoring(searchOnly)

var searchOnly = hcldec.ObjectSpec{
	"method":      &hcldec.AttrSpec{Name: "method", Type: cty.String},
	"k":           &hcldec.AttrSpec{Name: "k", Type: cty.List(cty.Number), Required: true},
	"generations": &hcldec.AttrSpec{Name: "generations", Type: cty.Number},
	"initial":     &hcldec.AttrSpec{Name: "initial", Type: cty.Number},
	"winners":     &hcldec.AttrSpec{Name: "winners", Type: cty.Number},
	"children":    &hcldec.AttrSpec{Name: "children", Type: cty.Number},
	"single":      &hcldec.AttrSpec{Name: "single", Type: cty.Bool},
	// scoring_seeds repeats the search under more scoring seeds and
	// reports how stable each k's best combination is.
	"scoring_seeds": &hcldec.AttrSpec{Name: "scoring_seeds", Type: cty.List(cty.Number)},
}

// ScoringSpec holds the attributes shared by every block that trains
// EEVEE meta-models (search, predict): the matrix and the scoring options.
var ScoringSpec = hcldec.ObjectSpec{
	"matrix":       &hcldec.AttrSpec{Name: "matrix", Type: cty.String, Required: true},
	"seed":         &hcldec.AttrSpec{Name: "seed", Type: cty.Number},
	"exclude":      &hcldec.AttrSpec{Name: "exclude", Type: cty.List(cty.String)},
	"missing":      &hcldec.AttrSpec{Name: "missing", Type: cty.String},
	"weighting":    &hcldec.AttrSpec{Name: "weighting", Type: cty.String},
	"targets":      &hcldec.AttrSpec{Name: "targets", Type: cty.String},
	"columns":      &hcldec.AttrSpec{Name: "columns", Type: cty.String},
	"splits":       &hcldec.AttrSpec{Name: "splits", Type: cty.Number},
	"test_size":    &hcldec.AttrSpec{Name: "test_size", Type: cty.Number},
	"hidden":       &hcldec.AttrSpec{Name: "hidden", Type: cty.Number},
	"activation":   &hcldec.AttrSpec{Name: "activation", Type: cty.String},
	"layer_norm":   &hcldec.AttrSpec{Name: "layer_norm", Type: cty.Bool},
	"epochs":       &hcldec.AttrSpec{Name: "epochs", Type: cty.Number},
	"lr":           &hcldec.AttrSpec{Name: "lr", Type: cty.Number},
	"weight_decay": &hcldec.AttrSpec{Name: "weight_decay", Type: cty.Number},
	"epoch":        &hcldec.AttrSpec{Name: "epoch", Type: cty.String},
	"inner_val":    &hcldec.AttrSpec{Name: "inner_val", Type: cty.Number},
}

// WithScoring returns s extended with ScoringSpec.
func WithScoring(s hcldec.ObjectSpec) hcldec.ObjectSpec {
	out := hcldec.ObjectSpec{}
	for k, v := range s {
		out[k] = v
	}
	for k, v := range ScoringSpec {
		out[k] = v
	}
	return out
}

// IsolatedProcess: meta-model training runs in its own process by default.
func (Kind) IsolatedProcess() bool { return true }

// Spec returns the block schema.
func (Kind) Spec() hcldec.Spec { return spec }

// OutputType is the value other blocks see.
func (Kind) OutputType() cty.Type {
	return cty.Object(map[string]cty.Type{
		"path":   cty.String,
		"tiers":  cty.Map(cty.String),
		"best":   cty.Map(cty.List(cty.String)),
		"scores": cty.Map(cty.Number),
		// consensus is, per k, the benchmarks chosen most often over the
		// scoring seeds (the best combination without scoring_seeds).
		"consensus": cty.Map(cty.List(cty.String)),
	})
}

// config holds the search-specific attributes.
type config struct {
	Method      *string `cty:"method"`
	K           []int   `cty:"k"`
	Generations *int    `cty:"generations"`
	Initial     *int    `cty:"initial"`
	Winners     *int    `cty:"winners"`
	Children    *int    `cty:"children"`
	Single      *bool   `cty:"single"`
	Seeds       []int64 `cty:"scoring_seeds"`
}

// Scoring is the decoded ScoringSpec.
type Scoring struct {
	Matrix      string   `cty:"matrix"`
	Seed        *int64   `cty:"seed"`
	Exclude     []string `cty:"exclude"`
	Missing     *string  `cty:"missing"`
	Weighting   *string  `cty:"weighting"`
	Targets     *string  `cty:"targets"`
	Columns     *string  `cty:"columns"`
	Splits      *int     `cty:"splits"`
	TestSize    *float64 `cty:"test_size"`
	Hidden      *int     `cty:"hidden"`
	Activation  *string  `cty:"activation"`
	LayerNorm   *bool    `cty:"layer_norm"`
	Epochs      *int     `cty:"epochs"`
	LR          *float64 `cty:"lr"`
	WeightDecay *float64 `cty:"weight_decay"`
	Epoch       *string  `cty:"epoch"`
	InnerVal    *float64 `cty:"inner_val"`
}

// subObject keeps the attributes of v that names lists.
func subObject[V any](v cty.Value, names map[string]V) cty.Value {
	attrs := map[string]cty.Value{}
	for name := range names {
		attrs[name] = v.GetAttr(name)
	}
	return cty.ObjectVal(attrs)
}

// Node is a decoded search block.
type Node struct {
	Source
	single bool
	search eevee.SearchOptions
	// seeds are the scoring seeds of a stability analysis: the block's
	// own seed first, then scoring_seeds (none: no analysis).
	seeds []uint64
}

// Source is a matrix with the options to score it, shared by search and
// predict.
type Source struct {
	stdlib  fs.FS
	matrix  string // resolved path, "stdlib/..." or absolute
	missing string
	// Opts are the scoring options.
	Opts eevee.Options
}

// DecodeScoring reads the ScoringSpec attributes of an evaluated block.
func DecodeScoring(v cty.Value, decl nodes.Decl, stdlib fs.FS) (Source, hcl.Diagnostics) {
	var cfg Scoring
	if err := gocty.FromCtyValue(subObject(v, ScoringSpec), &cfg); err != nil {
		return Source{}, hcl.Diagnostics{decl.Errorf("matrix", "Invalid scoring options", "%s", err)}
	}
	src := Source{stdlib: stdlib, matrix: cfg.Matrix, missing: "error", Opts: eevee.Defaults()}
	if !strings.HasPrefix(src.matrix, nodes.StdlibPrefix) && !filepath.IsAbs(src.matrix) {
		src.matrix = filepath.Join(decl.Dir, src.matrix)
	}
	o := &src.Opts
	setS := func(dst *string, p *string) {
		if p != nil {
			*dst = *p
		}
	}
	setI := func(dst *int, p *int) {
		if p != nil {
			*dst = *p
		}
	}
	setF := func(dst *float64, p *float64) {
		if p != nil {
			*dst = *p
		}
	}
	setS(&src.missing, cfg.Missing)
	setS(&o.Weighting, cfg.Weighting)
	setS(&o.Targets, cfg.Targets)
	setS(&o.Columns, cfg.Columns)
	setS(&o.Activation, cfg.Activation)
	setS(&o.Epoch, cfg.Epoch)
	setI(&o.Splits, cfg.Splits)
	setI(&o.Hidden, cfg.Hidden)
	setI(&o.Epochs, cfg.Epochs)
	setF(&o.TestSize, cfg.TestSize)
	setF(&o.LR, cfg.LR)
	setF(&o.WeightDecay, cfg.WeightDecay)
	setF(&o.InnerVal, cfg.InnerVal)
	if cfg.LayerNorm != nil {
		o.LayerNorm = *cfg.LayerNorm
	}
	o.Exclude = cfg.Exclude
	if cfg.Seed != nil {
		o.Seed = uint64(*cfg.Seed)
	}
	var diags hcl.Diagnostics
	if err := o.Validate(); err != nil {
		diags = append(diags, decl.Errorf("weighting", "Invalid scoring option", "%s.", err))
	}
	if src.missing != "error" && src.missing != "drop_models" && src.missing != "drop_columns" {
		diags = append(diags, decl.Errorf("missing", "Invalid missing", "missing must be \"error\", \"drop_models\" or \"drop_columns\", not %q. Missing cells are never filled with a constant.", src.missing))
	}
	return src, diags
}

// Decode validates the configuration and applies the defaults (the GATE
// authors' scoring; the paper's evolution settings).
func (k Kind) Decode(v cty.Value, decl nodes.Decl) (nodes.Node, hcl.Diagnostics) {
	var cfg config
	if err := gocty.FromCtyValue(subObject(v, searchOnly), &cfg); err != nil {
		return nil, hcl.Diagnostics{decl.Errorf("k", "Invalid search block", "%s", err)}
	}
	src, diags := DecodeScoring(v, decl, k.Stdlib)
	if cfg.Method != nil && *cfg.Method != "eevee" {
		diags = append(diags, decl.Errorf("method", "Unsupported search method", "method %q is not supported; the only method is \"eevee\".", *cfg.Method))
	}
	n := &Node{Source: src, single: true, search: eevee.DefaultSearch(cfg.K...)}
	n.search.Seed = src.Opts.Seed
	if cfg.Single != nil {
		n.single = *cfg.Single
	}
	if len(cfg.Seeds) > 0 {
		n.seeds = []uint64{src.Opts.Seed}
		for _, s := range cfg.Seeds {
			if s < 0 {
				diags = append(diags, decl.Errorf("scoring_seeds", "Invalid scoring seed", "scoring seeds are whole numbers from 0, not %d.", s))
				continue
			}
			if !slices.Contains(n.seeds, uint64(s)) {
				n.seeds = append(n.seeds, uint64(s))
			}
		}
		if len(n.seeds) < 2 {
			diags = append(diags, decl.Errorf("scoring_seeds", "Too few scoring seeds", "scoring_seeds needs a seed other than the block's seed (%d) to compare with.", src.Opts.Seed))
		}
	}
	setI := func(dst *int, p *int) {
		if p != nil {
			*dst = *p
		}
	}
	setI(&n.search.Generations, cfg.Generations)
	setI(&n.search.Initial, cfg.Initial)
	setI(&n.search.Winners, cfg.Winners)
	setI(&n.search.Children, cfg.Children)
	if len(cfg.K) == 0 {
		diags = append(diags, decl.Errorf("k", "Missing k", "k lists the subset sizes to search, e.g. [8, 15, 21] or range(2, 23)."))
	}
	for _, kv := range cfg.K {
		if kv < 1 {
			diags = append(diags, decl.Errorf("k", "Invalid k", "every k must be at least 1, not %d.", kv))
		}
	}
	s := n.search
	if s.Generations < 0 || s.Initial < 1 || s.Winners < 1 || s.Children < 0 {
		diags = append(diags, decl.Errorf("generations", "Invalid evolution settings", "initial and winners must be at least 1; generations and children at least 0."))
	}
	return n, diags
}

// DefaultResources: scoring uses every CPU it is given.
func (n *Node) DefaultResources() nodes.Resources { return nodes.Resources{CPUs: 1 << 10} }

func (n *Source) readMatrix() ([]byte, error) {
	if rel, ok := nodes.StdlibPath(n.matrix); ok {
		if n.stdlib == nil {
			return nil, fmt.Errorf("no stdlib embedded to read %s", n.matrix)
		}
		return fs.ReadFile(n.stdlib, rel)
	}
	return os.ReadFile(n.matrix)
}

// Fingerprint hashes the matrix contents.
func (n *Source) Fingerprint(ctx context.Context, w io.Writer) error {
	if _, std := nodes.StdlibPath(n.matrix); !std {
		readset.Add(ctx, n.matrix)
	}
	data, err := n.readMatrix()
	if err != nil {
		return fmt.Errorf("matrix: %w", err)
	}
	fmt.Fprintf(w, "matrix %d\n", len(data))
	_, err = w.Write(data)
	return err
}

// Matrix returns the matrix reference as configured.
func (n *Source) Matrix() string { return n.matrix }

// LoadMatrix reads and checks the matrix, applying the missing policy.
func (n *Source) LoadMatrix() (*eevee.Matrix, error) {
	data, err := n.readMatrix()
	if err != nil {
		return nil, err
	}
	m, err := eevee.LoadCSV(bytes.NewReader(data), filepath.Base(n.matrix))
	if err != nil {
		return nil, err
	}
	if miss := m.Missing(); len(miss) > 0 {
		switch n.missing {
		case "drop_models":
			m = m.DropMissing(true)
		case "drop_columns":
			m = m.DropMissing(false)
		default:
			return nil, fmt.Errorf("%s has %d missing cells (first: %s); set missing = \"drop_models\" or \"drop_columns\" to search without them", filepath.Base(n.matrix), len(miss), miss[0])
		}
	}
	return m, nil
}
