package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gatepipe/gatepipe/report"
	"github.com/gatepipe/gatepipe/stdlib"
)

func runReport(_ context.Context, c *cli, args []string) int {
	fs := newFlagSet(c, "report", "report [flags]\n\nWrites tables (Markdown, CSV, LaTeX), figures (PNG, SVG) and a self-contained\nreport.html for a performance matrix. Without -matrix it reports on the GATE\npaper's matrix with its published summary rows and tiers.")
	matrix := fs.String("matrix", "", "performance matrix (long CSV); default: the GATE paper's, with its summary and tiers")
	search := fs.String("search", "", "directory holding an EEVEE search.json (a search block's output) to plot")
	out := fs.String("out", "report", "output directory")
	title := fs.String("title", "", "report title")
	reference := fs.String("reference", "imagenet1k", "benchmark the heatmap's columns are ordered by")
	if _, code, ok := parseArgs(fs, args); !ok {
		return code
	}
	fail := func(err error) int { fmt.Fprintln(c.stderr, "gatepipe report:", err); return exitRunFailure }
	var in report.Input
	var err error
	if *matrix == "" {
		in, err = report.PaperInput(stdlib.FS())
	} else {
		var m, e = loadMatrixFile(*matrix)
		in.Matrix, err = m, e
	}
	if err != nil {
		return fail(err)
	}
	var sr *report.Search
	if *search != "" {
		data, err := os.ReadFile(filepath.Join(*search, "search.json"))
		if err != nil {
			return fail(err)
		}
		sr = &report.Search{}
		if err := json.Unmarshal(data, sr); err != nil {
			return fail(fmt.Errorf("%s: %w", *search, err))
		}
	}
	res, err := report.Write(*out, in, sr, report.Options{Title: *title, Reference: *reference, Meta: [][2]string{{"gatepipe", version}}})
	if err != nil {
		return fail(err)
	}
	fmt.Fprintf(c.stdout, "Wrote %s, %s, %s, %d CSV tables and %d figures.\n", res.HTML, res.Markdown, res.LaTeX, len(res.CSV), len(res.Figures))
	return exitOK
}
