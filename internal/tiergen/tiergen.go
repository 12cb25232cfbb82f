// Package tiergen writes the GATE tier modules (stdlib/tiers/small, base
// and big) from one template and the paper's published subsets
// (stdlib/data/gate_combinations.csv). HCL modules must declare every
// variable they pass on, so the three modules repeat the same variables
// and wiring around stdlib/tiers/run; that repetition lives once, in
// tier.hcl.tmpl, and TestTierModulesAreGenerated (package stdlib) keeps
// the files equal to it (UPDATE_GOLDEN=1 rewrites them).
package tiergen

import (
	"bytes"
	_ "embed"
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/template"
)

//go:embed tier.hcl.tmpl
var source string

var tmpl = template.Must(template.New("tier").Parse(source))

// Tier is one published tier.
type Tier struct {
	Name     string // module directory: small, base, big
	Title    string // smallGATE
	TierName string // the report's name: Small
	ID       string // the row of gate_combinations.csv
	// Benchmarks are most important first (the CSV lists them least
	// important first).
	Benchmarks []string
}

// Count is the number of benchmarks.
func (t Tier) Count() int { return len(t.Benchmarks) }

// published maps the three modules to their rows of the CSV.
var published = []struct{ name, id string }{
	{"small", "fig4a_small_gate_tier"},
	{"base", "fig4b_small_gate_tier"},
	{"big", "fig4c_small_gate_tier"},
}

// Tiers reads the three published tiers from gate_combinations.csv.
func Tiers(combinations io.Reader) ([]Tier, error) {
	rows, err := csv.NewReader(combinations).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("gate_combinations.csv: %w", err)
	}
	var out []Tier
	for _, p := range published {
		i := slices.IndexFunc(rows, func(r []string) bool { return len(r) > 2 && r[0] == p.id })
		if i < 0 {
			return nil, fmt.Errorf("gate_combinations.csv has no row %q", p.id)
		}
		list := strings.Split(rows[i][2], ";")
		slices.Reverse(list)
		title := strings.ToUpper(p.name[:1]) + p.name[1:]
		out = append(out, Tier{Name: p.name, Title: p.name + "GATE", TierName: title, ID: p.id, Benchmarks: list})
	}
	return out, nil
}

// Render returns the tier's module file.
func Render(t Tier) ([]byte, error) {
	var b bytes.Buffer
	if err := tmpl.Execute(&b, t); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
