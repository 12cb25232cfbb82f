package report

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/gatepipe/gatepipe/eevee"
	"github.com/gatepipe/gatepipe/internal/numfmt"
)

// Mark is a cell's place in its row: 1, 2, 3 for the best three (by the
// metric's direction), 0 otherwise.
type Mark int

// Cell is one value of a table.
type Cell struct {
	Value     float64
	Missing   bool
	Predicted bool // a predicted, not measured, value
	// Spread is a predicted value's uncertainty (the predictor's posterior
	// or ensemble standard deviation); 0 when unknown or measured.
	Spread float64
	// Seeds is a measured value's spread over the seeds it is the mean
	// of (N 0: one run).
	Seeds SeedStat
	Mark  Mark
	// Text replaces a missing cell's "–" where the value is elsewhere
	// (a predicted model's rank: "see placement").
	Text string
}

// Row is one line of a table.
type Row struct {
	Label          string
	HigherIsBetter bool
	Cells          []Cell
	// Summary rows (Task Mean, tiers) are set apart in renderings.
	Summary bool
	// Note explains a summary row, e.g. "paper".
	Note string
	// Integer rows (ranks) print without decimals.
	Integer bool
}

// Table is one task family: models as columns, metrics as rows.
type Table struct {
	Title  string
	Models []string
	Rows   []Row
}

// Input is what a report is made from.
type Input struct {
	Matrix *eevee.Matrix
	// Predicted marks cells that were predicted (by a predict block)
	// rather than measured: Predicted[model][column].
	Predicted map[string]map[int]bool
	// Spread holds the predicted cells' standard deviations:
	// Spread[model][column].
	Spread map[string]map[int]float64
	// Seeds holds the spread of measured cells that are means over seeds:
	// Seeds[model][column] (see LoadSeedStats).
	Seeds map[string]map[int]SeedStat
	// Predictors are the predict blocks' own validation (pmf methods).
	Predictors []Predictor
	// Placements are the predict blocks' placements of their models:
	// the one rank the report gives a predicted model.
	Placements []Placement
	// PaperSummary holds the GATE paper's Task Mean and GATE rows
	// (category,row,model,value), shown beside computed rows.
	PaperSummary []SummaryRow
	// Tiers maps tier names ("Small", "Base", "Big") to benchmark IDs;
	// "Full" is always added: the benchmarks Tiers["Full"] lists (GATE's
	// 31, which PaperInput and the report block set), else every one.
	Tiers map[string][]string
}

// SummaryRow is one value of the paper's summary table.
type SummaryRow struct {
	Category, Row, Model string
	Value                float64
}

// Families returns the task families in matrix order.
func Families(m *eevee.Matrix) []string {
	var out []string
	seen := map[string]bool{}
	for _, c := range m.Columns {
		if !seen[c.Category] {
			seen[c.Category] = true
			out = append(out, c.Category)
		}
	}
	return out
}

// markRow marks the best three cells of a row, honouring the direction;
// ties share the better place.
func markRow(r *Row) {
	var vals []float64
	for _, c := range r.Cells {
		if !c.Missing {
			vals = append(vals, c.Value)
		}
	}
	sort.Float64s(vals)
	if r.HigherIsBetter {
		slices.Reverse(vals)
	}
	// Places go by the value as printed: cells that read the same share
	// a place, and a row whose cells all read the same ranks nobody.
	var distinct []string
	for _, v := range vals {
		if s := r.format(v); len(distinct) == 0 || distinct[len(distinct)-1] != s {
			distinct = append(distinct, s)
		}
	}
	if len(distinct) < 2 && len(vals) > 1 {
		return
	}
	for i := range r.Cells {
		c := &r.Cells[i]
		if c.Missing {
			continue
		}
		s := r.format(c.Value)
		for place := 0; place < min(3, len(distinct)); place++ {
			if s == distinct[place] {
				c.Mark = Mark(place + 1)
			}
		}
	}
}

