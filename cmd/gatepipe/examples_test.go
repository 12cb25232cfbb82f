package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestExamplesValidate checks that every example pipeline is valid.
func TestExamplesValidate(t *testing.T) {
	dirs, _ := filepath.Glob("../../examples/*")
	if len(dirs) == 0 {
		t.Fatal("no examples found")
	}
	// examples/your_encoder runs on the torch runtime: plan and validate
	// check that its interpreter imports torch.
	t.Setenv("GATEPIPE_PYTHON", torchPython())
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			var out, errb bytes.Buffer
			c := &cli{stdout: &out, stderr: &errb, env: func(string) string { return "" }}
			if code := c.main(context.Background(), []string{"validate", dir}); code != 0 {
				t.Fatalf("validate %s: exit %d\n%s", dir, code, errb.String())
			}
		})
	}
}

// TestReadmeClaims runs what README.md says that can be checked here:
// the node count it quotes for make demo's second apply, and, for every
// gatepipe command line in its code blocks, that the command exists and
// takes each flag the line uses.
func TestReadmeClaims(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	m := regexp.MustCompile("`All (\\d+) node instances were cached").FindStringSubmatch(readme)
	if m == nil {
		t.Fatal("README no longer quotes make demo's second apply")
	}
	r := gp(t, t.TempDir(), "validate", "../../examples/fashion_mnist")
	if want := "The configuration is valid: " + m[1] + " node instance(s)."; !strings.Contains(r.stdout, want) {
		t.Errorf("README says %s node instances; validate says:\n%s", m[1], r.stdout)
	}

	inBlock, checked := false, 0
	for _, line := range strings.Split(readme, "\n") {
		if strings.HasPrefix(line, "```") {
			inBlock = !inBlock
			continue
		}
		fields := strings.Fields(strings.SplitN(line, "#", 2)[0])
		if !inBlock || len(fields) < 2 || fields[0] != "gatepipe" {
			continue
		}
		var cmd, flags []string
		for _, f := range fields[1:] {
			if f == "|" || f == ">" {
				break
			}
			switch {
			case strings.HasPrefix(f, "-"):
				flags = append(flags, strings.SplitN(f, "=", 2)[0])
			case len(flags) == 0 && len(cmd) < 2 && !strings.ContainsAny(f, "/.") && f != "last":
				cmd = append(cmd, f)
			}
		}
		help := gp(t, t.TempDir(), append(cmd, "-help")...)
		text := help.stdout + help.stderr
		if help.code != 0 || !strings.Contains(text, "Usage") {
			t.Errorf("README line %q: gatepipe %s -help exits %d:\n%s", line, strings.Join(cmd, " "), help.code, text)
			continue
		}
		for _, f := range flags {
			if !regexp.MustCompile(`(^|\s)` + regexp.QuoteMeta(f) + `\b`).MatchString(text) {
				t.Errorf("README line %q: gatepipe %s takes no %s", line, strings.Join(cmd, " "), f)
			}
		}
		checked++
	}
	if checked < 10 {
		t.Errorf("only %d command lines found in README's code blocks", checked)
	}
}
