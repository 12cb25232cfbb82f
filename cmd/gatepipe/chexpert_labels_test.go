package main

import (
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

// TestChexpertLabelsFollowTheProtocol: defect D5. Under "table3" the
// chexpert module keeps the NIH label ids GATE's loader kept (Cardiomegaly,
// Mass, Nodule, Pneumothorax, Edema: the matrix's columns 0-4); under
// "gate" the five findings GATE names, in its order; "all" keeps the 15.
// The images with none of the kept findings are dropped.
func TestChexpertLabelsFollowTheProtocol(t *testing.T) {
	h := &tierHub{repos: map[string]map[string][]byte{"alkzar90/NIH-Chest-X-ray-dataset": chestXrayRepoOf(t, 40, []string{
		"Cardiomegaly|Nodule|Effusion", "Mass|Pneumothorax|Hernia", "No Finding", "Atelectasis|Consolidation|Edema",
	})}}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	env := []string{"GATEPIPE_MIRROR=" + srv.URL, "HOME=" + t.TempDir()}
	cache := filepath.Join(t.TempDir(), "c")
	for _, tc := range []struct {
		labels, classes, splits string
	}{
		// The fixture's findings cycle through four rows: table3 keeps
		// the first, second and fourth rows, gate the first and the fourth.
		{"table3", `["Cardiomegaly","Mass","Nodule","Pneumothorax","Edema"]`, `{"test":6,"train":22,"val":2}`},
		{"gate", `["Cardiomegaly","Edema","Consolidation","Atelectasis","Effusion"]`, `{"test":4,"train":15,"val":1}`},
		{"all", "", `{"test":8,"train":29,"val":3}`},
	} {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "main.hcl"), fmt.Sprintf(`
module "chexpert" {
  source = "stdlib/datasets/chexpert"
  labels = %q
}

output "classes" { value = module.chexpert.dataset.classes }
output "n" { value = module.chexpert.dataset.splits }
`, tc.labels))
		r := gpEnv(t, cache, env, "apply", dir)
		if r.code != 0 {
			t.Fatalf("%s: apply: %d\n%s\n%s", tc.labels, r.code, r.stdout, r.stderr)
		}
		flat := strings.Join(strings.Fields(r.stdout), "")
		if tc.classes != "" && !strings.Contains(flat, "classes="+tc.classes) {
			t.Errorf("%s: classes, want %s:\n%s", tc.labels, tc.classes, r.stdout)
		}
		if !strings.Contains(flat, "n="+tc.splits) {
			t.Errorf("%s: want splits %s:\n%s", tc.labels, tc.splits, r.stdout)
		}
	}
}
