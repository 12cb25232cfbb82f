package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/gatepipe/gatepipe/pmf"
)

func runPMFActive(ctx context.Context, c *cli, args []string) int {
	fs := newFlagSet(c, "pmf active", pmfUsage)
	var f pmfFlags
	f.register(fs)
	method := fs.String("method", "bpmf", "sampler: pmf, bpmf, ptf or bptf")
	rules := fs.String("rules", strings.Join(pmf.Rules(), ","), "comma-separated acquisition rules")
	start := fs.Float64("start", 20, "percent of the entries observed at the start")
	batch := fs.Int("batch", 20, "entries revealed per batch")
	rounds := fs.Int("rounds", 10, "batches")
	if _, code, ok := parseArgs(fs, args); !ok {
		return code
	}
	fail := func(err error) int { fmt.Fprintln(c.stderr, "gatepipe pmf active:", err); return exitConfigError }
	d, o, err := f.load()
	if err != nil {
		return fail(err)
	}
	m, err := pmf.New(*method, o)
	if err != nil {
		return fail(err)
	}
	if !isSampler(m) {
		return fail(fmt.Errorf("-method must be a sampler (pmf, bpmf, ptf, bptf), not %q", *method))
	}
	sampler := m.(*pmf.Sampler)
	ao := pmf.ActiveOptions{Start: *start / 100, Batch: *batch, Rounds: *rounds, Seeds: f.seeds, Workers: f.workers}
	for _, r := range strings.Split(*rules, ",") {
		r = strings.TrimSpace(r)
		if !slices.Contains(pmf.Rules(), r) {
			return fail(fmt.Errorf("unknown rule %q (want %s)", r, strings.Join(pmf.Rules(), ", ")))
		}
		ao.Rules = append(ao.Rules, r)
	}
	curves, err := pmf.Simulate(ctx, d, sampler, ao, counter(c.stderr, "fits"))
	if err != nil {
		fmt.Fprintln(c.stderr, "gatepipe pmf active:", err)
		return exitRunFailure
	}
	fmt.Fprintf(c.stdout, "Active evaluation on %s (%s columns): %d models x %d columns, %s, start %.0f%% observed, %d batches of %d, %d seeds.\n",
		f.matrix, f.columns, d.Rows(), d.Cols(), *method, *start, *rounds, *batch, f.seeds)
	fmt.Fprintln(c.stdout, "RMSE of the completed matrix over the entries hidden at the start (revealed ones count as exact), in column std units; mean ± std over seeds.")
	writeActiveTable(c.stdout, curves)
	if f.out != "" {
		if err := saveActive(f.out, curves); err != nil {
			fmt.Fprintln(c.stderr, "gatepipe pmf active:", err)
			return exitRunFailure
		}
		fmt.Fprintf(c.stdout, "\nWrote %s (active.csv, .json, .svg, .png)\n", f.out)
	}
	return exitOK
}

// writeActiveTable prints a row per rule, a column per batch, then the
// mean over batches 1..N and its ratio to random's.
func writeActiveTable(w io.Writer, curves []pmf.Curve) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprint(tw, "rule")
	for _, n := range curves[0].Revealed {
		fmt.Fprintf(tw, "\t%d", n)
	}
	fmt.Fprintln(tw, "\tmean after 1..N\tvs random")
	means := map[string]float64{}
	for _, cv := range curves {
		var sum float64
		for _, s := range cv.RMSE[1:] {
			sum += s.Mean
		}
		means[cv.Rule] = sum / float64(len(cv.RMSE)-1)
	}
	for _, cv := range curves {
		fmt.Fprint(tw, cv.Rule)
		for _, s := range cv.RMSE {
			fmt.Fprintf(tw, "\t%.3f±%.3f", s.Mean, s.Std)
		}
		ratio := "–"
		if r, ok := means["random"]; ok && r > 0 {
			ratio = fmt.Sprintf("%.3f", means[cv.Rule]/r)
		}
		fmt.Fprintf(tw, "\t%.3f\t%s\n", means[cv.Rule], ratio)
	}
	tw.Flush()
	best, bestMean := "", math.Inf(1)
	for _, cv := range curves {
		if cv.Rule != "oracle" && means[cv.Rule] < bestMean {
			best, bestMean = cv.Rule, means[cv.Rule]
		}
	}
	if best != "" {
		fmt.Fprintf(w, "Best rule without the truth: %s.\n", best)
	}
	fmt.Fprintln(w, "uncertainty ranks the posterior std in units of each column's std (the z-scores the model is fitted on);")
	fmt.Fprintln(w, "uncertainty_raw ranks it in each column's own units, where large-scale columns (losses) outrank the rest by their units alone.")
}

func saveActive(dir string, curves []pmf.Curve) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("rule,observed,rmse_mean,rmse_std,mae_mean,mae_std\n")
	for _, cv := range curves {
		for p := range cv.RMSE {
			fmt.Fprintf(&b, "%s,%d,%.6g,%.6g,%.6g,%.6g\n", cv.Rule, cv.Revealed[p], cv.RMSE[p].Mean, cv.RMSE[p].Std, cv.MAE[p].Mean, cv.MAE[p].Std)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "active.csv"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	js, err := json.MarshalIndent(curves, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "active.json"), js, 0o644); err != nil {
		return err
	}
	_, err = pmf.PlotActive(curves, "Active evaluation: error of the completed matrix", dir, "active")
	return err
}
