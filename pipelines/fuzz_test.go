package pipelines

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoadConfig feeds arbitrary text to the loader: it may report
// diagnostics but must never panic.
func FuzzLoadConfig(f *testing.F) {
	// Seed with the real configurations the project ships rather than
	// copies of them, so the seeds follow the language as it changes.
	var seeds []string
	for _, pattern := range []string{"../examples/*/*.hcl", "../stdlib/*/*/*.hcl"} {
		m, _ := filepath.Glob(pattern)
		seeds = append(seeds, m...)
	}
	if len(seeds) == 0 {
		f.Fatal("no seed configurations found under ../examples or ../stdlib")
	}
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err == nil {
			f.Add(string(b))
		}
	}
	f.Add(`dataset "x" { format = "idx" }`)
	f.Add(`variable "v" { type = list(number) default = [1] }`)
	f.Add(`module "m" { source = "./nope" }`)
	f.Fuzz(func(t *testing.T, src string) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		l := NewLoader(nil, []string{"dataset", "command"})
		mod, _ := l.LoadConfig(dir)
		if mod != nil {
			RootVariableValues(mod.Pipeline, map[string]VarValue{"v": {Raw: "1"}})
		}
	})
}
