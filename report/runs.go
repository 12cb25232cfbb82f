package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/gatepipe/gatepipe/eevee"
	"github.com/gatepipe/gatepipe/formats/runmeta"
	"github.com/gatepipe/gatepipe/internal/numfmt"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Run is one training experiment: its metrics.json and log.jsonl.
type Run struct {
	Dir       string
	Model     string
	Benchmark string
	Metrics   map[string]float64
	// Higher says, per metric, whether higher is better.
	Higher map[string]bool
	// Seeds is, per metric, its spread over the seeds it is the mean of
	// (a recipe with seeds); absent for a single run.
	Seeds map[string]SeedStat
	// Primary is the headline metric (see PrimaryMetric).
	Primary string
	Log     []RunLog
	// Info is the run's run.json, nil when the run has none.
	Info *runmeta.Info
	uid  string
}

// RunLog is the part of a log.jsonl line a report plots.
type RunLog struct {
	Iteration    int                `json:"iteration"`
	Loss         float64            `json:"loss"`
	LR           float64            `json:"lr"`
	ImagesPerSec float64            `json:"images_per_sec"`
	Val          map[string]float64 `json:"val"`
	EnergyJ      *float64           `json:"energy_joules"`
}

// LoadRun reads a train block's (or trainer's) output directory.
func LoadRun(dir string) (Run, error) {
	r := Run{Dir: dir, Metrics: map[string]float64{}, Higher: map[string]bool{}, Seeds: map[string]SeedStat{}}
	data, err := os.ReadFile(filepath.Join(dir, "metrics.json"))
	if err != nil {
		return r, err
	}
	var m struct {
		Model, Benchmark, Primary string
		Metrics                   map[string]struct {
			Value          float64
			HigherIsBetter bool `json:"higher_is_better"`
			Std            *float64
			N              int
		}
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return r, fmt.Errorf("%s: %w", dir, err)
	}
	r.Model, r.Benchmark = m.Model, m.Benchmark
	for k, v := range m.Metrics {
		r.Metrics[k] = v.Value
		r.Higher[k] = v.HigherIsBetter
		if v.Std != nil && v.N > 0 {
			r.Seeds[k] = SeedStat{Std: *v.Std, N: v.N}
		}
	}
	r.Primary = PrimaryMetric(m.Primary, r.Metrics, r.Higher)
	info, ok, err := runmeta.Read(dir)
	if err != nil {
		return r, fmt.Errorf("%s: %s: %w", dir, runmeta.File, err)
	}
	if ok {
		r.Info = &info
	}
	f, err := os.Open(filepath.Join(dir, "log.jsonl"))
	if err != nil {
		return r, nil // a trainer may not log
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var l RunLog
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Iteration > 0 {
			r.Log = append(r.Log, l)
		}
	}
	return r, sc.Err()
}

// id names a run's figure: model and benchmark, or (set by uniqueIDs)
// its node address where for_each instances share those names.
func (r Run) id() string {
	if r.uid != "" {
		return r.uid
	}
	return slug(r.Model + "_" + r.Benchmark)
}

// uniqueIDs gives runs that share model and benchmark names their node
// address (or position) as figure name.
func uniqueIDs(runs []Run) {
	count := map[string]int{}
	for _, r := range runs {
		count[r.id()]++
	}
	for i := range runs {
		if count[runs[i].id()] < 2 {
			continue
		}
		if runs[i].Info != nil && runs[i].Info.Node != "" {
			runs[i].uid = slug(runs[i].Info.Node)
		} else {
			runs[i].uid = fmt.Sprintf("%s_%d", runs[i].id(), i)
		}
	}
}

// valMetrics are the validation metrics a curve can show, by the log's
// key, with the name the results use and whether it is a percentage.
var valMetrics = []struct {
	key, name string
	percent   bool
}{{"acc1", "Acc@1", true}, {"miou", "mIoU", true}, {"aps", "APS Macro", true}, {"auc", "AUC Macro", true},
	{"mae", "MAE", false}, {"i2t_acc1", "Img2Txt Acc@1", true}}

