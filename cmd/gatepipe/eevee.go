package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/gatepipe/gatepipe/eevee"
	"github.com/gatepipe/gatepipe/stdlib"
)

func runEEVEE(ctx context.Context, c *cli, args []string) int {
	usage := `eevee check-published [flags]

  check-published  score each combination the GATE paper publishes (k = 2..22)
                   and random combinations of the same size, and print the
                   share of random ones that beat it, per k and on average
  loo              validate prediction from a tier by leave-one-model-out:
                   each model is held out, predicted from its tier results,
                   and compared with the truth, against two baselines`
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintf(c.stderr, "Usage: gatepipe %s\n", usage)
		if len(args) == 0 {
			return exitConfigError
		}
		return exitOK
	}
	switch args[0] {
	case "check-published":
	case "loo":
		return runEEVEELoo(ctx, c, args[1:], usage)
	default:
		fmt.Fprintf(c.stderr, "gatepipe eevee: unknown subcommand %q.%s\n", args[0], didYouMean(args[0], []string{"check-published", "loo"}))
		return exitConfigError
	}
	fs := newFlagSet(c, "eevee check-published", usage)
	matrix := fs.String("matrix", "stdlib/data/gate_table3.csv", "performance matrix (long CSV)")
	combos := fs.String("combinations", "stdlib/data/gate_combinations.csv", "published combinations")
	random := fs.Int("random", 200, "random combinations per k")
	seeds := fs.String("seeds", "0,1", "comma-separated seeds (each seeds the splits, the meta-models and the random draws)")
	kmin := fs.Int("k-min", 2, "smallest k")
	kmax := fs.Int("k-max", 22, "largest k")
	weighting := fs.String("weighting", "group", "group, benchmark or column")
	literal := fs.Bool("literal", false, "the literal paper reading: column weighting, 5 splits, 100-unit ReLU, no LayerNorm")
	exclude := fs.String("exclude", "cityscapes", "comma-separated benchmarks left out of the candidate pool")
	workers := fs.Int("workers", 0, "scoring goroutines (default: all CPUs)")
	asJSON := fs.Bool("json", false, "print the results as JSON")
	if _, code, ok := parseArgs(fs, args[1:]); !ok {
		return code
	}
	fail := func(err error) int { fmt.Fprintln(c.stderr, "gatepipe eevee:", err); return exitRunFailure }
	m, err := loadMatrixFile(*matrix)
	if err != nil {
		return fail(err)
	}
	data, err := readStdlibOrFile(*combos)
	if err != nil {
		return fail(err)
	}
	pubs, err := eevee.LoadPublished(bytes.NewReader(data))
	if err != nil {
		return fail(err)
	}
	sel := eevee.PublishedRange(pubs, *kmin, *kmax)
	type run struct {
		Seed   uint64                 `json:"seed"`
		Rows   []eevee.PublishedCheck `json:"rows"`
		Mean   float64                `json:"mean_share"`
		Scored int                    `json:"scored"`
	}
	var runs []run
	for _, s := range strings.Split(*seeds, ",") {
		seed, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
		if err != nil {
			fmt.Fprintf(c.stderr, "gatepipe eevee: bad seed %q\n", s)
			return exitConfigError
		}
		o := eevee.Defaults()
		if *literal {
			o = eevee.PaperLiteral()
		} else {
			o.Weighting = *weighting
		}
		o.Seed = seed
		if *exclude != "" {
			o.Exclude = strings.Split(*exclude, ",")
		}
		p, err := eevee.NewProblem(m, o)
		if err != nil {
			return fail(err)
		}
		ev := p.NewEvaluator(*workers)
		rows, err := p.CheckPublished(ctx, ev, sel, *random, seed)
		if err != nil {
			return fail(err)
		}
		r := run{Seed: seed, Rows: rows, Scored: ev.Scored}
		for _, row := range rows {
			r.Mean += row.Share / float64(len(rows))
		}
		runs = append(runs, r)
	}
	if *asJSON {
		enc := json.NewEncoder(c.stdout)
		enc.SetIndent("", "  ")
		enc.Encode(runs)
		return exitOK
	}
	scoring := "weighting=" + *weighting + " (other options: defaults)"
	if *literal {
		scoring = "literal paper reading (column weighting, 5 splits, 100-unit ReLU, no LayerNorm)"
	}
	fmt.Fprintf(c.stdout, "Share of %d random combinations that beat the published one; %s.\n\n", *random, scoring)
	tw := tabwriter.NewWriter(c.stdout, 2, 4, 2, ' ', tabwriter.AlignRight)
	header := "k\t"
	for _, r := range runs {
		header += fmt.Sprintf("seed %d\t", r.Seed)
	}
	fmt.Fprintln(tw, header+"mean\t")
	var overall float64
	for i := range sel {
		line := fmt.Sprintf("%d\t", sel[i].K)
		var sum float64
		for _, r := range runs {
			line += fmt.Sprintf("%.1f%%\t", 100*r.Rows[i].Share)
			sum += r.Rows[i].Share
		}
		fmt.Fprintln(tw, line+fmt.Sprintf("%.1f%%\t", 100*sum/float64(len(runs))))
	}
	line := "mean\t"
	for _, r := range runs {
		line += fmt.Sprintf("%.2f%%\t", 100*r.Mean)
		overall += r.Mean / float64(len(runs))
	}
	fmt.Fprintln(tw, line+fmt.Sprintf("%.2f%%\t", 100*overall))
	tw.Flush()
	return exitOK
}

