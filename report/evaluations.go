package report

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Evaluations are the cheap evaluations of frozen features a report
// shows beside (or instead of) a performance matrix: transferability
// rankings, tuned linear probes by subset, and episodes.
type Evaluations struct {
	Transfer []Transferability
	Probes   []Probe
	Episodes []Episodes
}

func (e Evaluations) empty() bool {
	return len(e.Transfer) == 0 && len(e.Probes) == 0 && len(e.Episodes) == 0
}

// Transferability is a transferability block's transferability.json.
type Transferability struct {
	Target   string    `json:"target"`
	Models   []string  `json:"models"`
	Accuracy []float64 `json:"accuracy"`
	Examples int       `json:"examples"`
	Rows     []struct {
		Name          string    `json:"name"`
		Baseline      bool      `json:"baseline"`
		Scores        []float64 `json:"scores"`
		WeightedTau   float64   `json:"weighted_tau"`
		KendallTau    float64   `json:"kendall_tau"`
		Pearson       float64   `json:"pearson"`
		Spearman      float64   `json:"spearman"`
		TopHit        bool      `json:"top1_hit"`
		Fidelity      float64   `json:"fidelity"`
		BeatsStatic   *bool     `json:"beats_static"`
		BeatsMeanRank *bool     `json:"beats_mean_rank"`
		Error         string    `json:"error"`
	} `json:"rows"`
}

// Probe is a probe block's probe.json.
type Probe struct {
	Model      string `json:"model"`
	Metric     string `json:"metric"`
	Parameters int    `json:"trainable_parameters"`
	Subsets    []struct {
		Name  string  `json:"name"`
		Shots int     `json:"shots_per_class"`
		Mean  float64 `json:"mean"`
		Std   float64 `json:"std"`
		Seeds []struct {
			LR float64 `json:"lr"`
			WD float64 `json:"weight_decay"`
		} `json:"seeds"`
	} `json:"subsets"`
}

// Episodes is an episodes block's episodes.json.
type Episodes struct {
	Model    string  `json:"model"`
	Source   string  `json:"source"`
	Group    string  `json:"group"`
	Sampler  string  `json:"sampler"`
	Episodes int     `json:"episodes"`
	MeanWays float64 `json:"mean_ways"`
	MeanShot float64 `json:"mean_support_per_class"`
	Results  []struct {
		Adapter string  `json:"adapter"`
		Mean    float64 `json:"mean"`
		CI95    float64 `json:"ci95"`
	} `json:"results"`
}