// Curves draws a run's training in stacked panels that share the
// iteration axis, one quantity per panel: the training and validation
// loss, the task's validation metric (the first the log has: Acc@1, mIoU,
// APS Macro, AUC Macro, MAE, Img2Txt Acc@1; percentages on 0-100), and the
// learning rate. A quantity the log does not hold gets no panel: nothing
// is drawn as a flat line at zero.
func Curves(r Run, dir string) (Figure, error) {
	c := logCurves(r.Log)
	loss, vloss, vmetric, lr, metric := c.loss, c.vloss, c.vmetric, c.lr, c.metric
	title := fmt.Sprintf("Training of %s on %s", r.Model, r.Benchmark)
	var panels []*plot.Plot
	panel := func(ylabel string, series ...curveSeries) error {
		p := plot.New()
		p.Y.Label.Text = ylabel
		for _, s := range series {
			if err := s.addTo(p); err != nil {
				return err
			}
		}
		p.Legend.Top = true
		p.Add(plotter.NewGrid())
		panels = append(panels, p)
		return nil
	}
	var err error
	if len(loss)+len(vloss) > 0 {
		err = panel("loss", curveSeries{"train loss", loss, 4, false}, curveSeries{"val loss", vloss, 5, true})
	}
	if err == nil && len(vmetric) > 0 {
		m := valMetrics[metric]
		label := "val " + m.name
		if m.percent {
			label += " (%)"
		}
		title += ": loss, val " + m.name + ", learning rate"
		err = panel(label, curveSeries{"val " + m.name, vmetric, 2, true})
		if err == nil && m.percent {
			panels[len(panels)-1].Y.Min, panels[len(panels)-1].Y.Max = 0, 100
		}
	}
	if err == nil && len(lr) > 0 {
		err = panel("learning rate", curveSeries{"lr", lr, 7, false})
		if err == nil {
			fixFlatAxis(panels[len(panels)-1], lr)
		}
	}
	if err != nil {
		return Figure{}, err
	}
	if len(panels) == 0 {
		return Figure{}, fmt.Errorf("run %s on %s: the log holds nothing to draw", r.Model, r.Benchmark)
	}
	// One iteration axis for every panel.
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, p := range panels {
		lo, hi = min(lo, p.X.Min), max(hi, p.X.Max)
	}
	for _, p := range panels {
		p.X.Min, p.X.Max = lo, hi
	}
	panels[0].Title.Text = title
	panels[len(panels)-1].X.Label.Text = "iteration"
	return saveStacked(panels, dir, "curves_"+r.id(), 6.5*vg.Inch, vg.Length(1.4+1.6*float64(len(panels)))*vg.Inch)
}

// runCurves are a run log's series: train and validation loss, the
// first validation metric of valMetrics the log has (metric is its
// index, -1 for none) and the learning rate, over iterations.
type runCurves struct {
	loss, vloss, vmetric, lr plotter.XYs
	metric                   int
}

// logCurves reads the series to draw from a run's log.
func logCurves(log []RunLog) runCurves {
	c := runCurves{metric: -1}
	for _, l := range log {
		if c.metric < 0 && l.Val != nil {
			for k, m := range valMetrics {
				if _, ok := l.Val[m.key]; ok {
					c.metric = k
					break
				}
			}
		}
	}
	for _, l := range log {
		x := float64(l.Iteration)
		if l.Loss > 0 {
			c.loss = append(c.loss, plotter.XY{X: x, Y: l.Loss})
		}
		if l.LR > 0 {
			c.lr = append(c.lr, plotter.XY{X: x, Y: l.LR})
		}
		if l.Val == nil {
			continue
		}
		if v, ok := l.Val["loss"]; ok {
			c.vloss = append(c.vloss, plotter.XY{X: x, Y: v})
		}
		if c.metric >= 0 {
			if v, ok := l.Val[valMetrics[c.metric].key]; ok {
				c.vmetric = append(c.vmetric, plotter.XY{X: x, Y: v})
			}
		}
	}
	return c
}

// hasCurves reports whether the run's log holds anything Curves draws.
func (r Run) hasCurves() bool {
	for _, l := range r.Log {
		if l.Loss > 0 || l.LR > 0 || l.Val != nil {
			return true
		}
	}
	return false
}

// curveSeries is one line of a curves panel (with points at validations).
// fixFlatAxis gives a constant series (a learning rate with no schedule)
// an axis from 0 to a little above its value: gonum's autoscale would
// centre a flat line on an axis of -0.8..0.8 around nothing.
func fixFlatAxis(p *plot.Plot, xy plotter.XYs) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range xy {
		lo, hi = min(lo, v.Y), max(hi, v.Y)
	}
	if lo != hi || math.IsInf(lo, 0) {
		return
	}
	switch {
	case lo > 0:
		p.Y.Min, p.Y.Max = 0, 1.25*lo
	case lo < 0:
		p.Y.Min, p.Y.Max = 1.25*lo, 0
	default:
		p.Y.Min, p.Y.Max = 0, 1
	}
}

type curveSeries struct {
	name   string
	xy     plotter.XYs
	colour int
	points bool
}

