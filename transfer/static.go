package transfer

import (
	"encoding/csv"
	"fmt"
	"io"
	"sort"
	"strconv"
)

// SITEStaticOrder is the SITE paper's static ranking (§5.2) of the
// standard benchmark's 11 models, best first: model size, alternating the
// ResNet and DenseNet families, whatever the target dataset. (The paper's
// last relation, MobileNet ≈ MNASNet, is taken as MobileNet first; a tie
// changes the reproduced taus by at most 0.004.)
var SITEStaticOrder = []string{"resnet152", "densenet201", "resnet101", "densenet169", "resnet50", "densenet121",
	"resnet34", "googlenet", "inception_v3", "mobilenet_v2", "mnasnet1_0"}

// StaticScores scores models by a fixed order: the first gets len(order),
// the last 1, a model not in the order 0.
func StaticScores(order, models []string) []float64 {
	pos := map[string]int{}
	for i, m := range order {
		pos[m] = len(order) - i
	}
	out := make([]float64, len(models))
	for i, m := range models {
		out[i] = float64(pos[m])
	}
	return out
}

// MeanRankScores is the mean-rank baseline: each model's score is the sum
// of its accuracy ranks (1 the worst) over the other datasets
// (leave-one-out: the target's own accuracies are not used), so a model
// that usually wins scores highest.
func MeanRankScores(acc Table, target string) []float64 {
	models := acc.Models(target)
	sum := make([]float64, len(models))
	for _, d := range acc.Datasets() {
		if d == target {
			continue
		}
		a := acc.Accuracies(d, models)
		r := midRanks(a) // 1 = worst
		for i := range r {
			sum[i] += r[i]
		}
	}
	return sum
}

// Table is fine-tuned accuracy by dataset and model.
type Table map[string]map[string]float64

// ReadTable reads a CSV with columns dataset, model and an accuracy.
func ReadTable(r io.Reader) (Table, error) {
	rows, err := csv.NewReader(r).ReadAll()
	if err != nil {
		return nil, err
	}
	if len(rows) < 2 || len(rows[0]) < 3 {
		return nil, fmt.Errorf("accuracy table: want a header and rows of dataset, model, accuracy")
	}
	t := Table{}
	for i, row := range rows[1:] {
		if len(row) < 3 {
			return nil, fmt.Errorf("accuracy table: row %d has %d fields, want 3", i+2, len(row))
		}
		v, err := strconv.ParseFloat(row[2], 64)
		if err != nil {
			return nil, fmt.Errorf("accuracy table: row %d: %w", i+2, err)
		}
		if t[row[0]] == nil {
			t[row[0]] = map[string]float64{}
		}
		t[row[0]][row[1]] = v
	}
	return t, nil
}

// Datasets lists the table's datasets, sorted.
func (t Table) Datasets() []string {
	out := make([]string, 0, len(t))
	for d := range t {
		out = append(out, d)
	}
	sort.Strings(out)
	return out
}

// Models lists a dataset's models, sorted.
func (t Table) Models(dataset string) []string {
	out := make([]string, 0, len(t[dataset]))
	for m := range t[dataset] {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

// Accuracies returns a dataset's accuracies of the models, in order.
func (t Table) Accuracies(dataset string, models []string) []float64 {
	out := make([]float64, len(models))
	for i, m := range models {
		out[i] = t[dataset][m]
	}
	return out
}