// taskMeanNote explains the Task Mean row. The paper does not state its
// formula; this one, every metric of the family but losses and per-class
// values (so ImageNet's Acc@1 and Acc@5 both count, and Video Reg's MAE
// Score), gives its 189 published Task Means within 0.03 on average per
// family (Medical Class 0.77), where one headline metric per benchmark
// misses them by 1.8 to 15.8 points (TestTaskMeanReproducesThePaper).
const taskMeanNote = "mean of the family's metrics, losses and per-class values left out: the paper's Task Mean"

// inTaskMean reports whether a column counts in the Task Mean and the
// GATE means: not a loss, not one class's value.
func inTaskMean(c eevee.Column) bool {
	return !c.PerClass() && !strings.Contains(c.Metric, "Loss")
}

// HeadlineMean labels the row of each benchmark's headline metric.
const HeadlineMean = "Headline mean"

// headlineColumns are the headline metric of each of a family's
// benchmarks: Acc@1 or mIoU where it has one, else its first
// higher-is-better metric that is neither a loss nor one class's value,
// else its first such metric.
func headlineColumns(m *eevee.Matrix, fam string) []int {
	rank := func(c eevee.Column) int {
		switch {
		case c.Metric == "Acc@1" || c.Metric == "mIoU":
			return 0
		case c.HigherIsBetter:
			return 1
		}
		return 2
	}
	var out []int
	seen := map[string]int{}
	for j, c := range m.Columns {
		if c.Category != fam || !inTaskMean(c) {
			continue
		}
		k, ok := seen[c.Benchmark]
		switch {
		case !ok:
			seen[c.Benchmark] = len(out)
			out = append(out, j)
		case rank(c) < rank(m.Columns[out[k]]):
			out[k] = j
		}
	}
	return out
}

// TaskMeanHigher labels the row beside a Task Mean that averages metrics
// of both directions: the mean of its higher-is-better metrics alone.
const TaskMeanHigher = "Task Mean, higher-is-better metrics"

// meanRow is a summary row averaging the columns cols of m, marked in the
// direction higher.
func meanRow(m *eevee.Matrix, label string, cols []int, higher bool, note string) Row {
	r := Row{Label: label, HigherIsBetter: higher, Summary: true, Note: note}
	for i := range m.Models {
		var sum float64
		missing := false
		for _, j := range cols {
			if math.IsNaN(m.Values[i][j]) {
				missing = true
			}
			sum += m.Values[i][j]
		}
		r.Cells = append(r.Cells, Cell{Value: sum / float64(len(cols)), Missing: missing})
	}
	markRow(&r)
	return r
}

// anyHigher reports whether any of the columns is higher-is-better: a
// mean of only lower-is-better ones (Video Reg's MAE) ranks that way too.
func anyHigher(m *eevee.Matrix, cols []int) bool {
	for _, j := range cols {
		if m.Columns[j].HigherIsBetter {
			return true
		}
	}
	return false
}

// standInSuffix marks a stand-in's rows.
const standInSuffix = " (stand-in)"

// gateCategories are the task families of GATE's matrix (its Table 3).
var gateCategories = []string{"Img Class", "Few-Shot Img Class", "Img Seg", "Img Relational", "Medical Class", "Medical Seg", "Img to Txt ZS", "Video Class", "Video Reg"}

// standIn reports whether column c is a benchmark outside GATE's filed
// under one of GATE's task families (a procedural task standing in for
// one): the report marks it so. Without the list of GATE's benchmarks
// (in.Tiers["Full"]) nothing is marked.
func standIn(in Input, c eevee.Column) bool {
	gate := in.Tiers["Full"]
	return len(gate) > 0 && slices.Contains(gateCategories, c.Category) && !slices.Contains(gate, c.Benchmark)
}