// LoadEvaluations reads the result files of transferability, probe and
// episodes output directories.
func LoadEvaluations(transfer, probes, episodes []string) (Evaluations, error) {
	var e Evaluations
	read := func(dir, file string, v any) error {
		data, err := os.ReadFile(filepath.Join(dir, file))
		if err == nil {
			err = json.Unmarshal(data, v)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
		return nil
	}
	for _, d := range transfer {
		var t Transferability
		if err := read(d, "transferability.json", &t); err != nil {
			return e, err
		}
		e.Transfer = append(e.Transfer, t)
	}
	for _, d := range probes {
		var p Probe
		if err := read(d, "probe.json", &p); err != nil {
			return e, err
		}
		e.Probes = append(e.Probes, p)
	}
	for _, d := range episodes {
		var x Episodes
		if err := read(d, "episodes.json", &x); err != nil {
			return e, err
		}
		e.Episodes = append(e.Episodes, x)
	}
	sort.SliceStable(e.Probes, func(i, j int) bool { return e.Probes[i].Model < e.Probes[j].Model })
	sort.SliceStable(e.Episodes, func(i, j int) bool {
		a, b := e.Episodes[i], e.Episodes[j]
		return a.Group+"\x00"+a.Source+"\x00"+a.Model < b.Group+"\x00"+b.Source+"\x00"+b.Model
	})
	return e, nil
}

// staticVerdict is the sentence that says which proxies do not beat the
// static-ranking (and mean-rank) baseline: the SITE paper's bar.
func (t Transferability) staticVerdict() string {
	var notStatic, notMean []string
	hasStatic, hasMean := false, false
	for _, r := range t.Rows {
		if r.Baseline || r.Error != "" {
			continue
		}
		if r.BeatsStatic != nil {
			hasStatic = true
			if !*r.BeatsStatic {
				notStatic = append(notStatic, r.Name)
			}
		}
		if r.BeatsMeanRank != nil {
			hasMean = true
			if !*r.BeatsMeanRank {
				notMean = append(notMean, r.Name)
			}
		}
	}
	var s []string
	if hasStatic {
		if len(notStatic) == 0 {
			s = append(s, "Every metric beats the static ranking's weighted tau.")
		} else {
			s = append(s, fmt.Sprintf("Not better than the static ranking (weighted tau): %s.", strings.Join(notStatic, ", ")))
		}
	}
	if hasMean {
		if len(notMean) == 0 {
			s = append(s, "Every metric beats the mean-rank baseline.")
		} else {
			s = append(s, fmt.Sprintf("Not better than the mean-rank baseline: %s.", strings.Join(notMean, ", ")))
		}
	}
	if len(s) == 0 {
		return "No baseline was given (static or history), so no metric is judged against one; the SITE paper asks for both."
	}
	return strings.Join(s, " ")
}

func yesNo(b *bool) string {
	if b == nil {
		return "–"
	}
	if *b {
		return "yes"
	}
	return "no"
}

func f3(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return fmt.Sprintf("%.3f", v)
}

// evaluationsHTML writes the evaluation sections.
func evaluationsHTML(w io.Writer, e Evaluations) {
	for _, t := range e.Transfer {
		fmt.Fprintf(w, "<h2 id=\"transferability\">Transferability: %s</h2>\n<p>%d models scored on %d target examples; each scorer's ranking against the fine-tuned accuracy. <b>%s</b></p>\n",
			html.EscapeString(t.Target), len(t.Models), t.Examples, html.EscapeString(t.staticVerdict()))
		fmt.Fprintln(w, `<table class="results"><thead><tr><th>scorer</th><th>weighted τ</th><th>Kendall τ</th><th>Pearson</th><th>Spearman</th><th>top-1 hit</th><th>fidelity</th><th>beats static</th><th>beats mean rank</th></tr></thead><tbody>`)
		for _, r := range t.Rows {
			name := html.EscapeString(r.Name)
			if r.Baseline {
				name = "<i>" + name + " (baseline)</i>"
			}
			if r.Error != "" {
				fmt.Fprintf(w, "<tr><th>%s</th><td colspan=\"8\">failed: %s</td></tr>\n", name, html.EscapeString(r.Error))
				continue
			}
			hit := "no"
			if r.TopHit {
				hit = "yes"
			}
			fmt.Fprintf(w, "<tr><th>%s</th><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>\n",
				name, f3(r.WeightedTau), f3(r.KendallTau), f3(r.Pearson), f3(r.Spearman), hit, f3(r.Fidelity), yesNo(r.BeatsStatic), yesNo(r.BeatsMeanRank))
		}
		fmt.Fprintln(w, "</tbody></table>")
		fmt.Fprintf(w, "<table class=\"results\"><caption>Scores by model (fine-tuned accuracy first)</caption><thead><tr><th>model</th><th>accuracy</th>")
		for _, r := range t.Rows {
			fmt.Fprintf(w, "<th>%s</th>", html.EscapeString(r.Name))
		}
		fmt.Fprintln(w, "</tr></thead><tbody>")
		for i, m := range t.Models {
			fmt.Fprintf(w, "<tr><th>%s</th><td>%.2f</td>", html.EscapeString(m), t.Accuracy[i])
			for _, r := range t.Rows {
				fmt.Fprintf(w, "<td>%.4g</td>", r.Scores[i])
			}
			fmt.Fprintln(w, "</tr>")
		}
		fmt.Fprintln(w, "</tbody></table>")
	}
	if len(e.Probes) > 0 {
		fmt.Fprintln(w, `<h2 id="probes">Linear probes (ELEVATER autotune)</h2>`)
		fmt.Fprintf(w, "<p>Test %s, mean ± std over seeds, by examples per class; the learning rate and weight decay were searched per seed on an 80/20 split of each subset. Trainable parameters: %s.</p>\n",
			html.EscapeString(e.Probes[0].Metric), html.EscapeString(probeParams(e.Probes)))
		names := probeSubsets(e.Probes)
		fmt.Fprint(w, `<table class="results"><thead><tr><th>model</th>`)
		for _, s := range names {
			fmt.Fprintf(w, "<th>%s</th>", html.EscapeString(s))
		}
		fmt.Fprintln(w, "</tr></thead><tbody>")
		for _, p := range e.Probes {
			fmt.Fprintf(w, "<tr><th>%s</th>", html.EscapeString(p.Model))
			for _, s := range names {
				fmt.Fprintf(w, "<td>%s</td>", p.cell(s))
			}
			fmt.Fprintln(w, "</tr>")
		}
		fmt.Fprintln(w, "</tbody></table>")
	}
	if len(e.Episodes) > 0 {
		fmt.Fprintln(w, `<h2 id="episodes">Episodes</h2>`)
		adapters := episodeAdapters(e.Episodes)
		fmt.Fprint(w, `<table class="results"><caption>Query accuracy, mean ± 95% interval over episodes</caption><thead><tr><th>group / source</th><th>model</th><th>episodes</th><th>mean ways</th><th>mean shots</th>`)
		for _, a := range adapters {
			fmt.Fprintf(w, "<th>%s</th>", html.EscapeString(a))
		}
		fmt.Fprintln(w, "</tr></thead><tbody>")
		for _, x := range e.Episodes {
			fmt.Fprintf(w, "<tr><th>%s / %s</th><td>%s</td><td>%d</td><td>%.1f</td><td>%.1f</td>", html.EscapeString(x.Group), html.EscapeString(x.Source),
				html.EscapeString(x.Model), x.Episodes, x.MeanWays, x.MeanShot)
			for _, a := range adapters {
				fmt.Fprintf(w, "<td>%s</td>", x.cell(a))
			}
			fmt.Fprintln(w, "</tr>")
		}
		fmt.Fprintln(w, "</tbody></table>")
		groupMeansHTML(w, e.Episodes, adapters)
	}
}

func probeParams(ps []Probe) string {
	var s []string
	for _, p := range ps {
		s = append(s, fmt.Sprintf("%s %d", p.Model, p.Parameters))
	}
	return strings.Join(s, ", ")
}

func (p Probe) cell(name string) string {
	for _, s := range p.Subsets {
		if s.Name == name {
			return fmt.Sprintf("%.1f ± %.1f", s.Mean, s.Std)
		}
	}
	return "–"
}

func (x Episodes) cell(adapter string) string {
	for _, r := range x.Results {
		if r.Adapter == adapter {
			return fmt.Sprintf("%.1f ± %.1f", r.Mean, r.CI95)
		}
	}
	return "–"
}

// probeSubsets lists the subsets in order: shots ascending, then full,
// then vtab1k.
func probeSubsets(ps []Probe) []string {
	rank := map[string]int{}
	for _, p := range ps {
		for _, s := range p.Subsets {
			r := s.Shots
			switch s.Name {
			case "full":
				r = math.MaxInt32 - 1
			case "vtab1k":
				r = math.MaxInt32
			}
			rank[s.Name] = r
		}
	}
	names := make([]string, 0, len(rank))
	for k := range rank {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool { return rank[names[i]] < rank[names[j]] })
	return names
}

func episodeAdapters(xs []Episodes) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range xs {
		for _, r := range x.Results {
			if !seen[r.Adapter] {
				seen[r.Adapter] = true
				out = append(out, r.Adapter)
			}
		}
	}
	sort.Strings(out)
	return out
}

