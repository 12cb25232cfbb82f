package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// fashionMNIST is where Debian's dataset-fashion-mnist puts the real
// files (make test installs it, as make demo does).
const fashionMNIST = "/usr/share/datasets/fashion-mnist"

// TestExampleReportTablesGolden applies examples/train_fashion and
// examples/transfer_zoo, shortened by their variables, on the real
// Fashion-MNIST, and compares the report's tables.md with a golden file
// in which measured numbers and the places they decide are masked: what
// is compared is what the tables say and name. Beside the golden: the
// zoo's five experiments carry five names, no Acc@5 on its 5-class
// target, and train_fashion's single benchmark has no GATE means.
func TestExampleReportTablesGolden(t *testing.T) {
	if testing.Short() {
		t.Skip("trains two examples (about a minute)")
	}
	if _, err := os.Stat(filepath.Join(fashionMNIST, "t10k-labels-idx1-ubyte.gz")); err != nil {
		t.Skipf("%s is not installed (apt-get install dataset-fashion-mnist; make test does)", fashionMNIST)
	}
	cache := t.TempDir()
	for _, c := range []struct {
		example string
		vars    []string
		check   func(t *testing.T, md string)
	}{
		{"train_fashion", []string{"iterations=20"}, func(t *testing.T, md string) {
			for _, bad := range []string{"GATE Mean", "GATE Rank"} {
				if strings.Contains(md, bad) {
					t.Errorf("train_fashion's report has a %s for a benchmark outside GATE", bad)
				}
			}
		}},
		{"transfer_zoo", []string{"source_iterations=20", "episodes=10"}, func(t *testing.T, md string) {
			exp := md[strings.Index(md, "### Experiments"):]
			for _, k := range []string{"cnn_large", "cnn_small", "mlp_large", "mlp_small", "vit"} {
				if !strings.Contains(exp, "| pretrained["+k+"] | fashion-5-9 |") {
					t.Errorf("the experiments table does not name pretrained[%s]:\n%s", k, exp)
				}
			}
			if strings.Contains(exp, "Acc@5") {
				t.Errorf("Acc@5 reported on a 5-class benchmark:\n%s", exp)
			}
		}},
	} {
		t.Run(c.example, func(t *testing.T) {
			dir := "../../examples/" + c.example
			r := gp(t, cache, append(append([]string{"apply"}, varFlags(c.vars)...), dir)...)
			if r.code != 0 {
				t.Fatalf("apply: %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			r = gp(t, cache, append(append([]string{"open"}, varFlags(c.vars)...), dir)...)
			if r.code != 0 {
				t.Fatalf("open: %d\n%s", r.code, r.stderr)
			}
			md := readFile(filepath.Join(filepath.Dir(strings.TrimSpace(r.stdout)), "tables.md"))
			c.check(t, md)
			compareGolden(t, filepath.Join("testdata", "golden", "report_"+c.example+".md"), maskMeasured(md))
		})
	}
}

// compareGolden compares got with the golden file (UPDATE_GOLDEN=1
// rewrites it).
func compareGolden(t *testing.T, path, got string) {
	t.Helper()
	if os.Getenv("UPDATE_GOLDEN") != "" {
		writeFile(t, path, got)
	}
	if want := readFile(path); got != want {
		t.Errorf("%s differs (UPDATE_GOLDEN=1 rewrites it):\n--- got ---\n%s\n--- want ---\n%s", path, got, want)
	}
}

// varFlags turns name=value pairs into -var flags.
func varFlags(vars []string) []string {
	var out []string
	for _, v := range vars {
		out = append(out, "-var", v)
	}
	return out
}

var (
	decimalNumber = regexp.MustCompile(`-?\d+\.\d+`)
	verdict       = regexp.MustCompile(`\| (true|false|yes|no) `)
)

// maskMeasured hides what the measured numbers decide: the numbers, the
// best-three marks, the scorers' verdicts and the sentence naming the
// losers; labels, names and structure stay.
func maskMeasured(md string) string {
	var lines []string
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "Not better than") || strings.HasPrefix(l, "Every scorer") {
			l = "(sentence on the scorers the baselines beat)"
		}
		if strings.HasPrefix(l, "¹ ² ³") {
			lines = append(lines, l) // the legend
			continue
		}
		l = decimalNumber.ReplaceAllString(l, "#")
		l = strings.NewReplacer("**", "", "¹", "", "²", "", "³", "").Replace(l)
		for verdict.MatchString(l) {
			l = verdict.ReplaceAllString(l, "| ? ")
		}
		lines = append(lines, l)
	}
	return strings.Join(lines, "\n")
}
