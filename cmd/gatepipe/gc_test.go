package main

import (
	"runtime/debug"
	"testing"
)

// TestNodeGC: nodes run at Go's default collector percent and planning's
// comes back after; GOGC in the environment is left alone.
func TestNodeGC(t *testing.T) {
	before := debug.SetGCPercent(gcPercent)
	defer debug.SetGCPercent(before)
	restore := nodeGC(func(string) string { return "" })
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("while nodes run: GC percent %d, want 100", got)
	}
	restore()
	if got := debug.SetGCPercent(gcPercent); got != gcPercent {
		t.Errorf("after: GC percent %d, want %d", got, gcPercent)
	}
	restore = nodeGC(func(k string) string { return map[string]string{"GOGC": "50"}[k] })
	if got := debug.SetGCPercent(gcPercent); got != gcPercent {
		t.Errorf("with GOGC set: GC percent %d, want it untouched (%d)", got, gcPercent)
	}
	restore()
}
