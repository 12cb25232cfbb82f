// Package predict implements the `predict` block: given an encoder's
// measured results on a tier's benchmarks, predict its results on the whole
// pool with EEVEE meta-models trained on the pool matrix (the ensemble over
// cross-validation splits gives a spread), place it among the pool's
// models overall and per task group, and validate the predictor by
// leave-one-model-out against two baselines.
package predict

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gatepipe/gatepipe/eevee"
	"github.com/gatepipe/gatepipe/internal/readset"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/nodes/search"
	"github.com/gatepipe/gatepipe/pmf"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"
)

// Kind is the predict block kind.
type Kind struct{ Stdlib fs.FS }

// Name returns "predict".
func (Kind) Name() string { return "predict" }

// Version is bumped when outputs for an unchanged config would change.
func (Kind) Version() string { return "4" } // 4: the placement's interval, the measured benchmarks, every measured cell in predictions.csv; leave-one-model-out on the scoring's columns

var spec = search.WithScoring(hcldec.ObjectSpec{
	"tier":     &hcldec.AttrSpec{Name: "tier", Type: cty.List(cty.String)},
	"measured": &hcldec.AttrSpec{Name: "measured", Type: cty.String, Required: true},
	"model":    &hcldec.AttrSpec{Name: "model", Type: cty.String},
	"validate": &hcldec.AttrSpec{Name: "validate", Type: cty.Bool},
	"method":   &hcldec.AttrSpec{Name: "method", Type: cty.String},
	"latent":   &hcldec.AttrSpec{Name: "latent", Type: cty.Number},
	"partial":  &hcldec.AttrSpec{Name: "partial", Type: cty.Bool},
})

// IsolatedProcess: meta-model training runs in its own process by default.
func (Kind) IsolatedProcess() bool { return true }

// Spec returns the block schema.
func (Kind) Spec() hcldec.Spec { return spec }

// OutputType is the value other blocks see.
func (Kind) OutputType() cty.Type {
	return cty.Object(map[string]cty.Type{
		"path":      cty.String,
		"model":     cty.String,
		"position":  cty.Number,
		"of":        cty.Number,
		"mean_rank": cty.Number,
		"groups":    cty.Map(cty.Number),
		"interval":  cty.List(cty.Number),
	})
}

// Node is a decoded predict block.
type Node struct {
	search.Source
	tier     []string
	measured string
	model    string
	validate bool
	// method is "eevee" (the meta-model) or a pmf method name.
	method string
	latent int
	// partial lets a tier benchmark measured on some of its metrics be
	// predicted without the others (a warning names them); otherwise that
	// is an error.
	partial bool
}

// Decode validates the configuration.
func (k Kind) Decode(v cty.Value, decl nodes.Decl) (nodes.Node, hcl.Diagnostics) {
	src, diags := search.DecodeScoring(v, decl, k.Stdlib)
	n := &Node{Source: src, validate: true, method: "eevee", latent: pmf.DefaultOptions().Latent}
	if m := v.GetAttr("method"); !m.IsNull() {
		n.method = m.AsString()
		if _, err := pmf.New(n.method, pmf.DefaultOptions()); err != nil && n.method != "eevee" {
			diags = append(diags, decl.Errorf("method", "Unknown prediction method", "method must be eevee (the meta-model) or one of %s, not %q.", strings.Join(pmf.Methods(), ", "), n.method))
		}
	}
	if l := v.GetAttr("latent"); !l.IsNull() {
		f, _ := l.AsBigFloat().Int64()
		n.latent = int(f)
		if n.latent < 1 || n.latent > 200 {
			diags = append(diags, decl.Errorf("latent", "Invalid latent dimension", "latent must be between 1 and 200."))
		}
	}
	if t := v.GetAttr("tier"); !t.IsNull() {
		for _, b := range t.AsValueSlice() {
			n.tier = append(n.tier, b.AsString())
		}
	}
	if len(n.tier) == 0 && n.method == "eevee" {
		diags = append(diags, decl.Errorf("tier", "Empty tier", "tier lists the benchmarks the encoder was measured on, e.g. module.small.benchmarks (the eevee method predicts from them)."))
	}
	n.measured = v.GetAttr("measured").AsString()
	if !filepath.IsAbs(n.measured) {
		n.measured = filepath.Join(decl.Dir, n.measured)
	}
	if m := v.GetAttr("model"); !m.IsNull() {
		n.model = m.AsString()
	}
	if val := v.GetAttr("validate"); !val.IsNull() {
		n.validate = val.True()
	}
	if p := v.GetAttr("partial"); !p.IsNull() {
		n.partial = p.True()
	}
	return n, diags
}

