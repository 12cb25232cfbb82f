package main

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
)

// TestExamplesValidate checks that every example pipeline is valid.
func TestExamplesValidate(t *testing.T) {
	dirs, _ := filepath.Glob("../../examples/*")
	if len(dirs) == 0 {
		t.Fatal("no examples found")
	}
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
