package specs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLegacyCheckpointSaysSo: weights saved by PyTorch < 1.6 (a pickle
// that starts with torch's magic number) are refused with what to do,
// not blamed on a broken safetensors header.
func TestLegacyCheckpointSaysSo(t *testing.T) {
	p := filepath.Join(t.TempDir(), "resnet18.pth")
	legacy := "\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19.\x80\x02M\xe9\x03.\x80\x02}q\x00."
	if err := os.WriteFile(p, []byte(legacy), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := readWeightsFile(p)
	if err == nil || !strings.Contains(err.Error(), "PyTorch < 1.6") || !strings.Contains(err.Error(), p) || strings.Contains(err.Error(), "header") {
		t.Fatalf("error %v, want the legacy format named with the file", err)
	}
}