// Fingerprint hashes the pool matrix and the measured results.
func (n *Node) Fingerprint(ctx context.Context, w io.Writer) error {
	if err := n.Source.Fingerprint(ctx, w); err != nil {
		return err
	}
	data, err := readset.ReadFile(ctx, n.measured)
	if err != nil {
		return fmt.Errorf("measured results: %w", err)
	}
	fmt.Fprintf(w, "measured %d\n", len(data))
	_, err = w.Write(data)
	return err
}

// Report is prediction.json.
type Report struct {
	Model  string   `json:"model"`
	Method string   `json:"method"`
	Tier   []string `json:"tier"`
	// Columns are the pool columns the placement ranks (the scoring's
	// columns: all, primary or higher_is_better).
	Columns   string          `json:"columns"`
	Placement eevee.Placement `json:"placement"`
	// Interval is the placement's range under the prediction's spread.
	Interval Interval `json:"placement_interval"`
	// Measured lists the benchmarks the encoder was measured on, each
	// with whether the placement ranks it and, if not, why.
	Measured   []Benchmark     `json:"measured"`
	Validation []eevee.LOMORow `json:"leave_one_model_out,omitempty"`
	// LOOCommand is the `gatepipe eevee loo` command line computing
	// Validation ("" when the block's options have no flag there).
	LOOCommand string `json:"loo_command,omitempty"`
	// Completion validates a pmf method on the pool.
	Completion *Validation `json:"completion,omitempty"`
}

// Run predicts, places and (optionally) validates.
func (n *Node) Run(ctx context.Context, env *nodes.Env) (cty.Value, error) {
	pool, err := n.LoadMatrix()
	if err != nil {
		return cty.NilVal, err
	}
	data, err := os.ReadFile(n.measured)
	if err != nil {
		return cty.NilVal, err
	}
	mine, err := eevee.LoadCSV(bytes.NewReader(data), filepath.Base(n.measured))
	if err != nil {
		return cty.NilVal, err
	}
	p, err := eevee.NewProblem(pool, n.Opts)
	if err != nil {
		return cty.NilVal, err
	}
	// The meta-model may keep only some of the pool's columns (columns =
	// "primary", say): EEVEE's measured values align with those, matrix
	// completion's with the whole pool.
	aligned := pool
	if n.method == "eevee" {
		aligned = p.Matrix
	}
	row, name, err := n.measuredRow(aligned, mine)
	if err != nil {
		return cty.NilVal, err
	}
	partial, err := checkMeasured(data, filepath.Base(n.measured), name, aligned, n.tier)
	if err != nil {
		return cty.NilVal, err
	}
	if partial != "" {
		if !n.partial {
			return cty.NilVal, errors.New(partial + "; or set partial = true to predict without them")
		}
		env.Log.Warn().Msg(partial)
	}
	if p.Warning != "" {
		env.Log.Warn().Msg(p.Warning)
	}
	env.Progress.Update(0, 0, "predicting")
	var pred *eevee.Prediction
	var check *Validation
	if n.method == "eevee" {
		if pred, err = n.predictFromTier(env, p, row); err != nil {
			return cty.NilVal, err
		}
	} else if pred, check, err = n.complete(ctx, env, pool, row); err != nil {
		return cty.NilVal, err
	}
	// Place the model with its measured results where it has them and
	// predicted ones elsewhere, on the scoring's columns (matrix
	// completion predicts every pool column).
	combined := append([]float64(nil), pred.Mean...)
	spread := append([]float64(nil), pred.Std...)
	for c, v := range row {
		if !math.IsNaN(v) {
			combined[c], spread[c] = v, 0
		}
	}
	combined = project(aligned.Columns, p.Matrix.Columns, combined)
	spread = project(aligned.Columns, p.Matrix.Columns, spread)
	rep := Report{Model: name, Method: n.method, Tier: n.tier, Columns: n.Opts.Columns, Placement: p.Place(combined), Completion: check}
	rep.Interval.Best, rep.Interval.Worst = p.PlaceRange(combined, spread)
	tier := n.tier
	if n.method != "eevee" {
		tier = nil // matrix completion predicts from every measured cell
	}
	rep.Measured = measuredBenchmarks(pool, p.Matrix, mine, slices.Index(mine.Models, name), tier, n.Opts.Columns)
	if n.validate && n.method == "eevee" {
		env.Progress.Update(0, 0, "leave-one-model-out")
		if rep.Validation, err = eevee.LeaveOneModelOut(pool, n.Opts, n.tier); err != nil {
			return cty.NilVal, fmt.Errorf("leave-one-model-out: %w", err)
		}
		rep.LOOCommand = looCommand(n.Matrix(), n.Opts, n.tier)
		logValidation(env, rep.Validation)
	}
	if err := writePredictions(filepath.Join(env.OutDir, "predictions.csv"), pred, row, pool, mine, name); err != nil {
		return cty.NilVal, fmt.Errorf("predictions.csv: %w", err)
	}
	return placementValue(env, rep)
}

