package trainnode

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestKeptCheckpointsInRankOrder: checkpoint_10 comes after checkpoint_9,
// not after checkpoint_1 as a glob's name order would put it.
func TestKeptCheckpointsInRankOrder(t *testing.T) {
	dir := t.TempDir()
	var want []string
	for i := range 12 {
		p := filepath.Join(dir, "checkpoint_"+string(rune('0'+i%10)))
		if i >= 10 {
			p = filepath.Join(dir, "checkpoint_1"+string(rune('0'+i%10)))
		}
		p += ".safetensors"
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		want = append(want, p)
	}
	got, err := keptCheckpoints(dir)
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("%v %v\nwant %v", got, err, want)
	}
}
