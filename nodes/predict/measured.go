package predict

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/gatepipe/gatepipe/eevee"
)

// checkMeasured refuses a measured-results file that would predict
// silently wrong: a row whose value is not a number (NaN, "-" or empty:
// eevee.LoadCSV reads those as "not measured", which in a pool matrix they
// are) and a row whose higher_is_better contradicts the pool's column.
// model is the model the prediction is for. Errors name the file and line.
// partial, when not "", names the tier benchmarks measured on some of the
// pool's columns but not all, for the caller to refuse or warn about.
func checkMeasured(data []byte, name, model string, pool *eevee.Matrix, tier []string) (partial string, err error) {
	cr := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))))
	header, err := cr.Read()
	if err != nil {
		return "", fmt.Errorf("%s: reading header: %w", name, err)
	}
	idx := map[string]int{}
	for i, h := range header {
		idx[strings.TrimSpace(h)] = i
	}
	poolCols := map[string]eevee.Column{}
	for _, c := range pool.Columns {
		poolCols[c.Name()] = c
	}
	measured := map[string]bool{}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", fmt.Errorf("%s: %w", name, err)
		}
		line, _ := cr.FieldPos(0)
		get := func(k string) string { return strings.TrimSpace(rec[idx[k]]) }
		if get("model") != model {
			continue
		}
		col := eevee.Column{Benchmark: get("benchmark"), Metric: get("metric")}
		switch v := get("value"); {
		case v == "" || v == "-" || strings.EqualFold(v, "nan"):
			return "", fmt.Errorf("%s:%d: %s has no value (%q): a measured result must be a number; leave the row out if the benchmark was not measured", name, line, col.Name(), v)
		}
		p, ok := poolCols[col.Name()]
		if !ok {
			continue
		}
		measured[col.Name()] = true
		hib := strings.ToLower(get("higher_is_better"))
		if says := hib == "true" || hib == "1" || hib == "yes"; says != p.HigherIsBetter {
			return "", fmt.Errorf("%s:%d: %s has higher_is_better = %s, but the pool matrix has %v for it: one of the two has the metric's direction wrong", name, line, col.Name(), get("higher_is_better"), p.HigherIsBetter)
		}
	}
	for _, b := range tier {
		var have, missing []string
		for _, c := range pool.Columns {
			if c.Benchmark != b {
				continue
			}
			if measured[c.Name()] {
				have = append(have, c.Metric)
			} else {
				missing = append(missing, c.Metric)
			}
		}
		if len(have) > 0 && len(missing) > 0 {
			partial = fmt.Sprintf("%s: tier benchmark %s is measured on %s but not on %s, which the prediction uses: add those rows, or leave %s out wholly", name, b, strings.Join(have, ", "), strings.Join(missing, ", "), b)
			break
		}
	}
	return partial, nil
}
