package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/gatepipe/gatepipe/eevee"
)

// checkRun is one seed's results of eevee check-published.
type checkRun struct {
	Seed     uint64                 `json:"seed"`
	Rows     []eevee.PublishedCheck `json:"rows"`
	Mean     float64                `json:"mean_share"`
	Rankings []eevee.RankingCheck   `json:"rankings"`
	Scored   int                    `json:"scored"`
}

func runCheckPublished(ctx context.Context, c *cli, args []string, usage string) int {
	fs := newFlagSet(c, "eevee check-published", usage)
	var f checkFlags
	fs.StringVar(&f.matrix, "matrix", "stdlib/data/gate_table3.csv", "performance matrix (long CSV)")
	fs.StringVar(&f.combos, "combinations", "stdlib/data/gate_combinations.csv", "published combinations")
	fs.StringVar(&f.single, "single", "stdlib/data/gate_fig3_single.csv", "published single-benchmark ranking (rank,benchmark); empty: skip")
	fs.IntVar(&f.random, "random", 200, "random combinations per k")
	fs.StringVar(&f.seeds, "seeds", "0,1", "comma-separated seeds (each seeds the splits, the meta-models and the random draws)")
	fs.IntVar(&f.kmin, "k-min", 2, "smallest k")
	fs.IntVar(&f.kmax, "k-max", 22, "largest k")
	fs.StringVar(&f.weighting, "weighting", "group", "group, benchmark or column")
	fs.BoolVar(&f.literal, "literal", false, "the literal paper reading: column weighting, 5 splits, 100-unit ReLU, no LayerNorm")
	fs.StringVar(&f.exclude, "exclude", "cityscapes", "comma-separated benchmarks left out of the candidate pool")
	fs.IntVar(&f.workers, "workers", 0, "scoring goroutines (default: all CPUs)")
	fs.BoolVar(&f.asJSON, "json", false, "print the results as JSON")
	if _, code, ok := parseArgs(fs, args); !ok {
		return code
	}
	fail := func(err error) int { fmt.Fprintln(c.stderr, "gatepipe eevee:", err); return exitRunFailure }
	if f.random < 1 {
		fmt.Fprintf(c.stderr, "gatepipe eevee: -random %d: at least one random combination per k is needed to compare against\n", f.random)
		return exitConfigError
	}
	if f.kmin < 1 || f.kmax < f.kmin {
		fmt.Fprintf(c.stderr, "gatepipe eevee: -k-min %d -k-max %d: want 1 <= k-min <= k-max\n", f.kmin, f.kmax)
		return exitConfigError
	}
	m, err := loadMatrixFile(f.matrix)
	if err != nil {
		return fail(err)
	}
	pub, err := f.loadPublished()
	if err != nil {
		return fail(err)
	}
	var runs []checkRun
	for _, s := range strings.Split(f.seeds, ",") {
		seed, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
		if err != nil {
			fmt.Fprintf(c.stderr, "gatepipe eevee: bad seed %q\n", s)
			return exitConfigError
		}
		r, err := f.checkSeed(ctx, c, m, pub, seed)
		if err != nil {
			return fail(err)
		}
		runs = append(runs, r)
	}
	if f.asJSON {
		enc := json.NewEncoder(c.stdout)
		enc.SetIndent("", "  ")
		enc.Encode(runs)
		return exitOK
	}
	scoring := "weighting=" + f.weighting + " (other options: defaults)"
	if f.literal {
		scoring = "literal paper reading (column weighting, 5 splits, 100-unit ReLU, no LayerNorm)"
	}
	fmt.Fprintf(c.stdout, "Share of %d random combinations that beat the published one; %s.\n\n", f.random, scoring)
	printShares(c.stdout, pub.sel, runs)
	if len(runs) > 0 && len(runs[0].Rankings) > 0 {
		fmt.Fprintln(c.stdout, "\nThe paper's published orders against this scoring's (Spearman rho; 1 = the same order).")
		printRankings(c.stdout, runs)
	}
	return exitOK
}

// checkFlags are the flags of eevee check-published.
type checkFlags struct {
	matrix, combos, single, seeds, weighting, exclude string
	random, kmin, kmax, workers                       int
	literal, asJSON                                   bool
}

// publishedSets is what the paper published: the combinations for k in
// range (sel), the single-benchmark ranking (order; empty when skipped)
// and the complete tiers of its figure 4.
type publishedSets struct {
	sel, tiers []eevee.Published
	order      []string
}

