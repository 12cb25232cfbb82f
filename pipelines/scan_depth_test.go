package pipelines

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// TestScanDepth: unary operators, conditionals, template interpolations
// and directives count toward MaxNesting, and operator chains toward
// MaxOperators, wherever they are (heredocs included); ordinary
// expressions at and under the limits pass.
func TestScanDepth(t *testing.T) {
	rep := strings.Repeat
	list := "[" + rep("-1, ", 10_000) + "]"
	var lines string
	for i := range MaxOperators {
		lines += fmt.Sprintf("x%d = a - b - c - d - e - f - g - h\n", i)
	}
	tests := []struct {
		name, src, summary string
		line, col          int
	}{
		{"unary minus chain", "x = " + rep("- ", MaxNesting) + "- 1\n", "Nesting too deep", 1, 5 + 2*MaxNesting},
		{"unary not chain", "x = " + rep("!", MaxNesting+1) + "true\n", "Nesting too deep", 1, 5 + MaxNesting},
		{"unary chain in a block", "locals {\n  x = " + rep("-", MaxNesting+10) + "1\n}\n", "Nesting too deep", 2, 6 + MaxNesting},
		{"unary inside parentheses", "x = " + rep("-(", MaxNesting/2+1) + "1" + rep(")", MaxNesting/2+1) + "\n", "Nesting too deep", 1, 5 + MaxNesting},
		{"conditional chain", "x = " + rep("true ? 1 : ", MaxNesting+1) + "2\n", "Nesting too deep", 1, 5 + 11*MaxNesting + 5},
		{"nested interpolations", "x = " + rep(`"${`, MaxNesting/2+1) + "1" + rep(`}"`, MaxNesting/2+1) + "\n", "Nesting too deep", 1, 5 + 3*MaxNesting/2},
		{"parentheses in a heredoc", "x = <<EOT\n${" + rep("(", MaxNesting) + "1" + rep(")", MaxNesting) + "}\nEOT\n", "Nesting too deep", 2, 1 + MaxNesting},
		{"nested directives", `x = "` + rep("%{if true}", MaxNesting) + "a" + rep("%{endif}", MaxNesting) + "\"\n", "Nesting too deep", 1, 6 + 10*(MaxNesting-2)},
		{"binary chain", "x = 1" + rep("+1", MaxOperators+1) + "\n", "Expression too long", 1, 6 + 2*MaxOperators},
		{"binary chain over lines in brackets", "x = (1\n" + rep("+ 1\n", MaxOperators) + ")\n", "Expression too long", MaxOperators + 1, 1},
		{"index chain", "x = a" + rep("[b]", MaxOperators) + "\n", "Expression too long", 1, 6 + 3*(MaxOperators-1)},
		{"chains in nested parentheses add up", "x = " + rep("1"+rep("+1", 100)+"+(", 45) + "1" + rep(")", 45) + "\n", "Expression too long", 1, 0},

		{"nesting and chains at the limits", "x = " + rep("-", MaxNesting-1) + "1\ny = 1" + rep(" - 1", MaxOperators-1) + "\n", "", 0, 0},
		{"ordinary expressions", "x = -1\ny = !var.x\nz = a - b - c * -d\nw = a-b-c\nv = 1e-5 - -2.5\nu = x ? -1 : y ? -2 : -3\n", "", 0, 0},
		{"a long list of negative numbers", "x = " + list + "\ny = {\n" + rep("  a = -1\n", 10_000) + "}\n", "", 0, 0},
		{"new lines end each argument", lines, "", 0, 0},
		{"conditionals in a list", "x = [" + rep("a ? -b : !c,\n", 1000) + "]\n", "", 0, 0},
		{"escapes and sequential directives", `x = "$${a}%%{b}` + rep("%{if a}x%{endif}", 1000) + "\"\n", "", 0, 0},
		{"for expressions", "x = { for k, v in y :\n k => -v\n}\nz = [for v in y : -v if !v]\n", "", 0, 0},
		{"closed heredoc with an interpolation", "x = <<-EOT\n  ${a - b}\n  ((((\n  EOT\ny = -1\n", "", 0, 0},
		{"brackets in comments", "# " + rep("(", 2*MaxNesting) + "\n/* " + rep("- ", 2*MaxNesting) + "*/\nx = 1 // " + rep("[", 2*MaxNesting) + "\n", "", 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			diags := prescan([]byte(tc.src), "f.hcl")
			if tc.summary == "" {
				if diags.HasErrors() {
					t.Fatalf("unexpected %v", diags)
				}
				if _, d := hclsyntax.ParseConfig([]byte(tc.src), "f.hcl", hcl.InitialPos); d.HasErrors() {
					t.Fatalf("parse: %v", d)
				}
				return
			}
			if len(diags) != 1 || diags[0].Summary != tc.summary {
				t.Fatalf("diags %v, want %q", diags, tc.summary)
			}
			r := diags[0].Subject
			if r.Filename != "f.hcl" || r.Start.Line != tc.line || (tc.col != 0 && r.Start.Column != tc.col) {
				t.Fatalf("at %s:%d:%d, want f.hcl:%d:%d", r.Filename, r.Start.Line, r.Start.Column, tc.line, tc.col)
			}
		})
	}
}

// TestLoadHugeExpressionsAreErrors: a megabyte of operators is one
// diagnostic at its file and line, quickly, not a stack overflow
// (1,000,000 unary minus signs took 1.4 GB and crashed) nor gigabytes
// (1,000,000 additions took 2.1 GB).
func TestLoadHugeExpressionsAreErrors(t *testing.T) {
	const n = 1_000_000
	rep := strings.Repeat
	tests := []struct{ name, src, summary string }{
		{"unary minus", "locals {\n  x = " + rep("- ", n) + "1\n}\n", "Nesting too deep"},
		{"unary not", "locals {\n  x = " + rep("!", n) + "true\n}\n", "Nesting too deep"},
		{"additions", "locals {\n  x = 1" + rep(" + 1", n) + "\n}\n", "Expression too long"},
		{"conditionals", "locals {\n  x = " + rep("true ? 1 : ", n/10) + "2\n}\n", "Nesting too deep"},
		{"indexes", "locals {\n  x = local.z" + rep("[local.y]", n/10) + "\n}\n", "Expression too long"},
		{"parentheses in a heredoc", "locals {\n  x = <<EOT\n${" + rep("(", n) + "1" + rep(")", n) + "}\nEOT\n}\n", "Nesting too deep"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(tc.src), 0o644); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, diags := NewLoader(nil, nil).LoadConfig(dir)
			if !diags.HasErrors() || diags[0].Summary != tc.summary {
				t.Fatalf("diags %v, want %q", diags, tc.summary)
			}
			if r := diags[0].Subject; r == nil || filepath.Base(r.Filename) != "main.hcl" || r.Start.Line < 2 {
				t.Fatalf("subject %v, want main.hcl from line 2", r)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

// TestScanDepthAcceptsRepositoryFiles: the limits refuse none of the
// standard library's, the examples' or the tests' pipelines (but the
// error file written to pass them).
func TestScanDepthAcceptsRepositoryFiles(t *testing.T) {
	n := 0
	for _, root := range []string{"../stdlib", "../examples", "../testdata", "../cmd/gatepipe/testdata"} {
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || filepath.Ext(p) != ".hcl" || filepath.Base(p) == "deep_nesting.hcl" {
				return nil
			}
			src, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			n++
			if d := scanDepth(src, p); d != nil {
				t.Errorf("%s: %s", d.Subject, d.Summary)
			}
			return nil
		})
	}
	if n < 50 {
		t.Fatalf("only %d files scanned", n)
	}
}
