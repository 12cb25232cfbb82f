package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var errorMarker = regexp.MustCompile(`#\s*ERROR:\s*(.+?)\s*$`)

// TestErrorFiles validates each testdata/error-files/*.hcl through the real
// CLI path and checks that every error is reported at the line carrying its
// "# ERROR: <summary>" marker, and nothing else is reported.
func TestErrorFiles(t *testing.T) {
	files, err := filepath.Glob("../../testdata/error-files/*.hcl")
	if err != nil || len(files) < 25 {
		t.Fatalf("want at least 25 error files, found %d (%v)", len(files), err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			want := map[int]string{}
			f, _ := os.Open(file)
			sc := bufio.NewScanner(f)
			for line := 1; sc.Scan(); line++ {
				if m := errorMarker.FindStringSubmatch(sc.Text()); m != nil {
					want[line] = m[1]
				}
			}
			f.Close()

			var stdout, stderr bytes.Buffer
			c := &cli{stdout: &stdout, stderr: &stderr, env: func(string) string { return "" }}
			code := c.main(context.Background(), []string{"validate", "-log-format", "json", file})
			if code != exitConfigError {
				t.Fatalf("exit code %d, want %d\nstderr:\n%s", code, exitConfigError, stderr.String())
			}
			got := map[int]string{}
			for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
				var d jsonDiag
				if err := json.Unmarshal([]byte(line), &d); err != nil {
					t.Fatalf("non-JSON diagnostic line %q", line)
				}
				if d.Severity != "error" {
					continue
				}
				if d.Range == nil {
					t.Fatalf("diagnostic %q has no source range", d.Summary)
				}
				if filepath.Base(d.Range.Filename) != filepath.Base(file) {
					t.Fatalf("diagnostic %q points at %s", d.Summary, d.Range.Filename)
				}
				got[d.Range.Start.Line] = d.Summary
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("wrong diagnostics (-want +got):\n%s\nstderr:\n%s", diff, stderr.String())
			}
		})
	}
}
