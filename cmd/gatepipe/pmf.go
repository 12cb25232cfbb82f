package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/gatepipe/gatepipe/pmf"
)

const pmfUsage = `pmf eval|active [flags]

  eval    the paper's protocol on a complete matrix: hide P% of its entries
          (P = 20, 40, 60, 80, 90, 95) with 10 seeds, complete it with each
          method, and score RMSE, MAE and R² on the hidden entries (in units
          of each column's standard deviation over the full matrix), with the
          Spearman correlation of posterior std and absolute error, and the
          share of hidden entries inside their 90% and 95% intervals; a column
          left with no observation (-hide-columns N hides N wholly) is not
          predicted, and "scored" says how many hidden cells were
  active  simulate active evaluation: start from 20% of the entries, reveal
          a batch chosen by each acquisition rule (random; uncertainty: the
          largest posterior std in column-std units; uncertainty_raw: the
          same in the columns' own units; variance; oracle), refit, and
          score the completed matrix after each batch

Methods: pmf (the paper's PMF), bpmf (PMF with per-dimension prior scales),
ptf and bptf (one latent vector per benchmark and a linear map per metric),
global_mean, mean_of_means. Samplers are Gibbs: 500 warm-up and 100 kept
draws by default. Their predictive std and intervals are calibrated by three
more fits, each with a tenth of the observed entries held out: the held-out
residuals give the intervals' quantiles (split conformal); -calibration-folds 0
skips them and leaves the posterior's own, over-confident spread.`

// pmfFlags are the flags eval and active share.
type pmfFlags struct {
	matrix, columns, profiles, out string
	latent, warmup, draws, seeds   int
	workers, folds                 int
}

func (f *pmfFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.matrix, "matrix", "stdlib/data/gate_table3.csv", "complete performance matrix (long CSV)")
	fs.StringVar(&f.columns, "columns", "primary", "columns: primary (one headline metric per benchmark), all, higher_is_better")
	fs.StringVar(&f.profiles, "profiles", "", "model profiles CSV for constrained PMF (e.g. stdlib/data/gate_encoders.csv); none by default")
	fs.StringVar(&f.out, "out", "", "directory for CSV, JSON and figures (SVG, PNG)")
	fs.IntVar(&f.latent, "latent", 10, "latent dimension D")
	fs.IntVar(&f.warmup, "warmup", 500, "Gibbs warm-up sweeps")
	fs.IntVar(&f.draws, "draws", 100, "Gibbs draws kept")
	fs.IntVar(&f.seeds, "seeds", 10, "random seeds")
	fs.IntVar(&f.workers, "workers", runtime.NumCPU(), "fits in parallel")
}

func (f *pmfFlags) load() (*pmf.Data, pmf.Options, error) {
	o := pmf.DefaultOptions()
	o.Latent, o.Warmup, o.Draws, o.CalibrationFolds = f.latent, f.warmup, f.draws, f.folds
	if err := o.Validate(); err != nil {
		return nil, o, err
	}
	if f.seeds < 1 || f.workers < 1 {
		return nil, o, fmt.Errorf("-seeds and -workers must be at least 1")
	}
	switch f.columns {
	case "primary", "all", "higher_is_better":
	default:
		return nil, o, fmt.Errorf("-columns must be primary, all or higher_is_better, not %q", f.columns)
	}
	m, err := loadMatrixFile(f.matrix)
	if err != nil {
		return nil, o, err
	}
	if miss := m.Missing(); len(miss) > 0 {
		return nil, o, fmt.Errorf("%s: the evaluation needs a complete matrix; %d cells are missing (first: %s)", f.matrix, len(miss), miss[0])
	}
	m = m.Select(f.columns)
	d := pmf.FromMatrix(m)
	if f.profiles != "" {
		data, err := readStdlibOrFile(f.profiles)
		if err != nil {
			return nil, o, err
		}
		if d.Profiles, _, err = pmf.LoadProfiles(strings.NewReader(string(data)), f.profiles, m.Models); err != nil {
			return nil, o, err
		}
	}
	return d, o, nil
}

func runPMF(ctx context.Context, c *cli, args []string) int {
	if code, done := c.subcommandHelp(args, pmfUsage); done {
		return code
	}
	switch args[0] {
	case "eval":
		return runPMFEval(ctx, c, args[1:])
	case "active":
		return runPMFActive(ctx, c, args[1:])
	}
	fmt.Fprintf(c.stderr, "gatepipe pmf: unknown subcommand %q.%s\n", args[0], didYouMean(args[0], []string{"eval", "active"}))
	return exitConfigError
}

// counter prints "label N/M" on stderr at each tenth.
func counter(w io.Writer, label string) func(done, total int) {
	last := -1
	return func(done, total int) {
		if tenth := 10 * done / total; tenth != last {
			last = tenth
			fmt.Fprintf(w, "%s %d/%d\n", label, done, total)
		}
	}
}

func parseList(s string, scale float64) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", f)
		}
		out = append(out, v/scale)
	}
	return out, nil
}

