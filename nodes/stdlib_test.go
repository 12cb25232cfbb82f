package nodes

import (
	"testing"

	"github.com/gatepipe/gatepipe/pipelines"
)

func TestStdlibPrefixIsTheLoaders(t *testing.T) {
	if StdlibPrefix != pipelines.StdlibPrefix {
		t.Fatalf("nodes.StdlibPrefix %q differs from pipelines.StdlibPrefix %q", StdlibPrefix, pipelines.StdlibPrefix)
	}
	if rel, ok := StdlibPath("stdlib/data/gate_table3.csv"); !ok || rel != "data/gate_table3.csv" {
		t.Fatalf("StdlibPath = %q, %v", rel, ok)
	}
	if _, ok := StdlibPath("/home/me/stdlib/x"); ok {
		t.Fatal("an absolute path taken for the standard library")
	}
}
