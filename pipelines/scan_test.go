package pipelines

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPrescan(t *testing.T) {
	deep := "x = " + strings.Repeat("(", MaxNesting+1) + "1" + strings.Repeat(")", MaxNesting+1) + "\n"
	ok := "x = " + strings.Repeat("[", MaxNesting) + strings.Repeat("]", MaxNesting) + "\n"
	tests := []struct {
		name, src, summary string
		line, col          int
	}{
		{"unterminated heredoc", "a = 1\nb = {\n  c = <<EOT\nhello\n}\n", "Unterminated heredoc", 3, 7},
		{"unterminated indented heredoc", "b = <<-EOT\n  hello\n  EOTX\n", "Unterminated heredoc", 1, 5},
		{"closed heredoc with brackets", "b = <<-EOT\n  ((((\n  EOT\nc = 1\n", "", 0, 0},
		{"deep nesting", deep, "Nesting too deep", 1, 5 + MaxNesting},
		{"nesting at the limit", ok, "", 0, 0},
		{"brackets in strings and comments", "# ((((\n// [[[[\n/* {{{{ */\nx = \"((((\\\"((\"\n", "", 0, 0},
		{"shift-like text is not a heredoc", "x = \"1 << 2\"\ny = 1 <<2\n", "", 0, 0},
		{"binary file", "\x7fELF\x02\x01\x01\x00" + strings.Repeat("\x00{(", 1000), "Not a text file", 1, 5},
		{"latin-1 text", "a = 1\nx = \"caf\xe9\"\n", "Not a text file", 2, 9},
		{"utf-8 text, tabs and CRLF", "a = 1\r\n\tx = \"café ☕\"\r\n", "", 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			diags := prescan([]byte(tc.src), "f.hcl")
			if tc.summary == "" {
				if diags.HasErrors() {
					t.Fatalf("unexpected %v", diags)
				}
				return
			}
			if len(diags) != 1 || diags[0].Summary != tc.summary {
				t.Fatalf("diags %v, want %q", diags, tc.summary)
			}
			if r := diags[0].Subject; r.Start.Line != tc.line || r.Start.Column != tc.col {
				t.Fatalf("at %d:%d, want %d:%d", r.Start.Line, r.Start.Column, tc.line, tc.col)
			}
		})
	}
}

// TestLoadDeepNestingIsAnError: a 200 KB file of nested parentheses is a
// diagnostic, not a stack overflow.
func TestLoadDeepNestingIsAnError(t *testing.T) {
	dir := t.TempDir()
	src := "x = " + strings.Repeat("(", 100_000) + "1" + strings.Repeat(")", 100_000) + "\n"
	if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	_, diags := NewLoader(nil, nil).LoadConfig(dir)
	if !diags.HasErrors() || diags[0].Summary != "Nesting too deep" {
		t.Fatalf("diags %v", diags)
	}
}