func runPMFEval(ctx context.Context, c *cli, args []string) int {
	fs := newFlagSet(c, "pmf eval", pmfUsage)
	var f pmfFlags
	f.register(fs)
	fs.IntVar(&f.folds, "calibration-folds", pmf.DefaultOptions().CalibrationFolds, "held-out fits that calibrate a sampler's intervals (0: none)")
	methods := fs.String("methods", "global_mean,mean_of_means,pmf,bpmf,ptf", "comma-separated methods")
	ratios := fs.String("ratios", "20,40,60,80,90,95", "comma-separated test ratios in percent")
	hideColumns := fs.Int("hide-columns", 0, "also hide this many whole columns in every mask: no method predicts a column it has no observation of (its units are unknown), and the scored column says how many hidden cells that leaves out")
	if _, code, ok := parseArgs(fs, args); !ok {
		return code
	}
	fail := func(err error) int { fmt.Fprintln(c.stderr, "gatepipe pmf eval:", err); return exitConfigError }
	d, o, err := f.load()
	if err != nil {
		return fail(err)
	}
	eo := pmf.EvalOptions{Seeds: f.seeds, Workers: f.workers, HideColumns: *hideColumns}
	if eo.Ratios, err = parseList(*ratios, 100); err != nil {
		return fail(fmt.Errorf("-ratios: %w", err))
	}
	var ms []pmf.Method
	for _, name := range strings.Split(*methods, ",") {
		m, err := pmf.New(strings.TrimSpace(name), o)
		if err != nil {
			return fail(err)
		}
		ms = append(ms, m)
	}
	rows, err := pmf.Evaluate(ctx, d, ms, eo, counter(c.stderr, "fits"))
	if err != nil {
		fmt.Fprintln(c.stderr, "gatepipe pmf eval:", err)
		return exitRunFailure
	}
	fmt.Fprintf(c.stdout, "Masked-ratio evaluation of %s (%s columns): %d models x %d columns, %d seeds, D=%d, %d+%d Gibbs sweeps, intervals calibrated on %d held-out folds.\n",
		f.matrix, f.columns, d.Rows(), d.Cols(), f.seeds, o.Latent, o.Warmup, o.Draws, o.CalibrationFolds)
	fmt.Fprintln(c.stdout, "Errors in units of each column's standard deviation over the full matrix; mean ± std over seeds; * marks the best per row.")
	writeEvalTables(c.stdout, rows)
	if f.out != "" {
		if err := saveEval(f.out, rows); err != nil {
			fmt.Fprintln(c.stderr, "gatepipe pmf eval:", err)
			return exitRunFailure
		}
		fmt.Fprintf(c.stdout, "\nWrote %s (masked_ratio.csv, .json, .svg, .png)\n", f.out)
	}
	return exitOK
}

// writeEvalTables prints one table per score: a row per ratio, a column
// per method.
func writeEvalTables(w io.Writer, rows []pmf.EvalRow) {
	var methods []string
	var ratios []float64
	cell := map[[2]string]pmf.EvalRow{}
	for _, r := range rows {
		key := [2]string{strconv.FormatFloat(r.Ratio, 'f', -1, 64), r.Method}
		if !slices.Contains(methods, r.Method) {
			methods = append(methods, r.Method)
		}
		if !slices.Contains(ratios, r.Ratio) {
			ratios = append(ratios, r.Ratio)
		}
		cell[key] = r
	}
	scores := []struct {
		name   string
		get    func(pmf.EvalRow) pmf.Stat
		lowest bool
		noBest bool
	}{
		{"RMSE", func(r pmf.EvalRow) pmf.Stat { return r.RMSE }, true, false},
		{"MAE", func(r pmf.EvalRow) pmf.Stat { return r.MAE }, true, false},
		{"R²", func(r pmf.EvalRow) pmf.Stat { return r.R2 }, false, false},
		{"Spearman(std, |error|)", func(r pmf.EvalRow) pmf.Stat { return r.StdErrCorr }, false, true},
		{"Share of hidden cells inside their 90% interval", func(r pmf.EvalRow) pmf.Stat { return r.Cover90 }, false, true},
		{"Share of hidden cells inside their 95% interval", func(r pmf.EvalRow) pmf.Stat { return r.Cover95 }, false, true},
	}
	for _, s := range scores {
		fmt.Fprintf(w, "\n%s\n", s.name)
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprint(tw, "hidden\tscored")
		for _, m := range methods {
			fmt.Fprintf(tw, "\t%s", m)
		}
		fmt.Fprintln(tw)
		for _, ratio := range ratios {
			key := strconv.FormatFloat(ratio, 'f', -1, 64)
			best := math.NaN()
			for _, m := range methods {
				v := s.get(cell[[2]string{key, m}]).Mean
				if !math.IsNaN(v) && (math.IsNaN(best) || s.lowest && v < best || !s.lowest && v > best) {
					best = v
				}
			}
			fmt.Fprintf(tw, "%.0f%%\t%.0f%%", 100*ratio, 100*cell[[2]string{key, methods[0]}].Coverage.Mean)
			for _, m := range methods {
				st := s.get(cell[[2]string{key, m}])
				if math.IsNaN(st.Mean) {
					fmt.Fprint(tw, "\t–")
					continue
				}
				mark := ""
				if st.Mean == best && !s.noBest {
					mark = "*"
				}
				fmt.Fprintf(tw, "\t%.3f ± %.3f%s", st.Mean, st.Std, mark)
			}
			fmt.Fprintln(tw)
		}
		tw.Flush()
	}
}

func saveEval(dir string, rows []pmf.EvalRow) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("method,hidden,rmse_mean,rmse_std,mae_mean,mae_std,r2_mean,r2_std,std_err_spearman_mean,coverage,interval90_coverage_mean,interval95_coverage_mean\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "%s,%g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g\n", r.Method, r.Ratio, r.RMSE.Mean, r.RMSE.Std, r.MAE.Mean, r.MAE.Std, r.R2.Mean, r.R2.Std, r.StdErrCorr.Mean, r.Coverage.Mean,
			r.Cover90.Mean, r.Cover95.Mean)
	}
	if err := os.WriteFile(filepath.Join(dir, "masked_ratio.csv"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	js, err := json.MarshalIndent(rows, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "masked_ratio.json"), js, 0o644); err != nil {
		return err
	}
	_, err = pmf.PlotEvaluation(rows, "Matrix completion: RMSE on hidden entries", dir, "masked_ratio")
	return err
}
