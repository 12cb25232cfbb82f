package pmf

import (
	"fmt"
	"path/filepath"

	"github.com/gatepipe/gatepipe/internal/palette"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// series is one line with error bars.
type series struct {
	name string
	x    []float64
	y    []Stat
}

func linePlot(title, xLabel, yLabel string, all []series) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, xLabel, yLabel
	p.Legend.Top = true
	for i, s := range all {
		pts := make(plotter.XYs, len(s.x))
		errs := make(plotter.YErrors, len(s.x))
		for k := range s.x {
			pts[k].X, pts[k].Y = s.x[k], s.y[k].Mean
			errs[k].Low, errs[k].High = s.y[k].Std, s.y[k].Std
		}
		line, points, err := plotter.NewLinePoints(pts)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
		c := palette.OkabeIto[(i+4)%len(palette.OkabeIto)]
		line.Color, points.Color = c, c
		points.Shape = draw.CircleGlyph{}
		bars, err := plotter.NewYErrorBars(struct {
			plotter.XYer
			plotter.YErrorer
		}{pts, errs})
		if err != nil {
			return nil, err
		}
		bars.Color = c
		p.Add(line, points, bars)
		p.Legend.Add(s.name, line, points)
	}
	p.Add(plotter.NewGrid())
	return p, nil
}

// savePlot writes name.svg and name.png into dir and returns their paths
// in that order.
func savePlot(p *plot.Plot, dir, name string) ([]string, error) {
	var out []string
	for _, ext := range []string{".svg", ".png"} {
		path := filepath.Join(dir, name+ext)
		if err := p.Save(7*vg.Inch, 4.5*vg.Inch, path); err != nil {
			return nil, fmt.Errorf("figure %s: %w", name, err)
		}
		out = append(out, path)
	}
	return out, nil
}

// PlotEvaluation draws RMSE against the test ratio per method (mean ± std
// over seeds) into dir as name.svg and name.png, and returns their paths in
// that order.
func PlotEvaluation(rows []EvalRow, title, dir, name string) ([]string, error) {
	var all []series
	index := map[string]int{}
	for _, r := range rows {
		i, ok := index[r.Method]
		if !ok {
			i = len(all)
			index[r.Method] = i
			all = append(all, series{name: r.Method})
		}
		all[i].x = append(all[i].x, 100*r.Ratio)
		all[i].y = append(all[i].y, r.RMSE)
	}
	p, err := linePlot(title, "entries hidden (%)", "RMSE (column std units)", all)
	if err != nil {
		return nil, err
	}
	return savePlot(p, dir, name)
}

// PlotActive draws each rule's RMSE against the cells observed.
func PlotActive(curves []Curve, title, dir, name string) ([]string, error) {
	var all []series
	for _, c := range curves {
		s := series{name: c.Rule, y: c.RMSE}
		for _, n := range c.Revealed {
			s.x = append(s.x, float64(n))
		}
		all = append(all, s)
	}
	p, err := linePlot(title, "cells observed", "RMSE of the completed matrix (column std units)", all)
	if err != nil {
		return nil, err
	}
	return savePlot(p, dir, name)
}
