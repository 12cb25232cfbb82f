// Package results implements the `results` block: it collects the
// metrics.json of experiments (external trainers through the command
// block's trainer protocol, and later built-in training) into one
// performance matrix — models x benchmark metrics, with higher-is-better
// flags and missing cells marked — as CSV and JSON, the input of search,
// predict and report blocks.
package results

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gatepipe/gatepipe/eevee"
	"github.com/gatepipe/gatepipe/formats/runmeta"
	"github.com/gatepipe/gatepipe/internal/numfmt"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/nodes/command"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"
)

// Kind is the results block kind.
type Kind struct{}

// Name returns "results".
func (Kind) Name() string { return "results" }

// Version is bumped when outputs for an unchanged config would change.
func (Kind) Version() string { return "3" } // 3: std and n columns; repeated seeds averaged

var spec = hcldec.ObjectSpec{
	"metrics": &hcldec.AttrSpec{Name: "metrics", Type: cty.List(cty.String), Required: true},
}

// Spec returns the block schema.
func (Kind) Spec() hcldec.Spec { return spec }

// OutputType is the value other blocks see.
func (Kind) OutputType() cty.Type {
	return cty.Object(map[string]cty.Type{
		"path": cty.String, "matrix": cty.String, "json": cty.String,
		"models": cty.List(cty.String), "benchmarks": cty.List(cty.String), "missing": cty.Number,
		"table": cty.String,
	})
}

// Node is a decoded results block.
type Node struct{ files []string }

// Decode reads the list of metrics files.
func (Kind) Decode(v cty.Value, decl nodes.Decl) (nodes.Node, hcl.Diagnostics) {
	n := &Node{}
	for _, f := range v.GetAttr("metrics").AsValueSlice() {
		n.files = append(n.files, f.AsString())
	}
	if len(n.files) == 0 {
		return nil, hcl.Diagnostics{decl.Errorf("metrics", "No metrics", "metrics lists experiments' metrics.json files, e.g. [for k, c in command.train : c.metrics].")}
	}
	return n, nil
}

// Fingerprint: the metrics files live in the cache and are named by their
// content already (their paths contain output IDs).
func (n *Node) Fingerprint(context.Context, io.Writer) error { return nil }

// Cell is one value of the matrix in results.json.
type Cell struct {
	Category       string   `json:"category"`
	Benchmark      string   `json:"benchmark"`
	Metric         string   `json:"metric"`
	Model          string   `json:"model"`
	Value          *float64 `json:"value"` // null when missing
	HigherIsBetter bool     `json:"higher_is_better"`
	// Std and N: a value over several seeds is their mean, with the
	// sample standard deviation and the number of seeds.
	Std *float64 `json:"std,omitempty"`
	N   int      `json:"n,omitempty"`
}

// experiment is one model on one benchmark: a metrics file, or the mean
// over the seeds of several.
type experiment struct {
	metrics *command.Metrics
	file    string
}

// readExperiments reads the metrics files. Files of one model on one
// benchmark that are the same experiment with different seeds (each
// directory's run.json names its seed: for_each over seeds of a command
// trainer) are averaged into one, with std and n; any other repeat is an
// error when the matrix is built.
func readExperiments(files []string) ([]experiment, error) {
	var out []experiment
	groups := map[[3]string][]int{}
	var order [][3]string
	for _, f := range files {
		m, err := command.ReadMetrics(f)
		if err != nil {
			return nil, err
		}
		k := [3]string{m.Model, m.Benchmark, m.Category}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], len(out))
		out = append(out, experiment{m, f})
	}
	var merged []experiment
	for _, k := range order {
		idx := groups[k]
		if len(idx) == 1 {
			merged = append(merged, out[idx[0]])
			continue
		}
		runs, seeds, ok := seedRuns(out, idx)
		if !ok {
			for _, i := range idx {
				merged = append(merged, out[i]) // reported as a repeat below
			}
			continue
		}
		agg, err := command.AggregateSeeds(runs, seeds)
		if err != nil {
			return nil, fmt.Errorf("%s on %s: %w", k[0], k[1], err)
		}
		merged = append(merged, experiment{&agg, out[idx[0]].file})
	}
	return merged, nil
}

// seedRuns returns the experiments idx with their seeds when each one's
// run.json names a seed and no seed repeats; ok is false otherwise.
func seedRuns(all []experiment, idx []int) ([]command.Metrics, []uint64, bool) {
	var runs []command.Metrics
	var seeds []uint64
	seen := map[uint64]bool{}
	for _, i := range idx {
		info, ok, err := runmeta.Read(filepath.Dir(all[i].file))
		if err != nil || !ok || info.Seed == nil || seen[*info.Seed] || all[i].metrics.Seeds != nil {
			return nil, nil, false
		}
		seen[*info.Seed] = true
		runs = append(runs, *all[i].metrics)
		seeds = append(seeds, *info.Seed)
	}
	return runs, seeds, true
}