func readStdlibOrFile(p string) ([]byte, error) {
	if strings.HasPrefix(p, "stdlib/") {
		return fs.ReadFile(stdlib.FS(), strings.TrimPrefix(p, "stdlib/"))
	}
	return os.ReadFile(p)
}

func loadMatrixFile(p string) (*eevee.Matrix, error) {
	data, err := readStdlibOrFile(p)
	if err != nil {
		return nil, err
	}
	return eevee.LoadCSV(bytes.NewReader(data), p)
}

func runEEVEELoo(_ context.Context, c *cli, args []string, usage string) int {
	fs := newFlagSet(c, "eevee loo", usage)
	matrix := fs.String("matrix", "stdlib/data/gate_table3.csv", "performance matrix (long CSV)")
	tier := fs.String("tier", "iwildcam,ade20k,clevr-math,acdc,imagenet1k,mini,cubirds,cifar100", "comma-separated tier benchmarks (default: the paper's small tier)")
	exclude := fs.String("exclude", "cityscapes", "comma-separated benchmarks left out of the candidate pool")
	seed := fs.Uint64("seed", 0, "seed of the splits and meta-models")
	if _, code, ok := parseArgs(fs, args); !ok {
		return code
	}
	m, err := loadMatrixFile(*matrix)
	if err != nil {
		fmt.Fprintln(c.stderr, "gatepipe eevee:", err)
		return exitRunFailure
	}
	o := eevee.Defaults()
	o.Seed = *seed
	if *exclude != "" {
		o.Exclude = strings.Split(*exclude, ",")
	}
	rows, err := eevee.LeaveOneModelOut(m, o, strings.Split(*tier, ","))
	if err != nil {
		fmt.Fprintln(c.stderr, "gatepipe eevee:", err)
		return exitRunFailure
	}
	fmt.Fprintf(c.stdout, "Leave-one-model-out over %d models, predicting %d metrics from the tier %s.\n", len(m.Models), len(m.Columns), *tier)
	fmt.Fprintln(c.stdout, "Errors in units of each metric's standard deviation over the other models.")
	fmt.Fprintln(c.stdout)
	tw := tabwriter.NewWriter(c.stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "method\tMAE\tmedian AE\tRMSE\trank rho\tmetric rho\tposition error")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.2f\n", r.Method, r.MAE, r.MedAE, r.RMSE, r.RankRho, r.MetricRho, r.PositionError)
	}
	tw.Flush()
	return exitOK
}
