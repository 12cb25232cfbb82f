package main

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	c := &cli{stdout: &out, stderr: &errb, env: func(string) string { return "" }}
	code = c.main(context.Background(), args)
	return code, out.String(), errb.String()
}

// TestBinaryConfigGivesBoundedPrintableDiagnostics: 4 KB of random bytes
// gave ~195 diagnostics and 140 KB with raw bytes, then 20 capped ones;
// now one, saying it is not text. A config with terminal escape sequences
// reached the terminal.
func TestBinaryConfigGivesBoundedPrintableDiagnostics(t *testing.T) {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(1, 2))
	junk := make([]byte, 4096)
	for i := range junk {
		junk[i] = byte(r.UintN(256))
	}
	bin := filepath.Join(dir, "random.hcl")
	os.WriteFile(bin, junk, 0o644)
	code, _, stderr := runCLI("validate", bin)
	if code != exitConfigError {
		t.Fatalf("exit %d", code)
	}
	if len(stderr) > 16<<10 {
		t.Errorf("%d bytes of diagnostics for a 4 KB file", len(stderr))
	}
	if !strings.Contains(stderr, "Not a text file") || strings.Count(stderr, "Error:") != 1 {
		t.Errorf("want one diagnostic saying the file is not text:\n%s", stderr)
	}
	esc := filepath.Join(dir, "esc.hcl")
	os.WriteFile(esc, []byte("command \"a\" {\n  run = [\"\x1b[31mred\x07\", 1 +]\n}\n"), 0o644)
	_, _, stderr = runCLI("validate", esc)
	if strings.ContainsAny(stderr, "\x1b\x07") {
		t.Errorf("control characters reached the output: %q", stderr)
	}
	if !strings.Contains(stderr, "?[31mred?") {
		t.Errorf("the snippet does not show the escaped line: %s", stderr)
	}
}

func TestBadLogFlagsAreErrors(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "main.hcl"), []byte("locals {\n  a = 1\n}\n"), 0o644)
	for _, args := range [][]string{{"-log-format", "yaml"}, {"-log-level", "verbose"}} {
		code, _, stderr := runCLI(append(append([]string{"validate"}, args...), dir)...)
		if code != exitConfigError || !strings.Contains(stderr, args[1]) {
			t.Errorf("%v: exit %d, %q", args, code, stderr)
		}
	}
}

// TestEEVEEToolsRefuseDegenerateInput: these panicked (index out of
// range) or printed NaN tables with exit 0.
func TestEEVEEToolsRefuseDegenerateInput(t *testing.T) {
	dir := t.TempDir()
	one := filepath.Join(dir, "one.csv")
	os.WriteFile(one, []byte("category,benchmark,metric,model,value,higher_is_better\nImg,a,acc,m1,0.5,true\nImg,b,acc,m1,0.6,true\n"), 0o644)
	inf := filepath.Join(dir, "inf.csv")
	os.WriteFile(inf, []byte("category,benchmark,metric,model,value,higher_is_better\nImg,a,acc,m1,0.5,true\nImg,a,acc,m2,Inf,true\n"), 0o644)
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"eevee", "loo", "-matrix", one, "-tier", "a", "-exclude", ""}, exitRunFailure, "needs at least"},
		{[]string{"eevee", "loo", "-matrix", inf, "-tier", "a", "-exclude", ""}, exitRunFailure, "inf.csv:3: value \"Inf\" is not a finite number"},
		{[]string{"eevee", "check-published", "-random", "0"}, exitConfigError, "-random 0"},
	}
	for _, tc := range tests {
		code, _, stderr := runCLI(tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
}
