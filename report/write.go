package report

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/gatepipe/gatepipe/eevee"
)

// Search is the part of an EEVEE search's output a report shows.
type Search struct {
	Single  []eevee.Candidate `json:"single"`
	Results []eevee.KResult   `json:"results"`
}

// Options tune a report.
type Options struct {
	Title string
	// Reference orders the heatmap's columns (paper: imagenet1k).
	Reference string
	// Compare lists models for the family comparison (default: the five
	// best by Full GATE Rank).
	Compare []string
	// Meta rows shown in the metadata section (gatepipe version, run
	// IDs, seeds, durations, devices...).
	Meta [][2]string
	// Runs are training experiments to draw curves for.
	Runs []Run
	// Evaluations are transferability, probe and episode results.
	Evaluations Evaluations
	// Protocol names what trained the results (the tiers' adapters:
	// table3, gate or compact); Scale their sizes (full, cpu, test...);
	// Caveat, shown prominently under the title, why they may not compare
	// with the paper's.
	Protocol, Scale, Caveat string
}

// Output lists what Write produced.
type Output struct {
	HTML     string
	Markdown string
	LaTeX    string
	CSV      []string
	Figures  []Figure
}

// Write renders tables, figures and the HTML report into dir.
func Write(dir string, in Input, search *Search, o Options) (*Output, error) {
	figDir := filepath.Join(dir, "figures")
	csvDir := filepath.Join(dir, "tables")
	for _, d := range []string{figDir, csvDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	if o.Title == "" {
		o.Title = "GATE evaluation report"
	}
	if o.Reference == "" {
		o.Reference = "imagenet1k"
	}
	out := &Output{HTML: filepath.Join(dir, "report.html"), Markdown: filepath.Join(dir, "tables.md"), LaTeX: filepath.Join(dir, "tables.tex")}
	var tables []Table
	var tiers Table
	if in.Matrix != nil {
		tables = FamilyTables(in)
		tiers = TierTable(in)
	}
	if err := out.writeTables(csvDir, tables, tiers, o, in.Placements); err != nil {
		return nil, err
	}
	if in.Matrix != nil {
		if err := out.matrixFigures(in, tables, tiers, o, figDir); err != nil {
			return nil, err
		}
	}
	ef, err := evaluationFigures(o.Evaluations, figDir)
	if err != nil {
		return nil, err
	}
	out.Figures = append(out.Figures, ef...)
	if search != nil {
		if err := out.searchFigures(search, figDir); err != nil {
			return nil, err
		}
	}
	if err := out.runFigures(o.Runs, figDir); err != nil {
		return nil, err
	}
	pf, err := predictorFigures(in.Predictors, figDir)
	if err != nil {
		return nil, err
	}
	out.Figures = append(out.Figures, pf...)
	page, err := renderHTML(o, tables, tiers, out.Figures, in)
	if err != nil {
		return nil, err
	}
	return out, os.WriteFile(out.HTML, page, 0o644)
}

// writeTables writes the family and tier tables as Markdown (after the
// caveat, the protocol and the placements; with the evaluations and runs
// after them), LaTeX and one CSV file each.
func (out *Output) writeTables(csvDir string, tables []Table, tiers Table, o Options, placements []Placement) error {
	all := append([]Table(nil), tables...)
	if len(tiers.Rows) > 0 {
		all = append(all, tiers)
	}
	var md, tex bytes.Buffer
	headerMarkdown(&md, o, placements)
	for _, t := range all {
		t.Markdown(&md)
		md.WriteString("\n")
		t.LaTeX(&tex)
		p := filepath.Join(csvDir, slug(t.Title)+".csv")
		var c bytes.Buffer
		t.CSV(&c)
		if err := os.WriteFile(p, c.Bytes(), 0o644); err != nil {
			return err
		}
		out.CSV = append(out.CSV, p)
	}
	evaluationsMarkdown(&md, o.Evaluations)
	runsMarkdown(&md, o.Runs)
	if err := os.WriteFile(out.Markdown, md.Bytes(), 0o644); err != nil {
		return err
	}
	return os.WriteFile(out.LaTeX, tex.Bytes(), 0o644)
}

// add appends figure f with its caption, or returns err.
func (out *Output) add(f Figure, err error, caption string) error {
	if err != nil {
		return err
	}
	f.Caption = caption
	out.Figures = append(out.Figures, f)
	return nil
}

// matrixFigures draws the ranking heatmap and the family comparison.
func (out *Output) matrixFigures(in Input, tables []Table, tiers Table, o Options, figDir string) error {
	hm, err := RankingHeatmap(in.Matrix, o.Reference, figDir)
	if err := out.add(hm, err, "Models ordered by mean rank (best at the top); benchmarks by how their ranking correlates with "+o.Reference+"."); err != nil {
		return err
	}
	compare := o.Compare
	if len(compare) == 0 {
		compare = bestModels(tiers, in.Matrix.Models, 5)
	}
	f, err := FamilyComparison(tables, compare, figDir, "family_comparison")
	return out.add(f, err, "Task Mean per family for "+strings.Join(compare, ", ")+".")
}

// searchFigures draws the EEVEE search's figures.
func (out *Output) searchFigures(search *Search, figDir string) error {
	if len(search.Single) > 0 {
		f, err := SinglePredictiveness(search.Single, figDir)
		if err := out.add(f, err, "How well each benchmark alone predicts the whole pool (EEVEE, k = 1)."); err != nil {
			return err
		}
	}
	for _, r := range search.Results {
		if len(r.Importance) > 0 {
			f, err := Importance(r.K, r.Importance, figDir)
			if err := out.add(f, err, fmt.Sprintf("Best k=%d combination: %s.", r.K, strings.Join(r.Best().Benchmarks, ", "))); err != nil {
				return err
			}
		}
	}
	if len(search.Results) > 0 {
		f, err := TopScoresByK(search.Results, figDir)
		return out.add(f, err, "Distribution of the final top-W scores for each k.")
	}
	return nil
}

// runFigures draws each run's training curves and the throughput of all.
func (out *Output) runFigures(runs []Run, figDir string) error {
	uniqueIDs(runs)
	for _, r := range runs {
		if !r.hasCurves() {
			continue // an external trainer that logged no losses: nothing to draw
		}
		f, err := Curves(r, figDir)
		caption := fmt.Sprintf("%s on %s.", r.Model, r.Benchmark)
		if r.Primary != "" {
			caption = fmt.Sprintf("%s on %s: test %s %s.", r.Model, r.Benchmark, r.Primary, r.metricText(r.Primary))
		}
		if err := out.add(f, err, caption); err != nil {
			return err
		}
	}
	if len(runs) > 0 {
		f, err := Throughput(runs, figDir)
		return out.add(f, err, "Mean training throughput logged at each validation.")
	}
	return nil
}

// bestModels returns up to n models ordered by Full GATE Rank.
func bestModels(tiers Table, models []string, n int) []string {
	for _, r := range tiers.Rows {
		if r.Label != "Full GATE Rank" {
			continue
		}
		idx := make([]int, len(models))
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, b int) bool {
			ca, cb := r.Cells[idx[a]], r.Cells[idx[b]]
			if ca.Missing != cb.Missing {
				return !ca.Missing
			}
			return ca.Value < cb.Value
		})
		var out []string
		for _, i := range idx[:min(n, len(idx))] {
			out = append(out, models[i])
		}
		return out
	}
	return models[:min(n, len(models))]
}