// predictFromTier predicts the pool's columns from the measured row's
// tier columns with EEVEE's meta-model (those not measured left out,
// with a warning).
func (n *Node) predictFromTier(env *nodes.Env, p *eevee.Problem, row []float64) (*eevee.Prediction, error) {
	tier, err := p.Combo(n.tier)
	if err != nil {
		return nil, fmt.Errorf("tier: %w", err)
	}
	pred, err := p.Predict(tier, row)
	if err != nil {
		return nil, err
	}
	if len(pred.Unmeasured) > 0 {
		env.Log.Warn().Strs("columns", pred.Unmeasured).Msgf("%d tier columns were not measured; the prediction goes without them", len(pred.Unmeasured))
	}
	return pred, nil
}

// placementValue writes prediction.json and returns the block's value.
func placementValue(env *nodes.Env, rep Report) (cty.Value, error) {
	name := rep.Model
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return cty.NilVal, fmt.Errorf("prediction.json: %w", err)
	}
	if err := os.WriteFile(filepath.Join(env.OutDir, "prediction.json"), js, 0o644); err != nil {
		return cty.NilVal, err
	}
	groups := map[string]cty.Value{}
	for g, pos := range rep.Placement.Groups {
		groups[g] = cty.NumberFloatVal(pos)
	}
	env.Log.Info().Str("model", name).Int("position", rep.Placement.Position).Int("of", rep.Placement.Of).
		Str("interval", fmt.Sprintf("%d-%d", rep.Interval.Best, rep.Interval.Worst)).Msg("predicted placement")
	for _, b := range rep.Measured {
		if !b.Placed {
			env.Log.Warn().Str("benchmark", b.Benchmark).Msg("measured but left out of the placement: " + b.Reason)
		}
	}
	return cty.ObjectVal(map[string]cty.Value{
		"path": cty.StringVal(env.OutDir), "model": cty.StringVal(name),
		"position": cty.NumberIntVal(int64(rep.Placement.Position)), "of": cty.NumberIntVal(int64(rep.Placement.Of)),
		"mean_rank": cty.NumberFloatVal(rep.Placement.MeanRank), "groups": cty.MapVal(groups),
		"interval": cty.ListVal([]cty.Value{cty.NumberIntVal(int64(rep.Interval.Best)), cty.NumberIntVal(int64(rep.Interval.Worst))}),
	}), nil
}

// measuredRow aligns the measured model's results with the pool's columns
// (NaN where not measured), matching benchmark:metric exactly.
func (n *Node) measuredRow(pool, mine *eevee.Matrix) ([]float64, string, error) {
	mi := 0
	if n.model != "" {
		mi = -1
		for i, m := range mine.Models {
			if m == n.model {
				mi = i
			}
		}
		if mi < 0 {
			return nil, "", fmt.Errorf("%s has no model %q (it has %v)", filepath.Base(n.measured), n.model, mine.Models)
		}
	} else if len(mine.Models) > 1 {
		return nil, "", fmt.Errorf("%s holds %d models; choose one with model = \"...\"", filepath.Base(n.measured), len(mine.Models))
	}
	byName := map[string]float64{}
	for j, c := range mine.Columns {
		byName[c.Name()] = mine.Values[mi][j]
	}
	row := make([]float64, len(pool.Columns))
	for j, c := range pool.Columns {
		v, ok := byName[c.Name()]
		if !ok {
			v = math.NaN()
		}
		row[j] = v
	}
	if err := checkScales(pool, row); err != nil {
		return nil, "", err
	}
	return row, mine.Models[mi], nil
}