// FamilyTables builds one table per task family, with a computed Task Mean
// row (mean of the family's higher-is-better metrics; a model missing one
// of them gets no Task Mean) and, when given, the paper's Task Mean.
func FamilyTables(in Input) []Table {
	m := in.Matrix
	var out []Table
	for _, fam := range Families(m) {
		t := Table{Title: fam, Models: m.Models}
		var hib []int
		for j, col := range m.Columns {
			if col.Category != fam {
				continue
			}
			r := Row{Label: rowLabel(col), HigherIsBetter: col.HigherIsBetter}
			if r.Label != col.Name() {
				r.Note = "GATE's Table 3 names it " + col.Metric
			}
			if standIn(in, col) {
				r.Label += standInSuffix
				r.Note = col.Benchmark + " is not a GATE benchmark: it stands in for one of " + fam
			}
			for i, model := range m.Models {
				v := m.Values[i][j]
				r.Cells = append(r.Cells, Cell{Value: v, Missing: math.IsNaN(v), Predicted: in.Predicted[model][j], Spread: in.Spread[model][j], Seeds: in.Seeds[model][j]})
			}
			markRow(&r)
			t.Rows = append(t.Rows, r)
			if inTaskMean(col) {
				hib = append(hib, j)
			}
		}
		higher := anyHigher(m, hib)
		if len(hib) > 0 {
			r := meanRow(m, "Task Mean", hib, higher, taskMeanNote)
			var up, down []int
			var downNames []string
			for _, j := range hib {
				if m.Columns[j].HigherIsBetter {
					up = append(up, j)
				} else {
					down, downNames = append(down, j), append(downNames, m.Columns[j].Name())
				}
			}
			if len(up) > 0 && len(down) > 0 {
				// The paper's Task Mean averages a lower-is-better metric
				// in; the row beside it leaves it out, so a higher value
				// is a better model throughout.
				r.Note = taskMeanNote + "; it averages in " + strings.Join(downNames, ", ") + ", lower is better, as the paper does"
				t.Rows = append(t.Rows, r, meanRow(m, TaskMeanHigher, up, true, "mean of the family's higher-is-better metrics only"))
			} else {
				t.Rows = append(t.Rows, r)
			}
		}
		if head := headlineColumns(m, fam); len(head) > 0 && !slices.Equal(head, hib) {
			names := make([]string, len(head))
			for k, j := range head {
				names[k] = m.Columns[j].Name()
			}
			t.Rows = append(t.Rows, meanRow(m, HeadlineMean, head, anyHigher(m, head),
				"mean of each benchmark's headline metric ("+strings.Join(names, ", ")+"): beside the Task Mean, which a metric at its ceiling (Acc@5 of a task whose Acc@1 is near chance) can lift"))
		}
		if paper := summaryRow(in.PaperSummary, fam, "Task Mean", m.Models); paper != nil {
			paper.Label, paper.Note = "Task Mean (paper)", "as published"
			// Marked in the direction of the computed row: Video Reg's
			// published mean is an MAE too.
			if !higher && len(hib) > 0 {
				paper.HigherIsBetter = false
				for i := range paper.Cells {
					paper.Cells[i].Mark = 0
				}
				markRow(paper)
			}
			t.Rows = append(t.Rows, *paper)
		}
		out = append(out, t)
	}
	return out
}

// anyPredicted reports whether any of the columns of fams is predicted.
func anyPredicted(predicted map[int]bool, fams map[string][]int) bool {
	for _, cols := range fams {
		for _, j := range cols {
			if predicted[j] {
				return true
			}
		}
	}
	return false
}

func summaryRow(rows []SummaryRow, category, row string, models []string) *Row {
	vals := map[string]float64{}
	for _, s := range rows {
		if s.Category == category && s.Row == row {
			vals[s.Model] = s.Value
		}
	}
	if len(vals) == 0 {
		return nil
	}
	r := &Row{Label: row, HigherIsBetter: true, Summary: true}
	for _, mdl := range models {
		v, ok := vals[mdl]
		r.Cells = append(r.Cells, Cell{Value: v, Missing: !ok})
	}
	markRow(r)
	return r
}

