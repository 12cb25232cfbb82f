package report

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gatepipe/gatepipe/eevee"
	"github.com/gatepipe/gatepipe/internal/palette"
	"gonum.org/v1/plot"
	gonumpalette "gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// okabeIto is the figures' colour-blind-safe palette.
var okabeIto = palette.OkabeIto

// Figure is a rendered plot saved as PNG and SVG.
type Figure struct {
	Name, Title, Caption string
	PNG, SVG             string
}

func save(p *plot.Plot, dir, name string, w, h vg.Length) (Figure, error) {
	f := Figure{Name: name, Title: p.Title.Text, PNG: filepath.Join(dir, name+".png"), SVG: filepath.Join(dir, name+".svg")}
	if err := p.Save(w, h, f.PNG); err != nil {
		return f, fmt.Errorf("figure %s: %w", name, err)
	}
	if err := p.Save(w, h, f.SVG); err != nil {
		return f, fmt.Errorf("figure %s: %w", name, err)
	}
	return f, nil
}

// saveStacked saves plots one above the other, aligned on their x axes,
// as one PNG and one SVG; the figure's title is the first plot's.
func saveStacked(plots []*plot.Plot, dir, name string, w, h vg.Length) (Figure, error) {
	rows := make([][]*plot.Plot, len(plots))
	for i, p := range plots {
		rows[i] = []*plot.Plot{p}
	}
	tiles := draw.Tiles{Rows: len(plots), Cols: 1, PadX: vg.Millimeter, PadY: vg.Millimeter * 3, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	return saveDrawn(dir, name, plots[0].Title.Text, w, h, func(dc draw.Canvas) {
		canvases := plot.Align(rows, tiles, dc)
		for i, p := range plots {
			p.Draw(canvases[i][0])
		}
	})
}

// saveDrawn saves what paint draws on a w x h canvas as name.png and
// name.svg in dir.
func saveDrawn(dir, name, title string, w, h vg.Length, paint func(draw.Canvas)) (Figure, error) {
	f := Figure{Name: name, Title: title, PNG: filepath.Join(dir, name+".png"), SVG: filepath.Join(dir, name+".svg")}
	for _, out := range []struct {
		c    vg.CanvasWriterTo
		path string
	}{{vgimg.PngCanvas{Canvas: vgimg.New(w, h)}, f.PNG}, {vgsvg.New(w, h), f.SVG}} {
		paint(draw.New(out.c))
		if err := writeCanvas(out.c, out.path); err != nil {
			return f, fmt.Errorf("figure %s: %w", name, err)
		}
	}
	return f, nil
}

// benchmarkRanks returns, per benchmark (matrix order), each model's mean
// rank over the benchmark's columns.
func benchmarkRanks(m *eevee.Matrix) ([]string, [][]float64) {
	ranks := columnRanks(m)
	benches := m.Benchmarks()
	out := make([][]float64, len(benches))
	for b, name := range benches {
		out[b] = make([]float64, len(m.Models))
		n := 0
		for j, c := range m.Columns {
			if c.Benchmark != name {
				continue
			}
			n++
			for i := range m.Models {
				out[b][i] += ranks[j][i]
			}
		}
		for i := range out[b] {
			out[b][i] /= float64(n)
		}
	}
	return benches, out
}

type grid struct {
	z          [][]float64 // [row][col]
	rows, cols int
}

func (g grid) Dims() (c, r int)   { return g.cols, g.rows }
func (g grid) Z(c, r int) float64 { return g.z[r][c] }
func (g grid) X(c int) float64    { return float64(c) }
func (g grid) Y(r int) float64    { return float64(r) }

// RankingHeatmap draws models x benchmarks, brighter = better mean rank,
// models ordered by mean rank (best at the top) and benchmarks by the
// Spearman correlation of their model ranking with the reference
// benchmark's (paper Figs. 9-11; reference imagenet1k there).
func RankingHeatmap(m *eevee.Matrix, reference, dir string) (Figure, error) {
	benches, br := benchmarkRanks(m)
	ref := -1
	for b, name := range benches {
		if name == reference {
			ref = b
		}
	}
	colOrder, rowOrder := rankingOrder(m, br, ref)
	g := grid{rows: len(m.Models), cols: len(benches)}
	for _, i := range rowOrder {
		row := make([]float64, len(benches))
		for c, b := range colOrder {
			row[c] = -br[b][i] // brighter = better: negate ranks
		}
		g.z = append(g.z, row)
	}
	// Ranks coloured from dark (last) to light (first), stopping short of
	// white so that the best cell stays visible on the page whatever the
	// number of models.
	n := float64(len(m.Models))
	cm := &cropped{ColorMap: moreland.Kindlmann(), upTo: 0.82}
	cm.SetMin(-n - 0.5)
	cm.SetMax(-0.5)
	p := plot.New()
	p.Title.Text = "Rank of each model per benchmark (1 = best)"
	hm := plotter.NewHeatMap(g, cm.Palette(255))
	hm.Min, hm.Max = cm.Min(), cm.Max()
	p.Add(hm)
	var xt, yt []plot.Tick
	for c, b := range colOrder {
		xt = append(xt, plot.Tick{Value: float64(c), Label: benches[b]})
	}
	for r, i := range rowOrder {
		yt = append(yt, plot.Tick{Value: float64(r), Label: m.Models[i]})
	}
	p.X.Tick.Marker = plot.ConstantTicks(xt)
	p.Y.Tick.Marker = plot.ConstantTicks(yt)
	p.X.Tick.Label.Rotation = math.Pi / 2
	p.X.Tick.Label.XAlign = draw.XRight
	p.X.Tick.Label.YAlign = draw.YCenter
	p.X.Label.Text = "benchmark"
	if ref >= 0 {
		p.X.Label.Text = "benchmark (ordered by rank correlation with " + reference + ")"
	}
	p.Y.Label.Text = "model (by mean rank)"
	p.X.Min, p.X.Max = -0.5, float64(len(benches))-0.5
	p.Y.Min, p.Y.Max = -0.5, float64(len(m.Models))-0.5

	bar := rankBar(cm, int(n))
	w := vg.Length(len(benches))*0.32*vg.Inch + 3.4*vg.Inch
	h := vg.Length(len(m.Models))*0.25*vg.Inch + 2.6*vg.Inch
	return saveBeside(p, bar, 0.9*vg.Inch, dir, "ranking_heatmap", w, h)
}

// rankingOrder orders the heatmap's columns (benchmarks) by their rank
// correlation with benchmark ref (where ref >= 0) and its rows (models)
// by mean rank, the best model last, so it is drawn at the top (y grows
// upwards). br holds each benchmark's ranks of the models.
func rankingOrder(m *eevee.Matrix, br [][]float64, ref int) (colOrder, rowOrder []int) {
	corr := make([]float64, len(br))
	for b := range br {
		if ref >= 0 {
			corr[b] = spearmanOf(br[b], br[ref])
		}
	}
	colOrder = make([]int, len(br))
	for i := range colOrder {
		colOrder[i] = i
	}
	sort.SliceStable(colOrder, func(a, b int) bool { return corr[colOrder[a]] > corr[colOrder[b]] })
	meanRank := make([]float64, len(m.Models))
	for i := range m.Models {
		for b := range br {
			meanRank[i] += br[b][i] / float64(len(br))
		}
	}
	rowOrder = make([]int, len(m.Models))
	for i := range rowOrder {
		rowOrder[i] = i
	}
	sort.SliceStable(rowOrder, func(a, b int) bool { return meanRank[rowOrder[a]] > meanRank[rowOrder[b]] })
	return colOrder, rowOrder
}

// rankBar is the heatmap's colour bar: ranks 1 to n, 1 at the top.
func rankBar(cm gonumpalette.ColorMap, n int) *plot.Plot {
	bar := plot.New()
	bar.Title.Text = "rank"
	bar.HideX()
	bar.Add(&plotter.ColorBar{ColorMap: cm, Vertical: true})
	var bt []plot.Tick
	step := max(1, n/8)
	for r := 1; r <= n; r += step {
		bt = append(bt, plot.Tick{Value: -float64(r), Label: fmt.Sprint(r)})
	}
	bar.Y.Tick.Marker = plot.ConstantTicks(bt)
	return bar
}

// cropped is a colour map that uses only the first upTo of its
// underlying map (Kindlmann's without its last, near-white stretch, so a
// best cell is never white on the white page).
type cropped struct {
	gonumpalette.ColorMap
	upTo float64
}

func (c *cropped) At(v float64) (color.Color, error) {
	lo := c.ColorMap.Min()
	return c.ColorMap.At(lo + (v-lo)*c.upTo)
}

func (c *cropped) Palette(n int) gonumpalette.Palette {
	colors := make([]color.Color, n)
	lo, hi := c.ColorMap.Min(), c.ColorMap.Max()
	for i := range colors {
		v := lo + (hi-lo)*float64(i)/float64(max(n-1, 1))
		colors[i], _ = c.At(v)
	}
	return plainPalette(colors)
}

type plainPalette []color.Color

func (p plainPalette) Colors() []color.Color { return p }

// saveBeside saves main with side drawn in a strip of the given width on
// its right, as one PNG and one SVG; the figure's title is main's.
func saveBeside(main, side *plot.Plot, strip vg.Length, dir, name string, w, h vg.Length) (Figure, error) {
	return saveDrawn(dir, name, main.Title.Text, w, h, func(dc draw.Canvas) {
		main.Draw(draw.Crop(dc, 0, -strip, 0, 0))
		side.Draw(draw.Crop(dc, w-strip, 0, h*0.3, -h*0.1))
	})
}

func writeCanvas(c vg.CanvasWriterTo, path string) error {
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(out); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func spearmanOf(a, b []float64) float64 {
	rank := func(v []float64) []float64 {
		mm := &eevee.Matrix{Columns: []eevee.Column{{}}}
		for _, x := range v {
			mm.Models = append(mm.Models, "")
			mm.Values = append(mm.Values, []float64{x})
		}
		return columnRanks(mm)[0]
	}
	ra, rb := rank(a), rank(b)
	var ma, mb float64
	for i := range ra {
		ma += ra[i] / float64(len(ra))
		mb += rb[i] / float64(len(rb))
	}
	var cov, va, vb float64
	for i := range ra {
		cov += (ra[i] - ma) * (rb[i] - mb)
		va += (ra[i] - ma) * (ra[i] - ma)
		vb += (rb[i] - mb) * (rb[i] - mb)
	}
	if va == 0 || vb == 0 {
		return 0
	}
	return cov / math.Sqrt(va*vb)
}

// horizontalBars draws labelled horizontal bars, first label at the top.
func horizontalBars(title, xlabel string, labels []string, values []float64, dir, name string) (Figure, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xlabel
	n := len(values)
	vals := make(plotter.Values, n)
	for i := range values {
		vals[i] = values[n-1-i]
	}
	bars, err := plotter.NewBarChart(vals, vg.Points(9))
	if err != nil {
		return Figure{}, err
	}
	bars.Horizontal = true
	bars.Color = okabeIto[4]
	bars.LineStyle.Width = 0
	p.Add(bars)
	var ticks []plot.Tick
	for i := range labels {
		ticks = append(ticks, plot.Tick{Value: float64(i), Label: labels[n-1-i]})
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	p.Add(plotter.NewGrid())
	return save(p, dir, name, 6*vg.Inch, vg.Length(n)*0.2*vg.Inch+1.5*vg.Inch)
}

// SinglePredictiveness draws each benchmark's score when used alone to
// predict the pool (paper Fig. 3); lower is better, best at the top.
func SinglePredictiveness(single []eevee.Candidate, dir string) (Figure, error) {
	var labels []string
	var vals []float64
	for _, c := range single {
		labels = append(labels, c.Benchmarks[0])
		vals = append(vals, c.Score)
	}
	return horizontalBars("Single-benchmark predictiveness (EEVEE score, lower is better)", "score", labels, vals, dir, "eevee_single")
}

// Importance draws the score increase when each member of the best
// combination is removed (paper Fig. 4).
func Importance(k int, imp []eevee.Importance, dir string) (Figure, error) {
	var labels []string
	var vals []float64
	for _, i := range imp {
		labels = append(labels, i.Benchmark)
		vals = append(vals, i.Increase)
	}
	return horizontalBars(fmt.Sprintf("Importance of the members of the best k=%d set", k), "score increase when removed", labels, vals, dir, fmt.Sprintf("eevee_importance_k%d", k))
}

// TopScoresByK draws, for each k, the distribution of the final top-W
// scores as a box plot (paper Fig. 5).
func TopScoresByK(results []eevee.KResult, dir string) (Figure, error) {
	p := plot.New()
	p.Title.Text = "Scores of the top candidates against k (lower is better; compare within one k:\nmeta-models with different inputs are not scored on one scale)"
	p.Y.Label.Text = "score"
	var ticks []plot.Tick
	for i, r := range results {
		vals := make(plotter.Values, len(r.Winners))
		for j, w := range r.Winners {
			vals[j] = w.Score
		}
		box, err := plotter.NewBoxPlot(vg.Points(18), float64(i), vals)
		if err != nil {
			return Figure{}, err
		}
		box.FillColor = okabeIto[1]
		p.Add(box)
		ticks = append(ticks, plot.Tick{Value: float64(i), Label: fmt.Sprintf("k=%d", r.K)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	// Half a slot of room each side, so the first and last boxes are whole.
	p.X.Min, p.X.Max = -0.5, float64(len(results))-0.5
	p.Add(plotter.NewGrid())
	return save(p, dir, "eevee_topk_box", max(vg.Length(len(results))*0.6*vg.Inch+2.5*vg.Inch, 5.5*vg.Inch), 4*vg.Inch)
}

// comparableMean names the row of a family table that the comparison
// plots: the Task Mean when it is higher-is-better and averages no
// lower-is-better metric, else the row of its higher-is-better metrics;
// ok is false for a family whose mean is lower-is-better (Video Reg's
// MAE), whose label is then the Task Mean's ("" with none).
func comparableMean(t Table) (label string, ok bool) {
	for _, r := range t.Rows {
		if r.Label == TaskMeanHigher {
			return r.Label, true
		}
	}
	for _, r := range t.Rows {
		if r.Label == "Task Mean" {
			return r.Label, r.HigherIsBetter
		}
	}
	return "", false
}

// FamilyComparison draws grouped bars of each family's Task Mean for the
// given models (paper Figs. 12-15), on one higher-is-better axis: a
// family that mixes directions shows its higher-is-better metrics' mean,
// and one whose mean is lower-is-better is left out, the title naming it.
func FamilyComparison(tables []Table, models []string, dir, name string) (Figure, error) {
	p := plot.New()
	p.Y.Label.Text = "Task Mean (%), higher is better"
	var fams, left []string
	idx := map[string]int{}
	var with []Table // families that have a higher-is-better Task Mean
	var rows []string
	for _, t := range tables {
		if label, ok := comparableMean(t); ok {
			fams, with, rows = append(fams, t.Title), append(with, t), append(rows, label)
		} else if label != "" {
			left = append(left, t.Title)
		}
	}
	tables = with
	p.Title.Text = "Task Mean per family (higher-is-better metrics, %)"
	if len(left) > 0 {
		p.Title.Text += "\nleft out, lower is better: " + strings.Join(left, ", ")
	}
	if len(fams) == 0 || len(tables[0].Models) == 0 {
		return Figure{}, fmt.Errorf("no family has a Task Mean")
	}
	top := 0.0
	for i, m := range tables[0].Models {
		idx[m] = i
	}
	w := vg.Points(8)
	for k, model := range models {
		mi, ok := idx[model]
		if !ok {
			return Figure{}, fmt.Errorf("model %q is not in the tables", model)
		}
		vals := make(plotter.Values, len(tables))
		for f, t := range tables {
			for _, r := range t.Rows {
				if r.Label == rows[f] && !r.Cells[mi].Missing {
					vals[f] = r.Cells[mi].Value
					top = math.Max(top, vals[f])
				}
			}
		}
		bars, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return Figure{}, err
		}
		bars.Color = okabeIto[k%len(okabeIto)]
		bars.LineStyle.Width = 0
		bars.Offset = w * vg.Length(k-len(models)/2)
		p.Add(bars)
		p.Legend.Add(model, bars)
	}
	p.Legend.Top = true
	p.Y.Min, p.Y.Max = 0, 100 // percentages on their own scale
	if top > 100 {
		p.Y.Max = top * 1.05
	}
	p.Legend.YOffs = vg.Points(14) // above the plot area, off the bars
	p.NominalX(fams...)
	p.X.Tick.Label.Rotation = math.Pi / 6
	p.X.Tick.Label.XAlign = draw.XRight
	return save(p, dir, name, vg.Length(len(fams))*vg.Length(len(models))*0.14*vg.Inch+3*vg.Inch, 4.5*vg.Inch)
}
