// Package reportnode implements the `report` block: tables, figures and a
// self-contained HTML report from a performance matrix, optionally with an
// EEVEE search's results and the GATE paper's published summary rows.
package reportnode

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gatepipe/gatepipe/eevee"
	"github.com/gatepipe/gatepipe/internal/readset"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/nodes/predict"
	"github.com/gatepipe/gatepipe/report"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"
)

// Kind is the report block kind.
type Kind struct{ Stdlib fs.FS }

// Name returns "report".
func (Kind) Name() string { return "report" }

// Version is bumped when outputs for an unchanged config would change.
func (Kind) Version() string { return "4" } // 4: the placement leads; protocol, scale and caveat; every measured cell

var spec = hcldec.ObjectSpec{
	"matrix":    &hcldec.AttrSpec{Name: "matrix", Type: cty.String},
	"paper":     &hcldec.AttrSpec{Name: "paper", Type: cty.Bool},
	"tiers":     &hcldec.AttrSpec{Name: "tiers", Type: cty.Map(cty.List(cty.String))},
	"search":    &hcldec.AttrSpec{Name: "search", Type: cty.String},
	"reference": &hcldec.AttrSpec{Name: "reference", Type: cty.String},
	"compare":   &hcldec.AttrSpec{Name: "compare", Type: cty.List(cty.String)},
	"title":     &hcldec.AttrSpec{Name: "title", Type: cty.String},
	// protocol, scale and caveat head the report: what trained the
	// results (the tiers' adapters), at which sizes, and why they may not
	// compare with the paper's.
	"protocol": &hcldec.AttrSpec{Name: "protocol", Type: cty.String},
	"scale":    &hcldec.AttrSpec{Name: "scale", Type: cty.String},
	"caveat":   &hcldec.AttrSpec{Name: "caveat", Type: cty.String},
	// predictions lists predict blocks' output directories: each adds its
	// model as a column, predicted cells told apart from measured ones.
	"predictions": &hcldec.AttrSpec{Name: "predictions", Type: cty.List(cty.String)},
	// runs lists train (or trainer) output directories to draw curves for.
	"runs": &hcldec.AttrSpec{Name: "runs", Type: cty.List(cty.String)},
	// transferability, probes and episodes list those blocks' output
	// directories (their path attribute).
	"transferability": &hcldec.AttrSpec{Name: "transferability", Type: cty.List(cty.String)},
	"probes":          &hcldec.AttrSpec{Name: "probes", Type: cty.List(cty.String)},
	"episodes":        &hcldec.AttrSpec{Name: "episodes", Type: cty.List(cty.String)},
}

// Spec returns the block schema.
func (Kind) Spec() hcldec.Spec { return spec }

// OutputType is the value other blocks see.
func (Kind) OutputType() cty.Type {
	return cty.Object(map[string]cty.Type{"path": cty.String, "html": cty.String, "markdown": cty.String, "latex": cty.String})
}

// Node is a decoded report block.
type Node struct {
	std    fs.FS
	matrix string
	paper  bool
	tiers  map[string][]string
	search string
	preds  []string
	runs   []string
	// evaluation output directories: transferability, probes, episodes.
	evals   [3][]string
	options report.Options
}

