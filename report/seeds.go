package report

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/gatepipe/gatepipe/eevee"
	"github.com/gatepipe/gatepipe/internal/numfmt"
)

// SeedStat is a measured cell's spread over seeds: the sample standard
// deviation of the n seeds its value is the mean of.
type SeedStat struct {
	Std float64
	N   int
}

// LoadSeedStats reads the std and n columns of a results block's
// matrix.csv (absent in matrices without seeds: then it returns nil) and
// files them by model and column of m, the matrix read from the same data.
func LoadSeedStats(data []byte, m *eevee.Matrix) (map[string]map[int]SeedStat, error) {
	rows, err := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(data, []byte("\ufeff")))).ReadAll()
	if err != nil || len(rows) == 0 {
		return nil, err
	}
	idx := map[string]int{}
	for i, h := range rows[0] {
		idx[strings.TrimSpace(h)] = i
	}
	iStd, okS := idx["std"]
	iN, okN := idx["n"]
	if !okS || !okN {
		return nil, nil
	}
	col := map[string]int{}
	for j, c := range m.Columns {
		col[c.Name()] = j
	}
	out := map[string]map[int]SeedStat{}
	for line, rec := range rows[1:] {
		if len(rec) <= max(iStd, iN) || strings.TrimSpace(rec[iStd]) == "" {
			continue
		}
		std, err := strconv.ParseFloat(strings.TrimSpace(rec[iStd]), 64)
		if err != nil || std < 0 || math.IsInf(std, 0) || math.IsNaN(std) {
			return nil, fmt.Errorf("line %d: std %q is not a number ≥ 0", line+2, rec[iStd])
		}
		n, err := strconv.Atoi(strings.TrimSpace(rec[iN]))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("line %d: n %q is not a count of seeds", line+2, rec[iN])
		}
		j, ok := col[strings.TrimSpace(rec[idx["benchmark"]])+":"+strings.TrimSpace(rec[idx["metric"]])]
		if !ok {
			continue
		}
		model := strings.TrimSpace(rec[idx["model"]])
		if out[model] == nil {
			out[model] = map[int]SeedStat{}
		}
		out[model][j] = SeedStat{Std: std, N: n}
	}
	return out, nil
}

// text formats a measured cell: its value, with ± std (n) when it is a
// mean over seeds.
func (r Row) text(c Cell) string {
	if c.Seeds.N > 0 && !r.Integer {
		return numfmt.MeanStd(c.Value, c.Seeds.Std, c.Seeds.N)
	}
	return r.format(c.Value)
}
