package report

import (
	"bytes"
	"fmt"
	"html"
	"math"
	"strings"

	"github.com/gatepipe/gatepipe/internal/numfmt"
)

// Placement is a predict block's placement of its model among the pool's
// models: the one rank a report gives a predicted model, with its
// interval, and the benchmarks it was measured on.
type Placement struct {
	Model, Method string
	// Position of Of: the model's place when the pool's models and it
	// are ordered by mean rank over the ranked columns.
	Position, Of int
	// Best and Worst bound the interval: the position with every
	// predicted value moved by its spread towards better results, and
	// towards worse ones (measured values kept).
	Best, Worst int
	// Columns are the pool columns ranked: all, primary or
	// higher_is_better.
	Columns string
	// Tier is what the meta-model predicts from (empty for matrix
	// completion, which uses every measured cell).
	Tier []string
	// Measured are the benchmarks the model was measured on.
	Measured []MeasuredBenchmark
	// PositionError is the mean absolute position error of the method
	// under leave-one-model-out on the pool; NaN when not validated.
	PositionError float64
}

// MeasuredBenchmark is one benchmark a predicted model was measured on.
type MeasuredBenchmark struct {
	Benchmark, Category string
	Metrics             []MeasuredMetric
	// Placed: some of its values are ranked in the placement; Input:
	// the prediction is made from it.
	Placed, Input bool
	// Reason says why it is left out of the placement, or what of it is
	// not used.
	Reason string
}

// MeasuredMetric is one measured result.
type MeasuredMetric struct {
	Metric         string
	Value          float64
	HigherIsBetter bool
	Placed         bool
}

// PlacementText is "12 of 22 (interval 9–15)".
func (p Placement) PlacementText() string {
	return fmt.Sprintf("%d of %d (interval %d–%d)", p.Position, p.Of, p.Best, p.Worst)
}

// protocols describes the tiers' adapters choices (SPEC §5.9).
var protocols = map[string]string{
	"table3":  "GATE's task adapters and recipe as its code produced Table 3, its defects included: the paper's protocol",
	"gate":    "GATE's task adapters and recipe with its defects mended: not quite the protocol of the paper's Table 3",
	"compact": "gatepipe's compact heads, not GATE's adapters: not the protocol of the paper's Table 3",
}

// headerHTML writes, under the title, the protocol and scale the results
// were made under, and the scale's caveat where there is one.
func headerHTML(b *bytes.Buffer, o Options) {
	if o.Caveat != "" {
		fmt.Fprintf(b, "<p class=\"caveat\" id=\"caveat\">%s</p>\n", html.EscapeString(sentence(o.Caveat)))
	}
	if o.Protocol == "" && o.Scale == "" {
		return
	}
	b.WriteString("<dl class=\"meta\" id=\"protocol\">\n")
	if o.Protocol != "" {
		text := o.Protocol
		if d, ok := protocols[o.Protocol]; ok {
			text += " — " + d
		}
		fmt.Fprintf(b, "<dt>protocol</dt><dd>%s</dd>\n", html.EscapeString(text))
	}
	if o.Scale != "" {
		fmt.Fprintf(b, "<dt>scale</dt><dd>%s</dd>\n", html.EscapeString(o.Scale))
	}
	b.WriteString("</dl>\n")
}

// headerMarkdown writes the caveat, the protocol and scale, and each
// placement with its interval at the top of tables.md.
func headerMarkdown(w *bytes.Buffer, o Options, ps []Placement) {
	if o.Caveat != "" {
		fmt.Fprintf(w, "> %s\n\n", sentence(o.Caveat))
	}
	if o.Protocol != "" {
		fmt.Fprintf(w, "Protocol: %s", o.Protocol)
		if d, ok := protocols[o.Protocol]; ok {
			fmt.Fprintf(w, " (%s)", d)
		}
		w.WriteString(".\n\n")
	}
	if o.Scale != "" {
		fmt.Fprintf(w, "Scale: %s.\n\n", o.Scale)
	}
	for _, p := range ps {
		fmt.Fprintf(w, "**%s: %s**, its predicted place among the pool's %d models and itself.\n\n", p.Model, p.PlacementText(), p.Of-1)
		left := 0
		for _, m := range p.Measured {
			if !m.Placed {
				fmt.Fprintf(w, "- %s, measured, is left out of the placement: %s\n", m.Benchmark, m.Reason)
				left++
			}
		}
		if left > 0 {
			w.WriteString("\n")
		}
	}
}