// Run builds the matrix.
func (n *Node) Run(ctx context.Context, env *nodes.Env) (cty.Value, error) {
	experiments, err := readExperiments(n.files)
	if err != nil {
		return cty.NilVal, err
	}
	mx, err := gather(experiments)
	if err != nil {
		return cty.NilVal, err
	}
	cells, missing := mx.cells()
	csvPath := filepath.Join(env.OutDir, "matrix.csv")
	if err := writeCSV(csvPath, cells); err != nil {
		return cty.NilVal, err
	}
	jsonPath := filepath.Join(env.OutDir, "matrix.json")
	data, _ := json.MarshalIndent(cells, "", "  ")
	if err := os.WriteFile(jsonPath, data, 0o644); err != nil {
		return cty.NilVal, err
	}
	list := func(s []string) cty.Value {
		if len(s) == 0 {
			return cty.ListValEmpty(cty.String)
		}
		vals := make([]cty.Value, len(s))
		for i, x := range s {
			vals[i] = cty.StringVal(x)
		}
		return cty.ListVal(vals)
	}
	benches := make([]string, len(mx.cols))
	for i, c := range mx.cols {
		benches[i] = c.benchmark
	}
	benches = slices.Compact(benches) // the columns are sorted by benchmark
	table := markdownTable(cells, mx.models)
	if err := os.WriteFile(filepath.Join(env.OutDir, "table.md"), []byte(table), 0o644); err != nil {
		return cty.NilVal, err
	}
	return cty.ObjectVal(map[string]cty.Value{
		"path": cty.StringVal(env.OutDir), "matrix": cty.StringVal(csvPath), "json": cty.StringVal(jsonPath),
		"models": list(mx.models), "benchmarks": list(benches), "missing": cty.NumberIntVal(int64(missing)),
		"table": cty.StringVal(table),
	}), nil
}

// column is one column of the matrix: a benchmark's metric.
type column struct{ category, benchmark, metric string }

// matrix is the experiments' metrics by model and column, models in the
// order first seen, columns by benchmark and metric.
type matrix struct {
	models []string
	cols   []column
	values map[string]map[column]command.Metric
	hib    map[column]bool
}

// gather puts the experiments' metrics in a matrix; a column whose
// higher_is_better flag changes, or a model with two results in one, is
// an error naming the file.
func gather(experiments []experiment) (*matrix, error) {
	mx := &matrix{values: map[string]map[column]command.Metric{}, hib: map[column]bool{}}
	seenCol := map[column]bool{}
	for _, e := range experiments {
		m, f := e.metrics, e.file
		if mx.values[m.Model] == nil {
			mx.models = append(mx.models, m.Model)
			mx.values[m.Model] = map[column]command.Metric{}
		}
		names := make([]string, 0, len(m.Metrics))
		for k := range m.Metrics {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, name := range names {
			c := column{m.Category, m.Benchmark, name}
			if !seenCol[c] {
				seenCol[c] = true
				mx.cols = append(mx.cols, c)
				mx.hib[c] = m.Metrics[name].HigherIsBetter
			} else if mx.hib[c] != m.Metrics[name].HigherIsBetter {
				return nil, fmt.Errorf("%s: %s:%s changes its higher_is_better flag between experiments", f, m.Benchmark, name)
			}
			if _, dup := mx.values[m.Model][c]; dup {
				return nil, fmt.Errorf("%s: model %s has two results for %s:%s", f, m.Model, m.Benchmark, name)
			}
			mx.values[m.Model][c] = m.Metrics[name]
		}
	}
	sort.SliceStable(mx.cols, func(i, j int) bool {
		if mx.cols[i].benchmark != mx.cols[j].benchmark {
			return mx.cols[i].benchmark < mx.cols[j].benchmark
		}
		return mx.cols[i].metric < mx.cols[j].metric
	})
	return mx, nil
}

// cells lists the matrix column by column, a cell per model (its value
// nil where the model has no result), and counts the missing ones.
func (mx *matrix) cells() ([]Cell, int) {
	var cells []Cell
	missing := 0
	for _, c := range mx.cols {
		for _, model := range mx.models {
			cell := Cell{Category: c.category, Benchmark: c.benchmark, Metric: c.metric, Model: model, HigherIsBetter: mx.hib[c]}
			if m, ok := mx.values[model][c]; ok {
				cell.Value = &m.Value
				if m.Std != nil && m.N > 0 {
					cell.Std, cell.N = m.Std, m.N
				}
			} else {
				missing++
			}
			cells = append(cells, cell)
		}
	}
	return cells, missing
}

// writeCSV writes the cells as matrix.csv's long format, values to six
// significant digits (98.3667, not 98.36666666666667).
func writeCSV(path string, cells []Cell) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	w.Write([]string{"category", "benchmark", "metric", "model", "value", "higher_is_better", "std", "n"})
	for _, c := range cells {
		text, std, n := "", "", ""
		if c.Value != nil {
			text = strconv.FormatFloat(*c.Value, 'g', 6, 64)
			if c.Std != nil {
				std, n = strconv.FormatFloat(*c.Std, 'g', 6, 64), strconv.Itoa(c.N)
			}
		}
		w.Write([]string{c.Category, c.Benchmark, c.Metric, c.Model, text, strconv.FormatBool(c.HigherIsBetter), std, n})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// markdownTable is a compact results table: one row per benchmark metric
// (per-class metrics such as "0 APS" left out; they are in the CSV),
// models as columns, ↓ marking lower-is-better metrics and – missing cells.
func markdownTable(cells []Cell, models []string) string {
	var b strings.Builder
	b.WriteString("| benchmark | metric |")
	for _, m := range models {
		b.WriteString(" " + m + " |")
	}
	b.WriteString("\n|---|---|" + strings.Repeat("---:|", len(models)) + "\n")
	for i := 0; i < len(cells); i += len(models) {
		c := cells[i]
		if eevee.IsPerClass(c.Metric) {
			continue
		}
		name := c.Metric
		if !c.HigherIsBetter {
			name += " ↓"
		}
		fmt.Fprintf(&b, "| %s | %s |", c.Benchmark, name)
		for _, cell := range cells[i : i+len(models)] {
			switch {
			case cell.Value == nil:
				b.WriteString(" – |")
			case cell.Std != nil:
				b.WriteString(" " + numfmt.MeanStd(*cell.Value, *cell.Std, cell.N) + " |")
			default:
				b.WriteString(" " + numfmt.Value(*cell.Value) + " |")
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}
