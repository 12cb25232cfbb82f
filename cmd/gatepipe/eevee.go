package main

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/gatepipe/gatepipe/eevee"
	"github.com/gatepipe/gatepipe/stdlib"
)

func runEEVEE(ctx context.Context, c *cli, args []string) int {
	usage := `eevee check-published [flags]

  check-published  score each combination the GATE paper publishes (k = 2..22)
                   and random combinations of the same size, and print the
                   share of random ones that beat it, per k and on average;
                   then correlate the paper's single-benchmark ranking
                   (Figure 3) and tier importance orders (Figure 4) with
                   this scoring's
  loo              validate prediction from a tier by leave-one-model-out:
                   each model is held out, predicted from its tier results,
                   and compared with the truth, against two baselines (the
                   computation a predict block's report shows, which names
                   the command line that repeats it)`
	if code, done := c.subcommandHelp(args, usage); done {
		return code
	}
	switch args[0] {
	case "check-published":
	case "loo":
		return runEEVEELoo(ctx, c, args[1:], usage)
	default:
		fmt.Fprintf(c.stderr, "gatepipe eevee: unknown subcommand %q.%s\n", args[0], didYouMean(args[0], []string{"check-published", "loo"}))
		return exitConfigError
	}
	return runCheckPublished(ctx, c, args[1:], usage)
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
	columns := fs.String("columns", "all", "the matrix columns predicted and ranked: all, primary or higher_is_better (a predict block's columns)")
	if _, code, ok := parseArgs(fs, args); !ok {
		return code
	}
	m, err := loadMatrixFile(*matrix)
	if err != nil {
		fmt.Fprintln(c.stderr, "gatepipe eevee:", err)
		return exitRunFailure
	}
	o := eevee.Defaults()
	o.Seed, o.Columns = *seed, *columns
	if *exclude != "" {
		o.Exclude = strings.Split(*exclude, ",")
	}
	rows, err := eevee.LeaveOneModelOut(m, o, strings.Split(*tier, ","))
	if err != nil {
		fmt.Fprintln(c.stderr, "gatepipe eevee:", err)
		return exitRunFailure
	}
	fmt.Fprintf(c.stdout, "Leave-one-model-out over %d models, predicting %d metrics (columns %s) from the tier %s.\n", len(m.Models), len(m.Select(o.Columns).Columns), o.Columns, *tier)
	fmt.Fprintln(c.stdout, "Errors in units of each metric's standard deviation over the other models.")
	fmt.Fprintln(c.stdout)
	tw := tabwriter.NewWriter(c.stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "method\tMAE\tmedian AE\tRMSE\trank rho\tmetric rho\tposition error")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.2f\n", r.Method, r.MAE, r.MedAE, r.RMSE, r.RankRho, r.MetricRho, r.PositionError)
	}
	tw.Flush()
	fmt.Fprintln(c.stdout)
	fmt.Fprintln(c.stdout, eevee.BaselineVerdict(rows))
	return exitOK
}
