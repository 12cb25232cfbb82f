// Package transfernode implements the `transferability` block: SITE
// metrics (LogME, LEEP, NCE, N-LEEP, H-score, TransRate, GBC, SFDA) for a
// zoo of encoders on one target task, judged against the models'
// fine-tuned accuracy beside the static-ranking and mean-rank baselines,
// as the SITE paper asks.
package transfernode

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/gatepipe/gatepipe/internal/readset"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/nodes/featureset"
	"github.com/gatepipe/gatepipe/transfer"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"
)

// Kind is the transferability block kind.
type Kind struct{}

// Name returns "transferability".
func (Kind) Name() string { return "transferability" }

// Version is bumped when outputs for an unchanged config would change
// (2: LogME keeps null directions when N > D; GBC runs with N < 64 < D).
func (Kind) Version() string { return "2" }

var spec = hcldec.ObjectSpec{
	"target":       &hcldec.AttrSpec{Name: "target", Type: cty.String},
	"models":       &hcldec.AttrSpec{Name: "models", Type: cty.DynamicPseudoType, Required: true},
	"static":       &hcldec.AttrSpec{Name: "static", Type: cty.List(cty.String)},
	"history":      &hcldec.AttrSpec{Name: "history", Type: cty.DynamicPseudoType},
	"metrics":      &hcldec.AttrSpec{Name: "metrics", Type: cty.List(cty.String)},
	"split":        &hcldec.AttrSpec{Name: "split", Type: cty.String},
	"max_examples": &hcldec.AttrSpec{Name: "max_examples", Type: cty.Number},
	"seed":         &hcldec.AttrSpec{Name: "seed", Type: cty.Number},
}

// Spec returns the block schema.
func (Kind) Spec() hcldec.Spec { return spec }

// OutputType: weighted_tau is keyed by metric and baseline.
func (Kind) OutputType() cty.Type {
	return cty.Object(map[string]cty.Type{"path": cty.String, "weighted_tau": cty.Map(cty.Number), "best": cty.String})
}

type model struct {
	name                    string
	features, probabilities string
	accuracy                float64
}

// Node is a decoded transferability block.
type Node struct {
	target, history, split string
	// inline is the history given as { dataset = { model = accuracy } }.
	inline          transfer.Table
	models          []model
	static, metrics []string
	maxExamples     int
	seed            uint64
}

// CheckPartial checks what it can before the references have values:
// every literal attribute, the number of models and the kinds of their
// references.
func (Kind) CheckPartial(v cty.Value, decl nodes.Decl) hcl.Diagnostics {
	return (&Node{}).read(v, decl, true)
}

// Decode validates the configuration.
func (Kind) Decode(v cty.Value, decl nodes.Decl) (nodes.Node, hcl.Diagnostics) {
	n := &Node{}
	return n, n.read(v, decl, false)
}

