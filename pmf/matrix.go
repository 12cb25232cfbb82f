package pmf

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/gatepipe/gatepipe/eevee"
)

// FromMatrix turns a performance matrix into Data: a column's benchmark
// and metric name give its PTF benchmark and metric indices.
func FromMatrix(m *eevee.Matrix) *Data {
	d := &Data{Values: make([][]float64, len(m.Values))}
	for i, row := range m.Values {
		d.Values[i] = append([]float64(nil), row...)
	}
	bench, metric := map[string]int{}, map[string]int{}
	index := func(idx map[string]int, key string) int {
		if i, ok := idx[key]; ok {
			return i
		}
		idx[key] = len(idx)
		return idx[key]
	}
	for _, c := range m.Columns {
		d.Benchmark = append(d.Benchmark, index(bench, c.Benchmark))
		d.Metric = append(d.Metric, index(metric, c.Metric))
	}
	return d
}

// LoadProfiles reads model profiles (constrained PMF) for the given
// models from CSV: a header `model,<feature>...`, one row per model. A
// feature whose values all parse as numbers is standardised; any other is
// one-hot encoded (one column per value; values joined by ";" set several,
// as a model with two encoder types). Every model needs a row.
func LoadProfiles(r io.Reader, name string, models []string) ([][]float64, []string, error) {
	rows, err := csv.NewReader(r).ReadAll()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(rows) < 2 || len(rows[0]) < 2 || strings.TrimSpace(rows[0][0]) != "model" {
		return nil, nil, fmt.Errorf("%s: want a header model,<feature>,... and a row per model", name)
	}
	byModel := map[string][]string{}
	for i, rec := range rows[1:] {
		if _, dup := byModel[rec[0]]; dup {
			return nil, nil, fmt.Errorf("%s:%d: model %q listed twice", name, i+2, rec[0])
		}
		byModel[rec[0]] = rec[1:]
	}
	table := make([][]string, len(models))
	for i, m := range models {
		rec, ok := byModel[m]
		if !ok {
			return nil, nil, fmt.Errorf("%s has no profile for model %q", name, m)
		}
		table[i] = rec
	}
	out := make([][]float64, len(models))
	var names []string
	for f, feature := range rows[0][1:] {
		numeric := true
		vals := make([]float64, len(models))
		for i := range models {
			v, err := strconv.ParseFloat(strings.TrimSpace(table[i][f]), 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				numeric = false
				break
			}
			vals[i] = v
		}
		if numeric {
			var mean, sq float64
			for _, v := range vals {
				mean += v
			}
			mean /= float64(len(vals))
			for _, v := range vals {
				sq += (v - mean) * (v - mean)
			}
			std := math.Sqrt(sq / float64(len(vals)))
			if std == 0 {
				std = 1
			}
			for i, v := range vals {
				out[i] = append(out[i], (v-mean)/std)
			}
			names = append(names, feature)
			continue
		}
		levels := map[string]bool{}
		for i := range models {
			for _, l := range strings.Split(table[i][f], ";") {
				levels[strings.TrimSpace(l)] = true
			}
		}
		sorted := make([]string, 0, len(levels))
		for l := range levels {
			sorted = append(sorted, l)
		}
		sort.Strings(sorted)
		for _, l := range sorted {
			names = append(names, feature+"="+l)
			for i := range models {
				v := 0.0
				for _, x := range strings.Split(table[i][f], ";") {
					if strings.TrimSpace(x) == l {
						v = 1
					}
				}
				out[i] = append(out[i], v)
			}
		}
	}
	return out, names, nil
}
