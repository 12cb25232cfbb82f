package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
)

// diagView renders diagnostics for people (text) or machines (JSON).
type diagView interface {
	Diagnostics(diags hcl.Diagnostics)
}

type diagText struct {
	w     io.Writer
	files map[string]*hcl.File
}

type diagJSON struct{ w io.Writer }

var (
	_ diagView = (*diagText)(nil)
	_ diagView = (*diagJSON)(nil)
)

func newDiagView(format string, w io.Writer, files map[string]*hcl.File) diagView {
	if format == "json" {
		return &diagJSON{w: w}
	}
	return &diagText{w: w, files: files}
}

// sortDiags orders diagnostics by file and position, errors first within a
// position, so output is stable.
func sortDiags(diags hcl.Diagnostics) hcl.Diagnostics {
	out := append(hcl.Diagnostics(nil), diags...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].Subject, out[j].Subject
		switch {
		case a == nil || b == nil:
			return a != nil && b == nil
		case a.Filename != b.Filename:
			return a.Filename < b.Filename
		case a.Start.Line != b.Start.Line:
			return a.Start.Line < b.Start.Line
		}
		return a.Start.Column < b.Start.Column
	})
	return out
}

// Diagnostics prints each as:
//
//	Error: Summary
//	  --> file.hcl:3:5
//	   |
//	 3 |   valeu = 1
//	   |   ^^^^^
//	Detail.
func (v *diagText) Diagnostics(diags hcl.Diagnostics) {
	sorted := sortDiags(diags)
	for i, d := range sorted {
		if i == maxDiagsShown {
			fmt.Fprintf(v.w, "... and %d more diagnostics, not shown: fix the ones above first.\n", len(sorted)-i)
			return
		}
		sev := "Error"
		if d.Severity == hcl.DiagWarning {
			sev = "Warning"
		}
		fmt.Fprintf(v.w, "%s: %s\n", sev, printable(d.Summary))
		if r := d.Subject; r != nil {
			fmt.Fprintf(v.w, "  --> %s:%d:%d\n", printable(r.Filename), r.Start.Line, r.Start.Column)
			v.snippet(r)
		}
		if d.Detail != "" {
			fmt.Fprintln(v.w, wrap(printable(d.Detail), 78))
		}
		fmt.Fprintln(v.w)
	}
}

// maxDiagsShown caps the diagnostics printed for people: a binary file
// given as configuration gives hundreds, and the first few say it all.
const maxDiagsShown = 20

// snippetWidth caps the characters of a source line shown in a snippet.
const snippetWidth = 100

// printable escapes control characters (terminal escape sequences from a
// configuration file must not reach the terminal) and invalid UTF-8,
// keeping newlines and tabs.
func printable(s string) string {
	var b strings.Builder
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, "\\x%02x", s[0])
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case unicode.IsControl(r):
			fmt.Fprintf(&b, "\\x%02x", r)
		default:
			b.WriteRune(r)
		}
		s = s[size:]
	}
	return b.String()
}

// snippetLine turns a source line into printable runes, one per column,
// so the caret line stays aligned: control characters and bytes that
// are not UTF-8 show as '?' and tabs as spaces.
func snippetLine(line string) []rune {
	out := make([]rune, 0, len(line))
	for _, r := range line {
		switch {
		case r == '\t':
			out = append(out, ' ')
		case r == utf8.RuneError || unicode.IsControl(r):
			out = append(out, '?')
		default:
			out = append(out, r)
		}
	}
	return out
}

func (v *diagText) snippet(r *hcl.Range) {
	f := v.files[r.Filename]
	if f == nil {
		return
	}
	lines := strings.Split(string(f.Bytes), "\n")
	if r.Start.Line < 1 || r.Start.Line > len(lines) {
		return
	}
	line := snippetLine(strings.TrimRight(lines[r.Start.Line-1], "\r"))
	num := fmt.Sprint(r.Start.Line)
	pad := strings.Repeat(" ", len(num))
	start := max(r.Start.Column-1, 0)
	end := r.End.Column - 1
	if r.End.Line != r.Start.Line || end > len(line) {
		end = len(line)
	}
	if end <= start {
		end = start + 1
	}
	// A long line shows a window around the range, marked with "...".
	from, to, lead, trail := 0, len(line), "", ""
	if len(line) > snippetWidth {
		from = max(min(start-snippetWidth/3, len(line)-snippetWidth), 0)
		to = min(from+snippetWidth, len(line))
		if from > 0 {
			lead = "..."
		}
		if to < len(line) {
			trail = "..."
		}
		start, end = start-from+len(lead), min(end-from, to-from)+len(lead)
		if end <= start {
			end = start + 1
		}
	}
	fmt.Fprintf(v.w, " %s |\n", pad)
	fmt.Fprintf(v.w, " %s | %s%s%s\n", num, lead, string(line[from:to]), trail)
	fmt.Fprintf(v.w, " %s | %s%s\n", pad, strings.Repeat(" ", start), strings.Repeat("^", end-start))
}

func wrap(s string, width int) string {
	var out []string
	for _, para := range strings.Split(s, "\n") {
		words := strings.Fields(para)
		line := ""
		for _, w := range words {
			if line != "" && len(line)+1+len(w) > width {
				out = append(out, line)
				line = w
				continue
			}
			if line != "" {
				line += " "
			}
			line += w
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

type jsonPos struct {
	Line   int `json:"line"`
	Column int `json:"column"`
	Byte   int `json:"byte"`
}

type jsonRange struct {
	Filename string  `json:"filename"`
	Start    jsonPos `json:"start"`
	End      jsonPos `json:"end"`
}

type jsonDiag struct {
	Severity string     `json:"severity"`
	Summary  string     `json:"summary"`
	Detail   string     `json:"detail,omitempty"`
	Range    *jsonRange `json:"range,omitempty"`
}

func (v *diagJSON) Diagnostics(diags hcl.Diagnostics) {
	enc := json.NewEncoder(v.w)
	for _, d := range sortDiags(diags) {
		jd := jsonDiag{Severity: "error", Summary: d.Summary, Detail: d.Detail}
		if d.Severity == hcl.DiagWarning {
			jd.Severity = "warning"
		}
		if r := d.Subject; r != nil {
			jd.Range = &jsonRange{Filename: r.Filename,
				Start: jsonPos{r.Start.Line, r.Start.Column, r.Start.Byte},
				End:   jsonPos{r.End.Line, r.End.Column, r.End.Byte}}
		}
		_ = enc.Encode(jd)
	}
}

// asDiags turns any error into diagnostics.
func asDiags(err error) hcl.Diagnostics {
	if d, ok := err.(hcl.Diagnostics); ok {
		return d
	}
	return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Error", Detail: err.Error()}}
}
