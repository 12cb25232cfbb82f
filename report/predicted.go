package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
)

// AddPredicted appends a model column from a predict block's
// predictions.csv (category,benchmark,metric,predicted,spread,measured,
// higher_is_better): measured values where the model has them, predicted
// values, marked as such and with their spread, everywhere else.
func (in *Input) AddPredicted(model string, r io.Reader) error {
	rows, err := csv.NewReader(r).ReadAll()
	if err != nil {
		return err
	}
	byName := map[string][3]string{}
	for i, rec := range rows {
		if i == 0 {
			continue
		}
		if len(rec) != 7 {
			return fmt.Errorf("predictions line %d: want 7 fields", i+1)
		}
		byName[rec[1]+":"+rec[2]] = [3]string{rec[3], rec[5], rec[4]}
	}
	m := in.Matrix
	row := make([]float64, len(m.Columns))
	predicted := map[int]bool{}
	spread := map[int]float64{}
	for j, c := range m.Columns {
		v, ok := byName[c.Name()]
		row[j] = math.NaN()
		if !ok {
			continue
		}
		if v[1] != "" {
			row[j], _ = strconv.ParseFloat(v[1], 64)
			continue
		}
		if p, err := strconv.ParseFloat(v[0], 64); err == nil && !math.IsNaN(p) {
			row[j] = p
			predicted[j] = true
			if sd, err := strconv.ParseFloat(v[2], 64); err == nil {
				spread[j] = sd
			}
		}
	}
	for _, existing := range m.Models {
		if existing == model {
			model += " (predicted)"
		}
	}
	m.Models = append(m.Models, model)
	m.Values = append(m.Values, row)
	if in.Predicted == nil {
		in.Predicted = map[string]map[int]bool{}
	}
	in.Predicted[model] = predicted
	if in.Spread == nil {
		in.Spread = map[string]map[int]float64{}
	}
	in.Spread[model] = spread
	return nil
}