// TierTable scores models on each tier. A model's GATE Mean on a tier is
// the mean, over the task families the tier touches, of the family's mean
// of higher-is-better metrics on the tier's benchmarks, losses and
// per-class values left out (the Task Mean's columns less the
// lower-is-better ones such as Video Reg's MAE, which do not average
// with accuracies); its GATE Rank orders those means.
// The paper does not state its own formula; on its matrix this one puts
// the paper's first model first on every tier. A model missing any of the
// cells a tier averages is incomplete on that tier: it gets neither mean
// nor rank, and is never averaged over what happens to be there. A
// predicted model (a predict block's) is ranked by its placement alone:
// its GATE Rank cells are empty, pointing there, and the pool's models
// are ranked among themselves; its GATE Mean is marked predicted where it
// averages a predicted value. When the paper's summary is given, its
// published GATE rows follow.
func TierTable(in Input) Table {
	m := in.Matrix
	t := Table{Title: "GATE tiers", Models: m.Models}
	for _, name := range tierNames(in.Tiers) {
		fams := map[string][]int{}
		var order []string
		for _, j := range tierColumns(m, name, in.Tiers) {
			c := m.Columns[j]
			if !c.HigherIsBetter || !inTaskMean(c) {
				continue // a lower-is-better MAE does not average with accuracies
			}
			if _, ok := fams[c.Category]; !ok {
				order = append(order, c.Category)
			}
			fams[c.Category] = append(fams[c.Category], j)
		}
		if len(order) == 0 {
			continue // no benchmark of the tier is in the matrix (a user's own benchmarks)
		}
		mean := Row{Label: name + " GATE Mean", HigherIsBetter: true, Summary: true}
		for i := range m.Models {
			var total float64
			missing := len(order) == 0
			for _, f := range order {
				var sum float64
				for _, j := range fams[f] {
					if math.IsNaN(m.Values[i][j]) {
						missing = true
					}
					sum += m.Values[i][j]
				}
				total += sum / float64(len(fams[f]))
			}
			mean.Cells = append(mean.Cells, Cell{Value: total / float64(max(len(order), 1)), Missing: missing,
				Predicted: anyPredicted(in.Predicted[m.Models[i]], fams)})
		}
		rank := Row{Label: name + " GATE Rank", HigherIsBetter: false, Summary: true, Integer: true}
		var placed []string
		for i, c := range mean.Cells {
			cell := Cell{Missing: c.Missing}
			if _, ok := in.Predicted[m.Models[i]]; ok {
				// One rank per model: a predicted model's is its placement.
				cell = Cell{Missing: true, Text: "see placement"}
				placed = append(placed, m.Models[i])
			} else if !c.Missing {
				cell.Value = 1
				for k, o := range mean.Cells {
					if _, pred := in.Predicted[m.Models[k]]; !pred && !o.Missing && o.Value > c.Value {
						cell.Value++
					}
				}
			}
			rank.Cells = append(rank.Cells, cell)
		}
		if len(placed) > 0 {
			rank.Note = "ranks the pool's models among themselves; " + joinAnd(placed) + " is placed by its predicted placement instead (Predicted placement, at the top)"
		}
		markRow(&mean)
		markRow(&rank)
		t.Rows = append(t.Rows, mean, rank)
	}
	for _, row := range []string{"Full GATE Mean", "Full GATE Rank", "Big GATE Mean", "Big GATE Rank", "Base GATE Mean", "Base GATE Rank", "Small GATE Mean", "Small GATE Rank"} {
		if r := summaryRow(in.PaperSummary, "GATE", row, m.Models); r != nil {
			if strings.HasSuffix(row, "Rank") {
				r.HigherIsBetter, r.Integer = false, true
				for i := range r.Cells {
					r.Cells[i].Mark = 0
				}
				markRow(r)
			}
			r.Label, r.Note = row+" (paper)", "as published"
			t.Rows = append(t.Rows, *r)
		}
	}
	return t
}

