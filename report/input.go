package report

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"io/fs"
	"strconv"

	"github.com/gatepipe/gatepipe/eevee"
)

// LoadSummary reads the paper's summary table (category,row,model,value).
func LoadSummary(r io.Reader) ([]SummaryRow, error) {
	rows, err := csv.NewReader(r).ReadAll()
	if err != nil {
		return nil, err
	}
	var out []SummaryRow
	for i, rec := range rows {
		if i == 0 {
			continue
		}
		if len(rec) != 4 {
			return nil, fmt.Errorf("summary line %d: want 4 fields", i+1)
		}
		v, err := strconv.ParseFloat(rec[3], 64)
		if err != nil {
			return nil, fmt.Errorf("summary line %d: %q is not a number", i+1, rec[3])
		}
		out = append(out, SummaryRow{Category: rec[0], Row: rec[1], Model: rec[2], Value: v})
	}
	return out, nil
}

// PaperInput builds the input for the GATE paper's own matrix from the
// stdlib: the matrix, its published summary rows, and the published tiers.
func PaperInput(std fs.FS) (Input, error) {
	read := func(name string) ([]byte, error) { return fs.ReadFile(std, "data/"+name) }
	data, err := read("gate_table3.csv")
	if err != nil {
		return Input{}, err
	}
	m, err := eevee.LoadCSV(bytes.NewReader(data), "gate_table3.csv")
	if err != nil {
		return Input{}, err
	}
	if data, err = read("gate_table3_summary.csv"); err != nil {
		return Input{}, err
	}
	summary, err := LoadSummary(bytes.NewReader(data))
	if err != nil {
		return Input{}, err
	}
	if data, err = read("gate_combinations.csv"); err != nil {
		return Input{}, err
	}
	pubs, err := eevee.LoadPublished(bytes.NewReader(data))
	if err != nil {
		return Input{}, err
	}
	tiers := map[string][]string{"Full": m.Benchmarks()}
	for _, p := range pubs {
		switch p.Source {
		case "fig4a_small_gate_tier":
			tiers["Small"] = p.Benchmarks
		case "fig4b_small_gate_tier":
			tiers["Base"] = p.Benchmarks
		case "fig4c_small_gate_tier":
			tiers["Big"] = p.Benchmarks
		}
	}
	return Input{Matrix: m, PaperSummary: summary, Tiers: tiers}, nil
}

// GATEBenchmarks lists the benchmark IDs of GATE's matrix (the paper's
// 31, from the stdlib's gate_table3.csv): the Full tier. A report's
// GATE means average these only, never a user's own benchmarks.
func GATEBenchmarks(std fs.FS) ([]string, error) {
	data, err := fs.ReadFile(std, "data/gate_table3.csv")
	if err != nil {
		return nil, err
	}
	m, err := eevee.LoadCSV(bytes.NewReader(data), "gate_table3.csv")
	if err != nil {
		return nil, err
	}
	return m.Benchmarks(), nil
}