// groupMeansHTML writes each model's mean over the sources of a group.
func groupMeansHTML(w io.Writer, xs []Episodes, adapters []string) {
	type key struct{ group, model string }
	sum := map[key]map[string][]float64{}
	var keys []key
	for _, x := range xs {
		k := key{x.Group, x.Model}
		if sum[k] == nil {
			sum[k] = map[string][]float64{}
			keys = append(keys, k)
		}
		for _, r := range x.Results {
			sum[k][r.Adapter] = append(sum[k][r.Adapter], r.Mean)
		}
	}
	fmt.Fprint(w, `<table class="results"><caption>Group means over sources</caption><thead><tr><th>group</th><th>model</th>`)
	for _, a := range adapters {
		fmt.Fprintf(w, "<th>%s</th>", html.EscapeString(a))
	}
	fmt.Fprintln(w, "</tr></thead><tbody>")
	for _, k := range keys {
		fmt.Fprintf(w, "<tr><th>%s</th><td>%s</td>", html.EscapeString(k.group), html.EscapeString(k.model))
		for _, a := range adapters {
			v := sum[k][a]
			if len(v) == 0 {
				fmt.Fprint(w, "<td>–</td>")
				continue
			}
			var m float64
			for _, x := range v {
				m += x / float64(len(v))
			}
			fmt.Fprintf(w, "<td>%.1f (%d)</td>", m, len(v))
		}
		fmt.Fprintln(w, "</tr>")
	}
	fmt.Fprintln(w, "</tbody></table>")
}