// TierCoverage says what each computed GATE Mean averages: how many of
// the tier's benchmarks the matrix has, over how many models, and, with
// the paper's rows beside them, why the two can differ.
func TierCoverage(in Input) string {
	m := in.Matrix
	have := map[string]bool{}
	for _, b := range m.Benchmarks() {
		have[b] = true
	}
	var parts []string
	for _, name := range tierNames(in.Tiers) {
		want := in.Tiers[name]
		if len(want) == 0 {
			continue
		}
		n := 0
		for _, b := range want {
			if have[b] {
				n++
			}
		}
		parts = append(parts, fmt.Sprintf("%s: %d of its %d benchmarks", name, n, len(want)))
	}
	s := fmt.Sprintf("Computed GATE means average the task families' higher-is-better means over the tier's benchmarks this matrix holds (%s), for its %d models.",
		strings.Join(parts, "; "), len(m.Models))
	if len(in.PaperSummary) > 0 {
		s += " The rows marked (paper) are the published values, from the paper's own formula, which it does not state, over its 31 benchmarks and 21 models; a computed mean differs from them where the matrix or the formula does."
	}
	return s
}

func tierNames(tiers map[string][]string) []string {
	names := []string{"Full"}
	for _, n := range []string{"Big", "Base", "Small"} {
		if _, ok := tiers[n]; ok {
			names = append(names, n)
		}
	}
	var other []string
	for n := range tiers {
		if n != "Full" && n != "Big" && n != "Base" && n != "Small" {
			other = append(other, n)
		}
	}
	sort.Strings(other)
	return append(names, other...)
}

func tierColumns(m *eevee.Matrix, name string, tiers map[string][]string) []int {
	in := map[string]bool{}
	for _, b := range tiers[name] {
		in[b] = true
	}
	var cols []int
	for j, c := range m.Columns {
		if in[c.Benchmark] || (name == "Full" && len(tiers["Full"]) == 0) {
			cols = append(cols, j)
		}
	}
	return cols
}

// columnRanks returns ranks[col][model] (1 = best; ties share the mean
// rank; missing cells rank last).
func columnRanks(m *eevee.Matrix) [][]float64 {
	out := make([][]float64, len(m.Columns))
	for j, c := range m.Columns {
		idx := make([]int, len(m.Models))
		for i := range idx {
			idx[i] = i
		}
		key := func(i int) float64 {
			v := m.Values[i][j]
			if math.IsNaN(v) {
				return math.Inf(1)
			}
			if c.HigherIsBetter {
				return -v
			}
			return v
		}
		sort.SliceStable(idx, func(a, b int) bool { return key(idx[a]) < key(idx[b]) })
		r := make([]float64, len(m.Models))
		for a := 0; a < len(idx); {
			b := a
			for b+1 < len(idx) && key(idx[b+1]) == key(idx[a]) {
				b++
			}
			for k := a; k <= b; k++ {
				r[idx[k]] = float64(a+b)/2 + 1
			}
			a = b + 1
		}
		out[j] = r
	}
	return out
}

// format formats a cell of row r.
// predictedText formats a predicted cell: value, ± spread when known, and
// the * that marks it.
func (r Row) predictedText(c Cell) string {
	s := r.format(c.Value)
	if c.Spread > 0 && !math.IsNaN(c.Spread) {
		s += " ±" + numfmt.Value(c.Spread)
	}
	return s + "*"
}

func (r Row) format(v float64) string {
	if r.Integer && v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return numfmt.Value(v)
}

// rowLabel is a column's name as tables show it: the metric names that
// GATE's Table 3 prints with a dangling "@" (ade20k's "Mean Acc@" and
// "Overall Acc@", an accuracy with no k) read without it.
func rowLabel(col eevee.Column) string {
	if m := metricLabel(col.Metric); m != col.Metric {
		return col.Benchmark + ":" + m
	}
	return col.Name()
}
