package report

import (
	"bytes"
	"fmt"
	"html"
	"math"
	"slices"

	"github.com/gatepipe/gatepipe/eevee"
	"github.com/gatepipe/gatepipe/pmf"
)

// Predictor is how well a predict block's method predicts the pool it was
// fitted on: matrix completion's masked-ratio and active-evaluation
// results, or EEVEE's leave-one-model-out rows (the meta-model's first,
// then the baselines').
type Predictor struct {
	Model, Method string
	MaskedRatio   []pmf.EvalRow
	Active        []pmf.Curve
	LeaveOneOut   []eevee.LOMORow
	// LOOCommand is the `gatepipe eevee loo` command line that prints
	// the same LeaveOneOut rows ("" when there is none).
	LOOCommand string
}

// predictorFigures draws each predictor's masked-ratio and active
// evaluation curves.
func predictorFigures(preds []Predictor, figDir string) ([]Figure, error) {
	var out []Figure
	for _, p := range preds {
		name := "completion_" + slug(p.Model)
		if len(p.MaskedRatio) > 0 {
			paths, err := pmf.PlotEvaluation(p.MaskedRatio, "Predicting hidden results: "+p.Method+" vs baselines", figDir, name)
			if err != nil {
				return nil, err
			}
			out = append(out, Figure{Name: name, Title: "Predicting hidden results (" + p.Method + ")", SVG: paths[0], PNG: paths[1],
				Caption: "RMSE on hidden entries of the pool matrix against the share hidden, mean ± std over seeds, in units of each column's standard deviation."})
		}
		if len(p.Active) > 0 {
			paths, err := pmf.PlotActive(p.Active, "Active evaluation ("+p.Method+")", figDir, name+"_active")
			if err != nil {
				return nil, err
			}
			out = append(out, Figure{Name: name + "_active", Title: "Active evaluation (" + p.Method + ")", SVG: paths[0], PNG: paths[1],
				Caption: "Error of the completed pool matrix as batches chosen by each acquisition rule are revealed (oracle: picks by the true error, a bound)."})
		}
	}
	return out, nil
}

// predictorHTML writes a table per predictor: a row per share hidden, a
// column per method, RMSE mean ± std, the best bold; and a sentence saying
// where a baseline beats the method.
func predictorHTML(b *bytes.Buffer, preds []Predictor) {
	for _, p := range preds {
		if len(p.LeaveOneOut) > 0 {
			leaveOneOutHTML(b, p)
		}
		if len(p.MaskedRatio) == 0 {
			continue
		}
		fmt.Fprintf(b, "<h3>%s: predicted with %s</h3>\n", html.EscapeString(p.Model), html.EscapeString(p.Method))
		var methods []string
		var ratios []float64
		rmse := map[string]map[float64]pmf.Stat{}
		for _, r := range p.MaskedRatio {
			if rmse[r.Method] == nil {
				methods = append(methods, r.Method)
				rmse[r.Method] = map[float64]pmf.Stat{}
			}
			if !slices.Contains(ratios, r.Ratio) {
				ratios = append(ratios, r.Ratio)
			}
			rmse[r.Method][r.Ratio] = r.RMSE
		}
		b.WriteString(`<table class="results" id="completion-` + slug(p.Model) + `"><caption>RMSE on hidden pool entries (column std units, mean ± std over seeds; lower is better)</caption><thead><tr><th>hidden</th>`)
		for _, m := range methods {
			fmt.Fprintf(b, "<th>%s</th>", html.EscapeString(m))
		}
		b.WriteString("</tr></thead><tbody>\n")
		var lost []string
		for _, ratio := range ratios {
			best := math.Inf(1)
			for _, m := range methods {
				best = math.Min(best, rmse[m][ratio].Mean)
			}
			fmt.Fprintf(b, "<tr><th>%.0f%%</th>", 100*ratio)
			for _, m := range methods {
				s := rmse[m][ratio]
				class := ""
				if s.Mean == best {
					class = ` class="best"`
				}
				fmt.Fprintf(b, "<td%s>%.3f ± %.3f</td>", class, s.Mean, s.Std)
			}
			b.WriteString("</tr>\n")
			if rmse[p.Method][ratio].Mean > best {
				lost = append(lost, fmt.Sprintf("%.0f%%", 100*ratio))
			}
		}
		b.WriteString("</tbody></table>\n")
		if len(lost) > 0 {
			fmt.Fprintf(b, "<p class=\"warning\">A baseline beats %s at %s hidden: its predictions there are no better than a column mean.</p>\n", html.EscapeString(p.Method), html.EscapeString(joinAnd(lost)))
		} else {
			fmt.Fprintf(b, "<p>%s beats both baselines at every share hidden.</p>\n", html.EscapeString(p.Method))
		}
	}
}