// read decodes the configuration; partial skips what is not known yet.
func (n *Node) read(v cty.Value, decl nodes.Decl, partial bool) hcl.Diagnostics {
	a := &featureset.Attrs{V: v, Decl: decl}
	n.target = a.Str("target", featureset.ModelName(decl))
	n.split = a.Str("split", "train")
	n.maxExamples = a.Int("max_examples", 0, 0)
	n.seed = uint64(a.Int("seed", 0, 0))
	n.static = a.Strs("static", nil)
	if h := v.GetAttr("history"); h.IsWhollyKnown() {
		n.readHistory(a)
	}
	n.metrics = a.Strs("metrics", transfer.MetricNames, transfer.MetricNames...)
	diags := a.Diags
	bad := func(format string, args ...any) {
		diags = append(diags, decl.Errorf("models", "Invalid models", format, args...))
	}
	m := v.GetAttr("models")
	if !m.IsKnown() {
		return diags
	}
	if m.IsNull() || !(m.Type().IsObjectType() || m.Type().IsMapType()) || m.LengthInt() < 3 {
		bad("models must map at least 3 models' names to { features = features.NAME, accuracy = NUMBER }; rank statistics need 3 or more.")
		return diags
	}
	withSource, known := 0, true
	for it := m.ElementIterator(); it.Next(); {
		k, e := it.Element()
		name := k.AsString()
		if !e.IsKnown() {
			known = false
			continue
		}
		md, source, d := readModel(name, e, decl, partial)
		diags = append(diags, d...)
		if source {
			withSource++
		}
		n.models = append(n.models, md)
	}
	if !known {
		return diags
	}
	// Sorted by name: the mean-rank baseline reads the models in this order.
	sort.Slice(n.models, func(i, j int) bool { return n.models[i].name < n.models[j].name })
	explicit := !v.GetAttr("metrics").IsNull()
	for _, mt := range n.metrics {
		if explicit && transfer.NeedsSource(mt) && withSource != len(n.models) {
			diags = append(diags, decl.Errorf("metrics", "Missing probabilities", "%s needs probabilities = features.NAME (output = \"probabilities\") for every model; %d of %d have them.", mt, withSource, len(n.models)))
		}
	}
	if withSource != len(n.models) {
		n.metrics = slices.DeleteFunc(n.metrics, transfer.NeedsSource)
	}
	for _, s := range n.static {
		if !slices.ContainsFunc(n.models, func(m model) bool { return m.name == s }) {
			diags = append(diags, decl.Errorf("static", "Invalid static", "static lists %q, which is not among the models.", s))
		}
	}
	return diags
}

// readModel reads one entry of models: { features, accuracy,
// probabilities (optional) }. With partial the references' types are
// checked, not their paths read.
func readModel(name string, e cty.Value, decl nodes.Decl, partial bool) (md model, source bool, diags hcl.Diagnostics) {
	bad := func(format string, args ...any) {
		diags = append(diags, decl.Errorf("models", "Invalid models", format, args...))
	}
	md.name = name
	if !e.Type().IsObjectType() || !e.Type().HasAttribute("features") {
		bad("models[%q] must be { features = features.NAME, accuracy = NUMBER }.", name)
		return md, false, diags
	}
	ref := func(attr, want string) string {
		if partial {
			diags = append(diags, featureset.CheckPartial(e, decl, attr)...)
			return ""
		}
		p, d := featureset.Path(e, decl, attr)
		if d.HasErrors() {
			bad("models[%q].%s must be %s.", name, attr, want)
		}
		return p
	}
	md.features = ref("features", "a features block (as in features = features.NAME)")
	acc := cty.NilVal
	if e.Type().HasAttribute("accuracy") {
		acc = e.GetAttr("accuracy")
	}
	switch {
	case acc == cty.NilVal || acc.IsNull() || (acc.IsKnown() && acc.Type() != cty.Number):
		bad("models[%q] needs accuracy, its fine-tuned accuracy on the target (the ground truth).", name)
	case acc.IsKnown():
		md.accuracy, _ = acc.AsBigFloat().Float64()
	}
	if e.Type().HasAttribute("probabilities") && !e.GetAttr("probabilities").IsNull() {
		md.probabilities = ref("probabilities", "a features block with output = \"probabilities\"")
		source = true
	}
	return md, source, diags
}

// Fingerprint hashes the history table; the features paths name their
// content.
func (n *Node) Fingerprint(ctx context.Context, w io.Writer) error {
	if n.history == "" {
		return nil
	}
	data, err := readset.ReadFile(ctx, n.history)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	_, err = w.Write(data)
	return err
}

// Row is one scorer (a metric or a baseline) judged against accuracy.
type Row struct {
	Name     string    `json:"name"`
	Baseline bool      `json:"baseline"`
	Scores   []float64 `json:"scores"`
	transfer.Judgement
	// BeatsStatic and BeatsMeanRank compare weighted tau with the
	// baselines' (nil when the baseline is absent).
	BeatsStatic   *bool  `json:"beats_static,omitempty"`
	BeatsMeanRank *bool  `json:"beats_mean_rank,omitempty"`
	Error         string `json:"error,omitempty"`
}