func (s curveSeries) addTo(p *plot.Plot) error {
	if len(s.xy) == 0 {
		return nil
	}
	line, err := plotter.NewLine(s.xy)
	if err != nil {
		return err
	}
	line.Color = okabeIto[s.colour]
	line.Width = vg.Points(1.5)
	p.Add(line)
	p.Legend.Add(s.name, line)
	if s.points {
		sc, err := plotter.NewScatter(s.xy)
		if err != nil {
			return err
		}
		sc.Color = okabeIto[s.colour]
		p.Add(sc)
	}
	return nil
}

// Throughput draws each run's mean training throughput (images/s).
func Throughput(runs []Run, dir string) (Figure, error) {
	var labels []string
	var vals []float64
	for _, r := range runs {
		var sum float64
		n := 0
		for _, l := range r.Log {
			if l.ImagesPerSec > 0 {
				sum += l.ImagesPerSec
				n++
			}
		}
		labels = append(labels, r.Model+" / "+r.Benchmark)
		if n > 0 {
			vals = append(vals, sum/float64(n))
		} else {
			vals = append(vals, 0)
		}
	}
	return horizontalBars("Training throughput per experiment (images/s)", "images per second", labels, vals, dir, "throughput")
}

// energy returns the run's energy reading, or nil.
func (r Run) energy() *float64 {
	if r.Info != nil && r.Info.EnergyJ != nil {
		return r.Info.EnergyJ
	}
	for i := len(r.Log) - 1; i >= 0; i-- {
		if r.Log[i].EnergyJ != nil {
			return r.Log[i].EnergyJ
		}
	}
	return nil
}

// headlineMetrics are the GATE matrix's headline metric names, by task,
// in the order PrimaryMetric prefers them.
var headlineMetrics = []string{"Acc@1", "mIoU", "APS Macro", "MAE Score", "Img2Txt Acc@1", "Txt2Img Acc@1"}

// PrimaryMetric picks an experiment's headline metric: the one its
// metrics.json names, else a known headline name it has, else the first
// higher-is-better metric by name, else the first metric by name.
func PrimaryMetric(declared string, metrics map[string]float64, higher map[string]bool) string {
	if _, ok := metrics[declared]; ok && declared != "" {
		return declared
	}
	for _, h := range headlineMetrics {
		if _, ok := metrics[h]; ok {
			return h
		}
	}
	names := make([]string, 0, len(metrics))
	for k := range metrics {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if higher[k] {
			return k
		}
	}
	if len(names) > 0 {
		return names[0]
	}
	return ""
}

// arrow is the direction mark of a metric.
func (r Run) arrow(metric string) string {
	if r.Higher[metric] {
		return "↑"
	}
	return "↓"
}

// otherMetrics lists the metrics besides the primary one, "–" when none.
func (r Run) otherMetrics() string {
	names := make([]string, 0, len(r.Metrics))
	perClass := 0
	for k := range r.Metrics {
		switch {
		case k == r.Primary:
		case eevee.IsPerClass(k): // "3 APS": per class, in the run's metrics.json
			perClass++
		default:
			names = append(names, k)
		}
	}
	if len(names) == 0 && perClass == 0 {
		return "–"
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = fmt.Sprintf("%s %s %s", html.EscapeString(metricLabel(k)), r.arrow(k), r.metricText(k))
	}
	if perClass > 0 {
		parts = append(parts, fmt.Sprintf("%d per-class values in metrics.json", perClass))
	}
	return strings.Join(parts, "<br>") // one per line, not one run-on line
}

// metricText prints metric k: its value, or a mean over seeds with its
// std and n.
func (r Run) metricText(k string) string {
	if st, ok := r.Seeds[k]; ok {
		return numfmt.MeanStd(r.Metrics[k], st.Std, st.N)
	}
	return numfmt.Value(r.Metrics[k]) // at the precision a mean with its std gets
}

// runsHaveSeeds reports whether any run's metric is a mean over seeds
// (printed "± s (n=N)").
func runsHaveSeeds(runs []Run) bool {
	for _, r := range runs {
		if len(r.Seeds) > 0 {
			return true
		}
	}
	return false
}

// metricLabel is a metric's name as tables show it: GATE's dangling "@"
// ("Mean Acc@", an accuracy with no k) dropped, as rowLabel does.
func metricLabel(name string) string {
	if m, ok := strings.CutSuffix(name, "@"); ok && strings.TrimSpace(m) != "" {
		return strings.TrimSpace(m)
	}
	return name
}

