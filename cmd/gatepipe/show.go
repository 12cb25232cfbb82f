package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/gatepipe/gatepipe/engine"
	"github.com/gatepipe/gatepipe/formats/runmeta"
	commandnode "github.com/gatepipe/gatepipe/nodes/command"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
)

// Files show knows how to present.
var (
	metricsFiles = []string{commandnode.MetricsFile, "metrics.json"}
	logFiles     = []string{commandnode.LogFile, commandnode.TrainerLogFile, "train.log", "log.txt"}
)

const showMaxFiles = 40

func runShow(ctx context.Context, c *cli, args []string) int {
	fs := newFlagSet(c, "show", `show [flags] ADDR [PATH]

Shows one node instance's result from the cache, without digging into it:
its status, output directory, value, files, metrics, run metadata and the
tail of its log. ADDR is an address as plan prints it, e.g. train.fashion["mlp"]
(quote it for the shell). PATH is the pipeline (default ".").`)
	var flags configFlags
	flags.register(fs)
	lines := fs.Int("log-lines", 15, "lines of the log's tail to show (0: none)")
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(pos) < 1 || len(pos) > 2 {
		fmt.Fprintln(c.stderr, "gatepipe show: want ADDR [PATH]; run 'gatepipe show --help'")
		return exitConfigError
	}
	path := "."
	if len(pos) == 2 {
		path = pos[1]
	}
	r, code := c.result(ctx, &flags, path, pos[0])
	if r == nil {
		return code
	}
	writeResult(c.stdout, r, *lines)
	return exitOK
}

// result plans the pipeline and returns the instance's result.
func (c *cli) result(ctx context.Context, flags *configFlags, path, addr string) (*engine.Result, int) {
	s, code := c.load(ctx, sessionOptions{path: path, flags: flags, withCache: true, sources: sourcesPinned})
	if s == nil {
		return nil, code
	}
	if _, diags := s.engine.Plan(ctx); diags.HasErrors() {
		s.view.Diagnostics(diags)
		return nil, exitConfigError
	}
	r, err := s.engine.Result(addr)
	if err != nil {
		fmt.Fprintln(c.stderr, "gatepipe:", err)
		if errors.Is(err, engine.ErrNoInstance) {
			return nil, exitConfigError
		}
		return nil, exitRunFailure
	}
	return r, exitOK
}

func writeResult(w io.Writer, r *engine.Result, logLines int) {
	fmt.Fprintf(w, "%s (%s): %s\n", r.Addr, r.Kind, statusWords(r))
	if r.Manifest == nil {
		if r.ActionID != "" {
			fmt.Fprintf(w, "  action  %s\n", r.ActionID)
		}
		return
	}
	fmt.Fprintf(w, "  action  %s\n  output  %s\n  dir     %s\n", r.ActionID, r.OutputID, r.Dir)

	fmt.Fprintln(w, "\nvalue")
	writeValue(w, r.Value)

	fmt.Fprintf(w, "\nfiles (%d, %s)\n", len(r.Manifest.Files), humanBytes(r.Manifest.Size()))
	for i, f := range r.Manifest.Files {
		if i == showMaxFiles {
			fmt.Fprintf(w, "  ... and %d more\n", len(r.Manifest.Files)-i)
			break
		}
		fmt.Fprintf(w, "  %-40s %10s\n", f.Path, humanBytes(f.Size))
	}
	if p := firstFile(r.Dir, metricsFiles); p != "" {
		fmt.Fprintf(w, "\nmetrics (%s)\n", filepath.Base(p))
		writeIndented(w, readHead(p, 40))
	}
	if info, ok, err := runmeta.Read(r.Dir); ok && err == nil {
		fmt.Fprintln(w, "\nrun")
		writeRunInfo(w, &info)
	}
	if p := firstNonEmpty(r.Dir, logFiles); p != "" && logLines > 0 {
		fmt.Fprintf(w, "\nlog (%s, last %d lines)\n", filepath.Base(p), logLines)
		tail := readTail(p, logLines)
		if len(tail) == 0 {
			tail = []string{"(empty)"}
		}
		writeIndented(w, tail)
	}
}

func statusWords(r *engine.Result) string {
	switch r.Status {
	case engine.StatusCached:
		return "cached"
	case engine.StatusBlocked:
		return "not run yet: blocked (" + r.Reason + ")"
	case engine.StatusWillRun:
		return "not run yet: 'gatepipe apply' will run it"
	}
	return string(r.Status)
}

// writeValue prints an object value attribute by attribute, in HCL.
func writeValue(w io.Writer, v cty.Value) {
	if v.IsNull() || !v.IsKnown() || !v.Type().IsObjectType() {
		fmt.Fprintf(w, "  %s\n", hclwrite.TokensForValue(v).Bytes())
		return
	}
	names := make([]string, 0, len(v.Type().AttributeTypes()))
	width := 0
	for n := range v.Type().AttributeTypes() {
		names = append(names, n)
		width = max(width, len(n))
	}
	sort.Strings(names)
	for _, n := range names {
		text := string(hclwrite.Format(hclwrite.TokensForValue(v.GetAttr(n)).Bytes()))
		text = strings.ReplaceAll(strings.TrimSpace(text), "\n", "\n  "+strings.Repeat(" ", width+3))
		fmt.Fprintf(w, "  %-*s = %s\n", width, n, text)
	}
}

