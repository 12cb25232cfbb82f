package pipelines

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSettingsNumbers: the gatepipe block's whole-number settings are read,
// and a value below 1 is an error at its line.
func TestSettingsNumbers(t *testing.T) {
	for _, tc := range []struct {
		src, err string
		want     Settings
	}{
		{"gatepipe {\n  gpu_share = 4\n  parallelism = 3\n}\n", "", Settings{GPUShare: 4, Parallelism: 3}},
		{"gatepipe {\n  keep_runs = 7\n}\n", "", Settings{KeepRuns: 7}},
		{"gatepipe {\n  gpu_share = 0\n}\n", "main.hcl:2,15-16: Invalid gpu_share; gpu_share must be a whole number of at least 1.", Settings{}},
		{"gatepipe {\n  gpu_share = 1.5\n}\n", "Invalid gpu_share", Settings{}},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(tc.src), 0o644); err != nil {
			t.Fatal(err)
		}
		m, diags := NewLoader(nil, nil).LoadConfig(dir)
		if tc.err != "" {
			if !diags.HasErrors() || !strings.Contains(diags.Error(), tc.err) {
				t.Errorf("%q: diags %v, want %q", tc.src, diags, tc.err)
			}
			continue
		}
		if diags.HasErrors() {
			t.Fatalf("%q: %v", tc.src, diags)
		}
		s := m.Pipeline.Settings
		if s.GPUShare != tc.want.GPUShare || s.Parallelism != tc.want.Parallelism || s.KeepRuns != tc.want.KeepRuns {
			t.Errorf("%q: gpu_share %d parallelism %d keep_runs %d, want %+v", tc.src, s.GPUShare, s.Parallelism, s.KeepRuns, tc.want)
		}
	}
}
