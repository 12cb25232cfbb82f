// Package tabular reads CSV and TSV tables with a header row into numeric
// feature columns and a label column.
package tabular

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Table is a parsed table.
type Table struct {
	Features []string  // feature column names, in file order
	X        []float32 // row-major, len(rows)*len(Features)
	// Labels holds the raw label strings, one per row.
	Labels []string
	// Lines holds each row's line in the file (for messages).
	Lines []int
}

// Target parses row i's label as a regression target: a finite number,
// or an error naming the file (name), line and value.
func (t *Table) Target(i int, name string) (float32, error) {
	l := t.Labels[i]
	v, err := strconv.ParseFloat(l, 32)
	switch {
	case err != nil:
		return 0, fmt.Errorf("%s: line %d: regression target %q is not a number", name, t.Lines[i], l)
	case math.IsNaN(v) || math.IsInf(v, 0):
		return 0, fmt.Errorf("%s: line %d: regression target %q is not a finite number (a NaN or infinite target cannot be trained on or scored; drop or fill the row)", name, t.Lines[i], l)
	}
	return float32(v), nil
}

// Rows returns the number of rows.
func (t *Table) Rows() int { return len(t.Labels) }

// Read parses a table; delim is ',' or '\t'. Every column other than
// labelColumn must be numeric. Errors name the line and byte offset.
func Read(r io.Reader, delim rune, labelColumn, name string) (*Table, error) {
	cr := csv.NewReader(r)
	cr.Comma = delim
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: byte 0: empty table", name)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	header = append([]string(nil), header...)
	labelIdx := -1
	t := &Table{}
	for i, h := range header {
		h = strings.TrimSpace(h)
		if h == labelColumn {
			labelIdx = i
			continue
		}
		t.Features = append(t.Features, h)
	}
	if labelIdx < 0 {
		return nil, fmt.Errorf("%s: byte 0: no column named %q in the header (columns: %s)", name, labelColumn, strings.Join(header, ", "))
	}
	for {
		off := cr.InputOffset()
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: byte %d: %w", name, off, err)
		}
		line, _ := cr.FieldPos(0)
		if len(rec) != len(header) {
			return nil, fmt.Errorf("%s: byte %d (line %d): %d fields, header has %d", name, off, line, len(rec), len(header))
		}
		for i, f := range rec {
			if i == labelIdx {
				t.Labels = append(t.Labels, strings.TrimSpace(f))
				continue
			}
			v, err := strconv.ParseFloat(strings.TrimSpace(f), 32)
			if err != nil {
				_, col := cr.FieldPos(i)
				return nil, fmt.Errorf("%s: byte %d (line %d, column %d): %q in column %q is not a number", name, off, line, col, f, header[i])
			}
			if math.IsNaN(v) || math.IsInf(v, 0) {
				_, col := cr.FieldPos(i)
				return nil, fmt.Errorf("%s: byte %d (line %d, column %d): %q in column %q is not a finite number (NaN and infinite values cannot be trained on or scored; drop or fill the row)", name, off, line, col, f, header[i])
			}
			t.X = append(t.X, float32(v))
		}
		t.Lines = append(t.Lines, line)
	}
	if t.Rows() == 0 {
		return nil, fmt.Errorf("%s: table has a header but no rows", name)
	}
	return t, nil
}

// ClassIndex maps label strings to class indices over the sorted distinct
// labels (numerically sorted when every label is a number).
func ClassIndex(labels []string) (classes []string, y []int64) {
	set := map[string]bool{}
	for _, l := range labels {
		set[l] = true
	}
	for l := range set {
		classes = append(classes, l)
	}
	numeric := true
	nums := map[string]float64{}
	for _, c := range classes {
		v, err := strconv.ParseFloat(c, 64)
		if err != nil {
			numeric = false
			break
		}
		nums[c] = v
	}
	sort.Slice(classes, func(i, j int) bool {
		if numeric {
			return nums[classes[i]] < nums[classes[j]]
		}
		return classes[i] < classes[j]
	})
	index := map[string]int64{}
	for i, c := range classes {
		index[c] = int64(i)
	}
	y = make([]int64, len(labels))
	for i, l := range labels {
		y[i] = index[l]
	}
	return classes, y
}