func writeRunInfo(w io.Writer, info *runmeta.Info) {
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(w, "  %-9s %s\n", k, v)
		}
	}
	row("started", info.Started.Local().Format("2006-01-02 15:04:05"))
	row("took", formatDuration(time.Duration(info.Seconds*float64(time.Second))))
	row("device", info.Device)
	if info.Seed != nil {
		row("seed", fmt.Sprint(*info.Seed))
	}
	if len(info.Seeds) > 0 {
		row("seeds", strings.Trim(fmt.Sprint(info.Seeds), "[]"))
	}
	if info.Iterations > 0 {
		row("iters", fmt.Sprint(info.Iterations))
	}
	if info.ImagesPerSec > 0 {
		row("speed", fmt.Sprintf("%.0f images/s", info.ImagesPerSec))
	}
	if info.PeakRSSBytes > 0 {
		row("peak mem", humanBytes(info.PeakRSSBytes))
	}
	row("gatepipe", info.Gatepipe)
}

func firstFile(dir string, names []string) string {
	for _, n := range names {
		p := filepath.Join(dir, n)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p
		}
	}
	return ""
}

// firstNonEmpty is the first of names in dir with content, else the first
// that exists.
func firstNonEmpty(dir string, names []string) string {
	for _, n := range names {
		if st, err := os.Stat(filepath.Join(dir, n)); err == nil && st.Mode().IsRegular() && st.Size() > 0 {
			return filepath.Join(dir, n)
		}
	}
	return firstFile(dir, names)
}

func writeIndented(w io.Writer, lines []string) {
	for _, l := range lines {
		fmt.Fprintf(w, "  %s\n", printable(l))
	}
}

// readHead returns the first n lines of a file.
func readHead(p string, n int) []string {
	f, err := os.Open(p)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if len(out) == n {
			out = append(out, "...")
			break
		}
		out = append(out, sc.Text())
	}
	return out
}

// readTail returns the last n lines of a file, reading at most its last
// megabyte.
func readTail(p string, n int) []string {
	f, err := os.Open(p)
	if err != nil {
		return nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil
	}
	off := max(st.Size()-1<<20, 0)
	data := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(data, off); err != nil && !errors.Is(err, io.EOF) {
		return nil
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	return lines[max(len(lines)-n, 0):]
}

func runOpen(ctx context.Context, c *cli, args []string) int {
	fs := newFlagSet(c, "open", `open [flags] [ADDR] [PATH]

Prints the path of a node's main result, to open in a browser or viewer:
the HTML file of a report block, the output directory of any other. With no
ADDR, the pipeline's report (when it has exactly one). PATH is the pipeline
(default "."). Example: xdg-open "$(gatepipe open)"`)
	var flags configFlags
	flags.register(fs)
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	addr, path := "", "."
	switch len(pos) {
	case 0:
	case 1:
		if strings.Contains(pos[0], ".") && !strings.ContainsAny(pos[0], "/\\") && !strings.HasSuffix(pos[0], ".hcl") {
			addr = pos[0]
		} else {
			path = pos[0]
		}
	case 2:
		addr, path = pos[0], pos[1]
	default:
		fmt.Fprintln(c.stderr, "gatepipe open: want [ADDR] [PATH]")
		return exitConfigError
	}
	if addr == "" {
		var err error
		if addr, err = c.onlyReport(ctx, &flags, path); err != nil {
			fmt.Fprintln(c.stderr, "gatepipe open:", err)
			return exitConfigError
		}
	}
	r, code := c.result(ctx, &flags, path, addr)
	if r == nil {
		return code
	}
	if r.Manifest == nil {
		fmt.Fprintf(c.stderr, "gatepipe open: %s is %s\n", addr, statusWords(r))
		return exitRunFailure
	}
	if r.Kind == "report" && r.Value.Type().IsObjectType() && r.Value.Type().HasAttribute("html") {
		fmt.Fprintln(c.stdout, r.Value.GetAttr("html").AsString())
		return exitOK
	}
	fmt.Fprintln(c.stdout, r.Dir)
	return exitOK
}

// onlyReport returns the address of the pipeline's single report instance.
func (c *cli) onlyReport(ctx context.Context, flags *configFlags, path string) (string, error) {
	s, code := c.load(ctx, sessionOptions{path: path, flags: flags})
	if s == nil {
		return "", fmt.Errorf("the pipeline did not load (exit %d)", code)
	}
	plan, diags := s.engine.Plan(ctx)
	if diags.HasErrors() {
		s.view.Diagnostics(diags)
		return "", errors.New("the pipeline did not plan")
	}
	var reports []string
	for _, in := range plan.Instances {
		if in.Kind == "report" {
			reports = append(reports, in.Addr)
		}
	}
	switch len(reports) {
	case 0:
		return "", errors.New("the pipeline has no report block: add one (SPEC §5.5), or name the node to open: gatepipe open ADDR")
	case 1:
	default:
		return "", fmt.Errorf("the pipeline has %d report instances (%s); name one: gatepipe open ADDR", len(reports), strings.Join(reports, ", "))
	}
	return reports[0], nil
}