// evaluationsMarkdown writes the evaluation tables as Markdown.
func evaluationsMarkdown(w io.Writer, e Evaluations) {
	for _, t := range e.Transfer {
		fmt.Fprintf(w, "### Transferability: %s\n\n%s\n\n| scorer | weighted τ | Kendall τ | Pearson | Spearman | top-1 hit | fidelity | beats static | beats mean rank |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n", t.Target, t.staticVerdict())
		for _, r := range t.Rows {
			name := r.Name
			if r.Baseline {
				name = "*" + name + " (baseline)*"
			}
			if r.Error != "" {
				fmt.Fprintf(w, "| %s | failed: %s |||||||\n", name, r.Error)
				continue
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %v | %s | %s | %s |\n", name, f3(r.WeightedTau), f3(r.KendallTau), f3(r.Pearson), f3(r.Spearman), r.TopHit, f3(r.Fidelity), yesNo(r.BeatsStatic), yesNo(r.BeatsMeanRank))
		}
		fmt.Fprintln(w)
	}
	if len(e.Probes) > 0 {
		names := probeSubsets(e.Probes)
		fmt.Fprintf(w, "### Linear probes (ELEVATER autotune), test %s, mean ± std over seeds\n\n| model | %s |\n|---|%s\n", e.Probes[0].Metric, strings.Join(names, " | "), strings.Repeat("---:|", len(names)))
		for _, p := range e.Probes {
			cells := make([]string, len(names))
			for i, s := range names {
				cells[i] = p.cell(s)
			}
			fmt.Fprintf(w, "| %s | %s |\n", p.Model, strings.Join(cells, " | "))
		}
		fmt.Fprintln(w)
	}
	if len(e.Episodes) > 0 {
		adapters := episodeAdapters(e.Episodes)
		fmt.Fprintf(w, "### Episodes, query accuracy, mean ± 95%% interval\n\n| source | model | %s |\n|---|---|%s\n", strings.Join(adapters, " | "), strings.Repeat("---:|", len(adapters)))
		for _, x := range e.Episodes {
			cells := make([]string, len(adapters))
			for i, a := range adapters {
				cells[i] = x.cell(a)
			}
			fmt.Fprintf(w, "| %s | %s | %s |\n", x.Source, x.Model, strings.Join(cells, " | "))
		}
		fmt.Fprintln(w)
	}
}

// evaluationFigures draws the weighted tau of every scorer, the probes'
// sample efficiency, and the episodes' accuracy by adapter.
func evaluationFigures(e Evaluations, dir string) ([]Figure, error) {
	var figs []Figure
	for i, t := range e.Transfer {
		var labels []string
		var vals []float64
		for _, r := range t.Rows {
			if r.Error != "" {
				continue
			}
			l := r.Name
			if r.Baseline {
				l += " (baseline)"
			}
			labels = append(labels, l)
			vals = append(vals, r.WeightedTau)
		}
		f, err := horizontalBars("Weighted Kendall tau against fine-tuned accuracy: "+t.Target, "weighted tau (1: the accuracy ranking)", labels, vals, dir, fmt.Sprintf("transferability_%d", i))
		if err != nil {
			return nil, err
		}
		f.Caption = t.staticVerdict()
		figs = append(figs, f)
	}
	if len(e.Probes) > 0 {
		f, err := sampleEfficiency(e.Probes, dir)
		if err != nil {
			return nil, err
		}
		figs = append(figs, f)
	}
	return figs, nil
}

// sampleEfficiency draws each model's probe score against examples per
// class (log scale; "full" at the full training set's mean shots), with
// the seeds' std as error bars.
func sampleEfficiency(ps []Probe, dir string) (Figure, error) {
	p := plot.New()
	p.Title.Text = "Linear-probe " + ps[0].Metric + " against training examples per class"
	p.X.Label.Text = "training examples per class (full: every one, at the right)"
	p.Y.Label.Text = ps[0].Metric
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{}
	maxShots := 0
	for _, pr := range ps {
		for _, s := range pr.Subsets {
			maxShots = max(maxShots, s.Shots)
		}
	}
	fullAt := float64(max(maxShots, 1) * 4)
	for i, pr := range ps {
		type pt struct{ x, y, sd float64 }
		var pts []pt
		for _, s := range pr.Subsets {
			x := float64(s.Shots)
			switch {
			case s.Name == "vtab1k":
				continue
			case s.Shots == 0:
				x = fullAt
			}
			pts = append(pts, pt{x, s.Mean, s.Std})
		}
		sort.Slice(pts, func(a, b int) bool { return pts[a].x < pts[b].x })
		if len(pts) == 0 {
			continue
		}
		xy := make(plotter.XYs, len(pts))
		errs := make(plotter.YErrors, len(pts))
		for k, q := range pts {
			xy[k] = plotter.XY{X: q.x, Y: q.y}
			errs[k].Low, errs[k].High = q.sd, q.sd
		}
		bars, err := plotter.NewYErrorBars(struct {
			plotter.XYs
			plotter.YErrors
		}{xy, errs})
		if err != nil {
			return Figure{}, err
		}
		line, points, err := plotter.NewLinePoints(xy)
		if err != nil {
			return Figure{}, err
		}
		c := okabeIto[i%len(okabeIto)]
		line.Color, points.Color = c, c
		line.Width = vg.Points(1.5)
		bars.Color = c
		p.Add(line, points, bars)
		p.Legend.Add(pr.Model, line, points)
	}
	p.Legend.Top = true
	p.Legend.Left = false
	p.Add(plotter.NewGrid())
	f, err := save(p, dir, "sample_efficiency", 6.5*vg.Inch, 4*vg.Inch)
	f.Caption = "Mean test score over seeds by examples per class (ELEVATER's sample-efficiency protocol); the rightmost points are the full training set."
	return f, err
}
