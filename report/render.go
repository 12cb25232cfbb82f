package report

import (
	"encoding/csv"
	"fmt"
	"html"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/gatepipe/gatepipe/internal/numfmt"
)

var markSuffix = [...]string{"", "¹", "²", "³"}

// Markdown writes t as a GitHub table. The best value of each row is bold,
// and the best three carry ¹ ² ³; predicted cells end in "*", missing
// cells show "–".
func (t Table) Markdown(w io.Writer) error {
	fmt.Fprintf(w, "### %s\n\n", t.Title)
	if t.hasSeeds() {
		fmt.Fprintf(w, "%s.\n\n", seedsNote)
	}
	fmt.Fprintf(w, "| metric | %s |\n", strings.Join(t.Models, " | "))
	fmt.Fprintf(w, "|---|%s\n", strings.Repeat("---:|", len(t.Models)))
	for _, r := range t.Rows {
		label := r.Label
		if r.Summary {
			label = "*" + label + "*"
		} else if !r.HigherIsBetter {
			label += " ↓"
		}
		cells := make([]string, len(r.Cells))
		for i, c := range r.Cells {
			cells[i] = mdCell(r, c)
		}
		if _, err := fmt.Fprintf(w, "| %s | %s |\n", label, strings.Join(cells, " | ")); err != nil {
			return err
		}
	}
	legend := "\n¹ ² ³ best, second, third in the row (↓: lower is better); * predicted, not measured; – missing."
	for _, r := range t.Rows {
		if strings.HasSuffix(r.Label, standInSuffix) {
			legend += " (stand-in): not one of GATE's benchmarks, filed under this GATE family by its category; never in a GATE mean."
			break
		}
	}
	_, err := fmt.Fprintln(w, legend)
	return err
}

func mdCell(r Row, c Cell) string {
	if c.Missing {
		if c.Text != "" {
			return c.Text
		}
		return "–"
	}
	s := r.text(c)
	if c.Predicted {
		s = r.predictedText(c)
	}
	if c.Mark == 1 {
		s = "**" + s + "**"
	}
	return s + markSuffix[c.Mark]
}

// CSV writes t with one row per metric: label, direction, one column per
// model, and a column naming the best model. A table with means over
// seeds adds, per model, the standard deviation and the number of seeds
// ("std MODEL", "n MODEL"; empty for a single run).
func (t Table) CSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	seeds := t.hasSeeds()
	header := append(append([]string{"metric", "higher_is_better"}, t.Models...), "best")
	if seeds {
		for _, m := range t.Models {
			header = append(header, "std "+m)
		}
		for _, m := range t.Models {
			header = append(header, "n "+m)
		}
	}
	cw.Write(header)
	for _, r := range t.Rows {
		rec := []string{r.Label, strconv.FormatBool(r.HigherIsBetter)}
		best := ""
		for i, c := range r.Cells {
			if c.Missing {
				rec = append(rec, "")
				continue
			}
			rec = append(rec, strconv.FormatFloat(c.Value, 'g', -1, 64))
			if c.Mark == 1 {
				if best != "" {
					best += ";"
				}
				best += t.Models[i]
			}
		}
		rec = append(rec, best)
		if seeds {
			stds, ns := make([]string, len(r.Cells)), make([]string, len(r.Cells))
			for i, c := range r.Cells {
				if c.Seeds.N > 0 && !c.Missing {
					stds[i], ns[i] = strconv.FormatFloat(c.Seeds.Std, 'g', 6, 64), strconv.Itoa(c.Seeds.N)
				}
			}
			rec = append(append(rec, stds...), ns...)
		}
		cw.Write(rec)
	}
	cw.Flush()
	return cw.Error()
}

// seedsNote says which standard deviation a "± s (n=N)" cell shows.
const seedsNote = "± is the sample standard deviation over the n seeds (n − 1 in the denominator)"

// caption is t's title, with seedsNote when a cell is a mean over seeds.
func (t Table) caption() string {
	if t.hasSeeds() {
		return t.Title + "; " + seedsNote
	}
	return t.Title
}

// hasSeeds reports whether any cell of t is a mean over seeds.
func (t Table) hasSeeds() bool {
	for _, r := range t.Rows {
		for _, c := range r.Cells {
			if c.Seeds.N > 0 {
				return true
			}
		}
	}
	return false
}