// checkScales refuses a measured value on another scale than the pool's
// column it is compared with: above 1 in a column of fractions and more
// than 10 times its median magnitude (a percentage against a fraction
// column, as ACDC's Dice once was), never a silent prediction. A value far below the column is not refused: an encoder may
// be that bad; nor is a loss.
func checkScales(pool *eevee.Matrix, row []float64) error {
	var bad []string
	for j, c := range pool.Columns {
		v := row[j]
		if math.IsNaN(v) || v == 0 || !c.HigherIsBetter {
			continue // a loss's scale is the training run's
		}
		var mags []float64
		for i := range pool.Models {
			if x := pool.Values[i][j]; !math.IsNaN(x) && !math.IsInf(x, 0) {
				mags = append(mags, math.Abs(x))
			}
		}
		if len(mags) == 0 {
			continue
		}
		sort.Float64s(mags)
		med, top := mags[len(mags)/2], mags[len(mags)-1]
		if top <= 1 && math.Abs(v) > 1 && math.Abs(v) > 10*med {
			bad = append(bad, fmt.Sprintf("%s measured %.4g, the paper's column %.4g-%.4g (median %.4g): %.0fx", c.Name(), v, mags[0], top, med, math.Abs(v)/med))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("measured results on another scale than the matrix's columns they are compared with (a percentage against a fraction?): %s", strings.Join(bad, "; "))
	}
	return nil
}

// logValidation prints the leave-one-model-out errors of the meta-model
// beside every baseline's, and warns when the strongest baseline does as
// well.
func logValidation(env *nodes.Env, rows []eevee.LOMORow) {
	for _, r := range rows {
		env.Log.Info().Str("method", r.Method).Str("mae", fmt.Sprintf("%.3f", r.MAE)).Str("median", fmt.Sprintf("%.3f", r.MedAE)).
			Str("rank_spearman", fmt.Sprintf("%.3f", r.RankRho)).Msg("leave-one-model-out error (column std units)")
	}
	verdict := eevee.BaselineVerdict(rows)
	if !eevee.BeatsBaselines(rows) {
		env.Log.Warn().Msg(verdict)
		return
	}
	env.Log.Info().Msg(verdict)
}

// writePredictions writes predictions.csv: each predicted column's
// prediction, spread and measured value, and then each column of the pool
// the prediction left out (a lower-is-better one under columns =
// "higher_is_better") that model name of mine was measured on, with its
// measured value alone.
func writePredictions(path string, pred *eevee.Prediction, measured []float64, pool, mine *eevee.Matrix, name string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	w.Write([]string{"category", "benchmark", "metric", "predicted", "spread", "measured", "higher_is_better"})
	idx := make([]int, len(pred.Columns))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return pred.Columns[idx[a]].Benchmark < pred.Columns[idx[b]].Benchmark })
	written := map[string]bool{}
	for _, c := range idx {
		col := pred.Columns[c]
		written[col.Name()] = true
		m := ""
		if !math.IsNaN(measured[c]) {
			m = strconv.FormatFloat(measured[c], 'g', 6, 64)
		}
		w.Write([]string{col.Category, col.Benchmark, col.Metric, strconv.FormatFloat(pred.Mean[c], 'g', 6, 64),
			strconv.FormatFloat(pred.Std[c], 'g', 4, 64), m, strconv.FormatBool(col.HigherIsBetter)})
	}
	rest := project(mine.Columns, pool.Columns, mine.Values[slices.Index(mine.Models, name)])
	for j, col := range pool.Columns {
		if v := rest[j]; !written[col.Name()] && !math.IsNaN(v) {
			w.Write([]string{col.Category, col.Benchmark, col.Metric, "", "", strconv.FormatFloat(v, 'g', 6, 64), strconv.FormatBool(col.HigherIsBetter)})
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