// runsHTML writes the experiments table, each row linking to its curves:
// each experiment's own headline metric with its direction, then its
// other metrics; "–" where there is nothing to show.
func runsHTML(w io.Writer, runs []Run) {
	caption := "Experiments"
	if runsHaveSeeds(runs) {
		caption += "; " + seedsNote
	}
	fmt.Fprintln(w, `<table class="results" id="experiments"><caption>`+html.EscapeString(caption)+`</caption><thead><tr><th>model</th><th>benchmark</th><th>metric</th><th>value</th><th>other metrics</th><th>iterations</th><th>energy (J)</th><th>curves</th></tr></thead><tbody>`)
	for _, r := range runs {
		iters := 0
		if len(r.Log) > 0 {
			iters = r.Log[len(r.Log)-1].Iteration
		}
		if r.Info != nil && r.Info.Iterations > 0 {
			iters = r.Info.Iterations
		}
		energy := "n/a"
		if e := r.energy(); e != nil {
			energy = fmt.Sprintf("%.0f", *e)
		}
		metric, value, itersText := "–", "–", "–"
		if r.Primary != "" {
			metric = html.EscapeString(metricLabel(r.Primary)) + " " + r.arrow(r.Primary)
			value = r.metricText(r.Primary)
		}
		if iters > 0 {
			itersText = fmt.Sprint(iters)
		}
		fmt.Fprintf(w, `<tr><th scope="row">%s</th><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td><a href="#fig-curves_%s">curves</a></td></tr>`+"\n",
			html.EscapeString(r.Model), html.EscapeString(r.Benchmark), metric, value, r.otherMetrics(), itersText, energy, r.id())
	}
	fmt.Fprintln(w, "</tbody></table>")
}

// runsMarkdown writes the experiments table to tables.md: each
// experiment's model (the name results use), benchmark, headline metric
// and value, and its other metrics.
func runsMarkdown(w io.Writer, runs []Run) {
	if len(runs) == 0 {
		return
	}
	fmt.Fprint(w, "### Experiments\n\n")
	if runsHaveSeeds(runs) {
		fmt.Fprint(w, seedsNote+".\n\n")
	}
	fmt.Fprintln(w, "| model | benchmark | metric | value | other metrics |\n|---|---|---|---:|---|")
	for _, r := range runs {
		metric, value := "–", "–"
		if r.Primary != "" {
			metric, value = metricLabel(r.Primary)+" "+r.arrow(r.Primary), r.metricText(r.Primary)
		}
		other := strings.ReplaceAll(html.UnescapeString(r.otherMetrics()), "<br>", "; ")
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", r.Model, r.Benchmark, metric, value, other)
	}
	fmt.Fprintln(w)
}

// runMetaHTML writes one row of run metadata per experiment: the seed,
// action ID, duration, device, throughput, energy and gatepipe version.
func runMetaHTML(w io.Writer, runs []Run) {
	fmt.Fprintln(w, `<table class="results" id="run-metadata"><caption>Run metadata</caption><thead><tr><th>experiment</th><th>node</th><th>seed</th><th>action ID</th><th>started (UTC)</th><th>duration</th><th>device</th><th>images/s</th><th>energy (J)</th><th>peak memory</th><th>gatepipe</th></tr></thead><tbody>`)
	for _, r := range runs {
		fmt.Fprintf(w, `<tr><th scope="row"><a href="#fig-curves_%s">%s / %s</a></th>`, r.id(), html.EscapeString(r.Model), html.EscapeString(r.Benchmark))
		i := r.Info
		if i == nil {
			fmt.Fprintln(w, `<td colspan="10">no run.json (run by an older gatepipe or outside it)</td></tr>`)
			continue
		}
		seed, energy, ips := "–", "n/a", "–"
		if i.Seed != nil {
			seed = fmt.Sprint(*i.Seed)
		}
		if len(i.Seeds) > 0 {
			seed = strings.Trim(fmt.Sprint(i.Seeds), "[]") // "0 1 2"
		}
		if i.EnergyJ != nil {
			energy = fmt.Sprintf("%.0f", *i.EnergyJ)
		}
		if i.ImagesPerSec > 0 {
			ips = fmt.Sprintf("%.0f", i.ImagesPerSec)
		}
		mem := "–"
		if i.PeakRSSBytes > 0 {
			mem = fmt.Sprintf("%.0f MiB", float64(i.PeakRSSBytes)/(1<<20))
		}
		action := i.ActionID
		if len(action) > 16 {
			action = action[:16]
		}
		fmt.Fprintf(w, `<td>%s</td><td>%s</td><td title="%s"><code>%s</code></td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>`+"\n",
			html.EscapeString(i.Node), seed, html.EscapeString(i.ActionID), html.EscapeString(action), i.Started.UTC().Format("2006-01-02 15:04:05"),
			(time.Duration(i.Seconds * float64(time.Second))).Round(100*time.Millisecond), html.EscapeString(i.Device), ips, energy, mem, html.EscapeString(i.Gatepipe))
	}
	fmt.Fprintln(w, "</tbody></table>")
}