func (f *checkFlags) loadPublished() (publishedSets, error) {
	var out publishedSets
	data, err := readStdlibOrFile(f.combos)
	if err != nil {
		return out, err
	}
	pubs, err := eevee.LoadPublished(bytes.NewReader(data))
	if err != nil {
		return out, fmt.Errorf("%s: %w", f.combos, err)
	}
	if f.single != "" {
		data, err := readStdlibOrFile(f.single)
		if err != nil {
			return out, err
		}
		if out.order, err = eevee.LoadSingleRanking(bytes.NewReader(data)); err != nil {
			return out, fmt.Errorf("%s: %w", f.single, err)
		}
	}
	out.sel = eevee.PublishedRange(pubs, f.kmin, f.kmax)
	for _, p := range pubs {
		if strings.HasPrefix(p.Source, "fig4") && p.Complete {
			out.tiers = append(out.tiers, p)
		}
	}
	return out, nil
}

// checkSeed scores the published combinations against random ones, and
// the published orders against the scoring's, with one seed.
func (f *checkFlags) checkSeed(ctx context.Context, c *cli, m *eevee.Matrix, pub publishedSets, seed uint64) (checkRun, error) {
	o := eevee.Defaults()
	if f.literal {
		o = eevee.PaperLiteral()
	} else {
		o.Weighting = f.weighting
	}
	o.Seed = seed
	if f.exclude != "" {
		o.Exclude = strings.Split(f.exclude, ",")
	}
	p, err := eevee.NewProblem(m, o)
	if err != nil {
		return checkRun{}, err
	}
	if p.Warning != "" && seed == runsFirstSeed(f.seeds) {
		fmt.Fprintln(c.stderr, "Warning:", p.Warning)
	}
	ev := p.NewEvaluator(f.workers)
	rows, err := p.CheckPublished(ctx, ev, pub.sel, f.random, seed)
	if err != nil {
		return checkRun{}, err
	}
	r := checkRun{Seed: seed, Rows: rows}
	for _, row := range rows {
		r.Mean += row.Share / float64(len(rows))
	}
	if r.Rankings, err = checkRankings(ctx, p, ev, pub.order, pub.tiers); err != nil {
		return checkRun{}, err
	}
	r.Scored = ev.Scored
	return r, nil
}

// checkRankings correlates the scoring with the paper's single-benchmark
// ranking (order; none if empty) and with each tier's importance order.
func checkRankings(ctx context.Context, p *eevee.Problem, ev *eevee.Evaluator, order []string, tiers []eevee.Published) ([]eevee.RankingCheck, error) {
	var out []eevee.RankingCheck
	if len(order) > 0 {
		r, err := p.CheckSingle(ctx, ev, order)
		if err != nil {
			return nil, fmt.Errorf("single-benchmark ranking: %w", err)
		}
		r.What = "Figure 3: " + r.What
		out = append(out, r)
	}
	for _, t := range tiers {
		r, err := p.CheckImportance(ctx, ev, t)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func printShares(w io.Writer, sel []eevee.Published, runs []checkRun) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	header := "k\t"
	for _, r := range runs {
		header += fmt.Sprintf("seed %d\t", r.Seed)
	}
	fmt.Fprintln(tw, header+"mean\t")
	for i := range sel {
		line := fmt.Sprintf("%d\t", sel[i].K)
		var sum float64
		for _, r := range runs {
			line += fmt.Sprintf("%.1f%%\t", 100*r.Rows[i].Share)
			sum += r.Rows[i].Share
		}
		fmt.Fprintln(tw, line+fmt.Sprintf("%.1f%%\t", 100*sum/float64(len(runs))))
	}
	var overall float64
	line := "mean\t"
	for _, r := range runs {
		line += fmt.Sprintf("%.2f%%\t", 100*r.Mean)
		overall += r.Mean / float64(len(runs))
	}
	fmt.Fprintln(tw, line+fmt.Sprintf("%.2f%%\t", 100*overall))
	tw.Flush()
}

func printRankings(w io.Writer, runs []checkRun) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	header := "order\t"
	for _, r := range runs {
		header += fmt.Sprintf("seed %d\t", r.Seed)
	}
	fmt.Fprintln(tw, header+"mean")
	for i, rk := range runs[0].Rankings {
		line := rk.What + "\t"
		var sum float64
		for _, r := range runs {
			line += fmt.Sprintf("%.3f\t", r.Rankings[i].Rho)
			sum += r.Rankings[i].Rho
		}
		fmt.Fprintln(tw, line+fmt.Sprintf("%.3f", sum/float64(len(runs))))
	}
	tw.Flush()
}

// runsFirstSeed is the first of the -seeds list, so a warning about the
// matrix is printed once.
func runsFirstSeed(seeds string) uint64 {
	first, _ := strconv.ParseUint(strings.TrimSpace(strings.Split(seeds, ",")[0]), 10, 64)
	return first
}