// LaTeX writes t as a booktabs table. It needs \usepackage{booktabs} and
// \usepackage[table]{xcolor}; best cells are bold on gpbest, second on
// gpsecond, third on gpthird (colour-blind-safe Okabe-Ito tints, defined
// at the top of the output).
func (t Table) LaTeX(w io.Writer) error {
	fmt.Fprintln(w, "% Requires \\usepackage{booktabs} and \\usepackage[table]{xcolor}.")
	fmt.Fprintln(w, "\\definecolor{gpbest}{HTML}{F5D9A3}\\definecolor{gpsecond}{HTML}{BFE3F7}\\definecolor{gpthird}{HTML}{B3E0D1}")
	fmt.Fprintln(w, "\\begin{table}[t]\n\\centering\\small")
	fmt.Fprintf(w, "\\caption{%s}\n", texEscape(t.caption()))
	fmt.Fprintf(w, "\\begin{tabular}{l%s}\n\\toprule\n", strings.Repeat("r", len(t.Models)))
	heads := make([]string, len(t.Models))
	for i, m := range t.Models {
		heads[i] = texEscape(m)
	}
	fmt.Fprintf(w, "Metric & %s \\\\\n\\midrule\n", strings.Join(heads, " & "))
	summaryStarted := false
	for _, r := range t.Rows {
		if r.Summary && !summaryStarted {
			fmt.Fprintln(w, "\\midrule")
			summaryStarted = true
		}
		label := texEscape(r.Label)
		if !r.HigherIsBetter && !r.Summary {
			label += " $\\downarrow$"
		}
		cells := make([]string, len(r.Cells))
		for i, c := range r.Cells {
			cells[i] = texCell(r, c)
		}
		fmt.Fprintf(w, "%s & %s \\\\\n", label, strings.Join(cells, " & "))
	}
	_, err := fmt.Fprintln(w, "\\bottomrule\n\\end{tabular}\n\\end{table}")
	return err
}

func texCell(r Row, c Cell) string {
	if c.Missing {
		return "--"
	}
	s := strings.Replace(r.text(c), " ± ", "$\\pm$", 1)
	if c.Predicted {
		s = "\\textit{" + s + "}$^{*}$"
		if c.Spread > 0 && !math.IsNaN(c.Spread) {
			s = "\\textit{" + r.format(c.Value) + "$\\pm$" + numfmt.Value(c.Spread) + "}$^{*}$"
		}
	}
	switch c.Mark {
	case 1:
		return "\\cellcolor{gpbest}\\textbf{" + s + "}"
	case 2:
		return "\\cellcolor{gpsecond}" + s
	case 3:
		return "\\cellcolor{gpthird}" + s
	}
	return s
}

func texEscape(s string) string {
	r := strings.NewReplacer(`\`, `\textbackslash{}`, "&", `\&`, "%", `\%`, "$", `\$`, "#", `\#`, "_", `\_`, "{", `\{`, "}", `\}`, "~", `\textasciitilde{}`, "^", `\textasciicircum{}`, "@", "@")
	return r.Replace(s)
}

// HTML writes t as an HTML table with classes best/second/third,
// predicted and missing; id lets other parts of a report link to rows.
func (t Table) HTML(w io.Writer, id string) error {
	fmt.Fprintf(w, "<table class=\"results\" id=\"%s\">\n<caption>%s</caption>\n<thead><tr><th>metric</th>", html.EscapeString(id), html.EscapeString(t.caption()))
	for _, m := range t.Models {
		fmt.Fprintf(w, "<th>%s</th>", html.EscapeString(m))
	}
	fmt.Fprintln(w, "</tr></thead>\n<tbody>")
	for _, r := range t.Rows {
		cls := ""
		if r.Summary {
			cls = ` class="summary"`
		}
		label := html.EscapeString(r.Label)
		if !r.HigherIsBetter && !r.Summary {
			label += ` <span title="lower is better">↓</span>`
		}
		if r.Note != "" {
			label = fmt.Sprintf(`<span title="%s">%s</span>`, html.EscapeString(r.Note), label)
		}
		fmt.Fprintf(w, "<tr%s><th scope=\"row\">%s</th>", cls, label)
		for _, c := range r.Cells {
			var classes []string
			switch c.Mark {
			case 1:
				classes = append(classes, "best")
			case 2:
				classes = append(classes, "second")
			case 3:
				classes = append(classes, "third")
			}
			text := "–"
			if c.Missing {
				classes = append(classes, "missing")
				if c.Text != "" {
					text = html.EscapeString(c.Text)
				}
			} else {
				text = r.text(c)
			}
			if c.Predicted {
				classes = append(classes, "predicted")
				text = r.predictedText(c)
			}
			fmt.Fprintf(w, `<td class="%s">%s</td>`, strings.Join(classes, " "), text)
		}
		fmt.Fprintln(w, "</tr>")
	}
	_, err := fmt.Fprintln(w, "</tbody>\n</table>")
	return err
}