// Decode validates the configuration.
func (k Kind) Decode(v cty.Value, decl nodes.Decl) (nodes.Node, hcl.Diagnostics) {
	n := &Node{std: k.Stdlib, tiers: map[string][]string{}}
	resolve := func(p string) string {
		if strings.HasPrefix(p, nodes.StdlibPrefix) || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(decl.Dir, p)
	}
	if m := v.GetAttr("matrix"); !m.IsNull() {
		n.matrix = resolve(m.AsString())
	}
	for i, name := range []string{"transferability", "probes", "episodes"} {
		if a := v.GetAttr(name); !a.IsNull() {
			for _, p := range a.AsValueSlice() {
				n.evals[i] = append(n.evals[i], resolve(p.AsString()))
			}
		}
	}
	if n.matrix == "" && len(n.evals[0])+len(n.evals[1])+len(n.evals[2]) == 0 {
		return n, hcl.Diagnostics{decl.Errorf("matrix", "Nothing to report", "A report needs a matrix (a results block's matrix, or a CSV), or transferability, probes or episodes to show.")}
	}
	if a := v.GetAttr("paper"); !a.IsNull() {
		n.paper = a.True()
	}
	if a := v.GetAttr("tiers"); !a.IsNull() {
		for it := a.ElementIterator(); it.Next(); {
			key, list := it.Element()
			for _, b := range list.AsValueSlice() {
				n.tiers[key.AsString()] = append(n.tiers[key.AsString()], b.AsString())
			}
		}
	}
	if a := v.GetAttr("search"); !a.IsNull() {
		n.search = resolve(a.AsString())
	}
	if a := v.GetAttr("reference"); !a.IsNull() {
		n.options.Reference = a.AsString()
	}
	if a := v.GetAttr("title"); !a.IsNull() {
		n.options.Title = a.AsString()
	}
	for name, dst := range map[string]*string{"protocol": &n.options.Protocol, "scale": &n.options.Scale, "caveat": &n.options.Caveat} {
		if a := v.GetAttr(name); !a.IsNull() {
			*dst = a.AsString()
		}
	}
	if a := v.GetAttr("runs"); !a.IsNull() {
		for _, p := range a.AsValueSlice() {
			n.runs = append(n.runs, resolve(p.AsString()))
		}
	}
	if a := v.GetAttr("predictions"); !a.IsNull() {
		for _, p := range a.AsValueSlice() {
			n.preds = append(n.preds, resolve(p.AsString()))
		}
	}
	if a := v.GetAttr("compare"); !a.IsNull() {
		for _, m := range a.AsValueSlice() {
			n.options.Compare = append(n.options.Compare, m.AsString())
		}
	}
	if n.matrix == "" && !n.paper && (len(n.preds) > 0 || len(n.tiers) > 0 || n.search != "" || len(n.options.Compare) > 0) {
		return n, hcl.Diagnostics{decl.Errorf("matrix", "Missing matrix", "predictions, tiers, search and compare are shown against a performance matrix; set matrix.")}
	}
	return n, nil
}

func (n *Node) read(p string) ([]byte, error) {
	if rel, ok := nodes.StdlibPath(p); ok {
		return fs.ReadFile(n.std, rel)
	}
	return os.ReadFile(p)
}