// sentence capitalises s and ends it with a full stop.
func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return s
	}
	s = strings.ToUpper(s[:1]) + s[1:]
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}

// placementHTML leads the report: each predicted model's placement with
// its interval and how both were computed, beside the benchmarks it was
// measured on, the values measured and, for each left out, why.
func placementHTML(b *bytes.Buffer, ps []Placement) {
	if len(ps) == 0 {
		return
	}
	b.WriteString("<section id=\"placement\">\n<h2>Predicted placement</h2>\n")
	for _, p := range ps {
		fmt.Fprintf(b, "<p class=\"placement\"><b>%s: %s</b>, its predicted place among the pool's %d models and itself.</p>\n",
			html.EscapeString(p.Model), html.EscapeString(p.PlacementText()), p.Of-1)
		fmt.Fprintf(b, "<p>%s</p>\n", html.EscapeString(placementHow(p)))
		measuredHTML(b, p)
	}
	b.WriteString("</section>\n")
}

// placementHow says how a placement and its interval were computed.
func placementHow(p Placement) string {
	var s strings.Builder
	how := "matrix completion (" + p.Method + ") from every measured result"
	spread := "matrix completion's calibrated spread"
	if p.Method == "eevee" {
		how = "EEVEE's meta-model from the measured results on " + strings.Join(p.Tier, ", ")
		spread = "the standard deviation of the meta-models of the cross-validation splits"
	}
	cols := "every column"
	switch p.Columns {
	case "higher_is_better":
		cols = "every higher-is-better column"
	case "primary":
		cols = "one headline column per benchmark"
	}
	fmt.Fprintf(&s, "Predicted by %s. The model is ranked against the pool's models on %s of the pool matrix, with its measured value where it has one and its predicted value elsewhere; models are ordered by their mean rank. ", how, cols)
	fmt.Fprintf(&s, "The interval is its position with every predicted value moved by its spread (%s) towards better results (%d) and towards worse ones (%d), its measured values kept.", spread, p.Best, p.Worst)
	if !math.IsNaN(p.PositionError) {
		fmt.Fprintf(&s, " Leave-one-model-out on the pool (Predicted results below): a model's position predicted from its tier results is off by %.2f positions on average.", p.PositionError)
	}
	return s.String()
}

// measuredHTML writes the table of the benchmarks p's model was measured
// on: every measured value (↓: lower is better), and whether the
// placement ranks it or why not.
func measuredHTML(b *bytes.Buffer, p Placement) {
	if len(p.Measured) == 0 {
		return
	}
	fmt.Fprintf(b, "<table class=\"results\" id=\"measured-%s\"><caption>Measured results of %s (↓: lower is better)</caption>\n", slug(p.Model), html.EscapeString(p.Model))
	b.WriteString("<thead><tr><th>benchmark</th><th>task family</th><th>measured</th><th>in the placement</th></tr></thead><tbody>\n")
	var left []string
	for _, m := range p.Measured {
		vals := make([]string, len(m.Metrics))
		for i, v := range m.Metrics {
			vals[i] = html.EscapeString(metricLabel(v.Metric)) + " " + numfmt.Value(v.Value)
			if !v.HigherIsBetter {
				vals[i] = html.EscapeString(metricLabel(v.Metric)) + " ↓ " + numfmt.Value(v.Value)
			}
		}
		used := "Ranked."
		if m.Input {
			used = "Ranked; an input of the prediction."
		}
		class := "text"
		if !m.Placed {
			used = "Left out."
			class = "text left-out"
			left = append(left, m.Benchmark)
		}
		if m.Reason != "" {
			used += " " + sentence(m.Reason)
		}
		fmt.Fprintf(b, "<tr><th scope=\"row\">%s</th><td class=\"text\">%s</td><td class=\"text\">%s</td><td class=\"%s\">%s</td></tr>\n",
			html.EscapeString(m.Benchmark), html.EscapeString(m.Category), strings.Join(vals, ", "), class, html.EscapeString(used))
	}
	b.WriteString("</tbody></table>\n")
	if len(left) > 0 {
		fmt.Fprintf(b, "<p class=\"warning\">Measured but left out of the placement: %s (the table says why).</p>\n", html.EscapeString(joinAnd(left)))
	}
}
