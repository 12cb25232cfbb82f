package safefile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	os.WriteFile(small, []byte("hello"), 0o644)
	big := filepath.Join(dir, "big")
	os.WriteFile(big, make([]byte, 100), 0o644)
	tests := []struct {
		name, want string
	}{
		{small, ""},
		{big, "more than the 10"},
		{dir, "a directory"},
		{"/dev/zero", "a character device"},
		{filepath.Join(dir, "none"), "no such file"},
	}
	for _, tc := range tests {
		b, err := ReadFile(tc.name, 10)
		if tc.want == "" {
			if err != nil || string(b) != "hello" {
				t.Errorf("%s: %q %v", tc.name, b, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.want)
		}
	}
}