// Result is what transferability.json holds.
type Result struct {
	Target   string    `json:"target"`
	Models   []string  `json:"models"`
	Accuracy []float64 `json:"accuracy"`
	Examples int       `json:"examples"`
	Rows     []Row     `json:"rows"`
}

// Run scores every model with every metric and judges each metric.
func (n *Node) Run(ctx context.Context, env *nodes.Env) (cty.Value, error) {
	res := Result{Target: n.target}
	for _, m := range n.models {
		res.Models = append(res.Models, m.name)
		res.Accuracy = append(res.Accuracy, m.accuracy)
	}
	scores, errs, err := n.scoreAll(ctx, env, &res)
	if err != nil {
		return cty.NilVal, err
	}
	var static, meanRank *Row
	if len(n.static) > 0 {
		r := judged("static ranking", transfer.StaticScores(n.static, res.Models), res.Accuracy)
		r.Baseline = true
		static = &r
	}
	if n.history != "" || n.inline != nil {
		mr, err := n.meanRank(res.Models, res.Accuracy)
		if err != nil {
			return cty.NilVal, err
		}
		r := judged("mean rank", mr, res.Accuracy)
		r.Baseline = true
		meanRank = &r
	}
	taus := map[string]cty.Value{}
	best, bestTau := "", math.Inf(-1)
	for k, mt := range n.metrics {
		r := judged(mt, scores[k], res.Accuracy)
		r.Error = errs[k]
		if r.Error == "" {
			if static != nil {
				b := r.WeightedTau > static.WeightedTau
				r.BeatsStatic = &b
			}
			if meanRank != nil {
				b := r.WeightedTau > meanRank.WeightedTau
				r.BeatsMeanRank = &b
			}
			if r.WeightedTau > bestTau {
				best, bestTau = mt, r.WeightedTau
			}
			taus[mt] = cty.NumberFloatVal(r.WeightedTau)
		}
		res.Rows = append(res.Rows, r)
	}
	for _, b := range []*Row{static, meanRank} {
		if b != nil {
			res.Rows = append(res.Rows, *b)
			taus[b.Name] = cty.NumberFloatVal(b.WeightedTau)
		}
	}
	if err := featureset.WriteJSON(filepath.Join(env.OutDir, "transferability.json"), res); err != nil {
		return cty.NilVal, err
	}
	return cty.ObjectVal(map[string]cty.Value{
		"path": cty.StringVal(env.OutDir), "weighted_tau": mapOrEmpty(taus), "best": cty.StringVal(best),
	}), nil
}

// scoreAll scores every model with every metric: scores[metric][model],
// and each metric's failure (a singular fit, too few examples for
// N-LEEP's mixture: reported, not fatal for the others) in errs.
func (n *Node) scoreAll(ctx context.Context, env *nodes.Env, res *Result) (scores [][]float64, errs []string, err error) {
	scores = make([][]float64, len(n.metrics))
	errs = make([]string, len(n.metrics))
	for k := range scores {
		scores[k] = make([]float64, len(n.models))
	}
	for i, m := range n.models {
		env.Progress.Update(int64(i), int64(len(n.models)), "models")
		f, theta, z, err := n.load(m)
		if err != nil {
			return nil, nil, fmt.Errorf("model %s: %w", m.name, err)
		}
		res.Examples = f.N
		for k, mt := range n.metrics {
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
			s, err := transfer.Score(mt, f, theta, z, n.seed)
			if err != nil {
				errs[k] = fmt.Sprintf("%s: %v", m.name, err)
				s = math.NaN()
			}
			scores[k][i] = s
			env.Log.Info().Str("model", m.name).Str("metric", mt).Float64("score", s).Msg("transferability")
		}
	}
	return scores, errs, nil
}

