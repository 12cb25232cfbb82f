package eevee

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Column is one metric of one benchmark.
type Column struct {
	Category       string
	Benchmark      string
	Metric         string
	HigherIsBetter bool
}

// PerClass reports whether the column is one class's value of a
// benchmark metric ("3 APS", "0 BS"), as GATE's multi-label benchmarks
// list them beside the macro averages.
func (c Column) PerClass() bool { return IsPerClass(c.Metric) }

// IsPerClass reports whether a metric name is one class's value: it
// starts with the class index ("3 APS").
func IsPerClass(metric string) bool { return metric != "" && metric[0] >= '0' && metric[0] <= '9' }

// Name returns "benchmark:metric".
func (c Column) Name() string { return c.Benchmark + ":" + c.Metric }

// Matrix is a performance matrix: Values[model][column], NaN where a
// result is missing.
type Matrix struct {
	Models  []string
	Columns []Column
	Values  [][]float64
}

// MaxValue bounds the magnitude of a matrix cell. Scores are accuracies,
// losses and the like; a value past it is a mistake, and squaring it in
// the z-scores would overflow to infinity and turn every score into NaN.
const MaxValue = 1e12

// skipBOM drops a UTF-8 byte-order mark (spreadsheets write one).
func skipBOM(r io.Reader) io.Reader {
	br := bufio.NewReader(r)
	if b, err := br.Peek(3); err == nil && string(b) == "\ufeff" {
		br.Discard(3)
	}
	return br
}

// LoadCSV reads the long format
// category,benchmark,metric,model,value,higher_is_better (a header row,
// then one row per cell). An empty value, "NaN" or "-" is a missing cell.
// Columns keep their first-appearance order; models too.
func LoadCSV(r io.Reader, name string) (*Matrix, error) {
	cr := csv.NewReader(skipBOM(r))
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: reading header: %w", name, err)
	}
	idx := map[string]int{}
	for i, h := range header {
		idx[strings.TrimSpace(h)] = i
	}
	for _, want := range []string{"category", "benchmark", "metric", "model", "value", "higher_is_better"} {
		if _, ok := idx[want]; !ok {
			return nil, fmt.Errorf("%s: header lacks column %q (want category,benchmark,metric,model,value,higher_is_better)", name, want)
		}
	}
	m := &Matrix{}
	colIdx := map[string]int{}
	modelIdx := map[string]int{}
	type cell struct {
		model, col int
		v          float64
	}
	var cells []cell
	for {
		line, _ := cr.FieldPos(0)
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		line, _ = cr.FieldPos(0)
		get := func(k string) string { return strings.TrimSpace(rec[idx[k]]) }
		c, err := parseColumn(get)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		ci, ok := colIdx[c.Name()]
		if !ok {
			ci = len(m.Columns)
			colIdx[c.Name()] = ci
			m.Columns = append(m.Columns, c)
		} else if m.Columns[ci] != c {
			return nil, fmt.Errorf("%s:%d: column %s changes its category or direction", name, line, c.Name())
		}
		mi, ok := modelIdx[get("model")]
		if !ok {
			mi = len(m.Models)
			modelIdx[get("model")] = mi
			m.Models = append(m.Models, get("model"))
		}
		v, err := parseValue(get("value"))
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		cells = append(cells, cell{mi, ci, v})
	}
	if len(m.Models) == 0 {
		return nil, fmt.Errorf("%s: no rows", name)
	}
	m.Values = make([][]float64, len(m.Models))
	for i := range m.Values {
		m.Values[i] = make([]float64, len(m.Columns))
		for j := range m.Values[i] {
			m.Values[i][j] = math.NaN()
		}
	}
	seen := map[[2]int]bool{}
	for _, c := range cells {
		if seen[[2]int{c.model, c.col}] {
			return nil, fmt.Errorf("%s: model %s has two values for %s", name, m.Models[c.model], m.Columns[c.col].Name())
		}
		seen[[2]int{c.model, c.col}] = true
		m.Values[c.model][c.col] = c.v
	}
	return m, nil
}

// parseColumn reads a row's column (get returns a field by header name)
// and checks the row names its model.
func parseColumn(get func(string) string) (Column, error) {
	c := Column{Category: get("category"), Benchmark: get("benchmark"), Metric: get("metric")}
	switch strings.ToLower(get("higher_is_better")) {
	case "true", "1", "yes":
		c.HigherIsBetter = true
	case "false", "0", "no":
	default:
		return c, fmt.Errorf("higher_is_better is %q, want true or false", get("higher_is_better"))
	}
	if c.Benchmark == "" || c.Metric == "" || get("model") == "" {
		return c, errors.New("benchmark, metric and model must not be empty")
	}
	return c, nil
}

// parseValue reads a cell's value: NaN for an empty one, "-" or "NaN",
// else a finite number of at most MaxValue in magnitude.
func parseValue(s string) (float64, error) {
	if s == "" || s == "-" || strings.EqualFold(s, "nan") {
		return math.NaN(), nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, fmt.Errorf("value %q is not a number", s)
	}
	if math.IsInf(v, 0) || math.Abs(v) > MaxValue {
		return 0, fmt.Errorf("value %q is not a finite number of at most %g in magnitude", s, MaxValue)
	}
	return v, nil
}

// Benchmarks returns the benchmark IDs in column order.
func (m *Matrix) Benchmarks() []string {
	var out []string
	seen := map[string]bool{}
	for _, c := range m.Columns {
		if !seen[c.Benchmark] {
			seen[c.Benchmark] = true
			out = append(out, c.Benchmark)
		}
	}
	return out
}

// Missing lists the missing cells as "model/benchmark:metric".
func (m *Matrix) Missing() []string {
	var out []string
	for i, row := range m.Values {
		for j, v := range row {
			if math.IsNaN(v) {
				out = append(out, m.Models[i]+"/"+m.Columns[j].Name())
			}
		}
	}
	return out
}

// DropMissing returns a copy without the models (byModel) or the columns
// with missing cells. It never fills a cell.
func (m *Matrix) DropMissing(byModel bool) *Matrix {
	keepModel := make([]bool, len(m.Models))
	keepCol := make([]bool, len(m.Columns))
	for i := range keepModel {
		keepModel[i] = true
	}
	for j := range keepCol {
		keepCol[j] = true
	}
	for i, row := range m.Values {
		for j, v := range row {
			if math.IsNaN(v) {
				if byModel {
					keepModel[i] = false
				} else {
					keepCol[j] = false
				}
			}
		}
	}
	out := &Matrix{}
	var cols []int
	for j, k := range keepCol {
		if k {
			cols = append(cols, j)
			out.Columns = append(out.Columns, m.Columns[j])
		}
	}
	for i, k := range keepModel {
		if !k {
			continue
		}
		out.Models = append(out.Models, m.Models[i])
		row := make([]float64, len(cols))
		for jj, j := range cols {
			row[jj] = m.Values[i][j]
		}
		out.Values = append(out.Values, row)
	}
	return out
}

// SortedBenchmarks returns the benchmark IDs sorted.
func SortedBenchmarks(m *Matrix) []string {
	b := m.Benchmarks()
	sort.Strings(b)
	return b
}

// Select keeps the columns of one mode: "all", "primary" (one headline
// metric per benchmark: its first higher-is-better column, else its first
// column) or "higher_is_better".
func (m *Matrix) Select(mode string) *Matrix { return selectColumns(m, mode) }
