package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/gatepipe/gatepipe/formats/runmeta"
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
	Log       []RunLog
	// Info is the run's run.json, nil when the run has none.
	Info *runmeta.Info
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
	r := Run{Dir: dir, Metrics: map[string]float64{}}
	data, err := os.ReadFile(filepath.Join(dir, "metrics.json"))
	if err != nil {
		return r, err
	}
	var m struct {
		Model, Benchmark string
		Metrics          map[string]struct{ Value float64 }
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return r, fmt.Errorf("%s: %w", dir, err)
	}
	r.Model, r.Benchmark = m.Model, m.Benchmark
	for k, v := range m.Metrics {
		r.Metrics[k] = v.Value
	}
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

func (r Run) id() string { return slug(r.Model + "_" + r.Benchmark) }

// Curves draws a run's training loss, validation loss and accuracy, and
// learning rate against iterations.
func Curves(r Run, dir string) (Figure, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Training of %s on %s", r.Model, r.Benchmark)
	p.X.Label.Text = "iteration"
	p.Y.Label.Text = "loss / accuracy (fraction) / lr x1000"
	var loss, vloss, vacc, lr plotter.XYs
	for _, l := range r.Log {
		x := float64(l.Iteration)
		if l.Loss > 0 {
			loss = append(loss, plotter.XY{X: x, Y: l.Loss})
		}
		lr = append(lr, plotter.XY{X: x, Y: l.LR * 1000})
		if l.Val != nil {
			vloss = append(vloss, plotter.XY{X: x, Y: l.Val["loss"]})
			vacc = append(vacc, plotter.XY{X: x, Y: l.Val["acc1"] / 100})
		}
	}
	add := func(name string, xy plotter.XYs, c int, points bool) error {
		if len(xy) == 0 {
			return nil
		}
		line, err := plotter.NewLine(xy)
		if err != nil {
			return err
		}
		line.Color = okabeIto[c]
		line.Width = vg.Points(1.5)
		p.Add(line)
		p.Legend.Add(name, line)
		if points {
			sc, err := plotter.NewScatter(xy)
			if err != nil {
				return err
			}
			sc.Color = okabeIto[c]
			p.Add(sc)
		}
		return nil
	}
	for _, s := range []struct {
		name   string
		xy     plotter.XYs
		c      int
		points bool
	}{{"train loss", loss, 4, false}, {"val loss", vloss, 5, true}, {"val acc@1", vacc, 2, true}, {"lr x1000", lr, 7, false}} {
		if err := add(s.name, s.xy, s.c, s.points); err != nil {
			return Figure{}, err
		}
	}
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	return save(p, dir, "curves_"+r.id(), 6.5*vg.Inch, 4*vg.Inch)
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
	return horizontalBars("Training throughput per experiment", "images per second", labels, vals, dir, "throughput")
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

// runsHTML writes the experiments table, each row linking to its curves.
func runsHTML(w io.Writer, runs []Run) {
	fmt.Fprintln(w, `<table class="results" id="experiments"><caption>Experiments</caption><thead><tr><th>model</th><th>benchmark</th><th>Acc@1</th><th>Acc@5</th><th>Loss</th><th>iterations</th><th>energy (J)</th><th>curves</th></tr></thead><tbody>`)
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
		fmt.Fprintf(w, `<tr><th scope="row">%s</th><td>%s</td><td>%.2f</td><td>%.2f</td><td>%.3f</td><td>%d</td><td>%s</td><td><a href="#fig-curves_%s">curves</a></td></tr>`+"\n",
			html.EscapeString(r.Model), html.EscapeString(r.Benchmark), r.Metrics["Acc@1"], r.Metrics["Acc@5"], r.Metrics["Loss"], iters, energy, r.id())
	}
	fmt.Fprintln(w, "</tbody></table>")
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