// Fingerprint hashes the matrix and the search results read.
func (n *Node) Fingerprint(ctx context.Context, w io.Writer) error {
	var paths []string
	if n.matrix != "" {
		paths = append(paths, n.matrix)
	}
	for i, file := range []string{"transferability.json", "probe.json", "episodes.json"} {
		for _, d := range n.evals[i] {
			paths = append(paths, filepath.Join(d, file))
		}
	}
	if n.search != "" {
		paths = append(paths, filepath.Join(n.search, "search.json"))
	}
	for _, d := range n.preds {
		paths = append(paths, filepath.Join(d, "predictions.csv"), filepath.Join(d, "prediction.json"))
	}
	for _, d := range n.runs {
		paths = append(paths, filepath.Join(d, "metrics.json"))
	}
	for _, p := range paths {
		if _, std := nodes.StdlibPath(p); !std {
			readset.Add(ctx, p)
		}
		data, err := n.read(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s %d\n", filepath.Base(p), len(data))
		w.Write(data)
	}
	return nil
}

// Input assembles the report input.
func (n *Node) Input() (report.Input, *report.Search, error) {
	var in report.Input
	if n.paper {
		var err error
		if in, err = report.PaperInput(n.std); err != nil {
			return in, nil, err
		}
	}
	if n.matrix != "" {
		data, err := n.read(n.matrix)
		if err != nil {
			return in, nil, err
		}
		if in.Matrix, err = eevee.LoadCSV(bytes.NewReader(data), filepath.Base(n.matrix)); err != nil {
			return in, nil, err
		}
		if in.Seeds, err = report.LoadSeedStats(data, in.Matrix); err != nil {
			return in, nil, fmt.Errorf("%s: %w", filepath.Base(n.matrix), err)
		}
	}
	if in.Tiers == nil {
		in.Tiers = map[string][]string{}
	}
	if _, ok := in.Tiers["Full"]; !ok && n.std != nil {
		// GATE means average GATE's benchmarks only: a fashion-mnist or
		// procedural column is never part of the Full GATE Mean.
		gate, err := report.GATEBenchmarks(n.std)
		if err != nil {
			return in, nil, err
		}
		in.Tiers["Full"] = gate
	}
	names := make([]string, 0, len(n.tiers))
	for k := range n.tiers {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		in.Tiers[k] = n.tiers[k]
	}
	for _, dir := range n.preds {
		if err := addPredictions(&in, dir); err != nil {
			return in, nil, err
		}
	}
	var search *report.Search
	if n.search != "" {
		data, err := os.ReadFile(filepath.Join(n.search, "search.json"))
		if err != nil {
			return in, nil, fmt.Errorf("search results: %w", err)
		}
		search = &report.Search{}
		if err := json.Unmarshal(data, search); err != nil {
			return in, nil, fmt.Errorf("search results: %w", err)
		}
	}
	return in, search, nil
}

// addPredictions adds a predict node's output in dir to in: its
// predicted scores (predictions.csv) and, from prediction.json, its
// placement and the predictor's completion or leave-one-model-out
// results.
func addPredictions(in *report.Input, dir string) error {
	var meta predict.Report
	data, err := os.ReadFile(filepath.Join(dir, "prediction.json"))
	if err == nil {
		err = json.Unmarshal(data, &meta)
	}
	if err != nil {
		return fmt.Errorf("predictions %s: %w", dir, err)
	}
	f, err := os.Open(filepath.Join(dir, "predictions.csv"))
	if err != nil {
		return fmt.Errorf("predictions %s: %w", dir, err)
	}
	err = in.AddPredicted(meta.Model, f)
	f.Close()
	if err != nil {
		return fmt.Errorf("predictions %s: %w", dir, err)
	}
	in.Placements = append(in.Placements, placement(meta))
	switch {
	case meta.Completion != nil:
		in.Predictors = append(in.Predictors, report.Predictor{Model: meta.Model, Method: meta.Method,
			MaskedRatio: meta.Completion.MaskedRatio, Active: meta.Completion.Active})
	case len(meta.Validation) > 0:
		in.Predictors = append(in.Predictors, report.Predictor{Model: meta.Model, Method: meta.Method, LeaveOneOut: meta.Validation, LOOCommand: meta.LOOCommand})
	}
	return nil
}

// placement is the report's view of a predict block's placement.
func placement(meta predict.Report) report.Placement {
	p := report.Placement{Model: meta.Model, Method: meta.Method, Position: meta.Placement.Position, Of: meta.Placement.Of,
		Best: meta.Interval.Best, Worst: meta.Interval.Worst, Columns: meta.Columns, PositionError: math.NaN()}
	if meta.Method == "eevee" {
		p.Tier = meta.Tier
	}
	if len(meta.Validation) > 0 {
		p.PositionError = meta.Validation[0].PositionError
	}
	for _, b := range meta.Measured {
		mb := report.MeasuredBenchmark{Benchmark: b.Benchmark, Category: b.Category, Placed: b.Placed, Input: b.Input, Reason: b.Reason}
		for _, m := range b.Metrics {
			mb.Metrics = append(mb.Metrics, report.MeasuredMetric{Metric: m.Metric, Value: m.Value, HigherIsBetter: m.HigherIsBetter, Placed: m.Placed})
		}
		p.Measured = append(p.Measured, mb)
	}
	return p
}

// Run writes the report.
func (n *Node) Run(ctx context.Context, env *nodes.Env) (cty.Value, error) {
	in, search, err := n.Input()
	if err != nil {
		return cty.NilVal, err
	}
	o := n.options
	for _, dir := range n.runs {
		r, err := report.LoadRun(dir)
		if err != nil {
			return cty.NilVal, fmt.Errorf("run %s: %w", dir, err)
		}
		o.Runs = append(o.Runs, r)
	}
	if o.Evaluations, err = report.LoadEvaluations(n.evals[0], n.evals[1], n.evals[2]); err != nil {
		return cty.NilVal, err
	}
	version := env.Version
	if version == "" {
		version = "dev"
	}
	o.Meta = append(o.Meta, [2]string{"gatepipe", version}, [2]string{"pipeline node", env.Addr.String()},
		[2]string{"action ID", env.ActionID})
	if n.matrix != "" {
		o.Meta = append(o.Meta, [2]string{"matrix", filepath.Base(n.matrix)})
	}
	out, err := report.Write(env.OutDir, in, search, o)
	if err != nil {
		return cty.NilVal, err
	}
	// out.HTML is in the work directory, which moves into the cache once
	// the node succeeds: apply prints the final path, and
	// 'gatepipe open' finds it later.
	env.Log.Info().Int("figures", len(out.Figures)).Msg("report written (apply prints its path; later, 'gatepipe open " + env.Addr.String() + "')")
	return cty.ObjectVal(map[string]cty.Value{
		"path": cty.StringVal(env.OutDir), "html": cty.StringVal(out.HTML),
		"markdown": cty.StringVal(out.Markdown), "latex": cty.StringVal(out.LaTeX),
	}), nil
}
