package cache

import (
	"fmt"
	"path/filepath"
	"testing"
)

func TestPruneRunsKeepsTheNewest(t *testing.T) {
	c, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 7; i++ {
		if err := c.WriteRun(fmt.Sprintf("20261123T0000%02d.000Z-abc", i), []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	n, err := c.PruneRuns(3)
	if err != nil || n != 4 {
		t.Fatalf("removed %d, err %v; want 4", n, err)
	}
	runs, _ := c.Runs()
	if len(runs) != 3 || filepath.Base(runs[0]) != "20261123T000004.000Z-abc.json" {
		t.Fatalf("left %v", runs)
	}
	if n, _ := c.PruneRuns(3); n != 0 {
		t.Errorf("second prune removed %d", n)
	}
}