var nonWord = regexp.MustCompile(`[^a-z0-9]+`)

func slug(s string) string {
	return strings.Trim(nonWord.ReplaceAllString(strings.ToLower(s), "_"), "_")
}

const css = `body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:2rem auto;max-width:1400px;color:#1b1b1b;line-height:1.4}
h1{font-size:1.6rem}h2{font-size:1.25rem;margin-top:2.2rem;border-bottom:1px solid #ddd}
nav a{margin-right:.8rem}
table.results{border-collapse:collapse;font-size:.78rem;margin:1rem 0;display:block;overflow-x:auto}
table.results caption{text-align:left;font-weight:600;padding:.3rem 0}
table.results th,table.results td{padding:.15rem .4rem;border-bottom:1px solid #eee;white-space:nowrap}
table.results td{text-align:right;font-variant-numeric:tabular-nums}
table.results thead th{position:sticky;top:0;background:#fafafa}
td.best{background:#F5D9A3;font-weight:700}td.second{background:#BFE3F7}td.third{background:#B3E0D1}
td.predicted{font-style:italic;color:#555}td.missing{color:#aaa}
table.results td.text{text-align:left;white-space:normal}td.left-out{color:#8a4b00}
p.caveat{background:#fde7c8;border-left:4px solid #d08000;padding:.5rem .8rem;font-weight:600}
p.placement{font-size:1.3rem}.warning{color:#8a4b00}
tr.summary th,tr.summary td{border-top:1px solid #999;font-weight:500}
figure{margin:1.5rem 0}figure img{max-width:100%;border:1px solid #eee}figcaption{font-size:.85rem;color:#444}
dl.meta{display:grid;grid-template-columns:max-content auto;gap:.2rem 1rem;font-size:.9rem}
.legend span{display:inline-block;padding:0 .5rem;margin-right:.4rem}`

