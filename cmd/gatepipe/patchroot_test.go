package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// patchRootPipeline trains GATE's patch root on BERT (arch NAME) on the
// shapes dataset with the given runtime.
func patchRootPipeline(arch, runtime string) string {
	return shapesDataset + `
encoder "root" {
  arch = "` + arch + `"
}
adapter "head" {}
recipe "r" {
  batch_size = 8
  iterations = 2
}
train "root" {
  encoder   = encoder.root
  adapter   = adapter.head
  recipe    = recipe.r
  benchmark = benchmark.gen
  runtime   = "` + runtime + `"
}
`
}

// TestPatchRootNamesAndRuntime: arch = "patchroot:NAME" takes the four Hub
// models GATE put behind its patch root; another NAME is refused by
// validate at the arch attribute's line, listing the four, and the Go
// runtime refuses the encoder at the train block, as it refuses timm's
// and torchvision's models (only the torch worker builds it).
func TestPatchRootNamesAndRuntime(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), patchRootPipeline("patchroot:google-bert/bert-base-cased", "torch"))
	r := gp(t, t.TempDir(), "validate", dir)
	said := strings.Join(strings.Fields(r.stderr), " ")
	if r.code != exitConfigError || !strings.Contains(said, "Unknown patch-root encoder") || !strings.Contains(said, "main.hcl:19") ||
		!strings.Contains(said, "google-bert/bert-base-uncased, facebook/bart-base, sentence-transformers/all-mpnet-base-v2, openai/whisper-base, not \"google-bert/bert-base-cased\"") {
		t.Errorf("validate of an unknown patch-root name: exit %d\n%s", r.code, r.stderr)
	}

	for _, name := range []string{"google-bert/bert-base-uncased", "openai/whisper-base"} {
		dir = t.TempDir()
		writeFile(t, filepath.Join(dir, "main.hcl"), patchRootPipeline("patchroot:"+name, "auto"))
		if r := gp(t, t.TempDir(), "validate", dir); r.code != exitOK {
			t.Errorf("validate of patchroot:%s: exit %d\n%s", name, r.code, r.stderr)
		}
	}

	dir = t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), patchRootPipeline("patchroot:google-bert/bert-base-uncased", "go"))
	r = gp(t, t.TempDir(), "apply", dir) // the train block decodes once its dataset is built
	said = strings.Join(strings.Fields(r.stderr), " ")
	if r.code == exitOK || !strings.Contains(said, "Encoder needs the torch runtime") || !strings.Contains(said, "main.hcl:") ||
		!strings.Contains(said, "GATE's patch root on a Hugging Face encoder") {
		t.Errorf("a patch-root encoder on the Go runtime: exit %d\n%s", r.code, r.stderr)
	}
}