// leaveOneOutHTML writes EEVEE's leave-one-model-out table: the
// meta-model and every baseline, the lowest error of each column marked,
// and whether the meta-model beats the strongest baseline. Its columns,
// units and decimals are those `gatepipe eevee loo` prints, and it names
// the command line that prints the same rows.
func leaveOneOutHTML(b *bytes.Buffer, p Predictor) {
	fmt.Fprintf(b, "<h3>%s: predicted with %s</h3>\n", html.EscapeString(p.Model), html.EscapeString(p.Method))
	rows := p.LeaveOneOut
	cols := []struct {
		name   string
		get    func(eevee.LOMORow) float64
		lowest bool
	}{
		{"MAE", func(r eevee.LOMORow) float64 { return r.MAE }, true},
		{"median AE", func(r eevee.LOMORow) float64 { return r.MedAE }, true},
		{"RMSE", func(r eevee.LOMORow) float64 { return r.RMSE }, true},
		{"rank ρ", func(r eevee.LOMORow) float64 { return r.RankRho }, false},
		{"metric ρ", func(r eevee.LOMORow) float64 { return r.MetricRho }, false},
		{"position error", func(r eevee.LOMORow) float64 { return r.PositionError }, true},
	}
	b.WriteString(`<table class="results" id="loo-` + slug(p.Model) + `"><caption>Leave-one-model-out on the pool: each model predicted from its tier results (errors in column std units)</caption><thead><tr><th>method</th>`)
	for _, c := range cols {
		fmt.Fprintf(b, "<th>%s</th>", c.name)
	}
	b.WriteString("</tr></thead><tbody>\n")
	for _, r := range rows {
		fmt.Fprintf(b, "<tr><th>%s</th>", html.EscapeString(r.Method))
		for _, c := range cols {
			best := c.get(rows[0])
			for _, o := range rows {
				if v := c.get(o); c.lowest && v < best || !c.lowest && v > best {
					best = v
				}
			}
			class := ""
			if c.get(r) == best {
				class = ` class="best"`
			}
			format := "<td%s>%.3f</td>"
			if c.name == "position error" {
				format = "<td%s>%.2f</td>" // as eevee loo prints it
			}
			fmt.Fprintf(b, format, class, c.get(r))
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</tbody></table>\n")
	class := ""
	if !eevee.BeatsBaselines(rows) {
		class = ` class="warning"`
	}
	fmt.Fprintf(b, "<p%s>%s</p>\n", class, html.EscapeString(eevee.BaselineVerdict(rows)))
	b.WriteString("<p>MAE, median AE and RMSE: absolute errors of the held-out model's predicted results, in units of each column's standard deviation over the other models; rank ρ: Spearman correlation of predicted and true mean rank across models; metric ρ: mean per-model Spearman correlation of predicted and true results; position error: mean absolute error of the predicted position.")
	if p.LOOCommand != "" {
		fmt.Fprintf(b, " The same computation from the command line: <code>%s</code>.", html.EscapeString(p.LOOCommand))
	}
	b.WriteString("</p>\n")
}

func joinAnd(s []string) string {
	switch len(s) {
	case 0:
		return ""
	case 1:
		return s[0]
	}
	out := s[0]
	for _, x := range s[1 : len(s)-1] {
		out += ", " + x
	}
	return out + " and " + s[len(s)-1]
}