func renderHTML(o Options, tables []Table, tiers Table, figs []Figure, in Input) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>%s</title>\n<style>%s</style></head><body>\n", html.EscapeString(o.Title), css)
	fmt.Fprintf(&b, "<h1>%s</h1>\n", html.EscapeString(o.Title))
	headerHTML(&b, o)
	placementHTML(&b, in.Placements)
	b.WriteString("<nav>")
	if len(in.Placements) > 0 {
		b.WriteString("<a href=\"#placement\">Placement</a>")
	}
	if len(in.Predictors) > 0 {
		b.WriteString("<a href=\"#predicted\">Predicted results</a>")
	}
	if len(o.Evaluations.Transfer) > 0 {
		b.WriteString("<a href=\"#transferability\">Transferability</a>")
	}
	if len(o.Evaluations.Probes) > 0 {
		b.WriteString("<a href=\"#probes\">Linear probes</a>")
	}
	if len(o.Evaluations.Episodes) > 0 {
		b.WriteString("<a href=\"#episodes\">Episodes</a>")
	}
	if in.Matrix != nil {
		b.WriteString("<a href=\"#tiers\">Tiers</a>")
	}
	for _, t := range tables {
		fmt.Fprintf(&b, "<a href=\"#%s\">%s</a>", slug(t.Title), html.EscapeString(t.Title))
	}
	b.WriteString("<a href=\"#figures\">Figures</a><a href=\"#meta\">Metadata</a></nav>\n")
	b.WriteString(`<p class="legend"><span style="background:#F5D9A3">best</span><span style="background:#BFE3F7">second</span><span style="background:#B3E0D1">third</span> in each row, by the metric's direction (↓: lower is better). <i>Italic*</i>: predicted, not measured. –: missing.</p>` + "\n")
	if len(o.Runs) > 0 {
		b.WriteString("<h2>Experiments</h2>\n")
		runsHTML(&b, o.Runs)
	}
	if len(in.Predictors) > 0 {
		b.WriteString("<h2 id=\"predicted\">Predicted results</h2>\n<p>Columns marked <i>*</i> hold predicted values with their posterior standard deviation (±). How well each method predicts the pool:</p>\n")
		predictorHTML(&b, in.Predictors)
	}
	evaluationsHTML(&b, o.Evaluations)
	if in.Matrix != nil {
		fmt.Fprintf(&b, "<h2 id=\"tiers-h\">GATE tiers</h2>\n")
		if len(tiers.Rows) == 0 {
			b.WriteString("<p id=\"tiers\">None of these benchmarks is one of GATE's 31, so no GATE mean is computed: GATE means average GATE's own benchmarks only.</p>\n")
		} else {
			b.WriteString("<p>" + html.EscapeString(TierCoverage(in)) + "</p>\n")
			if err := tiers.HTML(&b, "tiers"); err != nil {
				return nil, err
			}
		}
	}
	for _, t := range tables {
		fmt.Fprintf(&b, "<h2>%s</h2>\n", html.EscapeString(t.Title))
		if err := t.HTML(&b, slug(t.Title)); err != nil {
			return nil, err
		}
	}
	b.WriteString("<h2 id=\"figures\">Figures</h2>\n")
	for _, f := range figs {
		data, err := os.ReadFile(f.PNG)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "<figure id=\"fig-%s\"><img alt=\"%s\" src=\"data:image/png;base64,%s\"><figcaption><b>%s.</b> %s</figcaption></figure>\n",
			f.Name, html.EscapeString(f.Title), base64.StdEncoding.EncodeToString(data), html.EscapeString(f.Title), html.EscapeString(f.Caption))
	}
	b.WriteString("<h2 id=\"meta\">Metadata</h2>\n<dl class=\"meta\">\n")
	meta := [][2]string{{"generated", time.Now().UTC().Format(time.RFC3339)}}
	if in.Matrix != nil {
		meta = append(meta, [2]string{"models", fmt.Sprint(len(in.Matrix.Models))},
			[2]string{"metrics", fmt.Sprint(len(in.Matrix.Columns))},
			[2]string{"benchmarks", fmt.Sprint(len(in.Matrix.Benchmarks()))})
	}
	meta = append(meta, o.Meta...)
	for _, kv := range meta {
		fmt.Fprintf(&b, "<dt>%s</dt><dd>%s</dd>\n", html.EscapeString(kv[0]), html.EscapeString(kv[1]))
	}
	b.WriteString("</dl>\n")
	if len(o.Runs) > 0 {
		runMetaHTML(&b, o.Runs)
	}
	b.WriteString("</body></html>\n")
	return b.Bytes(), nil
}