func mapOrEmpty(m map[string]cty.Value) cty.Value {
	if len(m) == 0 {
		return cty.MapValEmpty(cty.Number)
	}
	return cty.MapVal(m)
}

func judged(name string, scores, acc []float64) Row {
	return Row{Name: name, Scores: scores, Judgement: transfer.Judge(scores, acc)}
}

// load reads a model's target features (and source probabilities),
// capped at max_examples (the first ones; the stores are already in a
// seeded order).
func (n *Node) load(m model) (transfer.Features, []float64, int, error) {
	s, err := featureset.Load(m.features, n.split)
	if err != nil {
		return transfer.Features{}, nil, 0, err
	}
	count := s.N
	if n.maxExamples > 0 {
		count = min(count, n.maxExamples)
	}
	f := transfer.Features{X: s.X[:count*s.D], N: count, D: s.D, C: s.NumClasses, Y: s.Y[:count]}
	if m.probabilities == "" {
		return f, nil, 0, nil
	}
	p, err := featureset.Load(m.probabilities, n.split)
	if err != nil {
		return f, nil, 0, err
	}
	if p.N < count || !slices.Equal(p.Y[:count], f.Y) {
		return f, nil, 0, fmt.Errorf("probabilities %s are not of the same examples as features %s", m.probabilities, m.features)
	}
	return f, p.X[:count*p.D], p.D, nil
}

// meanRank reads the history table (dataset, model, accuracy rows: the
// same models fine-tuned on other datasets) and returns the mean-rank
// baseline's scores for the models.
func (n *Node) meanRank(models []string, acc []float64) ([]float64, error) {
	t := transfer.Table{}
	if n.inline != nil {
		for d, row := range n.inline {
			t[d] = row
		}
	} else {
		f, err := os.Open(n.history)
		if err != nil {
			return nil, fmt.Errorf("history: %w", err)
		}
		defer f.Close()
		if t, err = transfer.ReadTable(f); err != nil {
			return nil, fmt.Errorf("history %s: %w", n.history, err)
		}
	}
	const target = "\x00target"
	t[target] = map[string]float64{}
	for i, m := range models {
		t[target][m] = acc[i]
	}
	for _, d := range t.Datasets() {
		for _, m := range models {
			if _, ok := t[d][m]; !ok {
				return nil, fmt.Errorf("history %s: dataset %s has no accuracy for model %s", n.history, d, m)
			}
		}
	}
	return transfer.MeanRankScores(t, target), nil
}

// readHistory reads history: a CSV path (dataset, model, accuracy rows)
// or { dataset = { model = accuracy } }.
func (n *Node) readHistory(a *featureset.Attrs) {
	h := a.V.GetAttr("history")
	if h.IsNull() {
		return
	}
	bad := func() {
		a.Diags = append(a.Diags, a.Decl.Errorf("history", "Invalid history", "history must be a CSV file of dataset, model, accuracy rows, or { DATASET = { MODEL = ACCURACY } }: the models' fine-tuned accuracies on other datasets, for the mean-rank baseline."))
	}
	if h.Type() == cty.String {
		n.history = h.AsString()
		if !filepath.IsAbs(n.history) {
			n.history = filepath.Join(a.Decl.Dir, n.history)
		}
		return
	}
	if !(h.Type().IsObjectType() || h.Type().IsMapType()) {
		bad()
		return
	}
	n.inline = transfer.Table{}
	for it := h.ElementIterator(); it.Next(); {
		k, row := it.Element()
		if !(row.Type().IsObjectType() || row.Type().IsMapType()) || !row.IsWhollyKnown() {
			bad()
			return
		}
		n.inline[k.AsString()] = map[string]float64{}
		for jt := row.ElementIterator(); jt.Next(); {
			m, v := jt.Element()
			if v.IsNull() || v.Type() != cty.Number {
				bad()
				return
			}
			f, _ := v.AsBigFloat().Float64()
			n.inline[k.AsString()][m.AsString()] = f
		}
	}
}
